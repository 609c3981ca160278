"""Link-side Coulomb friction behind an elastic gear: where a planned torque table cannot represent the inverse.

Where a joint's link velocity reverses, its link-side Coulomb friction F_c tanh(v / w) turns from
-F_c to +F_c within about tau = 4 w / |a| (a: the link acceleration there; w: coulomb_smoothing).
The link rows of the model (Moberg & Hanssen, eq. 1) then ask the gear spring to change its torque
by 2 F_c within tau, i.e. the motor angle by 2 F_c / K, and the motor row turns that into a torque
doublet of about J_m (2 F_c / K) / (tau / 2)^2 (J_m: motor inertia, K: gear stiffness). When tau
spans less than a few steps, no torque table on that grid represents it: plans of the same problem then
depend on the method (on ``problems/e12_nonlinear.toml`` BDF's table verifies to 0.05 mm, the NLP's,
sampled at its collocation points, to 20 mm), and the verification is what tells. This module finds
those instants on a planned trajectory and says so before the user trusts the table.
"""

from __future__ import annotations

import numpy as np

SWITCH_WIDTHS = 4.0  # tanh(v / w) goes from -0.96 to +0.96 over v in [-2 w, 2 w]
# A switch is resolved by a torque table when it spans this many steps. Measured on e12_nonlinear.toml
# (NLP, 1 ms, verified with the motor PD): fastest switch 1.7 steps -> 0.62 mm, 3.4 steps -> 0.022 mm
# (BDF alone: 0.047 mm), 0.017 steps (the file's 1e-3 rad/s) -> 20 mm.
RESOLVING_STEPS = 4.0


def unresolved_friction_reversals(model, traj, step: float) -> list[dict]:
    """One record per elastic-gear joint whose link velocity reverses with a friction switch shorter than
    ``step``: joint name and field, the reversal times, the fastest switch, the largest doublet, a message."""
    chain, L = model.chain, model.layout
    by_name = {j.name: (n, j) for n, j in enumerate(chain.joints, start=1)}
    names = traj.link_names or model.coordinate_names()[: L.n_link]
    out = []
    for i in L.gear:
        n, joint = by_name.get(names[i], (None, None))
        if joint is None or joint.link_coulomb_friction <= 0 or joint.stiffness <= 0:
            continue
        times, taus = _fast_reversals(traj.t, traj.v[:, i], joint.coulomb_smoothing, step)
        if not times:
            continue
        tau = min(taus)
        need = joint.coulomb_smoothing * RESOLVING_STEPS * step / tau  # tau grows like the smoothing
        spike = joint.motor_inertia * (2 * joint.link_coulomb_friction / joint.stiffness) / (tau / 2) ** 2
        when = f"at t = {times[0]:.4g} s" if len(times) == 1 else \
            f"{len(times)} times between t = {times[0]:.4g} and {times[-1]:.4g} s"
        msg = (f"model.joints[{n}] ({joint.name}): the link velocity reverses {when}, where its link-side "
               f"Coulomb friction (link_coulomb_friction = {joint.link_coulomb_friction:g} N m, coulomb_smoothing "
               f"= {joint.coulomb_smoothing:g} rad/s) switches within {tau:.2g} s (fastest), less than "
               f"{RESOLVING_STEPS:g} steps of {step * 1e3:g} ms: the exact inverse asks for torque doublets of up to about {spike:.2g} "
               f"N m there, which no torque table on this grid represents; check the verified error "
               f"(coulomb_smoothing >= {need:.2g} rad/s resolves it on this grid)")
        out.append({"joint": joint.name, "field": f"model.joints[{n}].link_coulomb_friction", "t_s": times,
                    "switch_time_s": float(tau), "torque_doublet_Nm": float(spike),
                    "smoothing_needed_rad_per_s": float(need), "message": msg})
    return out


def _fast_reversals(t: np.ndarray, v: np.ndarray, width: float, step: float) -> tuple[list[float], list[float]]:
    """Times of the sign changes of v whose tanh(v / width) switch (SWITCH_WIDTHS widths at the local
    acceleration) takes less than RESOLVING_STEPS steps, and those switching times."""
    times, taus = [], []
    for k in np.flatnonzero(np.sign(v[:-1]) * np.sign(v[1:]) < 0):
        dt, dv = t[k + 1] - t[k], v[k + 1] - v[k]
        with np.errstate(over="ignore"):  # roundoff-level crossings at rest: dv ~ 1e-300, tau = inf (no switch)
            tau = SWITCH_WIDTHS * width * dt / abs(dv)
        if tau < RESOLVING_STEPS * step:
            times.append(float(t[k] - v[k] * dt / dv))
            taus.append(float(tau))
    return times, taus
