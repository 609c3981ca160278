"""The checks of a problem and its path before a plan is made, and of the plan's gear wind-up after: each raises
ProblemError or PathError with the setting to change."""

from __future__ import annotations

import os

import numpy as np

from ffopt.errors import PathError, ProblemError
from ffopt.io.problem import VERIFICATION_CASES, Problem
from ffopt.settings.methods import BDF_ORDER_MAX, BDF_ORDER_MIN, MOBERG_HANSSEN_METHODS


def check_joint_limits(chain, t: np.ndarray, qa: np.ndarray) -> None:
    """PathError where the rigid path leaves a joint's position limits (q_min / q_max: a URDF's <limit>)."""
    if qa.shape[1] != len(chain.joints):  # modal coordinates of flexible links among them (no limits there)
        return
    for i, joint in enumerate(chain.joints):
        if not (np.isfinite(joint.q_min) or np.isfinite(joint.q_max)):
            continue
        outside = np.nonzero((qa[:, i] < joint.q_min - 1e-9) | (qa[:, i] > joint.q_max + 1e-9))[0]
        if outside.size:
            k = outside[0]
            raise PathError(f"joint {joint.name}: the path needs {np.degrees(qa[k, i]):.2f} deg at t = {t[k]:.4g} s "
                            f"(rigid inverse kinematics), outside its limits [{np.degrees(joint.q_min):.2f}, "
                            f"{np.degrees(joint.q_max):.2f}] deg (the URDF's <limit>): move the path, give "
                            "reference.joint_guess for another branch, or lock the joint elsewhere")


def check_joint_speeds(problem: Problem, t: np.ndarray, qa: np.ndarray) -> None:
    """PathError where the rigid path moves a joint faster than its velocity limit (a URDF's <limit velocity>);
    the link speeds from the rigid inverse kinematics (``rigid_joint_speeds``), the peak named."""
    chain = problem.chain
    limits = {} if problem.urdf is None else {j.name: j.velocity for j in problem.urdf.joints}
    if qa.shape[1] != len(chain.joints) or not any(np.isfinite(v) for v in limits.values()):
        return
    from ffopt.sim.baselines import rigid_joint_speeds

    speed = np.abs(rigid_joint_speeds(problem.model, problem.reference, t, qa))
    for i, joint in enumerate(chain.joints):
        limit = limits.get(joint.name, np.inf)
        if np.isfinite(limit) and speed[:, i].max() > limit * (1 + 1e-9):
            k = int(np.argmax(speed[:, i]))
            raise PathError(f"joint {joint.name}: the path needs {speed[k, i]:.4g} rad/s at t = {t[k]:.4g} s "
                            f"(rigid inverse kinematics), above its velocity limit {limit:.4g} rad/s (the URDF's "
                            "<limit velocity>): lengthen the move (reference.duration, at least "
                            f"x{speed[k, i] / limit:.3g} for this joint) or move the path")


# a gear whose motor turns this far from its link (rad) is not a gear: real ones deflect a few degrees
MAX_GEAR_DEFLECTION_RAD = np.pi


def check_gear_windup(problem: Problem, traj) -> None:
    """Refuse a plan in which an elastic gear winds up more than half a turn (stiffness 1e-3 N m/rad wound the
    motor to -35161 rad, and the verification then blamed vibration after the move)."""
    if problem.flexible_links:  # its coordinates interleave the links' modes with the joint angles
        return
    L = problem.model.layout
    names = [j.name for j in problem.chain.joints]
    for k, link in enumerate(L.gear):
        deflection = np.abs(traj.q[:, L.n_link + k] - traj.q[:, link])
        if deflection.size and not np.all(deflection <= MAX_GEAR_DEFLECTION_RAD):
            i = int(np.nanargmax(np.where(np.isfinite(deflection), deflection, np.inf)))
            joint = problem.chain.joints[link]
            raise ProblemError(f"{problem.source}: model.joints.{names[link]}.stiffness: the plan winds the motor of "
                               f"{names[link]!r} {deflection[i]:.4g} rad away from its link (t = {traj.t[i]:.4g} s; a "
                               f"gear deflects a few degrees): {joint.stiffness:.4g} N m/rad is far too soft for the "
                               "torques of this move; check the value and its unit (N m/rad, arm side)")


def verification_cases(problem: Problem, verify: bool | str | None) -> str | None:
    """The verification case set a plan runs ("default" or "full"), None for no verification."""
    if verify is None:
        return problem.verification.cases if problem.verification.enabled else None
    if verify is True:
        return problem.verification.cases
    if verify is False:
        return None
    if verify not in VERIFICATION_CASES:
        raise ProblemError(f"verify: must be True, False, 'default' or 'full', got {verify!r}")
    return verify


def _check_time_law_smoothness(problem: Problem) -> None:
    """The input must stay bounded: a time law with n zero derivatives at the rests leaves derivative
    n + 1 of the path jumping there, so an input that needs derivative r (the relative degree: 4 for
    an undamped elastic gear, one more with DC-motor electrics) holds an impulse unless n >= r - 1.
    Checked where it matters most, for drives with electrics (their voltage needs the highest
    derivative); see ``ffopt.analysis.linear.input_derivative_order``."""
    if problem.model.drives is None:
        return
    from ffopt.analysis.linear import input_derivative_order
    law = problem.reference_spec.law
    r = input_derivative_order(problem.model, problem.reference, problem.reference_spec.joint_guess)
    if r is not None and law.n_zero_derivs < r - 1:
        raise ProblemError(f"{problem.source}: reference.time_law: {problem.reference_spec.time_law!r} leaves derivative "
                           f"{law.n_zero_derivs + 1} of the path jumping at the rests, but the {problem.model.input_kind} "
                           f"of this robot needs derivative {r} (relative degree), so it would hold an impulse: use "
                           f"a law with at least {r - 1} zero derivatives (hermite9 has 4, poly11 5, cinf all)")


# BDF history and diagnostics, the trajectory's arrays, the verification's simulations. Measured on the
# two-link arm (4 coordinates): 1e5 rows, 477 MB peak, 100 MB of it the process itself.
BYTES_PER_ROW_AND_COORDINATE = 1024
MEMORY_SHARE = 0.5  # of the memory available when the plan starts


def _finest_step(problem: Problem) -> float:
    s = problem.solver
    return min(s.step, problem.nlp.step) if s.method in ("nlp", "auto") and problem.nlp.step else s.step


def plan_size(problem: Problem) -> tuple[int, float]:
    """(rows of the finest time grid, estimated bytes) of planning and verifying ``problem``."""
    step = _finest_step(problem)
    rows = int(min(problem.reference.t_end / step, 1e18)) + 1
    coordinates = len(problem.model.coordinate_names())
    return rows, float(rows) * coordinates * BYTES_PER_ROW_AND_COORDINATE


def available_memory() -> float | None:
    """Bytes of memory available to a new allocation (MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _check_plan_size(problem: Problem) -> None:
    """Refuse a time grid whose arrays would not fit in memory (step 1e-12 s asked for 6 TiB; a 1e4 s move at
    1 ms ran BDF for 74 s and then failed allocating), before anything is allocated."""
    rows, need = plan_size(problem)
    have = available_memory()
    if have is None or need <= MEMORY_SHARE * have:
        return
    step = _finest_step(problem)
    raise ProblemError(f"{problem.source}: solver.step / reference.duration: {problem.reference.t_end:.4g} s of plan at "
                       f"a step of {step:.3g} s is {rows:.3g} rows; planning and verifying them needs about "
                       f"{need / 2**30:.3g} GiB, more than half the {have / 2**30:.3g} GiB of memory available: use a "
                       "larger step (--step) or a shorter move")


def check_settings(problem: Problem) -> None:
    s = problem.solver
    if s.method in MOBERG_HANSSEN_METHODS and any(j.electrics is not None for j in problem.chain.joints):
        raise ProblemError(f"{problem.source}: solver.method: {s.method!r} (Moberg & Hanssen's solver family) does not model DC-motor "
                           "electrics; use auto, bdf or nlp")
    _check_time_law_smoothness(problem)
    if problem.output.sample_time is not None:  # the sample instants must be points of the planning grid
        from ffopt.io.problem import samples_per_period

        if s.method != "nlp":
            samples_per_period(problem.output.sample_time, s.step, f"{problem.source}: output.sample_time (with solver.step)")
        if s.method in ("nlp", "auto"):
            samples_per_period(problem.output.sample_time, problem.nlp.step,
                               f"{problem.source}: output.sample_time (with nlp.step)")
    if not BDF_ORDER_MIN <= s.order <= BDF_ORDER_MAX:
        raise ProblemError(f"solver.order: must be {BDF_ORDER_MIN}..{BDF_ORDER_MAX} (BDF is unstable beyond "
                           f"{BDF_ORDER_MAX}), got {s.order}")
    _check_plan_size(problem)
    if s.step <= 0 or s.step > problem.reference_spec.duration / 4:
        raise ProblemError(f"solver.step: must be in (0, duration/4 = {problem.reference_spec.duration / 4:g}] s, "
                           f"got {s.step:g}")

