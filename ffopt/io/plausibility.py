"""Physical plausibility of a problem before any solve: numbers that pass the schema (finite, positive) but
that no robot has, or that the arm's own scales make absurd.

Each check compares a value with what the arm itself sets (its link inertias, its reach) or with bounds far
beyond every robot arm ffopt was written for (the shipped problems, 0.7-15 m of reach, stay 3-4 decades
inside each bound):

- every joint moves some mass (else the mass matrix is singular: the simulation divides by zero);
- |gear_ratio| <= MAX_GEAR_RATIO; masses <= MAX_MASS_KG; lengths <= MAX_LENGTH_M;
- an arm-side motor inertia at most MAX_MOTOR_TO_LINK times the largest inertia the joint's links can have
  about it (the shipped problems: at most 17); a rotor of 1e20 kg m^2 on a 10 kg m^2 arm is a typo or a
  gear ratio squared twice;
- a gear or joint spring whose mode (spring against the motor inertia, or against the links) is slower than
  MAX_MODE_HZ (the shipped problems: at most 65 Hz): stiffer is rigid, and the verification could not
  step through it; a damper (or viscous friction) braking its inertia faster than that, likewise;
- a verification tolerance within the arm's reach (a larger one passes every plan).

A failure is a ProblemError naming the file and field, the value, the scale it was compared with and what
to do.
"""

from __future__ import annotations

import numpy as np

MAX_GEAR_RATIO = 1e5
MAX_MASS_KG = 1e6
MAX_LENGTH_M = 1e4
MAX_MOTOR_TO_LINK = 1e6
MAX_MODE_HZ = 1e5
MAX_TOLERANCE_MRAD = 1000.0 * np.pi  # half a turn


def check_plausible(v, chain, raw: dict | None, verification, flexible_links=()) -> None:
    """Raise ProblemError (through validator ``v``) for the first implausible value of the problem."""
    fields = _FieldNames(raw)
    for joint in chain.joints:
        _check_scales(v, joint, fields)
    if chain.constant_inertia is None and not flexible_links:  # else the bodies do not carry the inertia
        link = _link_inertia_bounds(chain)
        for i, joint in enumerate(chain.joints):
            _check_moves_mass(v, chain, i, fields)
            _check_drive(v, joint, link[i], fields)
    _check_tolerance(v, chain, verification)


class _FieldNames:
    """The problem file's field of a joint's key: ``model.joints[k].key`` for an entry written there, else
    ``model.joints.<name>.key`` (a URDF joint without an entry, an axis of a multi-axis bearing)."""

    def __init__(self, raw: dict | None):
        entries = ((raw or {}).get("model") or {}).get("joints") or []
        self.index = {e.get("name"): k + 1 for k, e in enumerate(entries) if isinstance(e, dict)}
        self.given = {e.get("name"): set(e) for e in entries if isinstance(e, dict)}

    def __call__(self, name: str, key: str) -> str:
        k = self.index.get(name)
        return f"model.joints[{k}].{key}" if k is not None else f"model.joints.{name}.{key}"

    def motor_side(self, name: str) -> bool:
        return "rotor_inertia" in self.given.get(name, ())


def _check_scales(v, joint, fields) -> None:
    if abs(joint.gear_ratio) > MAX_GEAR_RATIO:
        v.fail(fields(joint.name, "gear_ratio"), f"{joint.gear_ratio:g} is beyond any robot gear (ffopt accepts "
               f"|gear_ratio| up to {MAX_GEAR_RATIO:g}; harmonic drives are 50-160): check the value")
    if joint.body.mass > MAX_MASS_KG:
        v.fail(fields(joint.name, "mass"), f"{joint.body.mass:g} kg is beyond any robot arm's link (ffopt accepts up "
               f"to {MAX_MASS_KG:g} kg): check the value and its unit (kg)")
    for key, vec in (("origin", joint.origin), ("com", joint.body.com)):
        if np.linalg.norm(vec) > MAX_LENGTH_M:
            v.fail(fields(joint.name, key), f"{np.linalg.norm(vec):g} m from the joint is beyond any robot arm (ffopt "
                   f"accepts up to {MAX_LENGTH_M:g} m): check the value and its unit (m)")


def _link_inertia_bounds(chain) -> list[float]:
    """For each joint, an upper bound of the inertia its links (with the payload) can have about its axis in
    any pose: each body's largest principal moment plus its mass times the farthest its centre of mass can be
    from the joint (the link lengths in between, then the centre's offset)."""
    bodies = chain.bodies()
    out = []
    for i in range(chain.n_joints):
        total, reach = 0.0, 0.0
        for k in range(i, chain.n_joints):
            reach += np.linalg.norm(chain.joints[k].origin) if k > i else 0.0
            body = bodies[k]
            d = reach + np.linalg.norm(body.com)
            total += float(np.linalg.eigvalsh(np.asarray(body.inertia, float)).max()) + body.mass * d * d
        out.append(total)
    return out


def _check_moves_mass(v, chain, i: int, fields) -> None:
    """The links beyond joint i carry some mass or inertia (the mass matrix is singular otherwise)."""
    bodies = chain.bodies()[i:]
    if any(b.mass > 0 or np.any(np.asarray(b.inertia) != 0) for b in bodies):
        return
    joint = chain.joints[i]
    v.fail(fields(joint.name, "mass"), f"joint {joint.name!r} moves no mass: its link and every link after it have "
           "mass 0 and inertia 0 (and there is no payload), so the arm's mass matrix is singular and no simulation "
           "can move it; give the links their mass and inertia (a massless tool: fix the tool point to the last "
           "link with mass)")


def _check_drive(v, joint, link_bound: float, fields) -> None:
    """Motor inertia against the links it drives; a spring's mode frequency against MAX_MODE_HZ."""
    field = fields(joint.name, "rotor_inertia" if fields.motor_side(joint.name) else "motor_inertia")
    if joint.motor_inertia > MAX_MOTOR_TO_LINK * link_bound > 0:
        ratio = f" (rotor_inertia x gear_ratio^2, gear_ratio {joint.gear_ratio:g})" if joint.gear_ratio != 1 else ""
        v.fail(field, f"{joint.motor_inertia:.4g} kg m^2 on the arm side{ratio} is more than {MAX_MOTOR_TO_LINK:g} "
               f"times the links it drives (at most {link_bound:.4g} kg m^2 about the joint): no robot has such a "
               "rotor; check the value, its unit and the gear ratio")
    against = joint.motor_inertia if joint.kind == "elastic_gear" else link_bound
    if joint.kind not in ("elastic_gear", "passive") or against <= 0:
        return
    _check_damper(v, joint, against, fields)
    if joint.stiffness <= 0:
        return
    mode_hz = np.sqrt(joint.stiffness / against) / (2 * np.pi)
    if mode_hz > MAX_MODE_HZ:
        what = "motor inertia" if joint.kind == "elastic_gear" else "largest inertia of its links"
        hint = "use kind = \"direct\" for a rigid drive" if joint.kind == "elastic_gear" else \
            "a joint this stiff is rigid"
        v.fail(fields(joint.name, "stiffness"), f"{joint.stiffness:.4g} N m/rad against the {what} "
               f"({against:.4g} kg m^2) makes a {mode_hz:.3g} Hz mode, above the {MAX_MODE_HZ:g} Hz ffopt simulates "
               f"(real gears: below 1 kHz): check the value and its unit (N m/rad, arm side); {hint}")


def _check_damper(v, joint, inertia: float, fields) -> None:
    """A damper (or the motor's viscous friction) against the inertia it brakes: its rate d / J must stay below
    the fastest mode ffopt simulates (damping 8.7e11 N m s/rad on a 0.09 kg m^2 motor kept IPOPT on its first
    iteration for minutes)."""
    for key in ("damping", "viscous_friction"):
        rate = getattr(joint, key) / inertia
        if rate > 2 * np.pi * MAX_MODE_HZ:
            v.fail(fields(joint.name, key), f"{getattr(joint, key):.4g} N m s/rad against {inertia:.4g} kg m^2 brakes "
                   f"at {rate:.3g} 1/s, faster than the {MAX_MODE_HZ:g} Hz ffopt simulates (real drives: below "
                   "1e3 1/s): check the value and its unit (N m s/rad, arm side)")


def _check_tolerance(v, chain, verification) -> None:
    from ffopt.sim.baselines import reach

    reach_mm = 1000.0 * reach(chain)
    tol = verification.tolerance_mm
    if tol is not None and reach_mm > 0 and tol > reach_mm:
        v.fail("verification.tolerance_mm", f"{tol:g} mm is more than the arm's reach ({reach_mm:.4g} mm, the sum "
               "of its link lengths): every plan would pass; give the tool error you need (default: 1e-4 of the "
               f"reach, {reach_mm * 1e-4:.3g} mm)")
    if verification.tolerance_mrad is not None and verification.tolerance_mrad > MAX_TOLERANCE_MRAD:
        v.fail("verification.tolerance_mrad", f"{verification.tolerance_mrad:g} mrad is more than half a turn: every "
               "plan would pass; give the tool angle error you need (default 0.1 mrad)")
