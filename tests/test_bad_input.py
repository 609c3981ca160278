"""Bad input, one case per line: each gives one clear line on stderr naming the file, field, option,
path or time instant, the documented exit code (2 bad input, 1 solver failure), and touches no file
of the user's (the whole working folder is snapshotted before and after). In-process through
``ffopt.cli.main.main``; the real exit code and Ctrl-C run in subprocesses in test_output.py."""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from helpers import snapshot, toml_text

from ffopt.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
BASES = {name: tomllib.loads((ROOT / "problems" / f"{name}.toml").read_text())
         for name in ("e1_simplified", "e12_line", "e1_nmp", "two_link_elastic")}
PLAN = ["plan", "{problem}", "--out", "{out}", "--quiet", "--no-plots"]


@dataclass
class Case:
    id: str
    expect: tuple[str, ...]  # substrings of the one error line
    change: Callable[[dict], object] | None = None  # edits the problem dict in place
    base: str = "e1_simplified"
    text: str | None = None  # the problem file's text instead of a problem dict
    argv: list[str] = field(default_factory=lambda: list(PLAN))
    extra: tuple[str, ...] = ()
    setup: Callable[[Path], object] | None = None  # prepares the working folder (user files)
    cwd: bool = False  # run inside the working folder (--out .)
    code: int = 2


def _set(path: str, value):
    """A change that sets the dotted key ``path`` (joints by index, e.g. model.joints.1.mass)."""
    def change(d):
        *parents, last = path.split(".")
        for key in parents:
            d = d[int(key)] if key.isdigit() else d.setdefault(key, {})
        d[int(last) if last.isdigit() else last] = value
    return change


def _delete(path: str):
    def change(d):
        *parents, last = path.split(".")
        for key in parents:
            d = d[int(key)] if key.isdigit() else d[key]
        del d[last]
    return change


def _rename(path: str, new: str):
    def change(d):
        *parents, last = path.split(".")
        for key in parents:
            d = d[key]
        d[new] = d.pop(last)
    return change


def _user_folder(name: str, *files: str):
    def setup(work: Path):
        (work / name).mkdir(exist_ok=True)
        for f in files:
            (work / name / f).write_text(f"the user's {f}")
    return setup


def _user_file(name: str, text: str = "the user's file"):
    def setup(work: Path):
        (work / name).write_text(text)
    return setup


CASES = [
    # --- the problem file itself
    Case("malformed-toml", ("bad.toml", "not valid TOML"), text="[model\nname = 1\n"),
    Case("empty-file", ("bad.toml", "name: missing required key"), text=""),
    Case("binary-file", ("bad.toml", "not a text file"), text=b"\x89PNG\r\n\x1a\n\xff\xfe".decode("latin-1")),
    Case("missing-file", ("nothere.toml", "no such problem file"), argv=["plan", "{work}/nothere.toml", "--out", "{out}"]),
    Case("directory-as-problem", ("is a directory, expected a TOML problem file",),
         argv=["plan", "{work}", "--out", "{out}"]),
    Case("export-folder-not-a-plan", ("not a plan folder (no summary.json",),
         argv=["export", "{work}", "--out", "{out}"]),
    # --- schema: unknown keys, missing keys, types
    Case("unknown-key", ("bad.toml", "reference.durtion", "did you mean 'duration'"), _rename("reference.duration", "durtion")),
    Case("unknown-table", ("bad.toml", "solvers", "unknown key"), _set("solvers.order", 3)),
    Case("missing-key", ("bad.toml", "reference.duration: missing: give the motion time"), _delete("reference.duration")),
    Case("string-for-number", ("bad.toml", "model.joints[2].stiffness", "expected a finite number"),
         _set("model.joints.1.stiffness", "stiff")),
    Case("nan-duration", ("bad.toml", "reference.duration", "finite"), _set("reference.duration", float("nan"))),
    Case("bool-for-int", ("bad.toml", "solver.order", "integer"), _set("solver.order", True)),
    Case("unknown-method", ("bad.toml", "solver.method", "must be one of"), _set("solver.method", "rk4")),
    Case("unknown-joint-kind", ("bad.toml", "model.joints[1].kind"), _set("model.joints.0.kind", "prismatic")),
    # --- vector lengths (never broadcast)
    Case("inertia-triangle-inequality", ("bad.toml", "model.joints[1].inertia_diag", "triangle inequality"),
         _set("model.joints.0.inertia_diag", [5.0, 0.1, 0.1]), base="e12_line"),
    Case("axis-length", ("bad.toml", "model.joints[1].axis", "expected 3 numbers, got 2"), _set("model.joints.0.axis", [0.0, 1.0])),
    Case("start-length", ("bad.toml", "reference.start_mm", "expected 1 values"), _set("reference.start_mm", [1414.0, 0.0])),
    Case("joint-guess-length", ("bad.toml", "reference.joint_guess", "expected 3"), _set("reference.joint_guess", [0.0, 0.3]),
         base="e12_line"),
    Case("torque-max-one-for-two", ("bad.toml", "nlp.torque_max", "expected 2 values (one per motor"),
         _set("nlp.torque_max", [1e5]), base="e12_line"),
    Case("torque-rate-three-for-two", ("bad.toml", "nlp.torque_rate_max", "expected 2 values"),
         _set("nlp.torque_rate_max", [1e6, 1e6, 1e6]), base="e12_line"),
    Case("outputs-vs-motors", ("bad.toml", "model.outputs", "2 actuated joints"), _set("model.outputs", ["x"]), base="e12_line"),
    Case("constant-inertia-shape", ("bad.toml", "model.constant_inertia", "must be 2x2"),
         _set("model.constant_inertia", [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])),
    # --- values: negative, zero, impossible
    Case("negative-mass", ("bad.toml", "model.joints[1].mass", ">= 0"), _set("model.joints.0.mass", -1.0), base="e12_line"),
    Case("zero-axis", ("bad.toml", "model.joints[1].axis", "non-zero"), _set("model.joints.0.axis", [0.0, 0.0, 0.0])),
    Case("negative-duration", ("bad.toml", "reference.duration", "> 0"), _set("reference.duration", -0.1)),
    Case("zero-step", ("bad.toml", "solver.step", "> 0"), _set("solver.step", 0.0)),
    Case("order-7", ("bad.toml", "solver.order", "1..6"), _set("solver.order", 7)),
    Case("negative-torque-max", ("bad.toml", "nlp.torque_max", "> 0"), _set("nlp.torque_max", [1e5, -1.0]), base="e12_line"),
    Case("negative-payload-scale", ("bad.toml", "verification.payload_scales", "> 0"),
         _set("verification.payload_scales", [0.5, -2.0])),
    Case("passive-without-stiffness", ("bad.toml", "model.joints[2].stiffness", "passive joint needs stiffness > 0"),
         _set("model.joints.1.stiffness", 0.0)),
    Case("gear-without-motor-inertia", ("bad.toml", "model.joints[1].motor_inertia", "> 0"),
         _set("model.joints.0.motor_inertia", 0.0), base="e12_line"),
    Case("asymmetric-inertia", ("bad.toml", "model.joints[1].inertia", "symmetric"),
         lambda d: (_delete("model.joints.0.inertia_diag")(d),
                    _set("model.joints.0.inertia", [[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])(d)),
         base="e12_line"),
    Case("inertia-and-diag", ("bad.toml", "model.joints[1].inertia", "not both"),
         _set("model.joints.0.inertia", [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), base="e12_line"),
    Case("duplicate-joint-name", ("bad.toml", "model.joints[2].name", "duplicate"), _set("model.joints.1.name", "q1")),
    Case("comma-in-joint-name", ("bad.toml", "model.joints[1].name", "letters, digits"), _set("model.joints.0.name", "q1,q2")),
    Case("step-over-duration", ("solver.step", "duration/4"), extra=("--step", "0.05")),
    # --- the path: named by the time instant
    Case("outside-workspace", ("bad.toml: reference", "workspace", "t = "), _set("reference.end_mm", [2100.0])),
    Case("through-singularity", ("bad.toml: reference", "singularity at t = 0.1"), _set("reference.end_mm", [2000.0])),
    # --- command-line values
    Case("negative-step", ("--step: must be > 0 s", "-0.001"), extra=("--step", "-1e-3")),
    Case("zero-step-cli", ("--step: must be > 0 s",), extra=("--step", "0")),
    Case("nan-step", ("--step", "finite number", "'nan'"), extra=("--step", "nan")),
    Case("text-step", ("--step", "expected a number", "'1ms'"), extra=("--step", "1ms")),
    Case("order-out-of-range", ("--order", "invalid choice: 7"), extra=("--order", "7")),
    Case("order-not-int", ("--order", "2.5"), extra=("--order", "2.5")),
    Case("unknown-method-cli", ("--method", "invalid choice: 'rk4'"), extra=("--method", "rk4")),
    Case("order-with-nlp", ("--order does not apply to method nlp", "[nlp] degree"), extra=("--method", "nlp", "--order", "3")),
    Case("backend-with-bdf", ("--backend does not apply to method bdf", "solver.method in", "bad.toml"),
         extra=("--backend", "auto")),
    Case("form-with-dd", ("--form does not apply to method dd",), extra=("--method", "dd", "--form", "I2")),
    Case("misspelt-option", ("unrecognized arguments: --stp",), extra=("--stp", "1e-3")),
    Case("missing-out", ("the following arguments are required: --out",), argv=["plan", "{problem}"]),
    Case("analyze-zero-points", ("--points", "must be >= 1"), argv=["analyze", "{problem}", "--points", "0"]),
    Case("no-command", ("required: command",), argv=[]),
    # --- output paths (nothing of the user's is touched)
    Case("out-is-a-file", ("notes.txt: is a file, not a folder",), setup=_user_file("notes.txt"),
         argv=["plan", "{problem}", "--out", "{work}/notes.txt"]),
    Case("out-below-a-file", ("notes.txt is a file, not a folder",), setup=_user_file("notes.txt"),
         argv=["plan", "{problem}", "--out", "{work}/notes.txt/res"]),
    Case("out-foreign-folder", ("mine: exists and is not an ffopt result folder", "'data.csv'", "--force"),
         setup=_user_folder("mine", "data.csv"), argv=["plan", "{problem}", "--out", "{work}/mine"]),
    Case("out-dot", (". (/", "/work): exists and is not an ffopt result folder", "'bad.toml'"), argv=["plan", "bad.toml", "--out", "."], cwd=True),
    Case("force-name-clash", ("mine/trajectory.csv: exists and was not written by ffopt",),
         setup=_user_folder("mine", "trajectory.csv", "notes.md"), argv=["plan", "{problem}", "--out", "{work}/mine", "--force"]),
    Case("force-dot-clash", ("summary.json: exists and was not written by ffopt",), setup=_user_file("summary.json"),
         argv=["plan", "bad.toml", "--out", ".", "--force", "--no-plots"], cwd=True),
    Case("analyze-json-user-file", ("mine.json: exists and was not written by ffopt",), setup=_user_file("mine.json", "{}"),
         argv=["analyze", "{problem}", "--json", "{work}/mine.json"]),
    Case("analyze-json-folder", ("is a folder",), setup=_user_folder("reports", "a.txt"),
         argv=["analyze", "{problem}", "--json", "{work}/reports"]),
    # --- plausibility: values that pass the schema but no arm has (each made the solvers fail, crash or pass)
    Case("motor-inertia-1e308", ("bad.toml", "model.joints[1].motor_inertia", "more than 1e+06 times the links"),
         _set("model.joints.0.motor_inertia", 1e308), base="two_link_elastic"),
    Case("massless-last-link", ("bad.toml", "model.joints[2].mass", "joint 'j2' moves no mass", "singular"),
         lambda d: _set("model.joints.1.mass", 0.0)(d) or _set("model.joints.1.inertia_diag", [0.0] * 3)(d),
         base="two_link_elastic"),
    Case("export-massless-last-link", ("bad.toml", "model.joints[2].mass", "moves no mass"),
         lambda d: _set("model.joints.1.mass", 0.0)(d) or _set("model.joints.1.inertia_diag", [0.0] * 3)(d),
         base="two_link_elastic", argv=["export", "{problem}", "--out", "{out}"]),
    Case("gear-ratio-1e12", ("bad.toml", "model.joints[1].gear_ratio", "1e+12 is beyond any robot gear"),
         lambda d: _delete("model.joints.0.motor_inertia")(d) or _set("model.joints.0.gear_ratio", 1e12)(d)
         or _set("model.joints.0.rotor_inertia", 1e-4)(d), base="two_link_elastic"),
    Case("tolerance-beyond-reach", ("bad.toml", "verification.tolerance_mm", "more than the arm's reach"),
         _set("verification.tolerance_mm", 1e308), base="two_link_elastic"),
    Case("stiffness-1e15", ("bad.toml", "model.joints[1].stiffness", "Hz mode", "kind = \"direct\""),
         _set("model.joints.0.stiffness", 1e15), base="two_link_elastic"),
    Case("mass-1e300", ("bad.toml", "model.joints[1].mass", "beyond any robot arm's link"),
         _set("model.joints.0.mass", 1e300), base="two_link_elastic"),
    Case("stiffness-1e-3-winds-the-motor", ("bad.toml", "model.joints.j1.stiffness", "winds the motor", "too soft"),
         _set("model.joints.0.stiffness", 1e-3), base="two_link_elastic", extra=("--no-verify",)),
    Case("duration-1e4", ("bad.toml", "solver.step / reference.duration", "GiB", "larger step"),
         _set("reference.duration", 1e4), base="two_link_elastic"),
    Case("step-1e-12", ("solver.step / reference.duration", "1.12e+12 rows"), base="two_link_elastic",
         extra=("--step", "1e-12")),
    Case("arc-through-one-point", ("bad.toml", "reference.start_mm, via_mm, end_mm", "coincide"),
         _set("reference", {"kind": "arc", "start_mm": [-105.7, -1011.5], "via_mm": [-105.7, -1011.5],
                            "end_mm": [-105.7, -1011.5], "duration": 0.767, "joint_guess": [0.962, 1.771]}),
         base="two_link_elastic"),
    Case("joint-guess-at-a-singularity", ("bad.toml", "reference.joint_guess", "singular configuration"),
         _set("reference.joint_guess", [0.962, 0.0]), base="two_link_elastic"),
    # --- solver failures: exit 1, with the time instant and what to try
    Case("bdf-cannot-follow", ("did not converge at t = ", "Try"), base="e12_line", extra=("--step", "0.02", "--form", "I3"), code=1),
    Case("non-minimum-phase-bdf", ("did not converge at t = ", "non-minimum phase", "--method nlp"), base="e1_nmp",
         extra=("--method", "bdf", "--no-verify"), code=1),
]


def test_at_least_thirty_distinct_bad_inputs():
    assert len({c.id for c in CASES}) == len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, capsys, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    problem = work / "bad.toml"
    if case.text is not None:
        problem.write_bytes(case.text.encode("latin-1"))
    else:
        data = copy.deepcopy(BASES[case.base])
        if case.change:
            case.change(data)
        problem.write_text(toml_text(data))
    (work / "notes.txt").write_text("the user's notes") if case.setup is None else case.setup(work)
    if case.cwd:
        monkeypatch.chdir(work)
    before = snapshot(tmp_path)
    argv = [a.format(problem=problem, out=work / "res", work=work) for a in case.argv] + list(case.extra)

    code = main(argv)

    err = capsys.readouterr().err.strip()
    assert code == case.code, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(("ffopt: error: ", "ffopt plan: error: ", "ffopt analyze: error: ", "ffopt: error:")), err
    for text in case.expect:
        assert text in err, f"{text!r} not in {err!r}"
    assert snapshot(tmp_path) == before, "a bad input must not create, change or delete any file"


def test_options_for_a_method_that_chooses_its_solver_are_all_accepted():
    """A method the option table does not list (e.g. "auto", which runs BDF or the NLP) takes every option."""
    from types import SimpleNamespace

    from ffopt.cli.main import OPTION_METHODS, check_plan_options

    problem = SimpleNamespace(solver=SimpleNamespace(method="auto"), source="p.toml")
    args = SimpleNamespace(step=1e-3, method=None, **{option: "x" for option in OPTION_METHODS})
    check_plan_options(args, problem)  # no error
    with pytest.raises(Exception, match="--backend does not apply to method bdf"):
        check_plan_options(SimpleNamespace(**{**vars(args), "method": "bdf", "order": None, "form": None,
                                              "scaling_power": None}), problem)


def test_a_standstill_path_is_planned_with_a_warning(tmp_path, capsys):
    """start == end: the plan holds the arm still, and says so (exit 0)."""
    data = copy.deepcopy(BASES["two_link_elastic"])
    data["reference"]["end_mm"] = data["reference"]["start_mm"]
    problem = tmp_path / "still.toml"
    problem.write_text(toml_text(data))
    assert main(["plan", str(problem), "--out", str(tmp_path / "res"), "--no-plots", "--no-verify"]) == 0
    err = capsys.readouterr().err
    assert "warning: " in err and "start and end are the same" in err and "standstill plan" in err
    import json

    summary = json.loads((tmp_path / "res" / "summary.json").read_text())
    assert any("standstill plan" in w for w in json.dumps(summary).split('"') if w)


def test_numerical_failures_that_slip_past_the_checks_are_one_line(monkeypatch, capsys):
    """A LinAlgError or MemoryError from deep inside a solve is one line (exit 1 / 2), never a traceback."""
    import numpy as np

    def broken(args):
        raise np.linalg.LinAlgError("SVD did not converge")

    import ffopt.cli.main as cli

    parser = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda: _with_func(parser(), broken))
    assert main(["plan", "x.toml", "--out", "y"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "numerical failure (LinAlgError: SVD did not converge)" in err[0]

    def no_memory(args):
        raise MemoryError()

    monkeypatch.setattr(cli, "build_parser", lambda: _with_func(parser(), no_memory))
    assert main(["plan", "x.toml", "--out", "y"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory" in err[0] and "--step" in err[0]


def _with_func(parser, func):
    parser._subparsers._group_actions[0].choices["plan"].set_defaults(func=func)
    return parser
