"""Settings said once and documented as they behave (as python-control's docstring test holds its docstrings to
the code): every schema default equals its settings dataclass's default, every key of a problem table is in
docs/problem-format.md with that default, the enumerations are the code's own constants, and the descriptions of
nlp.backend = "auto" and nlp.pre_actuation_s say what the code does."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from ffopt.io import problem as problem_module
from ffopt.io import reference_spec
from ffopt.io.format_reference import key_default
from ffopt.settings.methods import METHODS
from ffopt.settings import nlp as nlp_settings
from ffopt.nlp.backends import casadi_ipopt, ipopt_c
from ffopt.nlp.solve import pre_actuation_rate
from ffopt.reference.shaping import SHAPERS
from ffopt.reference.time_laws import TIME_LAWS

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "problem-format.md").read_text()
# a problem table's schema and the settings dataclass it fills
TABLES = [("solver", problem_module.SOLVER_SCHEMA, problem_module.SolverSettings),
          ("verification", problem_module.VERIFICATION_SCHEMA, problem_module.VerificationSettings),
          ("nlp", problem_module.NLP_SCHEMA, nlp_settings.NlpSettings),
          ("output", problem_module.OUTPUT_SCHEMA, problem_module.OutputSettings)]


def _plain(x):
    return tuple(x) if isinstance(x, list) else x


@pytest.mark.parametrize("table, schema, settings", TABLES, ids=[t[0] for t in TABLES])
def test_schema_defaults_are_the_dataclass_defaults(table, schema, settings):
    defaults = {f.name: f.default for f in dataclasses.fields(settings) if f.default is not dataclasses.MISSING}
    keys = set(schema) & set(defaults)
    assert keys, table
    differ = {k: (schema[k].default, defaults[k]) for k in keys if _plain(schema[k].default) != defaults[k]}
    assert not differ, f"[{table}] schema default != dataclass default: {differ}"


@pytest.mark.parametrize("table, schema, settings", TABLES, ids=[t[0] for t in TABLES])
def test_every_key_is_documented_with_its_default(table, schema, settings):
    section = PAGE.split(f"### `[{table}]`\n", 1)[1].split("\n### ", 1)[0]
    for key, field in schema.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{key}` |")), None)
        assert row is not None, f"{table}.{key} is not in docs/problem-format.md"
        default = key_default(field)
        assert default in row, f"{table}.{key}: default {default} not in its row {row!r}"


def test_enumerations_are_the_codes_constants():
    assert tuple(problem_module.SOLVER_SCHEMA["method"].choices) == METHODS
    assert tuple(problem_module.NLP_SCHEMA["backend"].choices) == nlp_settings.BACKENDS
    assert tuple(reference_spec.SCHEMAS["line"]["shaper"].choices) == SHAPERS
    assert set(reference_spec.SCHEMAS["line"]["time_law"].choices) == set(TIME_LAWS) | {"spline"}  # + time_law_spline


def test_backend_auto_is_documented_as_it_chooses(monkeypatch):
    """auto: Newton for a square NLP, else IPOPT's C interface (ipopt-c) where its library is found."""
    monkeypatch.setattr(ipopt_c, "available", lambda library: True)
    monkeypatch.setattr(ipopt_c, "solve", lambda *args, **kwargs: "ipopt-c")
    chosen = casadi_ipopt.solve_auto(SimpleNamespace(info={}), False, 1e-8, None, square_by_newton=False)
    doc = problem_module.NLP_SCHEMA["backend"].doc
    assert chosen == "ipopt-c" and "else ipopt-c" in doc and "else cyipopt (" not in doc
    assert "else ipopt-c" in PAGE


def test_pre_actuation_is_documented_as_the_slowest_unstable_zero():
    slow, fast = complex(2.0, 0.0), complex(50.0, 0.0)
    rep = SimpleNamespace(slowest_unstable_zero=lambda: (slow, 0.0), worst_zero=fast)
    assert pre_actuation_rate(rep) == 2.0
    doc = problem_module.NLP_SCHEMA["pre_actuation_s"].doc
    assert "slowest unstable zero" in doc and "worst" not in doc
