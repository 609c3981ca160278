"""The control targets on E12 (slow: about 20 closed-loop runs).

Nominal plant, motor PD: the elastic feedforward at least 100x better in max tool error than PD with
static gravity compensation only (Tomei) and at least 10x better than the rigid-model feedforward.
Gear/joint stiffness +-20 % or a tool payload of +10 % of the moving mass: the elastic feedforward
with feedback still at least 10x better than Tomei's PD (Thuemmel, Otter & Bals report an order of
magnitude for a half and a double load on the Manutec r3).
"""

from pathlib import Path

import pytest

import ffopt
from ffopt.control import mismatch as mm

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def e12():
    problem = ffopt.load_problem(ROOT / "problems" / "e12_line.toml")
    return problem, ffopt.plan(problem, verify=False)


def test_e12_nominal_elastic_feedforward_beats_tomei_100x_and_rigid_10x(e12):
    problem, plan = e12
    c = ffopt.simulate(problem, plan, controller="pd", baselines=True).cases
    elastic = c["feedforward_pd"].max_mm
    assert elastic < 0.1  # E12's 0.1 mm target (results/README.md); measured 0.028 mm on 2026-11-27
    assert c["static_compensation_pd"].max_mm > 100 * elastic
    assert c["rigid_feedforward_pd"].max_mm > 10 * elastic


@pytest.mark.parametrize("label, change", [
    ("stiffness x0.8", lambda ch: mm.scaled_stiffness(ch, 0.8)),
    ("stiffness x1.2", lambda ch: mm.scaled_stiffness(ch, 1.2)),
    ("tool payload +10 %", lambda ch: mm.tool_payload(ch, 0.1)),
])
def test_e12_mismatch_elastic_feedforward_with_feedback_beats_tomei_10x(e12, label, change):
    problem, plan = e12
    plant = problem.model.variant(change(problem.chain))
    tomei = ffopt.simulate(problem, plan, plant=plant, controller="pd", baselines=True,
                           plant_label=label).cases["static_compensation_pd"].max_mm
    state = ffopt.simulate(problem, plan, plant=plant, controller="pd+state",
                           plant_label=label).cases["feedforward_pd_state"].max_mm
    assert tomei > 10 * state, f"{label}: Tomei PD {tomei:.4g} mm, elastic feedforward + PD + state {state:.4g} mm"
