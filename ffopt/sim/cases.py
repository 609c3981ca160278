"""One verification case: a plan's table simulated on a plant with its loop (``run_case``, several side by side:
``simulate_cases``), then the settle window after the table (``settle_case``), the tool errors and the case's
line of the report (``CaseError``); the rest state a loop holds a plant in before the motion (``rest_state``).
Used by the verification (``ffopt.sim.verify``), its refined models (``ffopt.sim.refined``), the closed-loop
studies and the robust rest-to-rest plans."""

from __future__ import annotations

from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from ffopt.errors import VerificationError
from ffopt.models.flexible import FlexibleModel
from ffopt.sim.plant import MotorPD, SimResult, SimulationOptions, StateFeedback, simulate, simulate_all
from ffopt.sim.settle import Hold, SettleMetrics, SettleWindow, settle_metrics


@dataclass(frozen=True)
class Integration:
    """How a case is integrated (CVODES): relative tolerance, absolute tolerance (None: rtol / 100), and the plant
    as compiled C (``ffopt.sim.plant.compiled_plant``)."""

    rtol: float
    atol: float | None = None
    compile: bool = True

    @property
    def absolute(self) -> float:
        return self.rtol * 1e-2 if self.atol is None else self.atol

    def options(self, interpolation: str = "linear") -> SimulationOptions:
        """``simulate``'s options for this integration, the input applied between rows by ``interpolation``."""
        return SimulationOptions(self.rtol, self.absolute, interpolation, self.compile)


@dataclass(frozen=True, eq=False)
class Case:
    """One verification case: the input table ``u`` applied to ``plant`` with the feedback ``loop`` (None: open
    loop) from the pose ``q_start`` (None: where the loop holds the plant at rest, ``at_rest``), u held between
    its rows by ``interpolation``; ``text`` says what the case is, ``after`` is the hold after the table (None:
    the plan's static hold)."""

    plant: FlexibleModel
    u: np.ndarray
    loop: MotorPD | StateFeedback | None
    q_start: np.ndarray | None
    interpolation: str
    text: str = ""
    after: Hold | None = None

    def at_rest(self, q_guess) -> "Case":
        """This case started from ``q_start``, else from where its loop holds the plant at rest under u[0]."""
        if self.q_start is not None:
            return self
        return replace(self, q_start=rest_state(self.plant, self.u[0], self.loop, q_guess))


@dataclass
class CaseError:
    name: str
    max_mm: float
    rms_mm: float
    start_mm: float  # at the first grid point (baselines that start sagged under gravity show it here)
    final_mm: float  # at the last grid point (after the rest segment: residual vibration/offset)
    peak_torque_Nm: list[float]
    description: str
    max_mrad: float | None = None  # angle outputs (tool or joint angles), if the model has any
    rms_mrad: float | None = None
    settle: SettleMetrics | None = None  # after the table, with the controller holding the final pose

    def to_dict(self) -> dict:
        d = {"max_mm": self.max_mm, "rms_mm": self.rms_mm, "start_mm": self.start_mm, "final_mm": self.final_mm,
             "peak_torque_Nm": self.peak_torque_Nm, "description": self.description}
        if self.max_mrad is not None:
            d.update(max_mrad=self.max_mrad, rms_mrad=self.rms_mrad)
        if self.settle is not None:
            d["settle"] = self.settle.to_dict()
            d.update(residual_mm=self.settle.residual_mm, settling_time_s=self.settle.settling_time_s,
                     settled_cycle_s=self.settle.settled_cycle_s)
        return d


def motor_hold(kp, kd, qm, n: int) -> MotorPD:
    """The motor PD holding the motor angles qm (speed reference 0) on a grid of n points."""
    return MotorPD(kp, kd, np.tile(qm, (n, 1)), np.zeros((n, len(qm))))


def settle_case(name, plant, sim: SimResult, after: Hold, loop, window: SettleWindow,
                integration: Integration) -> tuple[SimResult, SettleMetrics]:
    """Simulate the settle window of one case from where its table left the plant, with the hold ``after``
    (its input) and ``loop`` (the case's feedback about the held pose on the settle grid, or None)."""
    t_settle = window.t
    n = len(t_settle)
    z0 = None if sim.z is None or sim.z.size == 0 else sim.z[-1]
    try:
        s = simulate(plant, t_settle, np.tile(after.u, (n, 1)), sim.q[-1], sim.v[-1], pd=loop, z0=z0,
                     options=integration.options())
    except VerificationError as err:
        raise VerificationError(f"verification case {name!r}, after the table: {err}") from None
    end_ref = np.tile(window.y_ref[-1], (n, 1))
    end_tool = None if window.tool_ref is None else np.tile(window.tool_ref[-1], (n, 1))
    e_mm, e_mrad = tool_errors(s, end_ref, end_tool, window.model.output_units)
    text = "static torque of the final pose" + ("" if loop is None else " + motor PD on its static motor angles"
                                                if isinstance(loop, MotorPD) else " + the state feedback about it")
    return s, settle_metrics(window, sim, s, after, e_mm, e_mrad, text, _outside_end_pose(window, sim))


def _outside_end_pose(window, sim: SimResult):
    """Where on the table's grid the tool is outside the tolerance of the end pose (None without the motion's
    times): with the settle window's, the settled cycle."""
    if window.motion is None:
        return None
    n = len(sim.t)
    end_tool = None if window.tool_ref is None else np.tile(window.tool_ref[-1], (n, 1))
    e_mm, e_mrad = tool_errors(sim, np.tile(window.y_ref[-1], (n, 1)), end_tool, window.model.output_units)
    outside = e_mm > window.tol_mm
    return outside if e_mrad is None else outside | (e_mrad > window.tol_mrad)


def run_case(name, case: Case, t, integration: Integration) -> SimResult:
    """The table of ``case`` (with its start pose) on the grid t."""
    try:
        return simulate(case.plant, t, case.u, case.q_start, None, pd=case.loop,
                        options=integration.options(case.interpolation))
    except VerificationError as err:
        raise VerificationError(f"verification case {name!r}: {err}") from None


def simulate_cases(cases: dict[str, Case], t, rtol, compile: bool = True, progress=None) -> dict[str, SimResult]:
    """``run_case`` for {name: case} on the grid t (every case with its start pose: ``Case.at_rest``), the
    integrations side by side (``ffopt.sim.plant.simulate_all``: one thread per core, the same numbers;
    ``progress``: its heartbeat); raises the first failure."""
    integration = Integration(rtol, compile=compile)
    requests = {name: dict(model=c.plant, t=t, u=c.u, q0=c.q_start, pd=c.loop,
                           options=integration.options(c.interpolation)) for name, c in cases.items()}
    sims = simulate_all(requests, progress=progress)
    for name, sim in sims.items():
        if isinstance(sim, VerificationError):
            raise VerificationError(f"verification case {name!r}: {sim}") from None
    return sims


def tool_errors(sim: SimResult, y_ref, tool_ref, units) -> tuple[np.ndarray, np.ndarray | None]:
    """Tool error along a simulation: (mm over the position outputs, mrad over the angle outputs or None).
    Without position outputs (a joint-space reference): the tool point against the rigid tool path."""
    pos = [i for i, u in enumerate(units) if u == "m"]
    ang = [i for i, u in enumerate(units) if u != "m"]
    if pos or tool_ref is None:
        e = 1000.0 * np.linalg.norm(sim.y[:, pos] - y_ref[:, pos], axis=1)  # tool error in mm
    else:  # joint-space reference: the tool point against the rigid tool path it implies
        e = 1000.0 * np.linalg.norm(sim.tool - tool_ref, axis=1)
    e_ang = 1000.0 * np.linalg.norm(sim.y[:, ang] - y_ref[:, ang], axis=1) if ang else None  # mrad
    return e, e_ang


def case_error(name, sim: SimResult, y_ref, tool_ref, units, text, errors=None) -> CaseError:
    e, e_ang = errors if errors is not None else tool_errors(sim, y_ref, tool_ref, units)
    torque = sim.u_applied if sim.torque is None else sim.torque
    return CaseError(name, float(e.max()), float(np.sqrt(np.mean(e**2))), float(e[0]), float(e[-1]),
                     np.abs(torque).max(axis=0).tolist(), text,
                     None if e_ang is None else float(e_ang.max()),
                     None if e_ang is None else float(np.sqrt(np.mean(e_ang**2))))


def rest_state(plant: FlexibleModel, u0, loop: MotorPD | StateFeedback | None, q_guess) -> np.ndarray:
    """q with forward_dynamics(q, 0, u0 + K (x_ref0 - [q; 0])) = 0: where the loop holds the plant at rest
    before the motion (the loop's reference and torque at the first grid point)."""
    L = plant.layout
    q = ca.SX.sym("q", L.nq)
    u = ca.DM(np.asarray(u0, float))
    gain_scale = 0.0
    if loop is not None:
        fb = loop.state_feedback(L)
        K = np.asarray(fb.K, float)
        u = u + ca.DM(K) @ (ca.DM(np.asarray(fb.x_ref, float)[0]) - ca.vertcat(q, ca.DM.zeros(L.nq)))
        gain_scale = float(np.abs(K[:, :L.nq]).max(initial=0.0))
    zero = ca.DM.zeros(L.nq)
    res = plant.equations_of_motion(q, zero, zero, plant.steady_torque(q, zero, u))
    G = ca.Function("rest", [q], [res])
    solver = ca.rootfinder("rest", "newton", G, {"abstol": 1e-10, "max_iter": 100, "error_on_fail": False})
    qs = np.array(solver(q_guess)).ravel()
    # torque residual: 1 uN m, or what stiff gains make of a 1e-12 rad rounding error (heavy arms)
    tol = 1e-6 + 1e-12 * gain_scale
    if not np.all(np.isfinite(qs)) or np.abs(np.array(G(qs))).max() > tol:
        resid = float(np.abs(np.array(G(qs))).max()) if np.all(np.isfinite(qs)) else float("nan")
        how = ("with no feedback, the plan's start torque alone must hold the plant still: a plant whose statics "
               "differ from the planning model (payload, stiffness, gravity) has no such rest state; simulate it "
               "with a feedback loop (controller pd) or a plant that matches the plan's statics") if loop is None \
            else ("the plant may be statically unstable under this loop (gains too low for its gravity load, or "
                  "a joint at a limit); try stiffer gains or check the plant's parameters")
        raise VerificationError(f"verification: no rest state of the plant under the initial torque and feedback "
                                f"loop (Newton residual {resid:.3g} N m > {tol:.3g}): {how}")
    return qs
