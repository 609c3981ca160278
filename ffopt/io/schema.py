"""A small strict validator for TOML problem files: unknown keys, wrong types and bad values
are reported with the file and the dotted field name, e.g. ``e12.toml: model.joints[2].mass``."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable

from ffopt.errors import ProblemError


@dataclass(frozen=True)
class Field:
    kind: str  # "float", "int", "str", "bool", "vector", "matrix", "table", "tables", "floats",
    #            "number_or_vector" (a number, or an array of numbers), "raw_table" (checked by the caller)
    required: bool = False
    default: Any = None
    length: int | None = None  # for vectors
    check: Callable[[Any], str | None] | None = None  # returns an error text or None
    choices: tuple[str, ...] | None = None
    schema: dict | None = None  # for table / tables
    doc: str = ""  # what the key means (``ffopt schema`` prints it; tests require one for every key)
    unit: str = ""  # SI unit of the value ("" for a pure number or a name); mm/deg only where the key says so


def positive(x):
    return None if x > 0 else f"must be > 0, got {x}"


def non_negative(x):
    return None if x >= 0 else f"must be >= 0, got {x}"


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Validator:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, what: str):
        raise ProblemError(f"{self.source}: {where}: {what}")

    def table(self, data: Any, schema: dict[str, Field], where: str) -> dict:
        if not isinstance(data, dict):
            self.fail(where or "top level", f"expected a table, got {type(data).__name__}")
        for key in data:
            if key not in schema:
                close = difflib.get_close_matches(key, list(schema), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(schema)})"
                self.fail(_join(where, key), f"unknown key{hint}")
        out = {}
        for key, field in schema.items():
            path = _join(where, key)
            if key not in data:
                if field.required:
                    self.fail(path, "missing required key")
                out[key] = field.default
                continue
            out[key] = self.value(data[key], field, path)
        return out

    def value(self, x: Any, field: Field, where: str) -> Any:
        kind = field.kind
        if kind == "float":
            if not _is_number(x) or not math.isfinite(x):
                self.fail(where, f"expected a finite number, got {x!r}")
            x = float(x)
        elif kind == "int":
            if not isinstance(x, int) or isinstance(x, bool):
                self.fail(where, f"expected an integer, got {x!r}")
        elif kind == "str":
            if not isinstance(x, str):
                self.fail(where, f"expected a string, got {x!r}")
            if field.choices and x not in field.choices:
                self.fail(where, f"must be one of {', '.join(field.choices)}; got {x!r}")
        elif kind == "bool":
            if not isinstance(x, bool):
                self.fail(where, f"expected true or false, got {x!r}")
        elif kind in ("vector", "floats"):
            x = self.vector(x, where, field.length)
        elif kind == "number_or_vector":
            x = float(x) if _is_number(x) and math.isfinite(x) else self.vector(x, where, field.length)
        elif kind == "raw_table":
            if not isinstance(x, dict):
                self.fail(where, f"expected a table, got {type(x).__name__}")
        elif kind == "matrix":
            x = self.matrix(x, where)
        elif kind == "table":
            x = self.table(x, field.schema, where)
        elif kind == "tables":
            if not isinstance(x, list) or not x:
                self.fail(where, "expected a non-empty array of tables ([[...]] entries)")
            x = [self.table(item, field.schema, f"{where}[{i + 1}]") for i, item in enumerate(x)]
        if field.check is not None:
            problem = field.check(x)
            if problem:
                self.fail(where, problem)
        return x

    def vector(self, x, where, length=None):
        if not isinstance(x, list) or not all(_is_number(v) and math.isfinite(v) for v in x):
            self.fail(where, f"expected an array of finite numbers, got {x!r}")
        if length is not None and len(x) != length:
            self.fail(where, f"expected {length} numbers, got {len(x)}")
        return [float(v) for v in x]

    def matrix(self, x, where):
        if not isinstance(x, list) or not x or not all(isinstance(r, list) for r in x):
            self.fail(where, "expected an array of rows, e.g. [[1, 0], [0, 1]]")
        rows = [self.vector(r, f"{where}[{i + 1}]") for i, r in enumerate(x)]
        if len({len(r) for r in rows}) != 1:
            self.fail(where, "rows have different lengths")
        return rows


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
