"""Input shaping: the industry's vibration baseline beside ffopt's flexible inverse.

Singer & Seering's ZV and ZVD shapers (preshaping command inputs to reduce system vibration, 1990) and
the shaping of a reference's time law are reference operations, in ``ffopt.reference.shaping``
(``Shaper``, ``zv``, ``zvd``, ``shaper``, ``residual_vibration``, ``insensitivity_band``,
``shape_signal``, ``SHAPERS``, imported here under the same names). ``shape_reference`` here is
``ffopt.reference.build.shape_reference_on_model``: a reference mapped from a joint path is mapped again
through the rigid forward kinematics of the model given.

What is of the plant stays here. As a baseline (``shaped_rigid_feedforward``): the reference path
theta(t) is shaped, theta_s(t) = sum_i A_i theta(t - t_i) (exact to every derivative,
``shape_reference``), and the rigid-model feedforward (``ffopt.sim.baselines.rigid_feedforward``) with
its motor references for the PD loop is computed on theta_s. The modes come from ffopt's
eigenfrequency analysis (``ffopt.analysis.linear``: the plant linearised at rest in the static
equilibrium of the path's end, the motor PD closed, ``lowest_modes``).
"""

from __future__ import annotations

import numpy as np

from ffopt.reference.build import shape_reference_on_model as shape_reference
from ffopt.reference.shaping import (
    SHAPERS,
    Shaper,
    insensitivity_band,
    residual_vibration,
    shape_signal,
    shaper,
    zv,
    zvd,
)

__all__ = ["Shaper", "zv", "zvd", "shaper", "residual_vibration", "insensitivity_band", "shape_signal",
           "shape_reference", "lowest_modes", "shaped_rigid_feedforward", "SHAPERS"]


def lowest_modes(model, q, kp, kd, n: int = 2, condition: str = "pd") -> list[tuple[float, float]]:
    """The n lowest vibration modes (natural frequency Hz, damping ratio) of the plant linearised at rest
    in q (``ffopt.analysis.linear``: holding torque, ``condition`` "pd": the motor PD kp, kd closed;
    "clamped": motors held), lowest first."""
    from ffopt.analysis.linear import boundary_condition, linearize, modes

    lin = linearize(model, np.asarray(q, float))
    md = modes(*boundary_condition(model, lin, condition, (np.asarray(kp, float), np.asarray(kd, float))))
    return [(float(f), float(z)) for f, z in zip(md.natural_hz[:n], md.damping_ratio[:n])]


def shaped_rigid_feedforward(model, reference, sh: Shaper, step: float, guess=None):
    """The shaped reference, its time grid (0 .. its t_end by ``step``) and the rigid-model feedforward on
    it (``ffopt.sim.baselines.RigidMotion``: torques, motor references for the PD)."""
    from ffopt.sim.baselines import rigid_feedforward

    ref = shape_reference(reference, sh, model)
    n = int(round(ref.t_end / step))
    t = np.linspace(0.0, n * step, n + 1)
    return ref, t, rigid_feedforward(model, ref, t, guess)
