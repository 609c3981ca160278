"""Plants that differ from the planning model: the model-mismatch cases of the control study.

Each function returns a modified ``Chain`` (SI, arm side); ``model.variant(chain)`` is the plant.
The same changes can be made field by field with ``Problem.with_values`` / ``ffopt simulate --set``
(``model.payload.mass``, ``model.joints.q3.stiffness``, ...); these apply one factor to every
joint at once.

- ``tool_payload``: an unmodelled point mass at the tool point, given as a fraction of the arm's
  moving mass (every body's mass plus the modelled payload): "+10 %" = 0.1.
- ``scaled_stiffness`` / ``scaled_damping``: every gear and passive-joint spring (linear and
  cubic, and coupled bearings) or damper times a factor.
- ``with_friction``: motor friction the plan did not know, Coulomb and viscous, per actuated joint.
- ``scaled_last_body``: the payload (or last body) mass and inertia times a factor, the check of
  ``ffopt plan --verify full`` (``payload_x2`` doubles E12's whole 200 kg third body).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ffopt.models.chain import Body, Chain


def moving_mass(chain: Chain) -> float:
    """Mass of everything the joints move (kg): every body and the payload."""
    return float(sum(j.body.mass for j in chain.joints) + (chain.payload.mass if chain.payload is not None else 0.0))


def tool_payload(chain: Chain, fraction: float) -> Chain:
    """The chain with a point mass of ``fraction`` x its moving mass at the tool point (on the payload)."""
    point = Body(fraction * moving_mass(chain), np.asarray(chain.tool_origin, float), np.zeros((3, 3)))
    payload = point if chain.payload is None else chain.payload.combined(point)
    return replace(chain, payload=payload)


def scaled_last_body(chain: Chain, factor: float) -> Chain:
    return chain.with_payload_scale(factor)


def scaled_stiffness(chain: Chain, factor: float) -> Chain:
    """Every elastic gear and passive joint (and coupled bearing) ``factor`` times as stiff."""
    joints = tuple(replace(j, stiffness=j.stiffness * factor, stiffness_cubic=j.stiffness_cubic * factor)
                   if j.kind != "direct" else j for j in chain.joints)
    groups = tuple(replace(g, stiffness=np.asarray(g.stiffness) * factor) for g in chain.spring_groups)
    return replace(chain, joints=joints, spring_groups=groups)


def scaled_damping(chain: Chain, factor: float) -> Chain:
    """Every gear and passive-joint damper (and coupled bearing) times ``factor``."""
    joints = tuple(replace(j, damping=j.damping * factor) if j.kind != "direct" else j for j in chain.joints)
    groups = tuple(replace(g, damping=np.asarray(g.damping) * factor) for g in chain.spring_groups)
    return replace(chain, joints=joints, spring_groups=groups)


def with_friction(chain: Chain, coulomb, viscous) -> Chain:
    """Motor friction added to each actuated joint (arm side): Coulomb (N m) and viscous (N m s/rad),
    one value per actuated joint in chain order."""
    coulomb, viscous = np.broadcast_to(coulomb, (len(chain.actuated),)), np.broadcast_to(viscous, (len(chain.actuated),))
    joints = list(chain.joints)
    for k, i in enumerate(chain.actuated):
        j = joints[i]
        joints[i] = replace(j, coulomb_friction=j.coulomb_friction + float(coulomb[k]),
                            viscous_friction=j.viscous_friction + float(viscous[k]))
    return replace(chain, joints=tuple(joints))
