"""One ``[[model.joints]]`` entry of a problem file: its schema and the checks and conversions that
concern one joint alone, shared by a chain written in the problem file (``ffopt.io.problem``) and a
chain read from a URDF (``ffopt.io.urdf``, which takes the drives from these entries).

Joints (conventions in ``ffopt.models.chain``): frames by ``origin`` + ``rpy_deg`` (URDF) or
``rotation``; drive data on the arm side or on the motor side with ``gear_ratio`` (``MOTOR_SIDE``:
arm side = motor side x ratio^2, Coulomb friction x |ratio|); a passive joint with ``axes`` and
``stiffness_matrix`` / ``damping_matrix`` is a multi-axis elastic bearing, expanded into revolute
joints ``name_1``, ``name_2``, ... with one coupled spring (``SpringGroup``). Nonlinear springs
(``stiffness_knees`` / ``stiffness_slopes`` / ``knee_width``, ``stiffness_polynomial``) and friction
(Coulomb, viscous, Stribeck on the motor side, ``link_*`` on the link side) are the laws of
``ffopt.models.flexible.spring_torque`` and ``friction_torque``.

This module imports neither ``ffopt.io.problem`` nor ``ffopt.io.urdf``: both import from it.
"""

from __future__ import annotations

import re

import numpy as np

from ffopt.io.electrics import ELECTRICS_SCHEMA
from ffopt.io.flexible_links import FLEXIBLE_SCHEMA
from ffopt.io.schema import Field, Validator, non_negative, positive
from ffopt.models.chain import JOINT_KINDS, Body, Joint, SpringGroup, rotation_rpy
from ffopt.models.flexible import COULOMB_SMOOTHING

JOINT_NAME = re.compile(r"[A-Za-z0-9_.\-]+")  # joint names name CSV columns (u_<name>, q_<name>, ...)

INERTIA_FIELDS = {
    "mass": Field("float", required=True, check=non_negative, unit="kg", doc="mass of the rigid body"),
    "com": Field("vector", default=[0.0, 0.0, 0.0], length=3, unit="m",
                 doc="centre of mass in the body's frame"),
    "inertia": Field("matrix", unit="kg m^2",
                     doc="3x3 inertia tensor about the centre of mass in the body's frame (symmetric, products of "
                         "inertia included); or inertia_diag; default zero"),
    "inertia_diag": Field("vector", length=3, unit="kg m^2",
                          doc="diagonal of the inertia about the centre of mass (principal axes along the body "
                              "frame), instead of inertia"),
}
# Drive-train data on the motor side (as on a data sheet), converted with gear_ratio i:
# arm side = motor side x i^2 (stiffness, damping, viscous friction, inertia), Coulomb x |i|.
MOTOR_SIDE = {
    "stiffness_motor_side": ("stiffness", 2),
    "damping_motor_side": ("damping", 2),
    "rotor_inertia": ("motor_inertia", 2),
    "viscous_friction_motor_side": ("viscous_friction", 2),
    "coulomb_friction_motor_side": ("coulomb_friction", 1),
    "stribeck_friction_motor_side": ("stribeck_friction", 1),
    "stribeck_velocity_motor_side": ("stribeck_velocity", -1),
    "coulomb_smoothing_motor_side": ("coulomb_smoothing", -1),
}
_DRIVE_UNITS = {"stiffness": "N m/rad", "damping": "N m s/rad", "motor_inertia": "kg m^2",
                "viscous_friction": "N m s/rad", "coulomb_friction": "N m", "stribeck_friction": "N m",
                "stribeck_velocity": "rad/s", "coulomb_smoothing": "rad/s"}  # per rad of the motor on its side
# Nonlinear spring and friction keys (ffopt.models.flexible.spring_torque / friction_torque), arm side.
SPRING_LAW = ("stiffness_knees", "stiffness_slopes", "knee_width", "stiffness_polynomial")
MOTOR_FRICTION = ("viscous_friction", "coulomb_friction", "stribeck_friction", "stribeck_velocity")
LINK_FRICTION = ("link_viscous_friction", "link_coulomb_friction")
JOINT_SCHEMA = {
    "name": Field("str", required=True,
                  doc="joint name: letters, digits, _, -, . (names the CSV columns u_<name>, q_<name>, ... and "
                      "the dotted field names model.joints.<name>.<key>)"),
    "kind": Field("str", required=True, choices=(*JOINT_KINDS, "locked"),
                  doc="elastic_gear: a motor with its own angle behind an elastic gear (needs stiffness and "
                      "motor_inertia); direct: the torque acts on the joint itself; passive: a non-actuated "
                      "spring-damper with rest angle 0; locked (URDF joints only): fixed at angle_deg, its link "
                      "merged into the preceding one like a fixed joint"),
    "angle_deg": Field("float", unit="deg",
                       doc="kind locked: the angle the joint is fixed at (default 0; a prismatic joint is locked at "
                           "position 0)"),
    "axis": Field("vector", length=3, doc="rotation axis in the joint frame (normalised; one axis)"),
    "axes": Field("matrix", doc="passive joints: 2-3 successive axes at one point, one row each (a multi-axis "
                                "elastic bearing, expanded into joints <name>_1, <name>_2, ...), instead of axis"),
    "origin": Field("vector", default=[0.0, 0.0, 0.0], length=3, unit="m",
                    doc="joint position in the previous body's frame (the base frame for the first joint)"),
    "rpy_deg": Field("vector", length=3, unit="deg",
                     doc="joint frame in the previous body's frame: URDF roll, pitch, yaw, R = Rz(yaw) Ry(pitch) "
                         "Rx(roll); default: not turned"),
    "rotation": Field("matrix", doc="joint frame in the previous body's frame as a 3x3 rotation matrix (columns = "
                                    "the joint frame's axes), instead of rpy_deg"),
    **INERTIA_FIELDS,
    "mass": Field("float", check=non_negative, unit="kg",
                  doc="mass of the rigid body the joint moves (required in a chain written in the problem file; "
                      "with [model] urdf the bodies come from the URDF)"),
    "stiffness": Field("float", default=0.0, check=non_negative, unit="N m/rad",
                       doc="gear stiffness (elastic_gear) or joint spring (passive), arm side: torque k d + "
                           "stiffness_cubic d^3 + damping d' on the deflection d (motor angle - link angle; a "
                           "passive joint's angle)"),
    "stiffness_cubic": Field("float", default=0.0, check=non_negative, unit="N m/rad^3",
                             doc="cubic term k3 of a hardening gear or joint spring"),
    "damping": Field("float", default=0.0, check=non_negative, unit="N m s/rad",
                     doc="gear damping (elastic_gear) or joint damper (passive), arm side"),
    "stiffness_matrix": Field("matrix", unit="N m/rad",
                              doc="multi-axis bearing (axes): symmetric positive definite K, one row per axis; "
                                  "torque -K q - D q'"),
    "damping_matrix": Field("matrix", unit="N m s/rad",
                            doc="multi-axis bearing (axes): symmetric positive semi-definite D, one row per axis"),
    "motor_inertia": Field("float", default=0.0, check=non_negative, unit="kg m^2",
                           doc="rotor inertia on the arm side (rotor inertia x gear_ratio^2); an elastic_gear "
                               "needs > 0, a direct drive adds it to the joint"),
    "viscous_friction": Field("float", default=0.0, check=non_negative, unit="N m s/rad",
                              doc="viscous friction of the motor bearing, arm side (on the motor speed; direct "
                                  "drive: the joint speed)"),
    "coulomb_friction": Field("float", default=0.0, check=non_negative, unit="N m",
                              doc="Coulomb friction of the motor bearing, arm side, smoothed: fc tanh(speed / "
                                  "1e-3 rad/s)"),
    "speed_max_rad_s": Field("float", check=positive, unit="rad/s",
                             doc="the joint's speed limit (link side, arm units): a minimum-time move (reference.duration "
                                 "= \"min\") keeps the link and its motor below it; with a URDF model it replaces "
                                 "the URDF's <limit velocity>; default none"),
    "gear_ratio": Field("float", doc="motor angle / joint angle (signed); needed for motor-side data and "
                                     "rotor_coupling = \"full\"; default 1"),
    **{k: Field("float", check=non_negative, unit=_DRIVE_UNITS[a],
                doc=f"{a} on the motor side (data sheet), instead of {a}: arm side = value "
                    + {1: "x |gear_ratio|", -1: "/ |gear_ratio|"}.get(p, f"x gear_ratio^{p}"))
       for k, (a, p) in MOTOR_SIDE.items()},  # p = -1: arm side = value / |gear_ratio| (a speed)
    "rotor_inertia_transverse": Field("float", default=0.0, check=non_negative, unit="kg m^2",
                                      doc="rotor inertia about a diameter, full rotor coupling"),
    "rotor_axis": Field("vector", length=3, doc="rotor axis in the preceding body's frame (default: joint axis)"),
    "stiffness_knees": Field("vector", unit="rad", doc="deflections (increasing, > 0) where the spring's slope changes"),
    "stiffness_slopes": Field("vector", unit="N m/rad", doc="slope beyond each knee (> 0): piecewise-linear spring"),
    "knee_width": Field("float", check=positive, unit="rad", doc="rounding width of each knee"),
    "stiffness_polynomial": Field("vector", doc="odd stiffening terms: coefficients of d^3, d^5, ... (>= 0; "
                                                "N m/rad^3, N m/rad^5, ...)"),
    "coulomb_smoothing": Field("float", check=positive, unit="rad/s",
                               doc="tanh width of the Coulomb/Stribeck friction (default 1e-3)"),
    "stribeck_friction": Field("float", check=non_negative, unit="N m", doc="breakaway friction above Coulomb"),
    "stribeck_velocity": Field("float", check=positive, unit="rad/s", doc="Stribeck velocity"),
    "link_viscous_friction": Field("float", default=0.0, check=non_negative, unit="N m s/rad",
                                   doc="link-side bearing viscous friction"),
    "link_coulomb_friction": Field("float", default=0.0, check=non_negative, unit="N m",
                                   doc="link-side bearing Coulomb friction"),
    "flexible": Field("table", default=None, schema=FLEXIBLE_SCHEMA,
                      doc="the body is a flexible beam (assumed modes), e.g. flexible = { modes = 2, EI = 1.0e5, "
                          "length = 6.0, mass = 140.0 }"),
    "electrics": Field("table", default=None, schema=ELECTRICS_SCHEMA,
                       doc="armature-controlled DC motor (needs gear_ratio; every actuated joint or none): the input "
                           "becomes its voltage, e.g. electrics = { inductance = 2e-3, resistance = 1.0, "
                           "torque_constant = 0.1, back_emf_constant = 0.1 }"),
}


def parse_unit_vector(v: Validator, vec, where: str) -> np.ndarray:
    """An axis given as a non-zero 3-vector, normalised."""
    if vec is None:
        v.fail(where, "missing required key (a joint needs axis, or axes for a multi-axis passive bearing)")
    vec = np.array(vec, float)
    norm = np.linalg.norm(vec)
    if norm < 1e-12:
        v.fail(where, "must be a non-zero vector")
    return vec / norm


def parse_rotation(v: Validator, j: dict, where: str) -> np.ndarray:
    """Fixed rotation of the joint frame relative to the parent frame (identity by default)."""
    if j["rpy_deg"] is not None and j["rotation"] is not None:
        v.fail(f"{where}.rotation", "give either rpy_deg or rotation, not both")
    if j["rpy_deg"] is not None:
        return rotation_rpy(*np.radians(j["rpy_deg"]))
    if j["rotation"] is None:
        return np.eye(3)
    R = np.array(j["rotation"])
    if R.shape != (3, 3):
        v.fail(f"{where}.rotation", f"must be 3x3, got {R.shape[0]}x{R.shape[1]}")
    err = np.abs(R.T @ R - np.eye(3)).max()
    if err > 1e-9 or np.linalg.det(R) < 0:
        v.fail(f"{where}.rotation", f"must be a proper rotation matrix (R^T R = I within 1e-9, det = +1); "
               f"got |R^T R - I| = {err:.2g}, det = {np.linalg.det(R):.6g}: give more digits or use rpy_deg")
    return R


def parse_arm_side(v: Validator, j: dict, where: str, coupling: str) -> dict:
    """Drive-train data in arm-side units: given directly, or on the motor side with gear_ratio."""
    ratio = j["gear_ratio"]
    if ratio is not None and abs(ratio) < 1e-12:
        v.fail(f"{where}.gear_ratio", "must be non-zero")
    out = {k: j[k] for k in ("stiffness", "stiffness_cubic", "damping", "motor_inertia", "viscous_friction",
                             "coulomb_friction", "rotor_inertia_transverse", "coulomb_smoothing",
                             "stribeck_friction", "stribeck_velocity", *LINK_FRICTION)}
    for key, (arm, power) in MOTOR_SIDE.items():
        if j[key] is None:
            continue
        if ratio is None:
            v.fail(f"{where}.{key}", "motor-side data need gear_ratio (arm side = motor side x gear_ratio^2)")
        if out[arm] not in (0.0, None):
            v.fail(f"{where}.{key}", f"give either {arm} (arm side) or {key} (motor side), not both")
        out[arm] = j[key] * abs(ratio) ** power
    out.update(_spring_friction_laws(v, j, where, out))
    is_actuated = j["kind"] != "passive"
    if not is_actuated:
        for key in ("gear_ratio", "rotor_inertia", "rotor_axis", "motor_inertia"):
            if j[key] not in (None, 0.0):
                v.fail(f"{where}.{key}", "a passive joint has no motor")
    if coupling == "full" and is_actuated and ratio is None:
        v.fail(f"{where}.gear_ratio", "rotor_coupling = \"full\" needs the gear ratio of every actuated joint "
               "(the rotor spins gear_ratio times as fast as the joint; 1 for a direct drive)")
    out["gear_ratio"] = 1.0 if ratio is None else float(ratio)
    axis = j["rotor_axis"]
    out["rotor_axis"] = None if axis is None else parse_unit_vector(v, axis, f"{where}.rotor_axis")
    return out


def _spring_friction_laws(v: Validator, j: dict, where: str, out: dict) -> dict:
    """The nonlinear spring and friction keys checked against the joint kind and each other (arm side)."""
    kind = j["kind"]
    if kind == "direct":
        for key in (*SPRING_LAW, "stiffness_cubic"):
            if j[key] not in (None, 0.0):
                v.fail(f"{where}.{key}", "a direct joint has no spring (it is actuated rigidly)")
        for key in LINK_FRICTION:
            if out[key]:
                v.fail(f"{where}.{key}", f"a direct joint's link and motor turn together: give its bearing friction "
                       f"as {key.removeprefix('link_')}")
    if kind == "passive":
        for key in MOTOR_FRICTION:
            if out[key] not in (None, 0.0):
                v.fail(f"{where}.{key}", "a passive joint has no motor: its bearing friction is "
                       "link_viscous_friction / link_coulomb_friction (or damping)")
    knees, slopes, width = j["stiffness_knees"], j["stiffness_slopes"], j["knee_width"]
    if (knees is None) != (slopes is None):
        v.fail(f"{where}.{'stiffness_slopes' if slopes is None else 'stiffness_knees'}",
               "missing: a piecewise-linear spring needs stiffness_knees (rad) and stiffness_slopes (one slope "
               "beyond each knee)")
    if knees is not None:
        k = np.array(knees)
        if len(slopes) != len(k) or len(k) == 0:
            v.fail(f"{where}.stiffness_slopes", f"expected {len(k)} slopes (one beyond each knee), got {len(slopes)}")
        if k[0] <= 0 or np.any(np.diff(k) <= 0):
            v.fail(f"{where}.stiffness_knees", f"must be increasing deflections > 0 (rad), got {list(knees)}")
        if min(slopes) <= 0:
            v.fail(f"{where}.stiffness_slopes", f"must be > 0 (a monotone spring), got {list(slopes)}")
        if width is None:
            v.fail(f"{where}.knee_width", "missing: the knees are rounded over knee_width (rad) so that the inverse "
                   "model can differentiate the spring law; the law then differs from the sharp one by at most "
                   "|slope change| x knee_width x log 2")
        gap = min(np.diff(np.r_[0.0, k]))
        if width > 0.5 * gap:
            v.fail(f"{where}.knee_width", f"{width:g} rad rounds over more than half the smallest knee distance "
                   f"({gap:g} rad); use a smaller width")
    elif width is not None:
        v.fail(f"{where}.knee_width", "without stiffness_knees there is no knee to round")
    poly = j["stiffness_polynomial"]
    if poly is not None:
        if j["stiffness_cubic"]:
            v.fail(f"{where}.stiffness_polynomial", "give either stiffness_cubic or stiffness_polynomial (whose first "
                   "entry is the d^3 coefficient), not both")
        if min(poly) < 0:
            v.fail(f"{where}.stiffness_polynomial", f"coefficients must be >= 0 (a stiffening, monotone spring), got "
                   f"{list(poly)}; for a softening gear use stiffness_knees with smaller slopes")
    if out["stribeck_friction"] and not out["stribeck_velocity"]:
        v.fail(f"{where}.stribeck_velocity", "missing: stribeck_friction decays over stribeck_velocity (rad/s)")
    return {"stiffness_knees": tuple(knees or ()), "stiffness_slopes": tuple(slopes or ()),
            "knee_width": width or 0.0, "stiffness_polynomial": tuple(poly or ()),
            "coulomb_smoothing": out["coulomb_smoothing"] or COULOMB_SMOOTHING,
            "stribeck_friction": out["stribeck_friction"] or 0.0, "stribeck_velocity": out["stribeck_velocity"] or 0.0}


def parse_bearing(v: Validator, j: dict, where: str, rotation: np.ndarray, body: Body, first_index: int):
    """A passive joint with 2-3 axes: successive revolute joints at one point (massless between them,
    the body on the last), named name_1..name_k, with a coupled spring tau = -K q - D q'."""
    if j["kind"] != "passive":
        v.fail(f"{where}.axes", f"only a passive joint can have several axes (a {j['kind']} joint has one axis)")
    if j["axis"] is not None:
        v.fail(f"{where}.axes", "give either axis or axes, not both")
    axes = np.array(j["axes"])
    k = axes.shape[0]
    if axes.shape[1] != 3 or not 2 <= k <= 3:
        v.fail(f"{where}.axes", f"expected 2 or 3 axes of 3 numbers each, got {k} of {axes.shape[1]}")
    axes = np.array([parse_unit_vector(v, a, f"{where}.axes[{r + 1}]") for r, a in enumerate(axes)])
    if np.linalg.svd(axes, compute_uv=False).min() < 1e-6:
        v.fail(f"{where}.axes", "the axes must be linearly independent")
    for key in ("stiffness", "damping", "stiffness_cubic"):
        if j[key] != 0.0:
            v.fail(f"{where}.{key}", f"a multi-axis bearing takes {key.split('_')[0]}_matrix ({k}x{k}), not {key}")
    for key in (*SPRING_LAW, *LINK_FRICTION):
        if j[key] not in (None, 0.0):
            v.fail(f"{where}.{key}", "a multi-axis bearing has a linear spring (stiffness_matrix, damping_matrix)")
    K = _spd(v, j["stiffness_matrix"], k, f"{where}.stiffness_matrix", definite=True)
    D = _spd(v, j["damping_matrix"], k, f"{where}.damping_matrix", definite=False)
    massless = Body(0.0, np.zeros(3), np.zeros((3, 3)))
    joints = []
    for r in range(k):
        joints.append(Joint(name=f"{j['name']}_{r + 1}", kind="passive", axis=axes[r],
                            origin=np.array(j["origin"]) if r == 0 else np.zeros(3),
                            body=body if r == k - 1 else massless,
                            rotation=rotation if r == 0 else np.eye(3)))
    return joints, SpringGroup(j["name"], tuple(range(first_index, first_index + k)), K, D)


def _spd(v: Validator, mat, k: int, where: str, definite: bool) -> np.ndarray:
    if mat is None:
        if definite:
            v.fail(where, f"missing: a multi-axis bearing needs a {k}x{k} stiffness matrix")
        return np.zeros((k, k))
    mat = np.array(mat)
    if mat.shape != (k, k):
        v.fail(where, f"must be {k}x{k} (one row and column per axis), got {mat.shape[0]}x{mat.shape[1]}")
    if not np.allclose(mat, mat.T, rtol=1e-12, atol=0.0):
        v.fail(where, "must be symmetric")
    low = np.linalg.eigvalsh(mat).min()
    if low <= 0 if definite else low < -1e-12 * max(1.0, np.abs(mat).max()):
        v.fail(where, f"must be positive {'definite' if definite else 'semi-definite'} (smallest eigenvalue {low:.4g})")
    return mat


def parse_inertia(v: Validator, j: dict, where: str) -> np.ndarray:
    """A body's 3x3 inertia tensor about its centre of mass, from ``inertia`` or ``inertia_diag`` (checked)."""
    if j["inertia"] is not None and j["inertia_diag"] is not None:
        v.fail(f"{where}.inertia", "give either inertia or inertia_diag, not both")
    if j["inertia"] is not None:
        inertia = np.array(j["inertia"])
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T):
            v.fail(f"{where}.inertia", "must be a symmetric 3x3 matrix")
    else:
        inertia = np.diag(j["inertia_diag"] or [0.0, 0.0, 0.0])
    problem = inertia_problem(inertia)
    if problem is not None:
        field = "inertia_diag" if j["inertia"] is None and "triangle" in problem else "inertia"
        v.fail(f"{where}.{field}", problem)
    return inertia


def inertia_problem(inertia: np.ndarray) -> str | None:
    """Why a symmetric 3x3 inertia tensor (about the centre of mass) is not a rigid body's, or None."""
    principal = np.linalg.eigvalsh(inertia)
    if principal.min() < -1e-12 * max(1.0, abs(principal).max()):
        return f"must be positive semi-definite (principal moments {np.round(principal, 6).tolist()} kg m^2)"
    # a rigid body's principal moments satisfy the triangle inequality I_a <= I_b + I_c (each is an
    # integral of the squared distance from one axis, and d_a^2 <= d_b^2 + d_c^2). Exempt: the planar
    # convention of Moberg & Hanssen's tables, one moment about the axis of motion and the others 0.
    largest, others = principal[-1], principal[0] + principal[1]
    planar = others == 0.0
    if largest > others + 1e-9 * max(largest, 1e-300) and not planar:
        return (f"principal moments {np.round(principal, 6).tolist()} kg m^2 break the triangle inequality of a "
                f"rigid body (the largest, {largest:.6g}, exceeds the sum of the other two, {others:.6g}); for a "
                "planar arm give only the moment about the axis of motion and set the other two to 0")
    return None


def check_joint_physics(v: Validator, joint: Joint, where: str):
    """A joint's spring and motor as its kind needs them (stiffness > 0, motor inertia > 0)."""
    if joint.kind in ("elastic_gear", "passive") and joint.stiffness <= 0:
        v.fail(f"{where}.stiffness", f"a {joint.kind} joint needs stiffness > 0 (or stiffness_motor_side with "
               "gear_ratio)" if joint.kind == "elastic_gear" else f"a {joint.kind} joint needs stiffness > 0")
    if joint.kind == "elastic_gear" and joint.motor_inertia <= 0:
        v.fail(f"{where}.motor_inertia", "an elastic_gear joint needs motor_inertia > 0 (or rotor_inertia with "
               "gear_ratio)")
