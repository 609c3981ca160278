"""The rigid-robot baselines: rigid inverse kinematics (also the path check), rigid feedforward.

The rigid model is the industrial default that ffopt's flexible inverse improves on: the gears
are infinitely stiff (qm = qa, motor inertia and friction act on the link joint) and non-actuated
elastic joints are locked at their rest angle 0. With as many tool outputs as actuated joints
the path fixes the actuated angles through Gamma(qa) = theta(t) (seed 000 eq. 2), solved here by
Newton continuation along t; velocities and accelerations follow from differentiating it,
J qa' = theta',  J qa'' = theta'' - (d/dt J) qa'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from ffopt.errors import PathError, ProblemError
from ffopt.models.chain import Chain
from ffopt.models.flexible import FlexibleModel

# The path counts as singular where the smallest singular value of the output Jacobian w.r.t. the
# actuated joints (m/rad) falls below SINGULARITY_TOL x reach (the arm's reach, m): near there a
# 1 mm tool step needs more than 1 / (1000 SINGULARITY_TOL reach) rad, e.g. 0.45 rad on E12 (2.2 m).
# An absolute measure: a relative one (sigma_min / sigma_max) never fires with one output (E1).
SINGULARITY_TOL = 1e-3
# Largest joint-angle change between two samples of the path check before we call it a jump
# to another IK branch (the path passes a singularity between the samples).
MAX_JOINT_STEP = 0.5  # rad


@dataclass
class RigidMotion:
    """Rigid-model solution on a grid: link angles and the feedforward that drives them."""

    t: np.ndarray  # (n,)
    qa: np.ndarray  # (n, n_link), passive joints 0
    dqa: np.ndarray
    ddqa: np.ndarray
    u: np.ndarray  # (n, N) rigid-model feedforward torque
    qm: np.ndarray  # (n, N) motor reference = actuated link angles (stiff gears)
    dqm: np.ndarray


def rigid_chain(chain: Chain) -> Chain:
    """Stiff-gear version of the chain: elastic gears become direct drives (same motor data)."""
    joints = tuple(replace(j, kind="direct") if j.kind == "elastic_gear" else j for j in chain.joints)
    return replace(chain, joints=joints)


class _RigidKinematics:
    """CasADi functions of the actuated angles s (passive joints locked at 0)."""

    def __init__(self, model: FlexibleModel):
        L = model.layout
        if len(model.outputs) != L.n_u:
            raise ProblemError(
                f"model.outputs: the rigid path check needs as many tool outputs as actuated joints "
                f"({L.n_u}), got {len(model.outputs)} ({', '.join(model.outputs)})")
        self.n_link, self.act = L.n_link, list(L.actuated)
        self.singular_below = SINGULARITY_TOL * reach(model.chain)
        s, ds, y = ca.SX.sym("s", L.n_u), ca.SX.sym("ds", L.n_u), ca.SX.sym("y", L.n_u)
        qa = self.full(s)
        out = model.output(qa)
        J = ca.jacobian(out, s)
        self.residual = ca.Function("ik_res", [s, y], [out - y])
        self.newton = ca.rootfinder("rigid_ik", "newton", self.residual,
                                    {"abstol": 1e-12, "max_iter": 50, "error_on_fail": False})
        self.jac = ca.Function("ik_jac", [s], [J])
        self.jdot_ds = ca.Function("ik_jdot", [s, ds], [ca.jtimes(J @ ds, s, ds)])

    def full(self, s):
        qa = ca.SX.zeros(self.n_link) if isinstance(s, ca.SX) else np.zeros(self.n_link)
        qa[self.act] = s
        return qa


def reach(chain: Chain) -> float:
    """Upper bound of the tool's distance from the first joint: the sum of the link lengths (m)."""
    lengths = [np.linalg.norm(j.origin) for j in chain.joints[1:]] + [np.linalg.norm(chain.tool_origin)]
    return float(sum(lengths))


def rigid_inverse_kinematics(model: FlexibleModel, reference, t, guess=None) -> np.ndarray:
    """Link angles qa (n, n_link) of the rigid robot on the path at the times t (the path check).

    Passive joints are held at their rest angle 0 and gears are stiff, so the actuated angles
    solve Gamma(qa) = theta(t) (Newton, continued along t from ``guess``, full link vector).
    Raises PathError naming the time where the path leaves the workspace, where the smallest
    singular value of the Jacobian w.r.t. the actuated joints drops below SINGULARITY_TOL x reach,
    or where the solution jumps to another IK branch.
    """
    kin = _RigidKinematics(model)
    t = np.asarray(t, float).ravel()
    y = np.asarray(reference.evaluate(t))
    s = np.zeros(len(kin.act)) if guess is None else np.asarray(guess, float)[kin.act]
    qa = np.zeros((len(t), kin.n_link))
    for i, ti in enumerate(t):
        s_new = np.array(kin.newton(s, y[i])).ravel()
        _check_ik_point(kin, s, s_new, y[i], ti, first=i == 0)
        s = s_new
        qa[i, kin.act] = s
    return qa


def _check_ik_point(kin, s_prev, s, y, t, first):
    at = f"t = {t:.4g} s (tool target {np.round(1000 * y, 2).tolist()} mm)"
    resid = np.abs(np.array(kin.residual(s, y))).max() if np.all(np.isfinite(s)) else np.inf
    if not resid < 1e-9:
        raise PathError(f"reference: the path leaves the workspace at {at}: the rigid inverse kinematics "
                        "has no solution there; shorten the path or move it towards the robot"
                        + ("; or give reference.joint_guess near the start configuration" if first else ""))
    sv = np.linalg.svd(np.array(kin.jac(s)), compute_uv=False)
    if sv[-1] < kin.singular_below:
        raise PathError(f"reference: the path passes through a singularity at {at}: the smallest singular "
                        f"value of the tool Jacobian w.r.t. the actuated joints is {sv[-1]:.3g} m/rad "
                        f"(< {kin.singular_below:.3g}); move the path away from stretched or folded arm "
                        "configurations")
    if not first and np.abs(s - s_prev).max() > MAX_JOINT_STEP:
        raise PathError(f"reference: the inverse kinematics jumps to another branch at {at} (a joint moves "
                        f"{np.abs(s - s_prev).max():.2f} rad between samples): the path crosses a singularity")


def rigid_feedforward(model: FlexibleModel, reference, t, guess=None) -> RigidMotion:
    """The industrial baseline: feedforward from the RIGID model (stiff gears, passive joints locked).

    Rigid inverse kinematics with its derivatives, the torque of the stiff-gear model along it
    (``rigid_chain``; passive joints at 0, so their spring torque and motion are ignored) and the
    motor references qm = actuated link angles.
    """
    kin = _RigidKinematics(model)
    t = np.asarray(t, float).ravel()
    qa = rigid_inverse_kinematics(model, reference, t, guess)
    dy, ddy = reference.evaluate(t, 1), reference.evaluate(t, 2)
    n, act = len(t), kin.act
    dqa, ddqa = np.zeros_like(qa), np.zeros_like(qa)
    for i in range(n):
        J = np.array(kin.jac(qa[i, act]))
        ds = np.linalg.solve(J, dy[i])
        dqa[i, act] = ds
        ddqa[i, act] = np.linalg.solve(J, ddy[i] - np.array(kin.jdot_ds(qa[i, act], ds)).ravel())
    rigid = model.variant(rigid_chain(model.chain))
    u = np.array(rigid.input_torque.map(n)(qa.T, dqa.T, ddqa.T)).T
    return RigidMotion(t=t, qa=qa, dqa=dqa, ddqa=ddqa, u=u, qm=qa[:, act], dqm=dqa[:, act])


def pd_only(model: FlexibleModel, reference, t, guess=None, rigid: RigidMotion | None = None) -> RigidMotion:
    """No feedforward at all (u = 0): only the PD loop on the rigid motor reference moves the robot.

    ``rigid``: an already computed ``rigid_feedforward`` on the same grid (saves the IK).
    """
    motion = rigid if rigid is not None else rigid_feedforward(model, reference, t, guess)
    return replace(motion, u=np.zeros_like(motion.u))
