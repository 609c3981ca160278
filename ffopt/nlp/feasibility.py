"""Torque and torque-rate bounds against what the motion needs, checked before the NLP is solved.

What is known before IPOPT runs:

- Holding torques. Every plan starts with the robot at rest in static equilibrium at the start
  of the path and ends holding the end point; the motor torques there are the static torques
  u = input_torque(q_eq, 0, 0) (gravity against the gears and springs). No tracking mode avoids
  them: a bound below them leaves the robot unable to stay where the path starts or ends.
- What exact tracking needs. Causal exact tracking from rest determines u uniquely (the inverse
  model, Moberg & Hanssen); the BDF solution (the NLP's warm start) gives its peak |u| and peak
  |du/dt| per motor, and when they occur.

Per tracking mode:

| a bound below                      | exact, causal | exact non-causal, band, penalty            |
|------------------------------------|---------------|--------------------------------------------|
| a holding torque (start or end)    | infeasible    | infeasible                                 |
| the exact-tracking peak torque/rate| infeasible    | costly: the tool must leave the path (warn) |

Infeasible: SolverError before any solver iteration. Costly: a warning with the numbers, then the
solve within its limits (band tracking may still prove infeasible there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ffopt.dae.equilibrium import static_equilibrium
from ffopt.errors import SolverError

RATE_MARGIN = 0.05  # the BDF's finite-difference rate vs the NLP's rate rows: different grids
PEAK_MARGIN = 1e-3  # the BDF peak vs the NLP's collocation points


@dataclass(frozen=True)
class TorqueNeeds:
    """What the motion needs per motor (N m, N m/s) and when (s)."""

    motors: tuple[str, ...]  # the actuated joints' names, in u order
    hold: tuple[tuple[float, np.ndarray], ...]  # (t, |u| at rest) at the start and the end of the path
    peak: np.ndarray | None = None  # exact tracking (BDF): peak |u|
    t_peak: np.ndarray | None = None
    peak_rate: np.ndarray | None = None  # exact tracking (BDF): peak |du/dt|
    t_peak_rate: np.ndarray | None = None


def torque_needs(model, reference, q_start: np.ndarray, warm=None, qa_guess=None) -> TorqueNeeds:
    """Holding torques at the start and end of the path; exact-tracking peaks from ``warm`` (BDF)."""
    L = model.layout
    zero = np.zeros(L.nq)
    hold_start = np.abs(np.array(model.input_torque(q_start, zero, zero)).ravel())
    t_end = float(reference.t_end)
    y_end = np.asarray(reference.evaluate(np.array([t_end]))).ravel()
    qa_end = _end_configuration_guess(model, reference, warm, qa_guess)
    q_end = static_equilibrium(model, y_end, qa_end, where="the end of the path")
    hold_end = np.abs(np.array(model.input_torque(q_end, zero, zero)).ravel())
    motors = tuple(model.chain.joints[i].name for i in L.actuated)
    needs = TorqueNeeds(motors, ((0.0, hold_start), (t_end, hold_end)))
    if warm is None:
        return needs
    u, t = np.asarray(warm.torques), np.asarray(warm.t)
    rate = np.abs(np.diff(u, axis=0) / np.diff(t)[:, None])
    k, kr = np.argmax(np.abs(u), axis=0), np.argmax(rate, axis=0)
    cols = np.arange(u.shape[1])
    t_mid = 0.5 * (t[1:] + t[:-1])
    return TorqueNeeds(motors, needs.hold, np.abs(u[k, cols]), t[k], rate[kr, cols], t_mid[kr])


def _end_configuration_guess(model, reference, warm, qa_guess):
    """Link angles near the end of the path: the BDF's last state, else the rigid inverse
    kinematics continued along the path from the start guess."""
    if warm is not None:
        return np.asarray(warm.q)[-1, : model.layout.n_link]
    from ffopt.sim.baselines import rigid_inverse_kinematics

    t = np.linspace(0.0, reference.t_end, 41)
    return rigid_inverse_kinematics(model, reference, t, qa_guess)[-1]


def check_bounds(needs: TorqueNeeds, torque_max: np.ndarray | None, rate_max: np.ndarray | None, tracking: str,
                 noncausal: bool) -> list[str]:
    """Raise SolverError for bounds no plan can meet; return a warning line (or none) for bounds that
    cost tool accuracy."""
    holding, below_need = [], []
    if torque_max is not None:
        for j, bound in enumerate(torque_max):
            holding += _holding_error(needs, j, bound)
            if needs.peak is not None and needs.peak[j] > bound * (1 + PEAK_MARGIN):
                below_need.append(f"nlp.torque_max[{j + 1}] = {_fmt(bound)} N m ({_motor(needs, j)}) is "
                                  f"{bound / needs.peak[j]:.0%} of the {_fmt(needs.peak[j])} N m that exact tracking "
                                  f"needs at t = {needs.t_peak[j]:.4g} s")
    if rate_max is not None and needs.peak_rate is not None:
        for j, bound in enumerate(rate_max):
            if needs.peak_rate[j] > bound * (1 + RATE_MARGIN):
                below_need.append(f"nlp.torque_rate_max[{j + 1}] = {_fmt(bound)} N m/s ({_motor(needs, j)}) is "
                                  f"{bound / needs.peak_rate[j]:.0%} of the {_fmt(needs.peak_rate[j])} N m/s that exact "
                                  f"tracking needs at t = {needs.t_peak_rate[j]:.4g} s")
    exact_causal = tracking == "exact" and not noncausal
    if holding or (below_need and exact_causal):
        raise SolverError(_infeasible_message(holding, below_need if exact_causal else []))
    if not below_need:
        return []
    cost = {"band": "the band may be infeasible", "penalty": "the penalty trades tool error for torque"}.get(
        tracking, "pre-actuation may or may not make up for it")
    return [f"warning: {'; '.join(below_need)}. The tool must leave the path to stay within the bounds ({cost}; "
            "the further below, the larger the error and the longer the solve)"]


def _holding_error(needs: TorqueNeeds, j: int, bound: float) -> list[str]:
    """The largest holding torque of motor j that exceeds its bound, as a message item (or none)."""
    t, hold = max(needs.hold, key=lambda th: th[1][j])
    if hold[j] <= bound * (1 + 1e-9):
        return []
    where = "at the start of the path" if t == 0.0 else "at the end of the path"
    return [f"nlp.torque_max[{j + 1}] = {_fmt(bound)} N m ({_motor(needs, j)}) is below the {_fmt(hold[j])} N m "
            f"needed to hold the arm at rest {where} (t = {t:.4g} s)"]


def _fmt(x: float) -> str:
    """A torque for a message: whole N m from 100 up, else 4 significant digits."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.4g}"


def _motor(needs: TorqueNeeds, j: int) -> str:
    return f"motor of joint {needs.motors[j]}"


def _infeasible_message(holding: list[str], below_need: list[str]) -> str:
    parts, advice = [], []
    if holding:
        parts.append("the arm cannot be held at rest under the torque bounds (gravity against the gears and "
                     "springs), infeasible for every tracking mode: " + "; ".join(holding))
        advice.append("raise nlp.torque_max at least to the holding torques (a motion needs more), or move the "
                      "path where gravity loads the motors less")
    if below_need:
        parts.append("exact causal tracking from rest determines u uniquely, and it needs more: " + "; ".join(below_need))
        advice.append("set nlp.tracking = 'band' (with nlp.band_mm) or 'penalty' to trade tool error for torque, "
                      "raise the bounds, or slow the motion (reference.duration)")
    return "NLP infeasible, found before solving: " + ". And ".join(parts) + ". What to try: " + "; ".join(advice) + "."
