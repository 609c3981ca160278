"""The rigid-robot baselines: rigid inverse kinematics (also the path check), rigid feedforward.

The rigid model is the industrial default that ffopt's flexible inverse improves on: the gears
are infinitely stiff (qm = qa, motor inertia and friction act on the link joint) and non-actuated
elastic joints are locked at their rest angle 0. With as many tool outputs as actuated joints
the path fixes the actuated angles through Gamma(qa) = theta(t) (Moberg & Hanssen eq. 2), solved here by
Newton continuation along t; velocities and accelerations follow from differentiating it,
J qa' = theta',  J qa'' = theta'' - (d/dt J) qa'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import casadi as ca
import numpy as np

from ffopt.errors import PathError, ProblemError
from ffopt.models.chain import Chain, configuration_starts
from ffopt.models.flexible import FlexibleModel
from ffopt.models.rigid_body import body_poses

# The path counts as singular where the smallest singular value of the output Jacobian w.r.t. the
# actuated joints (m/rad) falls below SINGULARITY_TOL x reach (the arm's reach, m): near there a
# 1 mm tool step needs more than 1 / (1000 SINGULARITY_TOL reach) rad, e.g. 0.45 rad on E12 (2.2 m).
# An absolute measure: a relative one (sigma_min / sigma_max) never fires with one output (E1).
# Angle outputs (tool angles, joint angles) enter the Jacobian scaled by the reach (rad -> m).
SINGULARITY_TOL = 1e-3
# Largest joint-angle change between two samples of the path check before we call it a jump
# to another IK branch (the path passes a singularity between the samples).
MAX_JOINT_STEP = 0.5  # rad
NEWTON_STEPS = 4  # Newton iterations per sample of the continuation (unrolled into one CasADi function)
IK_TOL = 1e-9  # residual of the rigid inverse kinematics (m or rad)
ANGLE_MARGIN = np.radians(1.0)  # distance kept from gimbal lock and from a branch cut of a tool angle
# Between two samples sigma_min can dip below both: its slope is at most |dJ/dt| (Weyl), so an
# interval whose tent bound (a + b - LIPSCHITZ_SAFETY |dJ/dt| dt) / 2 falls below the threshold is
# resampled with REFINE_POINTS inner points, up to REFINE_LEVELS times.
LIPSCHITZ_SAFETY = 2.0
REFINE_POINTS = 16
REFINE_LEVELS = 4


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
    """CasADi functions of the actuated angles s (passive joints locked at 0), batched over samples."""

    def __init__(self, model: FlexibleModel):
        L = model.layout
        if len(model.outputs) != L.n_u:
            raise ProblemError(
                f"model.outputs: the rigid path check needs as many tool outputs as actuated joints "
                f"({L.n_u}), got {len(model.outputs)} ({', '.join(model.outputs)})")
        self.model = model
        self.n_link, self.act, self.n = L.n_link, list(L.actuated), L.n_u
        self.reach = reach(model.chain)
        self.singular_below = SINGULARITY_TOL * self.reach
        s, ds, y = ca.SX.sym("s", L.n_u), ca.SX.sym("ds", L.n_u), ca.SX.sym("y", L.n_u)
        out = model.output(self.full(s))
        J = ca.jacobian(out, s)
        W = ca.DM(np.diag([1.0 if u == "m" else self.reach for u in model.output_units]))
        self.residual = ca.Function("ik_res", [s, y], [out - y])
        self.jac = ca.Function("ik_jac", [s], [J])
        self.jdot_ds = ca.Function("ik_jdot", [s, ds], [ca.jtimes(J @ ds, s, ds)])
        # scaled Jacobian and its rate along ds (for the Lipschitz bound of sigma_min between samples)
        self.jac_scaled = ca.Function("ik_jac_w", [s], [W @ J])
        self.jac_scaled_rate = ca.Function("ik_jac_w_rate", [s, ds], [ca.jtimes(W @ J, s, ds)])
        f = ca.Function("ik_f", [s], [out, J])
        sk = s
        for _ in range(NEWTON_STEPS):
            o, Jk = f(sk)
            sk = sk - ca.solve(Jk, o - y)
        self.newton_k = ca.Function("ik_newton_k", [s, y], [sk, ca.norm_inf(f(sk)[0] - y)])

    @cached_property
    def joint_axes(self) -> ca.Function:
        """s -> tool point (3), world axes (3 x n_u) and points (3 x n_u) of the actuated joints."""
        s = ca.SX.sym("s", self.n)
        chain = self.model.chain
        poses = body_poses(chain, self.full(s))
        R, p = poses[-1]
        axes = [poses[i][0] @ ca.DM(chain.joints[i].axis) for i in self.act]  # the axis is fixed in body i
        return ca.Function("joint_axes", [s], [p + R @ ca.DM(chain.tool_origin), ca.horzcat(*axes),
                                               ca.horzcat(*[poses[i][1] for i in self.act])])

    def full(self, s):
        qa = ca.SX.zeros(self.n_link) if isinstance(s, ca.SX) else np.zeros(self.n_link)
        qa[self.act] = s
        return qa

    def batch(self, f: ca.Function, *args) -> list[np.ndarray]:
        """f over samples (rows of each argument), each output as (n_samples, rows, cols)."""
        n = args[0].shape[0]
        res = f.map(n)(*[np.asarray(a, float).T for a in args])
        res = res if isinstance(res, tuple) else (res,)
        return [np.array(r).reshape(f.size1_out(k), n, f.size2_out(k)).transpose(1, 0, 2) for k, r in enumerate(res)]

    def solve_one(self, s: np.ndarray, y: np.ndarray, passes: int = 12) -> np.ndarray:
        """Newton from s to the target y: up to ``passes`` x NEWTON_STEPS iterations (NaN if it diverges)."""
        for _ in range(passes):
            s, r = self.newton_k(s, y)
            if not float(r) > IK_TOL:  # converged, or NaN (diverged)
                break
        return np.array(s).ravel()

    def solve_many(self, S: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Two compiled Newton passes from S towards the targets Y, sample by sample."""
        for _ in range(2):
            S = self.batch(self.newton_k, S, Y)[0][..., 0]
        return S

    def march(self, s0: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Newton continuation along the targets Y (n x n_out) from s0: S (n x n_u), residuals (n)."""
        S, R = self.newton_k.mapaccum("ik_march", Y.shape[0])(s0, Y.T)
        return np.array(S).T, np.array(R).ravel()

    def sigma_min(self, S: np.ndarray) -> np.ndarray:
        return np.linalg.svd(self.batch(self.jac_scaled, S)[0], compute_uv=False)[:, -1]

    def rate(self, S: np.ndarray, dY: np.ndarray) -> np.ndarray:
        """|d(W J)/dt|_F along the path, with ds/dt = J^-1 dtheta/dt (inf where J is singular)."""
        with np.errstate(all="ignore"):
            dS = np.linalg.solve(self.batch(self.jac, S)[0], dY[..., None])[..., 0]
        rate = np.linalg.norm(self.batch(self.jac_scaled_rate, S, np.nan_to_num(dS))[0], axis=(1, 2))
        return np.where(np.all(np.isfinite(dS), axis=1), rate, np.inf)


def reach(chain: Chain) -> float:
    """Upper bound of the tool's distance from the first joint: the sum of the link lengths (m)."""
    lengths = [np.linalg.norm(j.origin) for j in chain.joints[1:]] + [np.linalg.norm(chain.tool_origin)]
    return float(sum(lengths))


def rigid_inverse_kinematics(model: FlexibleModel, reference, t, guess=None, start_field: str = "reference"
                             ) -> np.ndarray:
    """Link angles qa (n, n_link) of the rigid robot on the path at the times t (the path check).

    Passive joints are held at their rest angle 0 and gears are stiff, so the actuated angles
    solve Gamma(qa) = theta(t): Newton continued along t from the start configuration
    (``start_configuration``: ``guess``, a full link vector, or several starts), all
    samples in one CasADi mapaccum call, singular values batched in NumPy. A start no Newton iteration reaches
    is refused naming ``start_field`` (the key that gives the start, e.g. reference.start_mm). Raises PathError naming the time, the joint configuration
    and the tool point where the path leaves the workspace, passes through (or between two samples
    dips into) a singularity (the smallest singular value of the Jacobian w.r.t. the actuated
    joints below SINGULARITY_TOL x reach), jumps to another IK branch, or takes a tool angle
    through gimbal lock or its branch cut.
    """
    return _check_path(_kinematics(model), reference, np.asarray(t, float).ravel(), guess, start_field)[0]


def start_configuration(model: FlexibleModel, reference, guess=None, start_field: str = "reference") -> np.ndarray:
    """Link angles (n_link) of the rigid robot at the path's start (passive joints at rest): Newton from ``guess``,
    else (or where it does not converge) from several starts (``ffopt.models.chain.configuration_starts``); with a
    guess the solution closest to it, else the first found away from a singularity. PathError naming
    ``start_field`` if none converges."""
    kin = _kinematics(model)
    y0 = np.asarray(reference.evaluate(np.array([0.0])))[0]
    s = _start_solution(kin, y0, None if guess is None else np.asarray(guess, float)[kin.act], start_field)
    qa = np.zeros(kin.n_link)
    qa[kin.act] = s
    return qa


def rigid_joint_speeds(model: FlexibleModel, reference, t, qa: np.ndarray) -> np.ndarray:
    """Link speeds dqa/dt (n, n_link) of the rigid robot at the path check's angles ``qa`` on ``t``:
    J ds/dt = dtheta/dt for the actuated joints (as in ``rigid_feedforward``), passive joints at rest."""
    kin = _kinematics(model)
    t = np.asarray(t, float).ravel()
    J = kin.batch(kin.jac, qa[:, kin.act])[0]
    dqa = np.zeros_like(qa)
    dqa[:, kin.act] = np.linalg.solve(J, np.asarray(reference.evaluate(t, 1))[..., None])[..., 0]
    return dqa


def _kinematics(model: FlexibleModel) -> _RigidKinematics:
    """The model's rigid-kinematics functions, built once per model (path check, then verification)."""
    kin = getattr(model, "_ffopt_rigid_kinematics", None)
    if kin is None:
        kin = _RigidKinematics(model)
        model._ffopt_rigid_kinematics = kin
    return kin


def _check_path(kin: _RigidKinematics, reference, t: np.ndarray, guess, start_field: str = "reference"):
    """qa (n, n_link) on t and the actuated angles S (n, n_u), or PathError for the earliest problem."""
    Y = np.asarray(reference.evaluate(t))
    _check_output_ranges(kin, t, Y)
    s0 = _start_solution(kin, Y[0], None if guess is None else np.asarray(guess, float)[kin.act], start_field)
    S, fail = _continuation(kin, s0, Y)
    events = []  # (time, message): the earliest is raised
    n_ok = len(t) if fail is None else fail
    if fail is not None:
        events.append((t[fail], _lost_message(kin, t, Y, S, fail)))
    if n_ok:
        events += _singularities(kin, reference, t[:n_ok], Y[:n_ok], S[:n_ok])
        steps = np.abs(np.diff(S[:n_ok], axis=0)).max(axis=1) if n_ok > 1 else np.zeros(0)
        jump = np.nonzero(steps > MAX_JOINT_STEP)[0]
        if jump.size:
            i = jump[0] + 1
            events.append((t[i], f"reference: the inverse kinematics jumps to another branch at {_at(kin, t[i], Y[i])} "
                                 f"(a joint moves {steps[i - 1]:.2f} rad between samples; "
                                 f"{_configuration(kin, S[i])}): the path crosses a singularity"))
    if events:
        raise PathError(min(events, key=lambda e: e[0])[1])
    qa = np.zeros((len(t), kin.n_link))
    qa[:, kin.act] = S
    return qa, S


def _continuation(kin: _RigidKinematics, s0: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, int | None]:
    """Solutions on all samples (one mapaccum march; a longer Newton restart where it falls behind).

    Returns S and the index of the first sample without a solution (None if all converged).
    """
    S = np.full((Y.shape[0], kin.n), np.nan)
    i, s = 0, s0
    while i < Y.shape[0]:
        s = kin.solve_one(s, Y[i])
        if not _converged(kin, s, Y[i]):
            return S, i
        S[i] = s
        if i + 1 == Y.shape[0]:
            break
        Si, R = kin.march(s, Y[i + 1:])
        bad = np.nonzero(~(R < IK_TOL) | ~np.all(np.isfinite(Si), axis=1))[0]
        end = Y.shape[0] if bad.size == 0 else i + 1 + bad[0]
        S[i + 1:end] = Si[: end - i - 1]
        i, s = end, S[end - 1]
    return S, None


def _start_solution(kin: _RigidKinematics, y0: np.ndarray, s_guess: np.ndarray | None, field: str) -> np.ndarray:
    """Actuated angles at the start target y0: Newton from the guess; where it fails (or without a guess) from
    every start of ``configuration_starts``, keeping the converged solution closest to the guess, or without a
    guess the first one away from a singularity. A singular guess is refused (it cannot pick a branch)."""
    if s_guess is not None:
        s = kin.solve_one(s_guess, y0)
        if _converged(kin, s, y0):
            return s
        message = _singular_guess_message(kin, s_guess)
        if message:
            raise PathError(message)
    starts = configuration_starts(kin.model.chain)
    found = []
    for _, start in starts:
        s = kin.solve_one(np.asarray(start, float)[kin.act], y0)
        if not _converged(kin, s, y0):
            continue
        s = _within_limits(kin, s, s_guess)
        if s is None:
            continue
        if s_guess is None and kin.sigma_min(s[None, :])[0] >= kin.singular_below:
            return s
        found.append(s)
    if found:
        if s_guess is None:
            return found[0]
        return min(found, key=lambda s: float(np.abs(s - s_guess).sum()))
    counts = {}
    for what, _ in starts:
        counts[what] = counts.get(what, 0) + 1
    kinds = ", ".join(what if n == 1 else f"{n} {what.replace('a pseudo-random configuration', 'pseudo-random configurations')}"
                      for what, n in counts.items())
    tried = "reference.joint_guess, " if s_guess is not None else ""
    angles = " or its tool angles cannot be reached there" if len(kin.model.outputs) > sum(
        u == "m" for u in kin.model.output_units) else ""
    raise PathError(f"{field}: no inverse kinematics solution found from {len(starts) + (s_guess is not None)} starts "
                    f"({tried}{kinds}) for the start of the path, {_at(kin, 0.0, y0)}: the point is out of the rigid "
                    f"arm's reach (reach {kin.reach:.4g} m){angles}; move the start towards the robot, or give "
                    "reference.joint_guess near the intended configuration")


def _within_limits(kin: _RigidKinematics, s: np.ndarray, near: np.ndarray | None) -> np.ndarray | None:
    """The same configuration with each actuated angle turned by whole turns to the value within its joint's
    limits (+-pi without limits) closest to ``near`` (default 0), None if a joint cannot be placed within them."""
    out = np.array(s, float)
    for k, i in enumerate(kin.act):
        joint = kin.model.chain.joints[i]
        lo, hi = (joint.q_min, joint.q_max) if np.isfinite(joint.q_min) or np.isfinite(joint.q_max) else (-np.pi, np.pi)
        target = 0.0 if near is None else float(near[k])
        turns = np.round((target - out[k]) / (2 * np.pi)) + np.arange(-3, 4)
        candidates = out[k] + 2 * np.pi * turns
        inside = candidates[(candidates >= lo - 1e-9) & (candidates <= hi + 1e-9)]
        if inside.size == 0:
            return None
        out[k] = inside[np.argmin(np.abs(inside - target))]
    return out


def _lost_message(kin: _RigidKinematics, t, Y, S, i: int) -> str:
    """Why the continuation stopped at sample i: out of reach (no start reaches the point), or a reachable point
    on another branch than the one followed (the path passes a singularity between samples i-1 and i)."""
    if i == 0:
        return _workspace_message(kin, t[0], Y[0], first=True)
    for _, start in configuration_starts(kin.model.chain, n_random=4):
        s = kin.solve_one(np.asarray(start, float)[kin.act], Y[i])
        if _converged(kin, s, Y[i]):
            return (f"reference: the inverse kinematics loses the path at {_at(kin, t[i], Y[i])}: the point is "
                    f"reachable ({_configuration(kin, s)}) but not from the configuration at t = {t[i - 1]:.4g} s "
                    f"({_configuration(kin, S[i - 1])}): the path passes a singularity between the two; move the "
                    "path away from it")
    return _workspace_message(kin, t[i], Y[i], first=False)


def _converged(kin, s, y) -> bool:
    return bool(np.all(np.isfinite(s)) and np.abs(np.array(kin.residual(s, y))).max() < IK_TOL)


def _singularities(kin: _RigidKinematics, reference, t, Y, S) -> list[tuple[float, str]]:
    """The first sample, or refined point between samples, where sigma_min < the threshold."""
    sig = kin.sigma_min(S)
    first = _first_singular(kin, t, Y, S, sig)
    if first:
        return first
    rate = kin.rate(S, np.asarray(reference.evaluate(t, 1)))
    return _refine(kin, reference, t, S, sig, rate, np.ones(len(t) - 1, bool), level=0)


def _first_singular(kin, t, Y, S, sig) -> list[tuple[float, str]]:
    bad = np.nonzero(~(sig >= kin.singular_below))[0]  # NaN counts as singular
    if bad.size == 0:
        return []
    i = bad[0]
    return [(t[i], _singular_message(kin, t[i], Y[i], S[i], sig[i]))]


def _refine(kin, reference, t, S, sig, rate, intervals, level) -> list[tuple[float, str]]:
    """Resample the intervals (t[i], t[i+1]) whose tent lower bound of sigma_min is below the threshold.

    t, S, sig, rate: samples in time order; ``intervals[i]`` says whether (t[i], t[i+1]) is one to
    test (the pairs that join two resampled intervals of the previous level are not).
    """
    dt = np.diff(t)
    L = LIPSCHITZ_SAFETY * np.maximum(rate[:-1], rate[1:])
    suspect = np.nonzero(intervals & ~(0.5 * (sig[:-1] + sig[1:] - L * dt) >= kin.singular_below))[0]
    if suspect.size == 0 or level == REFINE_LEVELS:
        return []
    frac = np.arange(1, REFINE_POINTS + 1) / (REFINE_POINTS + 1)
    tt = (t[suspect, None] + dt[suspect, None] * frac).ravel()
    Yt = np.asarray(reference.evaluate(tt))
    start = np.repeat(S[suspect], REFINE_POINTS, axis=0)
    St = kin.solve_many(start, Yt)
    St = np.where(np.isfinite(St), St, start)
    sig_t = kin.sigma_min(St)
    first = _first_singular(kin, tt, Yt, St, sig_t)
    if first:
        return first
    rate_t = kin.rate(St, np.asarray(reference.evaluate(tt, 1)))
    # next level: each suspect interval as its end points with the new samples between them
    m = REFINE_POINTS + 2
    T = np.column_stack([t[suspect], tt.reshape(-1, REFINE_POINTS), t[suspect + 1]]).ravel()
    SS = np.concatenate([S[suspect, None], St.reshape(-1, REFINE_POINTS, kin.n), S[suspect + 1, None]], axis=1)
    sg = np.column_stack([sig[suspect], sig_t.reshape(-1, REFINE_POINTS), sig[suspect + 1]]).ravel()
    rt = np.column_stack([rate[suspect], rate_t.reshape(-1, REFINE_POINTS), rate[suspect + 1]]).ravel()
    inner = (np.arange(T.size - 1) % m) != m - 1
    return _refine(kin, reference, T, SS.reshape(-1, kin.n), sg, rt, inner, level + 1)


def _check_output_ranges(kin: _RigidKinematics, t, Y):
    """Tool angles stay clear of gimbal lock (pitch) and of their branch cut (yaw, roll), and never jump.

    Where pitch passes +-90 deg, yaw and roll flip by 180 deg at the same sample: pitch is named first.
    """
    events = []  # (sample, rank, output index, what)
    for j, name in enumerate(kin.model.outputs):
        rng = kin.model.output_range(name)
        if rng is None:
            continue
        near = np.nonzero((Y[:, j] <= rng[0] + ANGLE_MARGIN) | (Y[:, j] >= rng[1] - ANGLE_MARGIN))[0]
        jump = np.nonzero(np.abs(np.diff(Y[:, j])) > np.pi / 2)[0] + 1
        if near.size:
            why = ("yaw/pitch/roll is singular at pitch = +-90 deg (gimbal lock)" if name == "pitch" else
                   f"{name} is measured on ({np.degrees(rng[0]):.6g}, {np.degrees(rng[1]):.6g}] deg and wraps at its ends")
            events.append((near[0], int(name != "pitch"), j, f"comes within 1 deg of a representation singularity: {why}"))
        if jump.size:
            i = jump[0]
            events.append((i, 2, j, f"jumps by {np.degrees(Y[i, j] - Y[i - 1, j]):.4g} deg between samples (yaw and "
                                    "roll flip where pitch passes +-90 deg, or the angle wraps)"))
    if events:
        i, _, j, what = min(events, key=lambda e: e[:2])
        raise PathError(f"reference: the tool angle {kin.model.outputs[j]} = {np.degrees(Y[i, j]):.4g} deg at "
                        f"{_at(kin, t[i], Y[i])} {what}; turn the tool another way, split the motion, or rotate "
                        "the world frame")


# ------------------------------------------------------------------------------------ messages
def _at(kin, t, y) -> str:
    parts = [f"{o} = {1000 * v:.2f} mm" if u == "m" else f"{o} = {np.degrees(v):.2f} deg"
             for o, u, v in zip(kin.model.outputs, kin.model.output_units, y)]
    return f"t = {t:.4g} s (target {', '.join(parts)})"


def _configuration(kin, s) -> str:
    names = [kin.model.chain.joints[i].name for i in kin.act]
    passive = " (passive joints at rest)" if kin.n < kin.n_link else ""
    tool = 1000 * np.array(kin.model.tool_position(kin.full(np.asarray(s, float)))).ravel()
    return (f"joint configuration {', '.join(f'{n} = {np.degrees(v):.2f} deg' for n, v in zip(names, s))}{passive}, "
            f"tool point {np.round(tool, 1).tolist()} mm")


def _workspace_message(kin, t, y, first) -> str:
    return (f"reference: the path leaves the workspace at {_at(kin, t, y)}: the rigid inverse kinematics "
            "has no solution there; shorten the path or move it towards the robot"
            + ("; or give reference.joint_guess near the start configuration" if first else ""))


def _singular_guess_message(kin, s0: np.ndarray) -> str | None:
    """Why Newton could not start: the joint_guess itself is a singular configuration (its Jacobian has lost
    rank, so the first step has no direction), or None."""
    J = np.asarray(kin.batch(kin.jac, s0[None, :])[0][0], float)
    sigma = float(np.linalg.svd(J, compute_uv=False).min()) if J.size else np.inf
    if not np.isfinite(sigma) or sigma >= kin.singular_below:
        return None
    return (f"reference.joint_guess: the guess is a singular configuration of the arm ({_configuration(kin, s0)}; the "
            f"smallest singular value of the tool Jacobian is {sigma:.3g} m/rad), so the inverse kinematics cannot "
            "start from it; give a guess away from it (e.g. with the elbow bent) near the start configuration")


def _singular_message(kin, t, y, s, sigma) -> str:
    return (f"reference: the path passes through a singularity at {_at(kin, t, y)}, {_configuration(kin, s)}: "
            f"the smallest singular value of the tool Jacobian w.r.t. the actuated joints is {sigma:.3g} m/rad "
            f"(< {kin.singular_below:.3g}); {_null_motion(kin, s)} Move the path away from that configuration "
            "(stretched or folded arm, tool over a joint axis, aligned wrist axes)")


def _null_motion(kin, s) -> str:
    """Which joints can move without moving the tool, and which joint axes pass through the tool point."""
    names = [kin.model.chain.joints[i].name for i in kin.act]
    _, _, Vt = np.linalg.svd(np.array(kin.jac_scaled(s)))
    v = np.abs(Vt[-1])
    moving = [n for n, x in zip(names, v) if x > 0.3 * v.max()]
    text = f"there {', '.join(moving)} can turn without moving the tool outputs."
    on_axis = _axes_through_tool(kin, s, names)
    if on_axis:
        text += f" The tool point lies on the axis of {', '.join(on_axis)}."
    return text


def _axes_through_tool(kin, s, names) -> list[str]:
    """Actuated joints whose axis line passes within the singularity threshold of the tool point."""
    tool, axes, origins = (np.array(x) for x in kin.joint_axes(s))
    r = tool - origins
    dist = np.linalg.norm(r - np.sum(r * axes, axis=0) * axes, axis=0)
    return [n for n, d in zip(names, dist) if d < kin.singular_below]


def rigid_feedforward(model: FlexibleModel, reference, t, guess=None) -> RigidMotion:
    """The industrial baseline: feedforward from the RIGID model (stiff gears, passive joints locked).

    Rigid inverse kinematics with its derivatives (J s' = theta', J s'' = theta'' - J' s', batched
    over the samples), the torque of the stiff-gear model along it (``rigid_chain``; passive joints
    at 0, so their spring torque and motion are ignored) and the motor references qm = actuated
    link angles.
    """
    kin = _kinematics(model)
    t = np.asarray(t, float).ravel()
    qa, S = _check_path(kin, reference, t, guess)
    J = kin.batch(kin.jac, S)[0]
    ds = np.linalg.solve(J, np.asarray(reference.evaluate(t, 1))[..., None])[..., 0]
    jdot_ds = kin.batch(kin.jdot_ds, S, ds)[0][..., 0]
    dds = np.linalg.solve(J, (np.asarray(reference.evaluate(t, 2)) - jdot_ds)[..., None])[..., 0]
    n, act = len(t), kin.act
    dqa, ddqa = np.zeros_like(qa), np.zeros_like(qa)
    dqa[:, act], ddqa[:, act] = ds, dds
    rigid = model.variant(rigid_chain(model.chain))
    u = np.array(rigid.input_torque.map(n)(qa.T, dqa.T, ddqa.T)).T
    return RigidMotion(t=t, qa=qa, dqa=dqa, ddqa=ddqa, u=u, qm=qa[:, act], dqm=dqa[:, act])


def pd_only(model: FlexibleModel, reference, t, guess=None, rigid: RigidMotion | None = None) -> RigidMotion:
    """No feedforward at all (u = 0): only the PD loop on the rigid motor reference moves the robot.

    ``rigid``: an already computed ``rigid_feedforward`` on the same grid (saves the IK).
    """
    motion = rigid if rigid is not None else rigid_feedforward(model, reference, t, guess)
    return replace(motion, u=np.zeros_like(motion.u))
