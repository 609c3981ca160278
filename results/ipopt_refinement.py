"""IPOPT's iterative refinement of its Newton steps on the NLPs ffopt solves: IPOPT's defaults (at least one
refinement step per solve, residuals checked) against none unless a residual asks for it
(``min_refinement_steps = 0``) and against no residual checks at all (``fast_step_computation = yes``), each plan
with the defaults otherwise (IPOPT through its C interface, MUMPS).

    python results/ipopt_refinement.py [--n 30] [--seed 20261126] [--no-canadarm]

The plans are those of results/mumps_scaling.py: the non-minimum-phase arms among the first n drawn by
tests/random_arms.py and the shipped problems that plan by the NLP. Per plan and setting: the NLP stage's CPU
time (this process and its IPOPT worker), IPOPT iterations, the PD-verified tool error during the move and the
verdict. The setting is switched by replacing ``ipopt_options`` in the IPOPT backends (a study, not an option
users need).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "results"))

from mumps_scaling import settings_table  # noqa: E402

import ffopt  # noqa: E402
from ffopt.nlp.backends import casadi_ipopt, common, cyipopt_backend, ipopt_c  # noqa: E402

SETTINGS = {"IPOPT's defaults": {"min_refinement_steps": 1, "fast_step_computation": "no"},
            "min_refinement_steps 0": {"min_refinement_steps": 0, "fast_step_computation": "no"},
            "+ fast_step_computation": {"min_refinement_steps": 0, "fast_step_computation": "yes"}}


def with_options(changes: dict):
    def options(*args, **kwargs):
        return {**common.ipopt_options(*args, **kwargs), **changes}
    return options


def run(problem) -> dict:
    result = ffopt.plan(problem, progress=False)
    st, ver = result.trajectory.stats, result.verification
    return {"cpu_s": st.get("cpu_time_nlp_stage_s", float("nan")), "iterations": st.get("iterations_total"),
            "pd_mm": ver.cases["feedforward_pd"].max_mm, "status": ver.status}


def _cell(r) -> str:
    """NLP CPU s / iterations / PD mm"""
    return f"{r['cpu_s']:.2f} / {r['iterations']} / {r['pd_mm']:.3g}"


def _patch(changes: dict) -> None:
    ipopt_c.ipopt_options = cyipopt_backend.ipopt_options = casadi_ipopt.ipopt_options = with_options(changes)


def main(argv=None) -> int:
    return settings_table(SETTINGS, _patch, run, _cell, "cpu_s", argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
