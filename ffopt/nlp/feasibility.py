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
    u, t = np.asarray(warm.u), np.asarray(warm.t)
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
    """Raise SolverError for bounds no plan can meet; return warnings for bounds that cost tool accuracy."""
    errors, warnings = [], []
    exact_causal = tracking == "exact" and not noncausal
    mode = f"{tracking} tracking" + (" (non-causal)" if noncausal else "")
    if torque_max is not None:
        for j, bound in enumerate(torque_max):
            errors += _holding_errors(needs, j, bound)
            if needs.peak is not None and needs.peak[j] > bound * (1 + PEAK_MARGIN):
                text = (f"nlp.torque_max[{j + 1}] = {_fmt(bound)} N m ({_motor(needs, j)}) is "
                        f"{bound / needs.peak[j]:.0%} of the {_fmt(needs.peak[j])} N m that exact tracking needs at "
                        f"t = {needs.t_peak[j]:.4g} s")
                (errors if exact_causal else warnings).append(text)
    if rate_max is not None and needs.peak_rate is not None:
        for j, bound in enumerate(rate_max):
            if needs.peak_rate[j] > bound * (1 + RATE_MARGIN):
                text = (f"nlp.torque_rate_max[{j + 1}] = {_fmt(bound)} N m/s ({_motor(needs, j)}) is "
                        f"{bound / needs.peak_rate[j]:.0%} of the {_fmt(needs.peak_rate[j])} N m/s that exact tracking "
                        f"needs at t = {needs.t_peak_rate[j]:.4g} s")
                (errors if exact_causal else warnings).append(text)
    if errors:
        raise SolverError(_infeasible_message(errors, exact_causal, mode))
    if not warnings:
        return []
    cost = ("the tool must leave the path to stay within the bounds"
            + (f" ({'the band may be infeasible' if tracking == 'band' else 'the penalty trades tool error for torque'}"
               "; the further below, the larger the error and the longer the solve)" if tracking != "exact" else ""))
    return [f"warning: {w}: {cost}" for w in warnings]


def _holding_errors(needs: TorqueNeeds, j: int, bound: float) -> list[str]:
    out = []
    for t, hold in needs.hold:
        if hold[j] > bound * (1 + 1e-9):
            where = "at the start of the path" if t == 0.0 else "at the end of the path"
            out.append(f"nlp.torque_max[{j + 1}] = {_fmt(bound)} N m ({_motor(needs, j)}) is below the {_fmt(hold[j])} N m "
                       f"needed to hold the arm at rest {where} (t = {t:.4g} s, gravity against the gears and "
                       "springs): infeasible for every tracking mode")
    return out


def _fmt(x: float) -> str:
    """A torque for a message: whole N m from 100 up, else 4 significant digits."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.4g}"


def _motor(needs: TorqueNeeds, j: int) -> str:
    return f"motor of joint {needs.motors[j]}"


def _infeasible_message(errors: list[str], exact_causal: bool, mode: str) -> str:
    holding = any("to hold the arm" in e for e in errors)
    advice = []
    if holding:
        advice.append("raise nlp.torque_max at least to the holding torques (a motion needs more), or move the "
                      "path where gravity loads the motors less")
    if exact_causal and not all("to hold the arm" in e for e in errors):
        advice.append("exact causal tracking from rest determines u uniquely: set nlp.tracking = 'band' (with "
                      "nlp.band_mm) or 'penalty' to trade tool error for torque, raise the bounds, or slow the motion "
                      "(reference.duration)")
    return (f"NLP infeasible ({mode}), found before solving: " + "; ".join(errors) + ". What to try: "
            + "; ".join(advice) + ".")
