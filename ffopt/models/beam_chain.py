"""A geometrically exact beam for the verification: every flexible link as a chain of rigid rods.

An assumed-mode link (``ffopt.models.flexible_links``) is a truncation twice over: it keeps a few modes,
and with ``kinematics = "linear"`` its points move linearly in the modal coordinates, so a bent link keeps
its length along its chord. A real beam does not: bent by a tip deflection w, a link of length L is shorter
along its chord by about (1/2) int_0^L w'(x)^2 dx (8-9 mm for a 0.29 m tip deflection of a 6 m link), and the
centrifugal and inertial forces along the bent beam stiffen it (Kane, Ryan & Banerjee, dynamics of a
cantilever beam attached to a moving base, 1987).

``segmented_beam_model`` replaces each flexible link by K rigid uniform rods joined by revolute springs about
the joint axis (a rigid-finite-element or Hencky bar chain): rods of length l/2, l, ..., l, l/2 (l = L / K),
hinges at x_j = (j - 1/2) l with stiffness EI / l. Nothing in it is linearised: rods turn through any
angle, so the chain is exact in its geometry (large rotations, an inextensible beam, no shear and no rotary
inertia of the cross-sections, as in Euler-Bernoulli) and converges to the beam as K grows: its static tip
slope and deflection under a tip moment are exact for every K, under a tip force the deflection is
(1 - 1 / (4 K^2)) of the beam's, and its low frequencies converge like 1 / K^2. The rigid parts a flexible
link carries at its tip (the joint's own body, the payload, the next joint, the tool) ride on the last rod.
Structural damping is stiffness proportional, c = beta EI / l per hinge: beta = 2 zeta_1 / omega_1 where the
link has a modal damping ratio zeta_1 (the same ratio on the first mode, more on the higher ones); an undamped
link gets the damping that puts its chain's top mode at a ratio of 0.5 (``HIGH_MODE_DAMPING``): its first mode's
ratio then vanishes like 1 / K^2 with the chain's other errors.

The result is an ordinary ``FlexibleModel`` (passive joints ``<joint>.seg<j>``); its actuated joints,
motors and outputs are those of the planning model, so a plan's torques and motor references apply to it
unchanged.
"""

from __future__ import annotations

from dataclasses import replace

import casadi as ca
import numpy as np

from ffopt.models import rigid_body
from ffopt.models.chain import Body, Chain, Joint
from ffopt.models.flexible import FlexibleModel

HIGH_MODE_DAMPING = 0.5  # damping ratio of an undamped link's top chain mode (``_stiffness_proportional``)


def rod(mass: float, length: float, start: float, direction: np.ndarray) -> Body:
    """A thin uniform rod from ``start`` to ``start + length`` along ``direction`` (no cross-section inertia)."""
    e = np.asarray(direction, float)
    return Body(mass, (start + length / 2) * e, mass * length**2 / 12 * (np.eye(3) - np.outer(e, e)))


def hinge_positions(length: float, segments: int) -> np.ndarray:
    """x_j = (j - 1/2) L / K, j = 1..K: where the rods of a K-segment link are hinged."""
    return (np.arange(segments) + 0.5) * length / segments


def _link_as_rods(joint: Joint, link, segments: int, first_name: str) -> tuple[list[Joint], float]:
    """The actuated or passive joint carrying a flexible link, then its K hinges; returns (joints, x_K) with
    x_K the last hinge's distance from the joint, by which everything carried at the tip is shifted."""
    e = link.direction
    l = link.length / segments
    rho_l = link.mass / link.length * l
    x = hinge_positions(link.length, segments)
    first = replace(joint, body=rod(rho_l / 2, l / 2, 0.0, e))
    hinge_damping = _stiffness_proportional(link, segments) * link.EI / l
    joints = [first]
    for j in range(segments):
        last = j == segments - 1
        body = rod(rho_l / (2 if last else 1), l / (2 if last else 1), 0.0, e)
        if last:  # the rigid parts the link carries, given in the link's frame: to the last rod's frame
            body = body.combined(replace(joint.body, com=np.asarray(joint.body.com, float) - x[-1] * e))
        origin = x[0] * e if j == 0 else l * e
        joints.append(Joint(name=f"{first_name}.seg{j + 1}", kind="passive", axis=np.asarray(joint.axis, float),
                            origin=origin, body=body, stiffness=link.EI / l, damping=hinge_damping))
    return joints, x[-1]


def _stiffness_proportional(link, segments: int) -> float:
    """beta (s) of the hinges' damping c = beta EI / l, which gives mode j of the chain the ratio beta omega_j / 2:
    2 zeta_1 / omega_1 for a link with modal damping (its first mode's ratio). An undamped link would ring forever
    in its top modes (its rods' own, far above the beam's: 16 rods of a 2 m link reach 24 kHz), which a stiff
    integrator must then follow step by step (the Canadarm plan on 16 segments per link: 346 s undamped, 24 s with
    the top mode at a ratio of 0.1, 10 s at 0.5); so its top mode gets the ratio HIGH_MODE_DAMPING. The top
    frequency grows like K^2, so the first mode's ratio, HIGH_MODE_DAMPING omega_1 / omega_top, falls like 1 / K^2
    with the chain's other errors (6 m link: 0.5 % at 6 segments, 0.08 % at 16), and the Richardson extrapolation
    of the verification removes it with them (``ffopt.sim.refined``)."""
    if link.damping_ratio[0] > 0:
        return 2 * link.damping_ratio[0] / link.frequencies[0]
    return 2 * HIGH_MODE_DAMPING / _top_frequency(link, segments)


def _top_frequency(link, segments: int) -> float:
    """Highest natural frequency (rad/s) of the link's rods clamped at the joint (nothing at the tip)."""
    e = np.asarray(link.direction, float)
    axis = np.cross(e, np.eye(3)[np.argmin(np.abs(e))])  # any axis across the rods: the same frequencies
    axis /= np.linalg.norm(axis)
    l, rho_l = link.length / segments, link.mass / segments
    joints = [Joint(f"h{j}", "passive", axis, (l / 2 if j == 0 else l) * e,
                    rod(rho_l / (2 if j == segments - 1 else 1), l / (2 if j == segments - 1 else 1), 0.0, e))
              for j in range(segments)]
    chain = Chain(tuple(joints), tool_origin=np.zeros(3))
    M = np.array(ca.Function("M", [], [rigid_body.mass_matrix(chain, ca.SX.zeros(segments))])()["o0"])
    lam = np.linalg.eigvals(np.linalg.solve(M, link.EI / l * np.eye(segments)))
    return float(np.sqrt(np.abs(lam).max()))


def segmented_beam_model(model, segments: int) -> FlexibleModel:
    """The arm of ``model`` (a ``FlexibleLinkModel``) with every flexible link a chain of ``segments`` rigid
    rods (see the module text): the same joints, motors, payload, tool and outputs."""
    if segments < 1:
        raise ValueError(f"a segmented beam needs at least one segment per link, got {segments}")
    chain: Chain = model.chain
    links = {k.joint: k for k in model.links}
    joints: list[Joint] = []
    shift = np.zeros(3)  # where the previous link's last rod frame sits in that link's own frame
    for i, jt in enumerate(chain.joints):
        jt = replace(jt, origin=np.asarray(jt.origin, float) - shift)
        if i in links:
            rods, x_last = _link_as_rods(jt, links[i], segments, jt.name)
            joints += rods
            shift = x_last * links[i].direction
        else:
            joints.append(jt)
            shift = np.zeros(3)
    payload = chain.payload
    if payload is not None and np.any(shift):
        payload = replace(payload, com=np.asarray(payload.com, float) - shift)
    segmented = replace(chain, joints=tuple(joints), tool_origin=np.asarray(chain.tool_origin, float) - shift,
                        payload=payload, spring_groups=_shifted_groups(chain, links, segments))
    return FlexibleModel(segmented, model.outputs, f"{model.name} (beam as {segments} rigid segments per link)",
                         model.angle_centres)


def _shifted_groups(chain: Chain, links, segments: int):
    """Spring groups (multi-axis bearings) with their joint indices moved past the inserted hinges."""
    def new_index(i: int) -> int:
        return i + segments * sum(1 for k in links if k < i)

    return tuple(replace(g, joints=tuple(new_index(i) for i in g.joints)) for g in chain.spring_groups)


def segment_coordinates(model, segments: int, q_link: np.ndarray) -> np.ndarray:
    """Link-side coordinates of the segmented arm from those of the assumed-mode ``model`` (joint angles and
    modal coordinates): hinge j turns by the beam's slope change across it, w'(x_j + l/2) - w'(x_j - l/2)
    (its first-order share of the bending); used as the starting guess of its static equilibrium."""
    q_link = np.asarray(q_link, float)
    links = {k.joint: k for k in model.links}
    out = []
    for i in range(model.n_joints):
        out.append(q_link[i])
        if i in links:
            k = links[i]
            delta = q_link[model.modal_slice(i)]
            x = hinge_positions(k.length, segments)
            edges = np.concatenate([[0.0], x + k.length / (2 * segments)])
            edges[-1] = k.length
            slope = k.shapes.shape(edges / k.length, 1).T @ delta / k.length
            out += list(np.diff(slope))
    return np.array(out)


def link_bending(segmented: FlexibleModel, model, segments: int) -> ca.Function:
    """q_link of the segmented arm -> (transverse tip deflection w(L), chord shortening L - chord) per flexible
    link of ``model``, in m, both measured in the frame of the link's joint (its rigid direction e, b)."""
    q = ca.SX.sym("q", segmented.layout.n_link)
    poses = rigid_body.body_poses(segmented.chain, q)
    out, inserted = [], 0
    for k in model.links:
        first = k.joint + inserted
        R0, p0 = poses[first]
        RK, pK = poses[first + segments]
        e = np.asarray(k.direction, float)
        b = np.cross(np.asarray(model.chain.joints[k.joint].axis, float), e)
        d = R0.T @ (pK + RK @ ca.DM(k.length / (2 * segments) * e) - p0)
        out += [ca.dot(d, ca.DM(b)), k.length - ca.dot(d, ca.DM(e))]
        inserted += segments
    return ca.Function("link_bending", [q], [ca.vertcat(*out)], ["q_link"], ["w_tip_and_shortening"])
