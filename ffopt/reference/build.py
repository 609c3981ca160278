"""A Reference from a validated problem-file spec (``ffopt.io.reference_spec.ReferenceSpec``) and the model.

Cartesian kinds (line, polyline, arc) are built in output space, joint outputs among them (a
redundant arm's elbow: on a polyline moved over the whole motion, ``whole_motion_move``); a joint move is built in joint
space and mapped through the rigid forward kinematics of the model's outputs (passive joints at
rest), so its outputs may be joint angles, tool coordinates or tool angles alike.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ffopt.models.chain import Chain
from ffopt.models.flexible import ORIENTATION, FlexibleModel
from ffopt.reference.paths import ArcGeometry, JointMove, arc, joint_ptp, line, polyline, whole_motion_move
from ffopt.reference.prefilter import Butterworth, filtered_reference_expression
from ffopt.reference.reference import Reference, TimeLine
from ffopt.reference.shaping import Shaper, shape_reference, shaper

__all__ = ["reference_from_spec", "angle_centres", "rigid_forward_kinematics", "shape_reference_on_model"]


def rigid_forward_kinematics(model: FlexibleModel, which: str = "output") -> ca.Function:
    """Actuated link angles -> model outputs (``which="output"``) or tool point ("tool"), passive joints at 0."""
    L = model.layout
    s = ca.SX.sym("q_act", L.n_u)
    qa = ca.SX.zeros(L.n_link)
    qa[list(L.actuated)] = s
    f = model.output if which == "output" else model.tool_position
    return ca.Function(f"rigid_{which}", [s], [f(qa)])


def reference_from_spec(spec, model: FlexibleModel, law=None) -> Reference:
    """The spec's path moved by its time law, or by ``law`` (a TimeLaw: a planner's trial law, e.g. the
    shaped laws of ``ffopt.dae.rest_to_rest``); a ``prefilter`` spec has no time law."""
    names = list(model.outputs)
    if spec.kind == "prefilter":  # no time law: the filter shapes the raw move
        return _prefiltered(spec, model, names)
    ref = _moved_by_law(spec, model, names, law)
    if spec.shaper is None:
        return ref
    # reference.shaper: theta_s = sum_i A_i theta(t - t_i)
    return shape_reference_on_model(ref, shaper(*spec.shaper), model)


def shape_reference_on_model(reference: Reference, sh: Shaper, model: FlexibleModel | None = None) -> Reference:
    """``reference`` with its time law shaped by ``sh`` (``ffopt.reference.shaping.shape_reference``); a
    reference mapped from a joint path (``joint_ptp``, a joint-space ``prefilter``) is shaped in joint space
    and mapped again through the rigid forward kinematics of ``model`` (needed then): its outputs and its
    tool path are then those of the shaped joint move."""
    if reference.joint is None:
        return shape_reference(reference, sh)
    if model is None:
        raise ValueError("shape_reference: a reference mapped from a joint path needs the model")
    tool = None if reference.tool_path is None else rigid_forward_kinematics(model, "tool")
    return shape_reference(reference, sh, rigid_forward_kinematics(model), tool)


def _moved_by_law(spec, model: FlexibleModel, names, law=None) -> Reference:
    """The path of a time-law spec moved by its time law or ``law``."""
    common = dict(time_law=spec.law if law is None else law, rest_before=spec.rest_before, rest_after=spec.rest_after)
    p = spec.params
    if spec.kind == "line":
        return line(p["start"], p["end"], spec.duration, names=names, **common)
    if spec.kind == "polyline":
        ref = polyline(p["points"], p["durations"], p["blends"], names=names, **common)
        if "joint_start" not in p:
            return ref
        return whole_motion_move(ref, p["joint_end"] - p["joint_start"], common["time_law"])  # the joint outputs
    if spec.kind == "arc":
        geometry = ArcGeometry(p["center"], p["start"], p["angle"], p["normal"])
        ref = arc(geometry, spec.duration, extra_start=p["extra_start"], extra_end=p["extra_end"], **common)
        return ref.select(np.argsort(p["pos"] + p.get("extra", p["ang"])), names)  # rows back into output order
    if spec.kind == "joint_ptp":
        act = [model.chain.joints[i].name for i in model.layout.actuated]
        ref = joint_ptp(JointMove(p["q_start"], p["q_end"], act), p["durations"], rigid_forward_kinematics(model),
                        names=names, **common)
        ref.tool_path = ref.joint.map(rigid_forward_kinematics(model, "tool"), names=["x", "y", "z"])
        return ref
    raise ValueError(f"unknown reference kind {spec.kind!r}")


def _prefiltered(spec, model: FlexibleModel, names) -> Reference:
    """The raw move of a ``prefilter`` spec through its Butterworth filter (``ffopt.reference.prefilter``).

    The reference is the exact filter output over the whole horizon [0, t_end], t_end = raw end +
    settling time + rest_after (only the tail below ``settle_tolerance`` is cut off at t_end).
    """
    p = spec.params
    profile = p["profile"]
    filt = Butterworth(p["order"], p["cutoff_hz"])
    t_end = profile.t_end + p["settling_time"] + spec.rest_after
    t, motion = filtered_reference_expression(filt, profile, p["start"], p["end"])
    timeline = TimeLine(profile.t_start, t_end, t_end, f"butterworth{filt.order}", [k[0] for k in profile.knots])
    if p["space"] == "joint":
        act = [model.chain.joints[i].name for i in model.layout.actuated]
        joint = Reference(t, motion, timeline, act)
        ref = joint.map(rigid_forward_kinematics(model), names=names)
        ref.tool_path = joint.map(rigid_forward_kinematics(model, "tool"), names=["x", "y", "z"])
    else:
        ref = Reference(t, motion, timeline, names)
    ref.prefilter = dict(p["info"])
    return ref


def angle_centres(spec, chain: Chain, outputs) -> dict[str, float]:
    """Branch centres of the yaw/roll outputs: from the spec (Cartesian kinds), or the start pose of a joint move."""
    if "q_start" not in spec.params or not any(o in ("yaw", "roll") for o in outputs):
        return dict(spec.angle_centres)
    model = FlexibleModel(chain, tuple(outputs))
    y0 = np.array(rigid_forward_kinematics(model)(spec.params["q_start"])).ravel()
    return {o: float(y0[i]) for i, o in enumerate(outputs) if o in ORIENTATION and o != "pitch"}
