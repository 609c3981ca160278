"""Feedback gains by documented rules, as one gain matrix K (N, 2 nq) on x = [q; v].

``pd`` (motor-side PD, pole placement on the motor inertia): each motor is a decoupled second-
order loop J s^2 + Kd s + Kp with the closed-loop bandwidth f and damping zeta,

    Kp = J (2 pi f)^2,   Kd = 2 zeta J (2 pi f),

J = the motor inertia behind an elastic gear (the gear decouples the link at high frequency),
the joint's diagonal entry of the mass matrix at the start pose for a direct drive
(``ffopt.sim.plant.pd_gains``). K has entries only in the motor columns.

``pd+state`` (motor PD plus link-side state feedback, all link-side coordinates measured: link
encoders behind the gears, i.e. the gear deflections, passive-joint and modal deflections): the
LQR of the model linearised at rest at the start of the path, x' = A x + B u, minimising
integral(x' Q x + u' R u) with weights that make its motor part the PD above (the model without
its Coulomb friction: smoothed as fc tanh(w / 1e-3 rad/s), it would enter the linearisation at
rest as a huge viscous friction, a motor stuck in its bearing):

    R = diag(1 / Kp_j^2),   Q = [[Qq, 0], [0, b / w^2 Qq]],   Qq = E_m + rho C' C / l^2,
    w = 2 pi f,  b = max(4 zeta^2 - 2, 0),

E_m the identity on the motor coordinates, C the Jacobian of the tool outputs w.r.t. q (angle
outputs times the reach l, so all rows are lengths), l the reach. For one motor inertia J alone
(J s^2 = u, rho = 0) this LQR gives exactly Kp = J w^2 and Kd = 2 zeta J w (zeta >= 1/sqrt 2);
rho (``TOOL_WEIGHT``) adds the tool error: a tool displacement of l x 1 rad costs rho times a
1 rad motor error. The link-side columns of K come from there; the gains are constant along the
path (the model at the start pose), and the closed-loop poles of that linearisation are stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ffopt.errors import ProblemError, SolverError
from ffopt.models.flexible import FlexibleModel

CONTROLLERS = ("none", "pd", "pd+state")
TOOL_WEIGHT = 100.0  # rho: weight of the tool error against the motor errors in the LQR of pd+state


@dataclass
class Gains:
    """The gains of one controller: K (N, 2 nq) on x = [q; v] and how they were chosen."""

    controller: str
    K: np.ndarray
    rule: str
    details: dict = field(default_factory=dict)  # kp, kd, bandwidth, damping, LQR weights, closed-loop poles

    @property
    def kp(self) -> np.ndarray:
        return np.asarray(self.details["kp"], float)

    @property
    def kd(self) -> np.ndarray:
        return np.asarray(self.details["kd"], float)

    def to_dict(self) -> dict:
        return {"controller": self.controller, "rule": self.rule, "K": np.asarray(self.K).tolist(), **self.details}

    def text(self, model: FlexibleModel) -> str:
        """The gains for the console: PD gains per motor, the state-feedback matrix by coordinate."""
        L = model.layout
        names = [model.chain.joints[i].name for i in L.actuated]
        lines = [f"controller {self.controller}: {self.rule}"]
        if self.controller == "none":
            return lines[0]
        lines.append("  PD part per motor: " + ", ".join(
            f"{n}: Kp {kp:.4g} N m/rad, Kd {kd:.4g} N m s/rad" for n, kp, kd in zip(names, self.kp, self.kd)))
        if self.controller == "pd+state":
            coords = model.coordinate_names()
            cols = [f"{c}" for c in coords] + [f"d{c}" for c in coords]
            lines.append("  K (rows: motors; N m/rad, N m s/rad):")
            lines.append("    " + " ".join(f"{c:>11s}" for c in ["", *cols]))
            for n, row in zip(names, np.asarray(self.K)):
                lines.append("    " + f"{n:>11s} " + " ".join(f"{x:11.4g}" for x in row))
            lines.append(f"  closed loop at the start pose: slowest pole {self.details['slowest_pole_hz']:.3g} Hz, "
                         f"least damping {self.details['least_damping']:.3g} "
                         f"(PD alone: {self.details['pd_least_damping']:.3g})")
        return "\n".join(lines)


def design(controller: str, model: FlexibleModel, q0, bandwidth_hz: float, damping_ratio: float,
           tool_weight: float | None = None) -> Gains:
    """The gains of ``controller`` ("none", "pd", "pd+state") for the model at rest at q0 (the start
    of the path): the rules of the module docstring (tool_weight: rho, default ``TOOL_WEIGHT``)."""
    if controller not in CONTROLLERS:
        raise ProblemError(f"controller: must be one of {', '.join(CONTROLLERS)}, got {controller!r}")
    if not bandwidth_hz > 0 or not damping_ratio > 0 or (tool_weight is not None and not tool_weight >= 0):
        raise ProblemError(f"controller gains: the bandwidth and damping ratio must be > 0 and the tool weight >= 0, "
                           f"got {bandwidth_hz} Hz, {damping_ratio} and {tool_weight}")
    L = model.layout
    if controller == "none":
        return Gains("none", np.zeros((L.n_u, 2 * L.nq)), "no feedback (open loop)", {})
    pd = motor_pd(model, q0, bandwidth_hz, damping_ratio)
    if controller == "pd":
        return pd
    return lqr_state_feedback(model, q0, pd, TOOL_WEIGHT if tool_weight is None else tool_weight)


def motor_pd(model: FlexibleModel, q0, bandwidth_hz: float, damping_ratio: float) -> Gains:
    """Motor-side PD by pole placement on the motor inertia (Kp = J w^2, Kd = 2 zeta J w)."""
    from ffopt.sim.plant import pd_gains

    L = model.layout
    kp, kd = pd_gains(model, q0, bandwidth_hz, damping_ratio)
    K = np.zeros((L.n_u, 2 * L.nq))
    for j, m in enumerate(L.motor_of_input):
        K[j, m], K[j, L.nq + m] = kp[j], kd[j]
    inertia = kp / (2 * np.pi * bandwidth_hz) ** 2
    rule = (f"motor PD, pole placement on the motor inertia: Kp = J (2 pi f)^2, Kd = 2 zeta J 2 pi f, "
            f"f = {bandwidth_hz:g} Hz, zeta = {damping_ratio:g}")
    return Gains("pd", K, rule, {"kp": kp.tolist(), "kd": kd.tolist(), "inertia_kg_m2": inertia.tolist(),
                                 "bandwidth_hz": float(bandwidth_hz), "damping_ratio": float(damping_ratio)})


def lqr_state_feedback(model: FlexibleModel, q0, pd: Gains, tool_weight: float = TOOL_WEIGHT) -> Gains:
    """PD plus link-side state feedback: the LQR of the module docstring on the linearisation at q0."""
    import scipy.linalg

    from ffopt.analysis.linear import linearize
    from ffopt.sim.baselines import reach

    L = model.layout
    f, zeta = pd.details["bandwidth_hz"], pd.details["damping_ratio"]
    w = 2 * np.pi * f
    lin = linearize(_without_coulomb_friction(model), q0)
    A, B, _, _ = lin.state_space()
    length = reach(model.chain)
    motors = L.motor_of_input
    scale = np.array([1.0 if unit == "m" else length for unit in model.output_units])
    C = scale[:, None] * lin.Cq
    Qq = tool_weight * C.T @ C / length**2
    Qq[motors, motors] += 1.0
    b = max(4 * zeta**2 - 2, 0.0)
    Q = scipy.linalg.block_diag(Qq, b / w**2 * Qq)
    R = np.diag(1.0 / pd.kp**2)
    try:
        P = scipy.linalg.solve_continuous_are(A, B, Q, R)
    except (np.linalg.LinAlgError, ValueError) as err:
        raise SolverError(f"controller pd+state: no LQR solution for the model linearised at the start of the path "
                           f"({err}); use controller pd") from None
    K = np.linalg.solve(R, B.T @ P)
    poles = np.linalg.eigvals(A - B @ K)
    pd_poles = np.linalg.eigvals(A - B @ pd.K)
    if poles.real.max() >= 0:
        raise SolverError("controller pd+state: the LQR loop is not stable on the linearised model; use controller pd")
    rule = (f"motor PD plus link-side state feedback: LQR on the model linearised at rest at the start of the path, "
            f"R = diag(1/Kp^2), Q = [[Qq, 0], [0, {b:g}/w^2 Qq]], Qq = motor errors + {tool_weight:g} x tool error / "
            f"reach^2 (reach {length:.4g} m), w = 2 pi {f:g} Hz; its motor part alone is the PD (zeta = "
            f"{max(zeta, 2 ** -0.5):.3g})")
    details = {**pd.details, "kp": np.diag(K[:, motors]).tolist(), "kd": np.diag(K[:, [L.nq + m for m in motors]]).tolist(),
               "pd_kp": pd.details["kp"], "pd_kd": pd.details["kd"], "tool_weight": float(tool_weight),
               "reach_m": length, "speed_weight": b, "coordinates": model.coordinate_names(),
               "closed_loop_poles": [[p.real, p.imag] for p in poles],
               "slowest_pole_hz": float(np.abs(poles).min() / (2 * np.pi)),
               "least_damping": _least_damping(poles), "pd_least_damping": _least_damping(pd_poles)}
    return Gains("pd+state", K, rule, details)


def _without_coulomb_friction(model: FlexibleModel) -> FlexibleModel:
    """The model for the linear design: Coulomb friction (smoothed, fc tanh(w / 1e-3 rad/s)) would enter
    the linearisation at rest as a viscous friction fc / 1e-3 (a motor "stuck" in its bearing)."""
    from dataclasses import replace

    if not any(j.coulomb_friction for j in model.chain.joints):
        return model
    joints = tuple(replace(j, coulomb_friction=0.0) for j in model.chain.joints)
    return model.variant(replace(model.chain, joints=joints))


def _least_damping(poles: np.ndarray) -> float:
    return float(np.min(-poles.real / np.abs(poles)))
