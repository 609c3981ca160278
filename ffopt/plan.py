"""The planning pipeline: problem -> path check -> inverse dynamics -> verification -> result."""

from __future__ import annotations

import platform
import sys
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ffopt._version import __version__
from ffopt.errors import PathError, ProblemError, SolverError, VerificationError
from ffopt.io.problem import METHODS, Problem, load_problem
from ffopt.progress import heartbeat
from ffopt.trajectory import Trajectory

# Moberg & Hanssen's solver family (dd: the production dummy-derivative route; the rest: ffopt.replication)
MOBERG_HANSSEN_METHODS = ("hi", "dd", "dd43", "dd44", "dd48", "dd49", "km", "dc")


@dataclass
class PlanResult:
    problem: Problem
    trajectory: Trajectory
    verification: object | None
    settings: dict
    timings: dict = field(default_factory=dict)
    method_choice: dict = field(default_factory=dict)  # requested, chosen, reason, attempts (method auto)

    def summary(self) -> dict:
        tr = self.trajectory
        drives = {} if not tr.electric else {"peak_voltage_V": np.abs(tr.u).max(axis=0).tolist(),
                                             "peak_current_A": np.abs(tr.current).max(axis=0).tolist()}
        return {
            "status": "not_verified" if self.verification is None else self.verification.status,
            "problem": {"name": self.problem.name, "source": self.problem.source,
                        "description": self.problem.description,
                        "outputs": list(self.problem.outputs),
                        "t_end_s": float(self.trajectory.t[-1])},
            "method": self.trajectory.method,
            "method_choice": self.method_choice,
            "settings": self.settings,
            "solver": self.trajectory.stats,
            "wall_time_s": self.timings,
            "peak_torque_Nm": np.abs(tr.torques).max(axis=0).tolist(),
            **drives,
            "reference": reference_summary(self.problem.reference),
            **urdf_summary(self.problem, tr),
            "verification": None if self.verification is None else self.verification.to_dict(),
            "versions": versions(),
        }

    def save(self, out: str | Path, plots: bool = True, force: bool = False) -> Path:
        """Write trajectory.csv/.npz/.mat, problem.toml, summary.json and plots to folder ``out``
        (ffopt.io.results: all or nothing; an existing folder only if ffopt wrote it, or with ``force``
        beside the user's files)."""
        from ffopt.io.results import write_result_folder

        return write_result_folder(out, lambda tmp: self.write_files(tmp, plots), force)

    def write_files(self, folder: Path, plots: bool = True) -> list[str]:
        """Write the plan's files into ``folder`` (no safety checks: use ``save``); returns their names."""
        from ffopt.io.results import write_json, write_trajectory_csv, write_trajectory_mat, write_trajectory_npz

        folder = Path(folder)
        write_trajectory_csv(self.trajectory, folder / "trajectory.csv")
        write_trajectory_npz(self.trajectory, folder / "trajectory.npz")
        write_trajectory_mat(self.trajectory, folder / "trajectory.mat")
        files = ["trajectory.csv", "trajectory.npz", "trajectory.mat", "summary.json"]
        if self.problem.raw is not None:  # the exact problem planned (after changes by name): re-plannable
            (folder / "problem.toml").write_text(f"# The problem as planned (from {self.problem.source}, with every change "
                                                 f"by name); ffopt plan reads it as it is.\n{self.problem.to_toml()}")
            files.insert(3, "problem.toml")
        if plots:
            from ffopt.io.plots import write_plots  # matplotlib: imported only when plotting

            files += write_plots(self.trajectory, self.verification, folder)
        summary = self.summary()
        summary["files"] = files
        summary["columns"] = self.trajectory.column_info()
        write_json(summary, folder / "summary.json")
        return files

    # --- for scripts and notebooks (pandas and matplotlib are imported when used) --------------

    def to_dataframe(self):
        """The trajectory as a pandas DataFrame: trajectory.csv's columns; units in ``df.attrs["units"]``."""
        from ffopt.io.frames import trajectory_frame

        return trajectory_frame(self.trajectory)

    def verification_dataframe(self):
        """One row per verification case (tool errors in mm, peak torques); None without verification."""
        from ffopt.io.frames import verification_frame

        return None if self.verification is None else verification_frame(self.verification.to_dict(),
                                                                          self.trajectory.actuated_joints)

    def simulation_dataframe(self, case: str = "feedforward_pd"):
        """One verification simulation on the plan's grid: ``t``, the torque the motors applied
        (``u_<joint>``: feedforward, + PD where the case has the loop), the simulated tool position
        (``tool_x_mm`` ...), the outputs (``y_<output>_mm`` / rad) and ``error_mm``, the tool error over the
        position outputs (its maximum is the case's ``max_mm``). Cases: ``verification_dataframe().index``."""
        from ffopt.io.frames import simulation_frame

        report = self._verified("simulation_dataframe")
        if case not in report.simulations:
            raise ProblemError(f"simulation_dataframe: no verification case {case!r} in this plan "
                               f"(cases: {', '.join(report.simulations)})")
        return simulation_frame(self.trajectory, report.simulations[case])

    def plot_torques(self):
        """Figure of the motor torques (with the bounds the plan enforced)."""
        from ffopt.io.plots import torque_figure

        return torque_figure(self.trajectory, self.trajectory.stats.get("torque_max_Nm"))

    def plot_tool_path(self):
        """Figure of the simulated tool paths with the reference on top (needs the verification)."""
        from ffopt.io.plots import tool_path_figure

        return tool_path_figure(self.trajectory, self._verified("plot_tool_path"))

    def plot_tool_error(self):
        """Figure of the tool-path error of every verification case (log scale)."""
        from ffopt.io.plots import tool_error_figure

        return tool_error_figure(self.trajectory, self._verified("plot_tool_error"))

    def _verified(self, what: str):
        if self.verification is None:
            raise VerificationError(f"{what}: this plan was not verified (plan(..., verify=True) simulates it)")
        return self.verification


def urdf_summary(problem: Problem, traj) -> dict:
    """{"urdf": ...} for a URDF problem, else {}: the file, the chain from base_link to tip_link, each joint
    with its kind and the URDF's limits (None: not given), the locked joints, and the effort limits the plan
    exceeds (``effort_limits_exceeded``)."""
    u = problem.urdf
    if u is None:
        return {}
    kinds = {j.name: j.kind for j in problem.chain.joints}

    def given(x: float):
        return float(x) if np.isfinite(x) else None

    joints = [{"name": j.name, "kind": kinds.get(j.name), "urdf_type": j.urdf_type, "lower_rad": given(j.q_min),
               "upper_rad": given(j.q_max), "velocity_rad_s": given(j.velocity), "effort_Nm": given(j.effort)}
              for j in u.joints]
    types = u.locked_types  # a locked joint's value is an angle, or a prismatic joint's position
    joints += [{"name": name, "kind": "locked", "urdf_type": types.get(name),
                ("position_m" if types.get(name) == "prismatic" else "angle_rad"): float(x)}
               for name, x in u.locked.items()]
    return {"urdf": {"file": str(u.path), "robot": u.robot, "base_link": u.base_link, "tip_link": u.tip_link,
                     "joints": joints, "effort_limits_exceeded": effort_limits_exceeded(problem, traj),
                     "velocity_limits_exceeded": velocity_limits_exceeded(problem, traj)}}


def effort_limits_exceeded(problem: Problem, traj) -> list[dict]:
    """The actuated joints whose planned peak torque |u| (gear output, as nlp.torque_max bounds it) exceeds
    the URDF's <limit effort>: joint, peak_Nm, t_s (of the peak), limit_Nm."""
    limits = {} if problem.urdf is None else {j.name: j.effort for j in problem.urdf.joints}
    found = []
    for k, name in enumerate(traj.actuated_joints):
        torque = np.abs(traj.torques[:, k])
        i, limit = int(np.argmax(torque)), limits.get(name, np.inf)
        if torque[i] > limit * (1 + 1e-6):  # IPOPT holds a bound to 1e-8 relative (bound_relax_factor)
            found.append({"joint": name, "peak_Nm": float(torque[i]), "t_s": float(traj.t[i]),
                          "limit_Nm": float(limit)})
    return found


def velocity_limits_exceeded(problem: Problem, traj) -> list[dict]:
    """The joints whose planned peak link speed exceeds the URDF's <limit velocity>: joint, peak_rad_s, t_s,
    limit_rad_s. The rigid path is checked before the solve (``check_joint_speeds``); this is the plan as
    made, after a rest-to-rest or robust time law has reshaped the timing along the path (and with the
    elastic deflection rates)."""
    limits = {} if problem.urdf is None else {j.name: j.velocity for j in problem.urdf.joints}
    found = []
    for k, joint in enumerate(problem.chain.joints):
        limit = limits.get(joint.name, np.inf)
        if not np.isfinite(limit):
            continue
        speed = np.abs(traj.v[:, k])
        i = int(np.argmax(speed))
        if speed[i] > limit * (1 + 1e-9):
            found.append({"joint": joint.name, "peak_rad_s": float(speed[i]), "t_s": float(traj.t[i]),
                          "limit_rad_s": float(limit)})
    return found


def reference_summary(reference) -> dict:
    """The reference's time line, and for a prefiltered one the filter (order and why, cutoff, settling)."""
    out = {"time_law": reference.time_law, "t_motion_start_s": reference.t_motion_start,
           "t_motion_end_s": reference.t_motion_end, "t_end_s": reference.t_end}
    if getattr(reference, "prefilter", None):
        out["prefilter"] = reference.prefilter
    return out


def prefilter_message(info: dict) -> str:
    """One line for the plan's progress output: which prefilter order and why, and the horizon
    (the full reasoning is in summary.json, reference.prefilter.order_reason)."""
    jump = {0: "value", 2: "acceleration"}.get(info["raw_jump_derivative"], f"derivative {info['raw_jump_derivative']}")
    why = (f"the torque follows the path's derivative {info['path_derivatives_needed']} and the raw {info['raw']} "
           f"jumps in {jump}: >= {info['order_required']} for a continuous torque")
    source = f"{why}, + 1 for BDF" if info["order_source"] == "derived" else f"reference.order; {why}"
    return (f"reference: Butterworth prefilter of order {info['order']} ({source}), cutoff {info['cutoff_hz']:g} Hz, "
            f"delay {info['delay_s'] * 1e3:.0f} ms; it settles to {info['settle_tolerance']:g} of the move "
            f"{info['settling_time_s']:.3f} s after the raw {info['raw']} ends ({info['raw_end_s']:.3f} s): horizon "
            f"extended to t_end = {info['t_end_s']:.3f} s including rest_after")


def output_files(plots: bool, verification: bool) -> list[str]:
    """The files ``PlanResult.save`` writes (for checking an output folder before planning)."""
    from ffopt.io.plots import plot_names

    return ["trajectory.csv", "trajectory.npz", "trajectory.mat", "problem.toml", "summary.json"] + \
        (plot_names(verification) if plots else [])


def versions() -> dict:
    """Versions of Python and of the libraries this run used (SciPy only if it was loaded: a BDF
    plan with the default verification does not need it, and importing it for its version alone
    cost ~20 ms)."""
    import casadi

    out = {"ffopt": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
           "casadi": casadi.__version__, "numpy": np.__version__}
    if "scipy" in sys.modules:
        out["scipy"] = sys.modules["scipy"].__version__
    return out


# CasADi's symbolic layer is not safe for concurrent use: a plan building an expression in one thread while
# another plan evaluated a CasADi function crashed a threaded Dask worker. Plans in one process (threads of a
# worker, a notebook's thread pool) therefore run one at a time; processes still plan side by side.
_PLAN_LOCK = threading.RLock()


def plan(problem: Problem | str | Path, method: str | None = None, order: int | None = None,
         step: float | None = None, form: str | None = None, scaling_power: float | None = None,
         verify: bool | str | None = None, compile: bool = True, progress=None, backend: str | None = None,
         warm_start: str | None = None, max_iter: int | None = None, max_time: float | None = None,
         max_cpu_time: float | None = None) -> PlanResult:
    """Compute and verify a feedforward plan. Arguments left None take the problem's settings.

    ``step`` sets both the BDF step (solver.step) and the collocation interval (nlp.step).
    ``verify``: False (none), True (the problem's case set), "default" (open loop and with the
    motor PD) or "full" (also the baselines and the payload mismatch); None: the problem's
    [verification] settings.
    max_iter, max_cpu_time, max_time: limits of the NLP solve (nlp.max_iter, nlp.max_cpu_time_s, and the
    wall-time guard nlp.max_wall_time_s, in s).
    progress: a callable taking a str; NLP iterations arrive as live messages
    (``ffopt.nlp.monitor.NlpProgress``; ``ffopt.io.console.ConsoleProgress`` shows them as one line).
    Plans in threads of one process run one at a time (CasADi's symbolic layer is not thread-safe).
    """
    with _PLAN_LOCK:
        return _plan(problem, method, order, step, form, scaling_power, verify, compile, progress, backend,
                     warm_start, max_iter, max_time, max_cpu_time)


def _plan(problem, method, order, step, form, scaling_power, verify, compile, progress, backend, warm_start,
          max_iter, max_time, max_cpu_time) -> PlanResult:
    if not isinstance(problem, Problem):
        problem = load_problem(problem)
    problem = problem.with_solver(method=method, order=order, step=step, form=form, scaling_power=scaling_power)
    problem = problem.with_nlp(backend=backend, warm_start=warm_start, step=step)  # step: BDF and NLP grid
    problem = _with_nlp_limits(problem, max_iter, max_time, max_cpu_time)
    s = problem.solver
    _check_settings(problem)
    say = progress or (lambda msg: None)
    timings = {}
    model, reference = problem.model, problem.reference
    guess = problem.reference_spec.joint_guess
    if getattr(reference, "prefilter", None):
        say(prefilter_message(reference.prefilter))

    tic = time.perf_counter()
    say("checking the path (rigid inverse kinematics, workspace, singularities)")
    from ffopt.sim.baselines import rigid_inverse_kinematics

    t_check = np.linspace(0.0, reference.t_end, 401)
    qa_check = rigid_inverse_kinematics(model, reference, t_check, guess, problem.reference_spec.start_field)
    if guess is None:  # the start the inverse kinematics found: every stage after starts there (problem.toml too)
        problem = problem.with_joint_guess(qa_check[0, : problem.chain.n_joints])
        guess = problem.reference_spec.joint_guess
    check_joint_limits(problem.chain, t_check, qa_check)
    check_joint_speeds(problem, t_check, qa_check)
    standstill = _warn_standstill(problem, reference.evaluate(t_check), say)
    timings["path_check"] = time.perf_counter() - tic

    tic = time.perf_counter()
    if s.method == "auto":
        from ffopt.auto_method import solve_auto

        problem, traj, method_choice = solve_auto(problem, lambda p: _solve(p, say, compile, hint=False), say)
        s = problem.solver
    else:
        traj = _solve(problem, say, compile)
        method_choice = {"requested": s.method, "chosen": s.method, "reason": "set by the user"}
    timings["inverse_dynamics"] = time.perf_counter() - tic
    _check_gear_windup(problem, traj)
    if s.end_at_rest:
        tic = time.perf_counter()
        problem, traj = _end_at_rest(problem, traj, method_choice, say, compile)
        if s.robust_rest:
            problem, traj = _robust_rest(problem, traj, method_choice, say, compile)
        model, reference = problem.model, problem.reference
        timings["rest_to_rest"] = time.perf_counter() - tic
    if standstill:
        traj.stats.setdefault("warnings", []).append(standstill)
    _warn_unresolved_friction(problem, traj, say)
    _warn_inverse_singularity(problem, traj, say)
    _warn_urdf_limits(problem, traj, say)

    report = None
    cases = verification_cases(problem, verify)
    if cases is not None:
        from ffopt.sim.verify import verify as run_verification

        tic = time.perf_counter()
        say("verifying: forward simulation open loop and with motor PD"
            + (", baselines, payload mismatch" if cases == "full" else ""))
        with heartbeat(say, lambda elapsed: f"verifying: {elapsed:.0f} s"):  # between its stages' own lines
            report = run_verification(model, reference, traj, problem.verification, guess, cases=cases,
                                      hold=traj.stats.get("hold", "linear"), progress=say, compile=compile)
        timings["verification"] = time.perf_counter() - tic
        _explain_ringing(report, method_choice.get("rest_to_rest"))
    settings = {"method": s.method, "order": s.order, "step_s": s.step, "form": s.form,
                "scaling_power": traj.stats.get("scaling_power"), "compile": compile,
                "output": {"sample_time_s": traj.stats.get("sample_time_s"), "hold": traj.stats.get("hold", "linear"),
                           "stated": problem.output.stated, "resampling": traj.stats.get("resampling")}}
    if s.method == "nlp":
        from dataclasses import asdict

        settings["nlp"] = {**asdict(problem.nlp), "strategy": traj.stats.get("strategy"),
                           "pre_actuation_s": traj.stats.get("pre_actuation_s"),
                           "post_actuation_s": traj.stats.get("post_actuation_s")}
    return PlanResult(problem, traj, report, settings, timings, method_choice)


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


def _end_at_rest(problem: Problem, traj, method_choice: dict, say, compile: bool):
    """The plan made rest-to-rest where it would end moving (solver.end_at_rest).

    Exact tracking leaves the zero dynamics free while the tool rests after the move; on a lightly damped
    arm they still ring at the table's last row and the controller's static hold meets a moving arm. Only
    the timing along the path is free: ``ffopt.dae.rest_to_rest.shape_for_rest`` shapes the time law (same
    path, same duration) so that the exact-tracking BDF plan ends at rest with the least peak input, and
    the plan is made again with that law by the method that made it. Where no monotone law rests within
    the move, the plan is kept and the duration that would rest is reported (summary.json
    ``method_choice.rest_to_rest``)."""
    from ffopt.dae.rest_to_rest import ends_at_rest, not_at_rest_text, shape_for_rest_cached

    at_rest, end = ends_at_rest(problem.model, traj)
    if at_rest:
        return problem, traj
    record = {"exact_plan_end": end, "needed": True}
    method_choice["rest_to_rest"] = record
    spec = problem.reference_spec
    why = _unshapeable(problem, traj)
    if why:
        record.update(shaped=False, reason=why)
        say(f"note: {not_at_rest_text(end)}; {why}")
        return problem, traj
    say(f"{not_at_rest_text(end)}: shaping the time law so that the arm ends at rest "
        f"(same path, same {spec.duration:.4g} s)")
    try:
        c, info = shape_for_rest_cached(problem, progress=say)
    except SolverError as err:
        record.update(shaped=False, reason=f"the rest-to-rest search failed: {err}")
        say(f"warning: {record['reason']}")
        return problem, traj
    record.update({k: v for k, v in info.items() if k not in ("end_before",)})
    if not info["at_rest"]:
        needed = info.get("duration_needed_s")
        record.update(shaped=False, reason=info.get("message", "no rest-to-rest time law"))
        msg = (f"{record['reason']}; " + (f"a move of {needed:.4g} s (x{info['duration_factor']:g}) ends at rest: set "
               "reference.duration (or the speed limits) accordingly" if needed else
               "no move up to x4 longer rests either") + "; the exact-tracking plan is kept")
        say(f"warning: {msg}")
        traj.stats.setdefault("warnings", []).append(msg)
        return problem, traj
    shaped = problem.with_values({"reference.time_law_shape": [float(x) for x in c]})
    new = _solve(shaped, say, compile)  # the method that made the plan (method auto: the one it chose)
    record.update(shaped=True, time_law_shape=[float(x) for x in c],
                  trade_off={"peak_input_exact": end["peak_input"],
                             "peak_input_rest_to_rest": float(np.abs(new.u).max()),
                             "move_s": spec.duration})
    found = ("from the cache of an earlier plan of this problem" if info.get("cached") else
             f"{info['iterations']} iterations, {info['bdf_solves']} BDF solves, {info['search_time_s']:.2f} s")
    say(f"rest-to-rest time law: {found}; peak input {end['peak_input']:.4g} -> {np.abs(new.u).max():.4g}")
    return shaped, new


def _robust_rest(problem: Problem, traj, method_choice: dict, say, compile: bool):
    """solver.robust_rest: the rest-to-rest plan made again on the path convolved with a ZVD shaper on the
    lowest PD-held mode and the zero dynamics (``ffopt.dae.robust_rest``), kept if it ends at rest. The
    trade-off against the plain plan (move time, peak input, residual vibration nominal and on the
    +-10 % plants) goes to summary.json ``method_choice.rest_to_rest.robust``."""
    from ffopt.dae.rest_to_rest import ends_at_rest
    from ffopt.dae.robust_rest import ROBUST_SCALE, robust_shaper, vibration_after_table

    record = method_choice.setdefault("rest_to_rest", {"needed": False})
    if problem.reference_spec.shaper is not None:  # e.g. a problem written by a robust plan: shaped already
        kind, modes = problem.reference_spec.shaper
        say(f"robust rest: the path is shaped already (reference.shaper {kind}); measuring it on the +-"
            f"{100 * ROBUST_SCALE:g} % plants")
        record["robust"] = {"shaper": kind, "modes_hz_damping": [list(m) for m in modes], "scale": ROBUST_SCALE,
                            "plain": None, "robust": _trade_off(problem, traj, vibration_after_table(problem, traj))}
        return problem, traj
    say(f"robust rest: measuring the rest-to-rest plan on the +-{100 * ROBUST_SCALE:g} % plants (springs, payload)")
    plain = _trade_off(problem, traj, vibration_after_table(problem, traj))
    kind, modes = robust_shaper(problem)
    text = ", ".join(f"{f:.4g} Hz (damping {z:.3g})" for f, z in modes)
    say(f"robust rest: {kind} shaper on {text}; planning the shaped path to end at rest")
    shaped = problem.with_values({"reference.shaper": kind, "reference.shaper_modes": [list(m) for m in modes],
                                  "reference.time_law_shape": []})
    sub: dict = {}
    try:
        shaped, new = _end_at_rest(shaped, _solve(shaped, say, compile), sub, say, compile)
    except SolverError as err:
        new, why = None, f"the shaped path could not be planned: {err}"
    else:
        why = None if ends_at_rest(shaped.model, new)[0] else sub.get("rest_to_rest", {}).get(
            "reason", "the plan of the shaped path does not end at rest")
    robust = {"shaper": kind, "modes_hz_damping": [list(m) for m in modes], "scale": ROBUST_SCALE, "plain": plain}
    record["robust"] = robust
    if why:
        robust.update(used=False, reason=why)
        msg = f"robust rest: {why}; the plain rest-to-rest plan is kept"
        say(f"warning: {msg}")
        traj.stats.setdefault("warnings", []).append(msg)
        return problem, traj
    robust.update(used=True, robust=_trade_off(shaped, new, vibration_after_table(shaped, new)),
                  search={k: v for k, v in sub.get("rest_to_rest", {}).items()
                          if k in ("iterations", "bdf_solves", "search_time_s", "cached", "time_law_shape")})
    r = robust["robust"]
    say(f"robust rest: move {plain['move_s']:.3g} -> {r['move_s']:.3g} s, peak input {plain['peak_input']:.4g} -> "
        f"{r['peak_input']:.4g}, worst vibration on the +-{100 * ROBUST_SCALE:g} % plants "
        f"{plain['worst_vibration_mm']:.3g} -> {r['worst_vibration_mm']:.3g} mm")
    return shaped, new


def _trade_off(problem: Problem, traj, vibration: dict) -> dict:
    """Move time, peak input and the vibration after the table, nominal and worst over the mismatched plants."""
    ref = problem.reference
    mismatched = {k: v for k, v in vibration.items() if k != "nominal"}
    return {"move_s": float(ref.t_motion_end - ref.t_motion_start), "peak_input": float(np.abs(traj.u).max()),
            "nominal_vibration_mm": vibration["nominal"]["vibration_mm"],
            "nominal_residual_mm": vibration["nominal"]["residual_mm"],
            "worst_vibration_mm": max((v["vibration_mm"] for v in mismatched.values()), default=None),
            "worst_residual_mm": max((v["residual_mm"] for v in mismatched.values()), default=None),
            "plants": vibration}


def _explain_ringing(report, record: dict | None) -> None:
    """A miss after the table of a plan that could not be made rest-to-rest names why, and the move that would rest."""
    if report is None or report.verdict is None or not record or record.get("shaped", True):
        return
    needed = record.get("duration_needed_s")
    why = record.get("reason", "no rest-to-rest time law")
    for miss in report.verdict.misses:
        if miss["phase"].startswith("after the table"):
            miss["cause"] = (f"{miss['cause'].split(';')[0]}; {why}"
                             + (f"; a move of {needed:.4g} s ends at rest (reference.duration)" if needed else ""))


def _unshapeable(problem: Problem, traj) -> str | None:
    """Why the time law of this plan cannot be shaped for rest (None: it can)."""
    from ffopt.reference.time_laws import TIME_LAWS, TimeLaw

    spec = problem.reference_spec
    if not isinstance(TIME_LAWS.get(spec.time_law), TimeLaw):
        return f"time law {spec.time_law!r} is not a polynomial: choose e.g. poly11 to let ffopt shape it for rest"
    if getattr(problem.reference, "prefilter", None):
        return "a prefiltered reference has no time law to shape"
    if traj.method.startswith("nlp") and traj.stats.get("strategy") == "noncausal":
        return "the non-causal NLP plans its own rest (pre-/post-actuation)"
    return None


def _warn_standstill(problem: Problem, y: np.ndarray, say) -> str | None:
    """A path whose outputs never move (start == end): the plan holds the arm still. Said, since a user rarely
    means it; returns the warning (for summary.json's solver.warnings) or None."""
    if not (y.size and np.all(np.ptp(y, axis=0) == 0.0)):
        return None
    msg = (f"{problem.source}: reference: the path's start and end are the same and it never moves, so the plan "
           "holds the arm still (a standstill plan); check reference.start_mm / end_mm (or q_start_rad / q_end_rad)")
    say(f"warning: {msg}")
    return msg


# a gear whose motor turns this far from its link (rad) is not a gear: real ones deflect a few degrees
MAX_GEAR_DEFLECTION_RAD = np.pi


def _check_gear_windup(problem: Problem, traj) -> None:
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


def _warn_unresolved_friction(problem: Problem, traj, say) -> None:
    """Link-side Coulomb friction switching faster than the grid (ffopt.sim.friction_check): say it and
    keep it in summary.json (solver.warnings)."""
    if not any(j.link_coulomb_friction > 0 for j in problem.chain.joints):
        return
    from ffopt.sim.friction_check import unresolved_friction_reversals

    step = problem.nlp.step if traj.method.startswith("nlp") else problem.solver.step
    found = unresolved_friction_reversals(problem.model, traj, step)
    for w in found:
        say(f"warning: {w['message']}")
    if found:
        traj.stats.setdefault("warnings", []).extend(w["message"] for w in found)
        traj.stats["unresolved_friction_reversals"] = [{k: v for k, v in w.items() if k != "message"} for w in found]


def _warn_urdf_limits(problem: Problem, traj, say) -> None:
    """A plan asking a drive for more than its URDF effort limit, or moving a joint faster than its velocity limit
    (possible only after the time law was reshaped for rest, or by the elastic deflection rates: the rigid path
    passed ``check_joint_speeds``), is kept (the verification simulates it as planned) but says so, and keeps it in
    summary.json (solver.warnings; urdf.effort_limits_exceeded, urdf.velocity_limits_exceeded)."""
    messages = [f"joint {e['joint']}: the plan's peak torque {e['peak_Nm']:.4g} N m at t = {e['t_s']:.4g} s exceeds "
                f"its effort limit {e['limit_Nm']:.4g} N m (the URDF's <limit effort>): a drive limited there will "
                "not follow the plan; plan within the limits with method nlp and nlp.torque_max = \"urdf\", or "
                "lengthen the move (reference.duration)" for e in effort_limits_exceeded(problem, traj)]
    messages += [f"joint {e['joint']}: the plan moves it at {e['peak_rad_s']:.4g} rad/s at t = {e['t_s']:.4g} s, above "
                 f"its velocity limit {e['limit_rad_s']:.4g} rad/s (the URDF's <limit velocity>; the path's own time "
                 "law is within it): lengthen the move (reference.duration) or plan without the reshaped time law "
                 "(solver.end_at_rest = false)" for e in velocity_limits_exceeded(problem, traj)]
    for msg in messages:
        say(f"warning: {msg}")
        traj.stats.setdefault("warnings", []).append(msg)


def _warn_inverse_singularity(problem: Problem, traj, say) -> None:
    """A plan that tracks the path as a penalty or in a band (by request, or method auto's last step)
    may pass where the tool's path has no exact inverse: the decoupling matrix of the plant is
    singular there (ffopt.analysis.decoupling). Say so, and keep it in summary.json (solver.decoupling)."""
    if not traj.method.startswith("nlp") or problem.nlp.tracking == "exact":
        return
    from ffopt.analysis.decoupling import decoupling_along

    states = [traj.q, traj.v] + ([traj.current] if traj.electric else [])
    try:
        rep = decoupling_along(problem.model, traj.t, np.hstack(states))
    except (ValueError, np.linalg.LinAlgError, RuntimeError) as err:  # no vector relative degree
        traj.stats["decoupling"] = {"error": str(err)}
        return
    traj.stats["decoupling"] = rep.to_dict()
    if rep.singular:
        planned = traj.stats.get("planned_tool_error_max_mm")
        miss = f"misses the path there by up to {planned:.3g} mm (planned) " if planned is not None else ""
        msg = (f"the plan passes a singularity of the inverse: {rep.summary()}. This plan {miss}with a peak "
               f"input of {np.abs(traj.u).max():.3g} {traj.input_unit}; to track exactly, slow the motion "
               "(reference.duration) or move the path away from the singularity")
        say(f"warning: {msg}")
        traj.stats.setdefault("warnings", []).append(msg)


def _solve(problem: Problem, say, compile: bool, hint: bool = True):
    """One explicit method (not auto). hint: on a BDF failure, say whether the zero dynamics explain it."""
    s, model, reference = problem.solver, problem.model, problem.reference
    guess = problem.reference_spec.joint_guess
    if s.method == "bdf":
        from ffopt.dae.inverse import solve_inverse_bdf

        say(f"solving the inverse dynamics: BDF-{s.order}, h = {s.step * 1e3:g} ms, form {s.form}")
        i3_min_step = 5e-4 if model.drives is None else 2e-3  # electrics raise the index by one
        if s.form == "I3" and s.step < i3_min_step:
            # roundoff in u grows like eps / h^index on the original form (results/conditioning.md)
            say(f"warning: form I3 with h = {s.step * 1e3:g} ms < {i3_min_step * 1e3:g} ms amplifies roundoff in "
                "u; use form I1")
        try:
            with heartbeat(say, lambda elapsed: f"solving the inverse dynamics: {elapsed:.0f} s"):  # one long call
                traj = solve_inverse_bdf(model, reference, s.order, s.step, s.form, s.scaling_power, guess, compile)
        except SolverError as err:
            if not hint:
                raise
            raise SolverError(f"{err}{_zero_dynamics_hint(model, reference, guess)}") from None
    elif s.method == "dd":
        from ffopt.dae.dummy_derivatives import solve_inverse_dd

        say(f"solving the inverse dynamics: automatic dummy derivatives (DD), BDF-{s.order}, h = {s.step * 1e3:g} ms")
        traj = solve_inverse_dd(model, reference, s.order, s.step, guess, compile=compile,
                                scaling_power=s.scaling_power)
    elif s.method in MOBERG_HANSSEN_METHODS:
        from ffopt.replication.moberg_hanssen import solve_inverse_variant

        say(f"solving the inverse dynamics: Moberg & Hanssen variant {s.method.upper()}, BDF-{s.order}, "
            f"h = {s.step * 1e3:g} ms")
        traj = solve_inverse_variant(model, reference, s.method.upper(), s.order, s.step, guess,
                                     engine="compiled" if compile else "vm", scaling_power=s.scaling_power)
        if traj.stats.get("engine_fallback"):
            say(f"note: {traj.stats['engine_fallback']}")
    elif s.method == "nlp":
        from ffopt.nlp.solve import plan_nlp

        if not compile and problem.nlp.compile:  # plan(compile=False) / --no-compile: the NLP in the VM too
            problem = replace(problem, nlp=replace(problem.nlp, compile=False))
        return plan_nlp(problem, say)  # with an [output] hold: planned on the sample grid (ffopt.nlp.transcription)
    else:
        raise ProblemError(f"solver.method: {s.method!r} is not available (use one of {', '.join(METHODS)})")
    return _held(problem, traj, s.step, say)


def _held(problem: Problem, traj, step: float, say):
    """A solver's trajectory on its own grid resampled to the [output] sample period and hold (if stated)."""
    out = problem.output
    if not out.stated:
        return traj
    from ffopt.io.problem import samples_per_period
    from ffopt.trajectory import resample_to_hold

    m = samples_per_period(out.period(step), step)
    traj = resample_to_hold(traj, m, out.hold_kind)
    say(f"output: {traj.stats['resampling']} ({out.hold_kind} hold, sample time {out.period(step) * 1e3:g} ms)")
    return traj


def verification_cases(problem: Problem, verify: bool | str | None) -> str | None:
    """The verification case set a plan runs ("default" or "full"), None for no verification."""
    if verify is None:
        return problem.verification.cases if problem.verification.enabled else None
    if verify is True:
        return problem.verification.cases
    if verify is False:
        return None
    if verify not in ("default", "full"):
        raise ProblemError(f"verify: must be True, False, 'default' or 'full', got {verify!r}")
    return verify


def _zero_dynamics_hint(model, reference, guess) -> str:
    """Why causal BDF may have failed: unstable zero dynamics (the inverse integrates them)."""
    from ffopt.analysis.linear import zero_dynamics

    try:
        zd = zero_dynamics(model, reference, guess, n_points=11)
    except Exception:  # the hint is optional; the solver error stands on its own
        return ""
    if zd.minimum_phase:
        return ""
    return (f" The system is non-minimum phase (zero at {zd.worst_zero:.4g} rad/s, t = {zd.worst_time:.3g} s): "
            "the causal inverse diverges; use --method nlp (pre-actuation, stable inversion) or leave the method "
            "at auto, the default, which chooses it.")


def _check_time_law_smoothness(problem: Problem) -> None:
    """The input must stay bounded: a time law with n zero derivatives at the rests leaves derivative
    n + 1 of the path jumping there, so an input that needs derivative r (the relative degree: 4 for
    an undamped elastic gear, one more with DC-motor electrics) holds an impulse unless n >= r - 1.
    Checked where it matters most, for drives with electrics (their voltage needs the highest
    derivative); see ``ffopt.analysis.linear.input_derivative_order``."""
    if problem.model.drives is None:
        return
    from ffopt.analysis.linear import input_derivative_order
    from ffopt.reference.time_laws import TIME_LAWS

    law = TIME_LAWS[problem.reference_spec.time_law]
    r = input_derivative_order(problem.model, problem.reference, problem.reference_spec.joint_guess)
    if r is not None and law.n_zero_derivs < r - 1:
        raise ProblemError(f"{problem.source}: reference.time_law: {problem.reference_spec.time_law!r} leaves derivative "
                           f"{law.n_zero_derivs + 1} of the path jumping at the rests, but the {problem.model.input_kind} "
                           f"of this robot needs derivative {r} (relative degree), so it would hold an impulse: use "
                           f"a law with at least {r - 1} zero derivatives (hermite9 has 4, poly11 5, cinf all)")


def _with_nlp_limits(problem: Problem, max_iter: int | None, max_time: float | None,
                     max_cpu_time: float | None = None) -> Problem:
    """The NLP limits given to plan() (CLI --max-iter / --max-cpu-time / --max-time); an error for a method
    without an NLP."""
    if max_iter is None and max_time is None and max_cpu_time is None:
        return problem
    if problem.solver.method not in ("nlp", "auto"):
        raise ProblemError(f"--max-iter / --max-cpu-time / --max-time limit the NLP solve, but solver.method is "
                           f"{problem.solver.method!r} (a fixed number of steps): use them with --method nlp")
    problem = problem.with_nlp(max_iter=max_iter, max_wall_time_s=max_time, max_cpu_time_s=max_cpu_time)
    from ffopt.nlp.settings import check_limits

    check_limits(problem.nlp)
    return problem


# Memory a plan holds per row of its time grid and per coordinate of the model (link and motor angles): the
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


def _check_settings(problem: Problem) -> None:
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
    if not 1 <= s.order <= 6:
        raise ProblemError(f"solver.order: must be 1..6 (BDF is unstable beyond 6), got {s.order}")
    _check_plan_size(problem)
    if s.step <= 0 or s.step > problem.reference_spec.duration / 4:
        raise ProblemError(f"solver.step: must be in (0, duration/4 = {problem.reference_spec.duration / 4:g}] s, "
                           f"got {s.step:g}")
