"""Verification of a plan by forward simulation of the flexible plant (DESIGN.md, protocol).

Cases (all on the plan's time grid, CVODES with tight tolerances, tool error = Euclidean norm
of Gamma(qa) - theta(t) in mm):

- ``feedforward_open_loop``: the plant driven by u(t) alone, from rest in static equilibrium.
- ``feedforward_pd``: u(t) plus a motor-side PD loop tracking the planned qm(t), dqm(t)
  (the two-degree-of-freedom structure of seed 002). The headline number.
- ``rigid_feedforward_pd``: the rigid-model feedforward (stiff gears, passive joints locked)
  with the PD loop tracking the rigid motor reference: the industrial baseline.
- ``pd_only``: the PD loop on the rigid motor reference with only the constant holding torque
  of the start configuration as feedforward (so the robot starts at rest).
- ``payload_x<s>``: feedforward + PD on a plant whose last body has s times the mass and
  inertia (model mismatch); it starts where the PD loop holds it at rest before the motion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from ffopt.dae.equilibrium import static_equilibrium
from ffopt.errors import VerificationError
from ffopt.io.problem import VerificationSettings
from ffopt.models.flexible import FlexibleModel
from ffopt.sim.baselines import rigid_motion
from ffopt.sim.plant import MotorPD, SimResult, pd_gains, simulate


@dataclass
class CaseError:
    name: str
    max_mm: float
    rms_mm: float
    final_mm: float  # at the last grid point (after the rest segment: residual vibration/offset)
    peak_torque_Nm: list[float]
    description: str

    def to_dict(self) -> dict:
        return {"max_mm": self.max_mm, "rms_mm": self.rms_mm, "final_mm": self.final_mm,
                "peak_torque_Nm": self.peak_torque_Nm, "description": self.description}


@dataclass
class VerificationReport:
    cases: dict[str, CaseError]
    simulations: dict[str, SimResult] = field(repr=False)
    pd_gains: dict
    rtol: float

    def to_dict(self) -> dict:
        return {"tool_error": {n: c.to_dict() for n, c in self.cases.items()},
                "pd_gains": self.pd_gains, "integrator": "cvodes", "rtol": self.rtol}

    def table(self) -> str:
        lines = [f"{'case':24s} {'max [mm]':>12s} {'rms [mm]':>12s} {'final [mm]':>12s}"]
        for c in self.cases.values():
            lines.append(f"{c.name:24s} {c.max_mm:12.4g} {c.rms_mm:12.4g} {c.final_mm:12.4g}")
        return "\n".join(lines)


def verify(model: FlexibleModel, reference, traj, settings: VerificationSettings | None = None,
           guess=None) -> VerificationReport:
    """Simulate the plant with the plan's torques (and the baselines); tool errors in mm."""
    settings = settings or VerificationSettings()
    t = np.asarray(traj.t, float)
    y_ref = np.asarray(reference.evaluate(t))
    # The robot really starts at rest in static equilibrium at the start of the path; a plan that
    # starts elsewhere (e.g. a non-causal NLP whose rest is only a soft penalty) pays for it here.
    n_link = model.layout.n_link
    q0 = static_equilibrium(model, y_ref[0], traj.q[0, :n_link], where=f"t = {t[0]:.4g} s")
    v0 = np.zeros_like(q0)
    kp, kd = pd_gains(model, q0, settings.pd_bandwidth_hz, settings.pd_damping_ratio)
    pd = MotorPD(kp, kd, traj.qm, traj.dqm)
    rigid = rigid_motion(model, reference, t, guess if guess is not None else traj.q[0, :n_link])
    hold = np.tile(traj.u[0], (len(t), 1))
    atol = settings.rtol * 1e-2

    runs = {
        "feedforward_open_loop": (model, traj.u, None, q0, v0, "plan torques, no feedback"),
        "feedforward_pd": (model, traj.u, pd, q0, v0, "plan torques + motor PD on planned qm"),
        "rigid_feedforward_pd": (model, rigid.u, MotorPD(kp, kd, rigid.qm, rigid.dqm), None, None,
                                 "rigid-model torques + motor PD on rigid qm"),
        "pd_only": (model, hold, MotorPD(kp, kd, rigid.qm, rigid.dqm), None, None,
                    "holding torque + motor PD on rigid qm"),
    }
    for s in settings.payload_scales:
        plant = model.variant(model.chain.with_payload_scale(s))
        runs[f"payload_x{s:g}"] = (plant, traj.u, pd, None, None,
                                   f"plan torques + motor PD, last body mass and inertia x{s:g}")

    cases, sims = {}, {}
    for name, (plant, u, loop, qs, vs, text) in runs.items():
        if qs is None:  # start at rest where the loop holds the plant before the motion
            qs, vs = _rest_state(plant, u[0], loop, q0), np.zeros_like(q0)
        try:
            sim = simulate(plant, t, u, qs, vs, pd=loop, rtol=settings.rtol, atol=atol)
        except VerificationError as err:
            raise VerificationError(f"verification case {name!r}: {err}") from None
        err = 1000.0 * np.linalg.norm(sim.y - y_ref, axis=1)
        cases[name] = CaseError(name, float(err.max()), float(np.sqrt(np.mean(err**2))), float(err[-1]),
                                np.abs(sim.u_applied).max(axis=0).tolist(), text)
        sims[name] = sim
    return VerificationReport(cases, sims, {"kp": kp.tolist(), "kd": kd.tolist(),
                                            "bandwidth_hz": settings.pd_bandwidth_hz,
                                            "damping_ratio": settings.pd_damping_ratio}, settings.rtol)


def _rest_state(plant: FlexibleModel, u0, pd: MotorPD | None, q_guess) -> np.ndarray:
    """q with forward_dynamics(q, 0, u0 + PD(q)) = 0: where the loop holds the plant at rest."""
    L = plant.layout
    q = ca.SX.sym("q", L.nq)
    u = ca.DM(np.asarray(u0, float))
    if pd is not None:
        motor = L.motor_of_input
        u = u + ca.DM(pd.kp) * (ca.DM(pd.qm_ref[0]) - q[motor]) + ca.DM(pd.kd) * ca.DM(pd.dqm_ref[0])
    res = plant.equations_of_motion(q, ca.DM.zeros(L.nq), ca.DM.zeros(L.nq), u)
    G = ca.Function("rest", [q], [res])
    solver = ca.rootfinder("rest", "newton", G, {"abstol": 1e-10, "max_iter": 100, "error_on_fail": False})
    qs = np.array(solver(q_guess)).ravel()
    if not np.all(np.isfinite(qs)) or np.abs(np.array(G(qs))).max() > 1e-6:
        raise VerificationError("verification: no rest state of the plant under the initial torque and PD "
                                "loop (the plant may be statically unstable); check the payload scales")
    return qs
