"""After the table: the settle window, the distance from rest and the plan's verdict.

A feedforward table ends; the controller then holds the robot at its final pose. What the tool does
after that is the residual vibration a user sees, so every verification case goes on past the last
row for a settle window with what a controller does when a table ends:

- the torque is the static (holding) torque of the final pose: the static equilibrium with the tool
  at the path's end point (``hold_pose``), not the table's last row;
- a case with the motor PD loop tracks the static motor angles of that pose (speed reference 0).

Baselines planned on another model (rigid feedforward, PD alone) hold their own last row instead.
Each case reports the residual (largest tool error in the window, against the path's end point), the
settling time (after the table's end, until the tool stays within the tolerance) and, at the table's
last row, how far the simulated robot is from rest (largest link and motor speed, applied torque
minus the static torque).

The verdict: a plan states its tolerance (``[verification] tolerance_mm``, by default 1e-4 of the
arm's reach; ``tolerance_mrad`` for angle outputs, by default 0.1 mrad) and is ``verified`` when the
judged case (the plan with the motor PD loop, the two-degree-of-freedom structure of Thuemmel, Otter
& Bals) stays within it during the move and in the settle window; otherwise ``missed_tolerance``,
with the case, the time, the error and the likely cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

MIN_SETTLE_S = 1.0
SETTLE_PERIODS = 3.0  # default window: this many periods of the held arm's slowest mode
MAX_SETTLE_S = 30.0
MAX_SETTLE_POINTS = 2000
DEFAULT_TOLERANCE_REACH = 1e-4  # default tolerance_mm: this fraction of the arm's reach
DEFAULT_TOLERANCE_MRAD = 0.1
JUDGED_CASE = "feedforward_pd"


@dataclass
class Hold:
    """What the controller applies after the table: input u, drive states z, motor-angle reference qm
    (None: no PD loop), at the plant configuration q it should hold."""

    u: np.ndarray
    qm: np.ndarray | None
    q: np.ndarray | None = None
    z: np.ndarray | None = None


def hold_pose(model, q_end: np.ndarray) -> Hold:
    """The static hold of configuration ``q_end`` (the static equilibrium of the final pose): holding
    input (torque, or voltage with DC-motor electrics) and the static motor angles."""
    u, z = model.rest_input(q_end)
    return Hold(u=u, qm=np.asarray(q_end, float)[model.layout.motor_of_input], q=np.asarray(q_end, float), z=z)


def settle_duration(model, q_hold, kp, kd, requested: float | None = None) -> tuple[float, dict]:
    """The settle window (s) and what it was derived from: ``requested`` if given, else SETTLE_PERIODS
    periods of the slowest vibration mode (damped frequency) of the arm held by the motor PD at q_hold (at least MIN_SETTLE_S, at
    most MAX_SETTLE_S)."""
    if requested is not None:
        return float(requested), {"settle_s_source": "verification.settle_s"}
    lam = held_eigenvalues(model, q_hold, kp, kd)
    ringing = lam[np.abs(lam.imag) > 1e-6]  # vibration modes (real poles are creep, not ringing)
    if ringing.size == 0:
        return MIN_SETTLE_S, {"settle_s_source": f"minimum {MIN_SETTLE_S:g} s (no vibration mode)"}
    slowest_hz = float(np.abs(ringing.imag).min() / (2 * np.pi))
    duration = float(np.clip(SETTLE_PERIODS / slowest_hz, MIN_SETTLE_S, MAX_SETTLE_S))
    return duration, {"settle_s_source": f"{SETTLE_PERIODS:g} periods of the held arm's slowest mode "
                                         f"({slowest_hz:.3g} Hz), at least {MIN_SETTLE_S:g} s",
                      "slowest_mode_hz": slowest_hz}


def held_eigenvalues(model, q_hold, kp, kd) -> np.ndarray:
    """Eigenvalues of the plant linearised at rest in q_hold with the motor PD closed (rad/s)."""
    import casadi as ca

    from ffopt.cache import per_model

    L = model.layout
    x, u = model.sym("x", 2 * L.nq + model.n_z), model.sym("u", L.n_u)
    jac = per_model(model, "plant_jacobians", lambda: ca.Function(
        "plant_jac", [x, u], [ca.jacobian(model.plant_rhs(x, u), x), ca.jacobian(model.plant_rhs(x, u), u)]))
    hold = hold_pose(model, q_hold)
    x0 = np.concatenate([q_hold, np.zeros(L.nq), hold.z])
    A, B = (np.array(m) for m in jac(x0, hold.u))
    K = np.zeros((L.n_u, x0.size))  # u = u_hold - kp (qm - qm_hold) - kd dqm
    for j, m in enumerate(L.motor_of_input):
        K[j, m], K[j, L.nq + m] = kp[j], kd[j]
    return np.linalg.eigvals(A - B @ K)


def settle_grid(t_end: float, duration: float, step: float) -> np.ndarray:
    """Output grid of the settle window: the plan's step, or coarser to stay within MAX_SETTLE_POINTS."""
    dt = max(float(step), duration / MAX_SETTLE_POINTS)
    n = int(np.ceil(duration / dt - 1e-9))
    return t_end + np.linspace(0.0, n * dt, n + 1)


def default_tolerances(model) -> tuple[float, float]:
    """(tolerance_mm, tolerance_mrad) when the problem states none: 1e-4 of the arm's reach, 0.1 mrad."""
    from ffopt.sim.baselines import reach

    return DEFAULT_TOLERANCE_REACH * reach(model.chain) * 1000.0, DEFAULT_TOLERANCE_MRAD


@dataclass
class SettleMetrics:
    """One case after its table: residual (mm, mrad), settling time (s; None: not within the window)."""

    window_s: float
    residual_mm: float
    final_mm: float
    settling_time_s: float | None
    end_link_speed_rad_s: float
    end_motor_speed_rad_s: float
    end_torque_offset: float
    residual_mrad: float | None = None
    hold: str = ""
    residual_t_s: float = 0.0  # when the residual (largest tool error in the window) occurs
    settled_cycle_s: float | None = None  # motion start until the tool stays within the tolerance of the end pose


    def to_dict(self) -> dict:
        d = {"window_s": self.window_s, "residual_mm": self.residual_mm, "residual_t_s": self.residual_t_s,
             "final_mm": self.final_mm,
             "settling_time_s": self.settling_time_s,
             "end_link_speed_rad_s": self.end_link_speed_rad_s,
             "end_motor_speed_rad_s": self.end_motor_speed_rad_s,
             "end_torque_offset": self.end_torque_offset, "hold": self.hold,
             "settled_cycle_s": self.settled_cycle_s}
        if self.residual_mrad is not None:
            d["residual_mrad"] = self.residual_mrad
        return d


@dataclass(frozen=True, eq=False)
class SettleWindow:
    """The settle window after the table: its grid ``t``, the path's references on the table's grid (their last
    rows: the pose to hold), and the model whose outputs (and tolerances ``tol_mm``, ``tol_mrad``) judge it."""

    t: np.ndarray
    y_ref: np.ndarray
    tool_ref: np.ndarray | None
    model: object  # ffopt.models.flexible.FlexibleModel
    tol_mm: float
    tol_mrad: float
    motion: tuple[float, float] | None = None  # (start, end) of the path's motion on the table's grid (s)


def settle_metrics(window: SettleWindow, sim_move, sim_settle, hold: Hold, errors_mm, errors_mrad,
                   hold_text: str, table_outside=None) -> SettleMetrics:
    """Residual, settling time and distance from rest of one case (errors over the settle grid); table_outside:
    where on the table's grid the tool is outside the tolerance of the end pose (for the settled cycle)."""
    t = sim_settle.t
    outside = errors_mm > window.tol_mm
    if errors_mrad is not None:
        outside |= errors_mrad > window.tol_mrad
    settling = settled_cycle_time(t, outside, t[0], t[0])  # from the window's start: 0 if never outside
    L = window.model.layout
    motor = list(L.motor_of_input)
    link = [i for i in range(L.n_link)]
    v_end = sim_move.v[-1]
    cycle = None
    if window.motion is not None and table_outside is not None:
        cycle = settled_cycle_time(np.concatenate([sim_move.t, t[1:]]), np.concatenate([table_outside, outside[1:]]),
                                   *window.motion)
    return SettleMetrics(
        window_s=float(t[-1] - t[0]), residual_mm=float(errors_mm.max()), final_mm=float(errors_mm[-1]),
        settling_time_s=settling, end_link_speed_rad_s=float(np.abs(v_end[link]).max(initial=0.0)),
        end_motor_speed_rad_s=float(np.abs(v_end[motor]).max(initial=0.0)),
        end_torque_offset=float(np.abs(sim_move.u_applied[-1] - hold.u).max(initial=0.0)),
        residual_mrad=None if errors_mrad is None else float(errors_mrad.max()), hold=hold_text,
        residual_t_s=float(t[int(np.argmax(errors_mm))]), settled_cycle_s=cycle)


def settled_cycle_time(t: np.ndarray, outside: np.ndarray, t_start: float, t_motion_end: float) -> float | None:
    """From the motion's start t_start until the tool stays within the tolerance of the end pose for good: the
    sample after the last one outside it (``outside``, on t) after the motion's end (the motion's end if none is),
    minus t_start; None if it is still outside at the last sample."""
    late = outside & (t >= t_motion_end - 1e-12)
    if not late.any():
        return float(t_motion_end - t_start)
    last = int(np.nonzero(late)[0][-1])
    return None if last == len(t) - 1 else float(t[last + 1] - t_start)


def plan_end_state(model, traj) -> dict:
    """How far the plan itself (its table's last row) is from rest (``ffopt.dae.rest_to_rest.ends_at_rest``:
    speeds, input minus the static input), with the fastest link coordinate named."""
    from ffopt.models.equilibrium import ends_at_rest

    at_rest, end = ends_at_rest(model, traj)
    n_link = model.layout.n_link
    fastest = int(np.argmax(np.abs(np.asarray(traj.v[-1], float)[:n_link]))) if n_link else None
    return {**end, "at_rest": at_rest, "t_s": float(traj.t[-1]),
            "fastest_joint": None if fastest is None else model.coordinate_names()[fastest]}


@dataclass
class Verdict:
    status: str  # "verified" | "missed_tolerance"
    tolerance_mm: float
    tolerance_mrad: float
    judged_case: str
    misses: list[dict] = field(default_factory=list)
    tolerance_source: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    def to_dict(self) -> dict:
        return {"status": self.status, "tolerance_mm": self.tolerance_mm, "tolerance_mrad": self.tolerance_mrad,
                "tolerance_source": self.tolerance_source, "judged_case": self.judged_case, "misses": self.misses}

    def line(self) -> str:
        """One line for the console: the status and, for a miss, what, where and why."""
        if self.ok:
            return (f"verified: {self.judged_case} within {self.tolerance_mm:.3g} mm during the move and "
                    f"after the table")
        m = self.misses[0]
        more = f" (and {len(self.misses) - 1} more)" if len(self.misses) > 1 else ""
        return (f"MISSED TOLERANCE: {m['case']} {m['phase']}: {m['error']:.4g} {m['unit']} at t = {m['t_s']:.4g} s "
                f"> {m['tolerance']:.3g} {m['unit']}; likely cause: {m['cause']}{more}")


class Tolerance(NamedTuple):
    """The verdict's tolerances on the tool error: position (mm), angle (mrad), and where they come from."""

    mm: float
    mrad: float
    source: str


def judge(case, errors, settle: SettleMetrics | None, t_move, tolerance: Tolerance, end_state: dict | None,
          planned_mm: float | None = None) -> Verdict:
    """The verdict on the judged case: its tool error during the move (errors: (mm, mrad or None) on the
    plan's grid t_move) and in the settle window."""
    tol_mm, tol_mrad, source = tolerance
    misses = []
    e_mm, e_mrad = errors
    for err, tol, unit in ((e_mm, tol_mm, "mm"), (e_mrad, tol_mrad, "mrad")):
        if err is not None and err.max() > tol:
            k = int(np.argmax(err))
            misses.append({"case": case, "phase": "during the move", "error": float(err[k]), "unit": unit,
                           "tolerance": tol, "t_s": float(t_move[k]), "cause": _move_cause(planned_mm, tol_mm)})
    if settle is not None:
        for res, tol, unit in ((settle.residual_mm, tol_mm, "mm"), (settle.residual_mrad, tol_mrad, "mrad")):
            if res is not None and res > tol:
                misses.append({"case": case, "phase": "after the table (settle window)", "error": res, "unit": unit,
                               "tolerance": tol, "t_s": settle.residual_t_s,
                               "cause": _settle_cause(end_state, settle)})
    return Verdict("verified" if not misses else "missed_tolerance", tol_mm, tol_mrad, case, misses, source)


def _move_cause(planned_mm, tol_mm) -> str:
    if planned_mm is not None and planned_mm > tol_mm:
        return (f"the plan itself misses the path by {planned_mm:.3g} mm (a penalty or band plan, or bounds "
                "the path needs more than): loosen the bounds or slow the motion")
    return ("the table does not reproduce the plan between its rows, or the motion excites what the PD cannot "
            "hold: try a smaller --step, a higher BDF order, or a slower motion")


def _settle_cause(end_state, settle: SettleMetrics) -> str:
    if end_state is not None and not end_state["at_rest"]:
        from ffopt.models.equilibrium import not_at_rest_text

        return (f"{not_at_rest_text(end_state)}: its zero dynamics still ring; plan rest-to-rest "
                "(solver.end_at_rest) or lengthen the move")
    return (f"the arm rings after the table (settled {'never' if settle.settling_time_s is None else settle.settling_time_s}"
            " s): a mode the plan does not model, or a hold the loop cannot keep")
