"""Large straight-line functions of CasADi's generated C as instruction tables (``ffopt export``).

CasADi generates an SX function as one statement per operation (``w[12]=(w[3]*w[5]);``). The BDF step of a
6-axis arm holds its Newton residual and Jacobian in one such function: 34000 statements of the UR5's 42000, a
1.2 MB source that GCC needs 14-45 s to compile at -O2 (and 7 s at -O0: the time grows with the volume, splitting
the function into parts saved only 20 %). ``tabulate`` rewrites the largest of those functions, until at most
``budget`` straight-line statements are left, as a table of instructions {opcode, a, b, c} and a loop that
executes each with the same C expression as the statement it replaces: the same operations on the same
operands in the same order, so the results are bit for bit those of the straight-line code (no reassociation;
-std=c99 does not contract multiply-adds), and the source compiles in about a second. The price is the dispatch
of every instruction (UR5: 170 us a step instead of 22 us, measured in results/export.md).

Only functions whose every statement has one of the shapes below are rewritten (an assignment from an input,
a constant, one operation of one or two work entries, or a guarded output); any other function stays as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULT_BUDGET = 16000  # straight-line statements left to the compiler (Manutec r3: 14241, 4.4 s of gcc -O2)

_W = r"w\[(\d+)\]"
_BINARY = {"*": "mul", "+": "add", "-": "sub", "/": "div", "<=": "le", "<": "lt", "==": "eq", "!=": "ne",
           "||": "or", "&&": "and"}
_UNARY = ("casadi_fabs", "casadi_sq", "sin", "cos", "tan", "sqrt", "exp", "log", "tanh", "sinh", "cosh", "atan",
          "asin", "acos", "floor", "ceil", "erf")
_BINARY_CALLS = ("casadi_fmax", "casadi_fmin", "atan2", "pow", "fmod", "copysign")


def _shapes() -> list[tuple[str, re.Pattern, str]]:
    """(kind, pattern of the statement, the C text of its instruction), the operands as a, b, c of entry i."""
    shapes = [("input", rf"{_W}=arg\[(\d+)\]\? arg\[\2\]\[(\d+)\] : 0;", "w[s[i].a]=arg[s[i].b]? arg[s[i].b][s[i].c] : 0;"),
              ("const", rf"{_W}=(-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?);", "w[s[i].a]=k[s[i].b];"),
              ("output", rf"if \(res\[(\d+)\]!=0\) res\[\1\]\[(\d+)\]={_W};",
               "if (res[s[i].b]!=0) res[s[i].b][s[i].c]=w[s[i].a];"),
              ("neg", rf"{_W}=\(-{_W}\);", "w[s[i].a]=(-w[s[i].b]);"),
              ("not", rf"{_W}=\(!{_W}\);", "w[s[i].a]=(!w[s[i].b]);"),
              ("twice", rf"{_W}=\(2\.\*{_W}\);", "w[s[i].a]=(2.*w[s[i].b]);"),
              ("if_else_zero", rf"{_W}=\({_W}\?{_W}:0\);", "w[s[i].a]=(w[s[i].b]?w[s[i].c]:0);"),
              ("copy", rf"{_W}={_W};", "w[s[i].a]=w[s[i].b];")]
    shapes += [(name, rf"{_W}=\({_W}{re.escape(op)}{_W}\);", f"w[s[i].a]=(w[s[i].b]{op}w[s[i].c]);")
               for op, name in _BINARY.items()]
    shapes += [(fn, rf"{_W}={fn}\({_W}\);", f"w[s[i].a]={fn}(w[s[i].b]);") for fn in _UNARY]
    shapes += [(fn, rf"{_W}={fn}\({_W},{_W}\);", f"w[s[i].a]={fn}(w[s[i].b],w[s[i].c]);") for fn in _BINARY_CALLS]
    return [(kind, re.compile("  " + pattern), text) for kind, pattern, text in shapes]


_SHAPES = _shapes()
_FUNCTION = re.compile(r"^static int (casadi_f\d+)\(const casadi_real\*\* arg, casadi_real\*\* res, casadi_int\* iw, "
                       r"casadi_real\* w, int mem\) \{\n  \(void\) arg; \(void\) res; \(void\) iw; \(void\) w; "
                       r"\(void\) mem;\n", re.M)
_END = "  return 0;\n}\n"


@dataclass
class TableReport:
    """What ``tabulate`` did: the functions it rewrote and the statements left as straight-line code."""

    tabled: dict[str, int] = field(default_factory=dict)  # function -> instructions
    straight_line_statements: int = 0  # in the functions tabulate could rewrite, left as they were

    def to_dict(self) -> dict:
        return {"tabled_functions": dict(self.tabled), "tabled_instructions": sum(self.tabled.values()),
                "straight_line_statements": self.straight_line_statements}


def _instruction(line: str, constants: list[str]) -> tuple[int, int, int, int] | None:
    """(opcode, a, b, c) of one statement, None for a shape not in the table."""
    for code, (kind, pattern, _) in enumerate(_SHAPES):
        m = pattern.fullmatch(line)
        if m is None:
            continue
        g = m.groups()
        if kind == "input":
            return code, int(g[0]), int(g[1]), int(g[2])
        if kind == "const":
            constants.append(g[1])  # the literal as CasADi printed it (17 digits: the same double)
            return code, int(g[0]), len(constants) - 1, 0
        if kind == "output":
            return code, int(g[2]), int(g[0]), int(g[1])
        return code, int(g[0]), int(g[1]), int(g[2]) if len(g) > 2 else 0
    return None


def _parse(body: str):
    """(instructions, constants) of a function body, None if a statement has another shape."""
    constants: list[str] = []
    instructions = []
    for line in body.splitlines():
        ins = _instruction(line, constants)
        if ins is None:
            return None
        instructions.append(ins)
    return instructions, constants


def _table_body(instructions, constants) -> str:
    """The C body executing ``instructions`` in order (the statements they came from, one at a time)."""
    width = "unsigned short" if max(max(ins[1:]) for ins in instructions) < 65536 else "casadi_int"
    rows = ",".join("{%d,%d,%d,%d}" % ins for ins in instructions)
    cases = "".join(f"      case {code}: {_SHAPES[code][2]} break;\n"
                    for code in sorted({ins[0] for ins in instructions}))
    consts = f"  static const casadi_real k[{len(constants)}] = {{{','.join(constants)}}};\n" if constants else ""
    return (f"  static const struct {{ unsigned char op; {width} a, b, c; }} s[{len(instructions)}] = {{{rows}}};\n"
            f"{consts}  casadi_int i;\n  for (i = 0; i < {len(instructions)}; ++i) {{\n    switch (s[i].op) {{\n"
            f"{cases}      default: break;\n    }}\n  }}\n")


def tabulate(text: str, budget: int = DEFAULT_BUDGET) -> tuple[str, TableReport]:
    """``text`` (a CasADi-generated C file) with its largest straight-line functions as instruction tables,
    largest first, until at most ``budget`` statements of such functions are left to compile as they are."""
    candidates = []
    for m in _FUNCTION.finditer(text):
        end = text.index(_END, m.end())
        parsed = _parse(text[m.end():end])
        if parsed is not None:
            candidates.append((len(parsed[0]), m.group(1), m.end(), end, parsed))
    report = TableReport(straight_line_statements=sum(c[0] for c in candidates))
    edits = []
    for size, name, start, end, parsed in sorted(candidates, key=lambda c: -c[0]):
        if report.straight_line_statements <= budget:
            break
        edits.append((start, end, _table_body(*parsed)))
        report.tabled[name] = size
        report.straight_line_statements -= size
    for start, end, body in sorted(edits, reverse=True):
        text = text[:start] + body + text[end:]
    return text, report
