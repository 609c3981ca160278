"""The planning pipeline: problem -> path check -> inverse dynamics -> verification -> result."""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError, SolverError
from ffopt.io.problem import METHODS, Problem, load_problem
from ffopt.trajectory import Trajectory

SEED_VARIANT_METHODS = ("hi", "dd", "dd43", "dd44", "dd48", "dd49", "km", "dc")  # seed 000's E1 family


@dataclass
class PlanResult:
    problem: Problem
    trajectory: Trajectory
    verification: object | None
    settings: dict
    timings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {
            "problem": {"name": self.problem.name, "source": self.problem.source,
                        "description": self.problem.description,
                        "outputs": list(self.problem.outputs),
                        "t_end_s": float(self.trajectory.t[-1])},
            "method": self.trajectory.method,
            "settings": self.settings,
            "solver": self.trajectory.stats,
            "wall_time_s": self.timings,
            "peak_torque_Nm": np.abs(self.trajectory.u).max(axis=0).tolist(),
            "reference": reference_summary(self.problem.reference),
            "verification": None if self.verification is None else self.verification.to_dict(),
            "versions": versions(),
        }

    def save(self, out: str | Path, plots: bool = True, force: bool = False) -> Path:
        """Write trajectory.csv, summary.json and plots to folder ``out`` (ffopt.io.results: all or
        nothing; an existing folder only if ffopt wrote it, or with ``force`` beside the user's files)."""
        from ffopt.io.plots import write_plots
        from ffopt.io.results import write_json, write_result_folder, write_trajectory_csv

        def fill(tmp: Path):
            write_trajectory_csv(self.trajectory, tmp / "trajectory.csv")
            files = ["trajectory.csv", "summary.json"]
            if plots:
                files += write_plots(self.trajectory, self.verification, tmp)
            summary = self.summary()
            summary["files"] = files
            summary["columns"] = self.trajectory.column_info()
            write_json(summary, tmp / "summary.json")

        return write_result_folder(out, fill, force)


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

    return ["trajectory.csv", "summary.json"] + (plot_names(verification) if plots else [])


def versions() -> dict:
    import casadi
    import scipy

    import ffopt

    return {"ffopt": ffopt.__version__, "python": sys.version.split()[0], "platform": platform.platform(),
            "casadi": casadi.__version__, "numpy": np.__version__, "scipy": scipy.__version__}


def plan(problem: Problem | str | Path, method: str | None = None, order: int | None = None,
         step: float | None = None, form: str | None = None, scaling_power: float | None = None,
         verify: bool | None = None, compile: bool = True, progress=None, backend: str | None = None,
         warm_start: str | None = None, max_iter: int | None = None, max_time: float | None = None) -> PlanResult:
    """Compute and verify a feedforward plan. Arguments left None take the problem's settings.

    ``step`` sets both the BDF step (solver.step) and the collocation interval (nlp.step).
    max_iter, max_time: limits of the NLP solve (nlp.max_iter, nlp.max_wall_time_s in s).
    progress: a callable taking a str; NLP iterations arrive as live messages
    (``ffopt.nlp.monitor.NlpProgress``; ``ffopt.io.console.ConsoleProgress`` shows them as one line).
    """
    if not isinstance(problem, Problem):
        problem = load_problem(problem)
    problem = problem.with_solver(method=method, order=order, step=step, form=form, scaling_power=scaling_power)
    problem = problem.with_nlp(backend=backend, warm_start=warm_start, step=step)  # step: BDF and NLP grid
    problem = _with_nlp_limits(problem, max_iter, max_time)
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
    rigid_inverse_kinematics(model, reference, t_check, guess)
    timings["path_check"] = time.perf_counter() - tic

    tic = time.perf_counter()
    if s.method == "bdf":
        from ffopt.dae.inverse import solve_inverse_bdf

        say(f"solving the inverse dynamics: BDF-{s.order}, h = {s.step * 1e3:g} ms, form {s.form}")
        if s.form == "I3" and s.step < 5e-4:
            # roundoff in u grows like eps / h^index on the original form (results/conditioning.md)
            say(f"warning: form I3 with h = {s.step * 1e3:g} ms < 0.5 ms amplifies roundoff in u; use form I1")
        try:
            traj = solve_inverse_bdf(model, reference, s.order, s.step, s.form, s.scaling_power, guess, compile)
        except SolverError as err:
            raise SolverError(f"{err}{_zero_dynamics_hint(model, reference, guess)}") from None
    elif s.method in SEED_VARIANT_METHODS:
        from ffopt.dae.seed_variants import solve_inverse_variant

        say(f"solving the inverse dynamics: seed 000 variant {s.method.upper()}, BDF-{s.order}, h = {s.step * 1e3:g} ms")
        traj = solve_inverse_variant(model, reference, s.method.upper(), s.order, s.step, guess,
                                     engine="compiled" if compile else "vm", scaling_power=s.scaling_power)
        if traj.stats.get("engine_fallback"):
            say(f"note: {traj.stats['engine_fallback']}")
    elif s.method == "nlp":
        from ffopt.nlp.solve import plan_nlp

        traj = plan_nlp(problem, say)
    else:
        raise ProblemError(f"solver.method: {s.method!r} is not available (use one of {', '.join(METHODS)})")
    timings["inverse_dynamics"] = time.perf_counter() - tic

    report = None
    if problem.verification.enabled if verify is None else verify:
        from ffopt.sim.verify import verify as run_verification

        tic = time.perf_counter()
        say("verifying: forward simulation open loop, with motor PD, baselines, payload mismatch")
        report = run_verification(model, reference, traj, problem.verification, guess)
        timings["verification"] = time.perf_counter() - tic
    settings = {"method": s.method, "order": s.order, "step_s": s.step, "form": s.form,
                "scaling_power": traj.stats.get("scaling_power"), "compile": compile}
    if s.method == "nlp":
        from dataclasses import asdict

        settings["nlp"] = {**asdict(problem.nlp), "strategy": traj.stats.get("strategy"),
                           "pre_actuation_s": traj.stats.get("pre_actuation_s"),
                           "post_actuation_s": traj.stats.get("post_actuation_s")}
    return PlanResult(problem, traj, report, settings, timings)


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
            "the causal inverse diverges; use --method nlp (pre-actuation, stable inversion).")


def _with_nlp_limits(problem: Problem, max_iter: int | None, max_time: float | None) -> Problem:
    """The NLP limits given to plan() (CLI --max-iter / --max-time); an error for a method without an NLP."""
    if max_iter is None and max_time is None:
        return problem
    if problem.solver.method not in ("nlp", "auto"):
        raise ProblemError(f"--max-iter / --max-time limit the NLP solve, but solver.method is "
                           f"{problem.solver.method!r} (a fixed number of steps): use them with --method nlp")
    problem = problem.with_nlp(max_iter=max_iter, max_wall_time_s=max_time)
    from ffopt.nlp.settings import check_limits

    check_limits(problem.nlp)
    return problem


def _check_settings(problem: Problem) -> None:
    s = problem.solver
    if not 1 <= s.order <= 6:
        raise ProblemError(f"solver.order: must be 1..6 (BDF is unstable beyond 6), got {s.order}")
    if s.step <= 0 or s.step > problem.reference_spec.duration / 4:
        raise ProblemError(f"solver.step: must be in (0, duration/4 = {problem.reference_spec.duration / 4:g}] s, "
                           f"got {s.step:g}")
