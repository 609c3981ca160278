"""ffopt.plan as a package: the method registry holds every method the schema and the CLI offer, plan() takes
its settings by keyword only, and the rest-to-rest records write summary.json's method_choice.rest_to_rest."""

import pytest

from ffopt.cli.main import build_parser
from ffopt.io.problem import NLP_SCHEMA, OUTPUT_SCHEMA, SOLVER_SCHEMA, VERIFICATION_SCHEMA
from ffopt.settings.methods import BDF_FAMILY, BDF_ORDER_MAX, BDF_ORDER_MIN, METHODS, MOBERG_HANSSEN_METHODS
from ffopt.plan import METHODS as REGISTRY
from ffopt.io.problem import load_problem
from ffopt.plan import PlanOverrides, RestToRest, RobustRest, Run, check_problem, make_plan, plan


def test_the_registry_holds_every_method_but_auto_which_chooses_among_them():
    assert set(REGISTRY) | {"auto"} == set(METHODS)
    assert [name for name in REGISTRY if REGISTRY[name].steps_bdf] == [m for m in METHODS if m in BDF_FAMILY]
    assert set(MOBERG_HANSSEN_METHODS) < set(BDF_FAMILY)


def test_the_schema_and_the_cli_offer_the_same_choices():
    assert tuple(SOLVER_SCHEMA["method"].choices) == METHODS
    options = {a.dest: a for a in build_parser()._subparsers._group_actions[0].choices["plan"]._actions}
    schema = {"method": SOLVER_SCHEMA["method"], "form": SOLVER_SCHEMA["form"], "backend": NLP_SCHEMA["backend"],
              "warm_start": NLP_SCHEMA["warm_start"], "verify": VERIFICATION_SCHEMA["cases"],
              "hold": OUTPUT_SCHEMA["hold"]}
    for dest, field in schema.items():
        assert tuple(options[dest].choices) == tuple(field.choices), dest
    assert tuple(options["order"].choices) == tuple(range(BDF_ORDER_MIN, BDF_ORDER_MAX + 1))


def test_plan_takes_settings_by_keyword_and_refuses_unknown_ones():
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['ordre'\]"):
        plan("problems/e12_line.toml", ordre=5)
    with pytest.raises(TypeError):
        plan("problems/e12_line.toml", "bdf")  # positional settings: no more
    assert PlanOverrides(order=5).order == 5


def test_rest_records_write_the_summary_keys():
    end = {"peak_input": 2.0}
    record = RestToRest(needed=True, exact_plan_end=end, search={"needed": True, "iterations": 3,
                                                                   "duration_needed_s": 0.4})
    record.shaped, record.reason = False, "no law"
    assert record.to_dict() == {"exact_plan_end": end, "needed": True, "iterations": 3, "duration_needed_s": 0.4,
                                "shaped": False, "reason": "no law"}
    assert record.duration_needed_s == 0.4
    only_robust = RestToRest(needed=False, robust=RobustRest("zvd", [[1.0, 0.0]], 0.1, plain=None, robust={}))
    assert only_robust.to_dict() == {"needed": False, "robust": {"shaper": "zvd", "modes_hz_damping": [[1.0, 0.0]],
                                                                 "scale": 0.1, "plain": None, "robust": {}}}


def test_a_search_over_the_duration_plans_each_candidate():
    """check_problem + make_plan: one candidate plan without verification (what a duration search calls)."""
    problem = load_problem("problems/e12_line.toml").with_values({"solver.method": "bdf", "solver.step": 2e-3})
    for duration in (0.3, 0.4):
        candidate, _ = check_problem(problem.with_values({"reference.duration": duration}), Run(compile=False))
        planned = make_plan(candidate, Run(compile=False))
        assert planned.trajectory.t[-1] == pytest.approx(candidate.reference.t_end)
        assert planned.rest_to_rest is None or planned.rest_to_rest.shaped is not None
        assert set(planned.timings) >= {"inverse_dynamics"}
