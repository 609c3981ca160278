"""Problem fields by dotted name: ``problem.with_values({"model.joints.q3.stiffness": 8e4})``.

A dotted name walks the problem file's tables: ``reference.duration``, ``nlp.torque_max``,
``solver.order``. An entry of an array of tables is picked by its ``name`` (``model.joints.q3``) or
by its 1-based position in brackets, as error messages write it (``model.joints[3]``); an element of
an array likewise (``nlp.torque_max[2]``). A missing table is created (``nlp.step`` on a problem
without ``[nlp]``). The changed table is validated again exactly like a file, and an error names the
dotted key that caused it.
"""

from __future__ import annotations

import copy
import difflib
import re

import numpy as np

from ffopt.errors import ProblemError

_NAME = r"[^.\[\]]+"
_TOKEN = re.compile(rf"({_NAME})|\[(\d+)\]")
_KEY = re.compile(rf"{_NAME}(\[\d+\])*(\.{_NAME}(\[\d+\])*)*")


def plain(value):
    """``value`` with NumPy scalars and arrays and tuples turned into Python numbers and lists (as TOML reads)."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def split_key(key: str) -> list[str | int]:
    """'model.joints[3].stiffness' -> ['model', 'joints', 3, 'stiffness'] (ints: 1-based positions)."""
    if not isinstance(key, str) or not key:
        raise ProblemError(f"with_values: field names are dotted strings such as 'reference.duration', got {key!r}")
    if not _KEY.fullmatch(key):
        raise ProblemError(f"with_values: {key!r} is not a dotted field name (e.g. 'model.joints.q3.stiffness', "
                           "'model.joints[3].stiffness', 'nlp.torque_max[2]')")
    tokens = [m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _TOKEN.finditer(key)]
    return tokens


def set_value(data: dict, key: str, value) -> str:
    """Set field ``key`` of the raw problem table ``data`` in place; returns its path as the validator
    names it (e.g. 'model.joints[3].stiffness')."""
    tokens = split_key(key)
    node, path, i = data, "", 0
    while True:
        container, slot, path, i = _step(node, tokens, i, path, key)
        if i == len(tokens):
            container[slot] = plain(value)
            return path
        if isinstance(container, dict) and slot not in container:
            container[slot] = {}  # a table the file left out, e.g. [nlp]
        node = container[slot]


def _step(node, tokens, i, path, key):
    """Resolve tokens[i] (or several, for a dotted entry name) in ``node``: (container, slot, path, next i)."""
    tok = tokens[i]
    if isinstance(node, dict):
        if isinstance(tok, int):
            raise ProblemError(f"with_values: {key!r}: {path or 'the top level'} is a table, not an array; "
                               "name a key instead of [position]")
        return node, tok, f"{path}.{tok}" if path else tok, i + 1
    if isinstance(node, list):
        if isinstance(tok, int):
            if not 1 <= tok <= len(node):
                raise ProblemError(f"with_values: {key!r}: {path} has {len(node)} entries; positions are 1..{len(node)}")
            return node, tok - 1, f"{path}[{tok}]", i + 1
        names = [e.get("name") if isinstance(e, dict) else None for e in node]
        for j in range(len(tokens), i, -1):  # names may contain dots: the longest that matches
            name = ".".join(str(t) for t in tokens[i:j])
            if all(isinstance(t, str) for t in tokens[i:j]) and name in names:
                k = names.index(name)
                return node, k, f"{path}[{k + 1}]", j
        known = [n for n in names if isinstance(n, str)]
        close = difflib.get_close_matches(str(tok), known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        what = f"names: {', '.join(known)}" if known else "its entries have no names"
        raise ProblemError(f"with_values: {key!r}: {path} has no entry named {tok!r}{hint} ({what}; or give a "
                           f"1-based position, {path}[1])")
    raise ProblemError(f"with_values: {key!r}: {path} is a value ({node!r}), not a table or an array")


def with_values(raw: dict, values: dict, validate, source: str):
    """Apply ``values`` {dotted name: value} to a copy of ``raw`` and validate it with
    ``validate(data, source)``; a ProblemError names the dotted key(s) behind it."""
    if not isinstance(values, dict):
        raise ProblemError(f"with_values: expected a dict of dotted field names and values, got {type(values).__name__}")
    data = copy.deepcopy(raw)
    try:
        paths = {key: set_value(data, key, value) for key, value in values.items()}
    except ProblemError as err:
        raise ProblemError(f"{source}: {err}") from None
    try:
        return validate(data, source)
    except ProblemError as err:
        raise ProblemError(f"{err} ({_culprits(str(err), source, paths, values)})") from None


def _culprits(message: str, source: str, paths: dict[str, str], values: dict) -> str:
    """The overridden keys an error message is about (else all of them)."""
    field = message[len(source) + 2:] if message.startswith(f"{source}: ") else message
    field = field.split(": ", 1)[0]
    hit = [k for k, p in paths.items() if field == p or field.startswith((p + ".", p + "[")) or p.startswith(
        (field + ".", field + "["))]
    keys = hit or list(paths)
    shown = ", ".join(f"{k!r} = {plain(values[k])!r}" for k in keys)
    return f"set by with_values: {shown}" if hit else f"after with_values: {shown}"
