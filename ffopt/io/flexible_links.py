"""The ``flexible`` table of a joint in a problem file: the joint's body is a flexible beam.

    [[model.joints]]
    name = "shoulder"
    kind = "direct"
    axis = [0.0, 0.0, 1.0]
    mass = 0.0                      # rigid parts carried by the beam's tip (payload, next joint's housing)
    flexible = { modes = 2, EI = 1.0e5, length = 6.0, mass = 140.0 }

Keys (SI units): ``modes`` (assumed clamped-free modes, >= 1), ``EI`` (bending stiffness, N m^2),
``length`` (m), ``mass`` (the beam's own mass, kg, uniform), ``direction`` (the beam axis in the
body frame, default [1, 0, 0]; perpendicular to the joint axis, the beam bends in the plane of
rotation), ``damping_ratio`` (modal damping per mode, one number for all modes or one per mode;
default 0) and ``static_shapes`` (default false: the clamped-free modes of Mohan & Saha; true: Ritz modes
of modes - 2 clamped-free modes and the static tip shapes xi^2, xi^3, exact under tip loads, see
``ffopt.models.flexible_links.StaticCorrectedModes``) and ``kinematics`` (default "second_order": the
foreshortening of the bent link; "linear": Mohan & Saha's small-deflection kinematics). The joint's own ``mass``/``com``/``inertia``, the next joint's ``origin`` and the tool
point, all given in the joint's body frame as for a rigid link, are carried by the beam's tip
cross-section (see ``ffopt.models.flexible_links``).
"""

from __future__ import annotations

import numpy as np

from ffopt.io.schema import Field, Validator, positive
from ffopt.models.chain import Chain
from ffopt.models.flexible_links import KINEMATICS, MAX_MODES, FlexibleLink, modal_coordinate_names


def _modes(n):
    if n < 1:
        return (f"must be >= 1, got {n}: a flexible link needs at least one assumed mode (remove the flexible "
                "table for a rigid link)")
    return None if n <= MAX_MODES else f"at most {MAX_MODES} modes per link, got {n}"


def _ratios(x):
    values = [x] if isinstance(x, float) else x
    return None if all(z >= 0 for z in values) else f"damping ratios must be >= 0, got {x}"


FLEXIBLE_SCHEMA = {
    "modes": Field("int", required=True, check=_modes, doc="assumed clamped-free modes (>= 1)"),
    "EI": Field("float", required=True, check=positive, unit="N m^2", doc="bending stiffness (N m^2)"),
    "length": Field("float", required=True, check=positive, unit="m", doc="beam length (m)"),
    "mass": Field("float", required=True, check=positive, unit="kg", doc="beam mass (kg), uniform along the length"),
    "direction": Field("vector", default=[1.0, 0.0, 0.0], length=3,
                       doc="beam axis in the body frame, perpendicular to the joint axis"),
    "damping_ratio": Field("number_or_vector", default=0.0, check=_ratios,
                           doc="modal damping ratio: one for all modes or one per mode"),
    "static_shapes": Field("bool", default=False,
                           doc="true: the modes are Ritz modes of modes - 2 clamped-free modes and the static tip "
                               "shapes xi^2, xi^3 (exact statics under a tip force and moment; modes >= 2); false: "
                               "clamped-free modes only (their tip slope under a tip moment converges like 1 / modes)"),
    "kinematics": Field("str", default="second_order", choices=KINEMATICS,
                        doc="\"second_order\": a bent link is shorter along its chord by (1/2) int w'^2 dx and its tip "
                            "turns by asin(w'(L)) (the foreshortening and the geometric stiffening it brings; Kane, Ryan & "
                            "Banerjee); \"linear\": points move linearly in the modes (Mohan & Saha), valid only "
                            "while that shortening is far below the tool tolerance"),
}


def parse_flexible_links(v: Validator, joint_tables: list[dict], chain: Chain) -> tuple[FlexibleLink, ...]:
    """FlexibleLink specs from the validated joint tables (their ``flexible`` entries)."""
    links = []
    chain_index = -1  # a multi-axis bearing table expands to several chain joints
    for t, table in enumerate(joint_tables):
        chain_index += 1 if table.get("axes") is None else len(table["axes"])
        f = table.get("flexible")
        if f is None:
            continue
        where = f"model.joints[{t + 1}].flexible"
        if table.get("axes") is not None:
            v.fail(where, "a flexible link needs a single-axis joint (its beam bends about that axis); "
                   "put the multi-axis bearing on a rigid body")
        i = chain_index
        direction = np.array(f["direction"])
        if np.linalg.norm(direction) < 1e-12:
            v.fail(f"{where}.direction", "must be a non-zero vector")
        direction = direction / np.linalg.norm(direction)
        if abs(direction @ chain.joints[i].axis) > 1e-9:
            v.fail(f"{where}.direction", f"{f['direction']} is not perpendicular to the joint axis "
                   f"{np.round(chain.joints[i].axis, 6).tolist()}: the beam bends in the plane of the joint's rotation")
        zeta = f["damping_ratio"]
        zeta = (zeta,) * f["modes"] if isinstance(zeta, float) else tuple(zeta)
        if len(zeta) != f["modes"]:
            v.fail(f"{where}.damping_ratio", f"expected one number or {f['modes']} (one per mode), got {len(zeta)}")
        if f["static_shapes"] and f["modes"] < 2:
            v.fail(f"{where}.modes", f"static_shapes needs modes >= 2 (the two static shapes), got {f['modes']}")
        links.append(FlexibleLink(i, f["modes"], f["EI"], f["length"], f["mass"], direction, zeta,
                                  static_correction=f["static_shapes"], kinematics=f["kinematics"]))
    if links and chain.rotor_coupling == "full":
        v.fail("model.rotor_coupling", "\"full\" is not modelled together with flexible links; use \"reduced\"")
    if links and chain.constant_inertia is not None:
        v.fail("model.constant_inertia", "cannot be combined with flexible links (they need the rigid-body model)")
    clash = sorted(set(modal_coordinate_names(chain, links)) & {j.name for j in chain.joints})
    if clash:
        v.fail("model.joints", f"joint name(s) {clash} equal the names of modal coordinates "
               "(<joint>.mode<j>); rename them")
    return tuple(links)
