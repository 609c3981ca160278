"""The planning pipeline: problem -> settings -> path check -> method -> rest-to-rest -> warnings ->
verification -> result."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.problem import Problem, load_problem
from ffopt.plan import checks, diagnostics
from ffopt.plan.methods import Run, solve_method
from ffopt.plan.min_time import plan_minimum_time, record_and_say
from ffopt.motion.min_time import minimum_time
from ffopt.motion.uncertainty import problem_uncertainty
from ffopt.plan.rest import RestToRest, end_at_rest, explain_ringing, robust_rest
from ffopt.plan.result import PlanResult
from ffopt.progress import heartbeat
from ffopt.trajectory import Trajectory


@dataclass(frozen=True, kw_only=True)
class PlanOverrides:
    """Settings of a plan given beside the problem (None: the problem's own). ``step`` sets both the BDF step
    (solver.step) and the collocation interval (nlp.step); max_iter, max_cpu_time, max_time: limits of the NLP
    solve (nlp.max_iter, nlp.max_cpu_time_s, and the wall-time guard nlp.max_wall_time_s, in s)."""
    method: str | None = None
    order: int | None = None
    step: float | None = None
    form: str | None = None
    scaling_power: float | None = None
    backend: str | None = None
    warm_start: str | None = None
    max_iter: int | None = None
    max_time: float | None = None
    max_cpu_time: float | None = None

    def apply(self, problem: Problem) -> Problem:
        problem = problem.with_solver(method=self.method, order=self.order, step=self.step, form=self.form,
                                      scaling_power=self.scaling_power)
        problem = problem.with_nlp(backend=self.backend, warm_start=self.warm_start, step=self.step)  # both grids
        return self._with_nlp_limits(problem)

    def _with_nlp_limits(self, problem: Problem) -> Problem:
        """The NLP limits (CLI --max-iter / --max-cpu-time / --max-time); an error for a method without an NLP."""
        if self.max_iter is None and self.max_time is None and self.max_cpu_time is None:
            return problem
        if problem.solver.method not in ("nlp", "auto"):
            raise ProblemError(f"--max-iter / --max-cpu-time / --max-time limit the NLP solve, but solver.method is "
                               f"{problem.solver.method!r} (a fixed number of steps): use them with --method nlp")
        problem = problem.with_nlp(max_iter=self.max_iter, max_wall_time_s=self.max_time,
                                   max_cpu_time_s=self.max_cpu_time)
        from ffopt.settings.nlp import check_limits

        check_limits(problem.nlp)
        return problem


OVERRIDES = tuple(f.name for f in fields(PlanOverrides))


@dataclass
class Planned:
    """A plan before its verification: the problem as planned (method auto: the method it chose; rest-to-rest:
    the shaped time law), the trajectory, the method choice, the rest-to-rest record and the wall times."""
    problem: Problem
    trajectory: Trajectory
    method_choice: dict
    rest_to_rest: RestToRest | None
    timings: dict


# CasADi's symbolic layer is not safe for concurrent use: a plan building an expression in one thread while
# another plan evaluated a CasADi function crashed a threaded Dask worker. Plans in one process (threads of a
# worker, a notebook's thread pool) therefore run one at a time; processes still plan side by side.
_PLAN_LOCK = threading.RLock()


def plan(problem: Problem | str | Path, *, verify: bool | str | None = None, compile: bool = True, progress=None,
         **overrides) -> PlanResult:
    """Compute and verify a feedforward plan.

    ``overrides``: settings by keyword (``PlanOverrides``: method, order, step, form, scaling_power, backend,
    warm_start, max_iter, max_time, max_cpu_time); those left None take the problem's settings.
    ``verify``: False (none), True (the problem's case set), "default" (open loop and with the
    motor PD) or "full" (also the baselines and the payload mismatch); None: the problem's
    [verification] settings.
    progress: a callable taking a str; NLP iterations arrive as live messages
    (``ffopt.nlp.monitor.NlpProgress``; ``ffopt.io.console.ConsoleProgress`` shows them as one line).
    Plans in threads of one process run one at a time (CasADi's symbolic layer is not thread-safe).
    """
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise TypeError(f"plan() got unexpected keyword arguments {unknown} (settings: {', '.join(OVERRIDES)})")
    with _PLAN_LOCK:
        return _plan(problem, PlanOverrides(**overrides), verify, Run(progress or (lambda msg: None), compile))


def _plan(problem, overrides: PlanOverrides, verify, run: Run) -> PlanResult:
    if not isinstance(problem, Problem):
        problem = load_problem(problem)
    problem = overrides.apply(problem)
    ranges = problem_uncertainty(problem)  # [uncertainty] checked before any solve (its errors name the field)
    say = run.say
    tic = time.perf_counter()
    problem, standstill = check_problem(problem, run)
    timings = {"path_check": time.perf_counter() - tic}
    guess = problem.reference_spec.joint_guess
    found = None
    if problem.reference_spec.minimum_time:  # reference.duration = "min": the duration and law first
        tic = time.perf_counter()
        problem, found = plan_minimum_time(problem, run.say, _trajectory_planner(run))
        timings["minimum_time"] = time.perf_counter() - tic
    worst_case = None
    if problem.solver.robust == "worst_case":  # the law least sensitive over the [uncertainty] ranges, then planned
        tic = time.perf_counter()
        problem, worst_case = _worst_case(problem, ranges, run)
        timings["worst_case"] = time.perf_counter() - tic
    planned = make_plan(problem, run)
    timings.update(planned.timings)
    problem, traj, rest = planned.problem, planned.trajectory, planned.rest_to_rest
    min_time_record = None if found is None else record_and_say(found, traj, problem, say)
    if rest is not None and rest.warnings:
        traj.stats.setdefault("warnings", []).extend(rest.warnings)
    if standstill:
        traj.stats.setdefault("warnings", []).append(standstill)
    diagnostics.warn_unresolved_friction(problem, traj, say)
    diagnostics.warn_inverse_singularity(problem, traj, say)
    diagnostics.warn_urdf_limits(problem, traj, say)

    report = None
    cases = checks.verification_cases(problem, verify)
    if cases is not None:
        tic = time.perf_counter()
        report = _verify(problem, traj, guess, cases, run)
        timings["verification"] = time.perf_counter() - tic
        explain_ringing(report, rest)
    monte = None
    if ranges is not None and cases is not None:
        tic = time.perf_counter()
        monte = _monte_carlo(problem, traj, ranges, run)
        timings["monte_carlo"] = time.perf_counter() - tic
    method_choice = planned.method_choice if rest is None else {**planned.method_choice,
                                                                 "rest_to_rest": rest.to_dict()}
    if found is not None:
        method_choice = {**method_choice, "minimum_time": min_time_record}
    if worst_case is not None:
        method_choice = {**method_choice, "worst_case": worst_case.summary()}
    return PlanResult(problem, traj, report, _settings(problem, traj, run.compile), timings, method_choice,
                      rest_to_rest=rest, monte_carlo=monte)


def _trajectory_planner(run: Run):
    """problem -> Trajectory: ``make_plan`` without verification (method auto explains its own failures)."""
    quiet = replace(run, hint=False)
    return lambda problem: make_plan(problem, quiet).trajectory


def minimum_time_of(problem: Problem, progress=None, **options):
    """``ffopt.motion.min_time.minimum_time`` with this planner's ``make_plan`` as its planner (method auto, no
    verification): minimum-phase arms by the BDF rest-to-rest search, the others by the non-causal NLP."""
    return minimum_time(problem, progress=progress,
                        planner=_trajectory_planner(Run(progress or (lambda msg: None), True)), **options)


def _worst_case(problem: Problem, ranges, run: Run):
    """solver.robust = "worst_case": ``ffopt.plan.worst_case.robust_rest_plan`` over the problem's [uncertainty]
    (no Monte Carlo there: the verification runs it on the plan), and the problem with the law it found, to be
    planned as any problem (robust = none in it: its problem.toml plans again as found)."""
    from ffopt.plan.worst_case import robust_rest_plan  # the vertex simulations: loaded when asked for

    run.say("worst-case robust: searching the time law over the vertices of the uncertainty ranges")
    robust = robust_rest_plan(problem, ranges, progress=run.say, samples=0)
    run.say(f"worst-case robust: {robust.message}")
    return robust.problem.with_values({"solver.robust": "none"}), robust


def _monte_carlo(problem: Problem, traj, ranges, run: Run):
    """The plan on the plants of the problem's [uncertainty] (its vertices, then a seeded Sobol design; the nominal
    controller, through the table and the settle window), on the machine's cores; its summary line said."""
    from ffopt.motion.monte_carlo import monte_carlo, table_of_plan  # the simulation stack, loaded when asked for
    from ffopt.motion.uncertainty import plants

    run.say(f"Monte Carlo: the plan on {ranges.samples} plants of the uncertainty ranges")
    result = monte_carlo(problem, table_of_plan(problem, traj), plants(problem, ranges, build=False),
                         progress=run.say)
    run.say(result.text())
    return result


def check_problem(problem: Problem, run: Run) -> tuple[Problem, str | None]:
    """The settings and the rigid path checked (inverse kinematics, joint limits and speeds, a standstill): the
    problem with the start the inverse kinematics found (when none was given), and the standstill warning or None.
    A search over the problem (the move's duration) calls this and ``make_plan`` for each candidate."""
    checks.check_settings(problem)
    if getattr(problem.reference, "prefilter", None):
        run.say(diagnostics.prefilter_message(problem.reference.prefilter))
    return _check_path(problem, run.say)


def _check_path(problem: Problem, say) -> tuple[Problem, str | None]:
    from ffopt.sim.baselines import rigid_inverse_kinematics  # start-up: the simulation stack, loaded on first plan

    say("checking the path (rigid inverse kinematics, workspace, singularities)")
    reference, guess = problem.reference, problem.reference_spec.joint_guess
    t_check = np.linspace(0.0, reference.t_end, 401)
    qa_check = rigid_inverse_kinematics(problem.model, reference, t_check, guess, problem.reference_spec.start_field)
    if guess is None:  # the start the inverse kinematics found: every stage after starts there (problem.toml too)
        problem = problem.with_joint_guess(qa_check[0, : problem.chain.n_joints])
    checks.check_joint_limits(problem.chain, t_check, qa_check)
    checks.check_joint_speeds(problem, t_check, qa_check)
    return problem, diagnostics.warn_standstill(problem, reference.evaluate(t_check), say)


def make_plan(problem: Problem, run: Run) -> Planned:
    """The plan of a checked problem (``check_problem``): its method (auto: the one the chain chooses), the gear
    wind-up check, then rest-to-rest and robust rest where the problem asks. One call per candidate: a search over
    the problem (the move's duration, a minimum-time plan) calls this with each candidate problem."""
    s = problem.solver
    tic = time.perf_counter()
    if s.method == "auto":
        from ffopt.auto_method import solve_auto  # auto_method imports the DAE and NLP stacks

        problem, traj, method_choice = solve_auto(problem, lambda p: solve_method(p, replace(run, hint=False)),
                                                  run.say)
        s = problem.solver
    else:
        traj = solve_method(problem, run)
        method_choice = {"requested": s.method, "chosen": s.method, "reason": "set by the user"}
    timings = {"inverse_dynamics": time.perf_counter() - tic}
    checks.check_gear_windup(problem, traj)
    rest = None
    if s.end_at_rest:
        tic = time.perf_counter()
        problem, traj, rest = end_at_rest(problem, traj, run)
        if s.robust_rest:
            problem, traj, rest = robust_rest(problem, traj, rest, run)
        timings["rest_to_rest"] = time.perf_counter() - tic
    return Planned(problem, traj, method_choice, rest, timings)


def _verify(problem: Problem, traj, guess, cases: str, run: Run):
    from ffopt.sim.verify import verify as run_verification  # the simulation stack: loaded when verifying

    run.say("verifying: forward simulation open loop and with motor PD"
            + (", baselines, payload mismatch" if cases == "full" else ""))
    with heartbeat(run.say, lambda elapsed: f"verifying: {elapsed:.0f} s"):  # between its stages' own lines
        return run_verification(problem.model, problem.reference, traj, replace(problem.verification, cases=cases),
                                guess, hold=traj.stats.get("hold", "linear"), progress=run.say, compile=run.compile)


def _settings(problem: Problem, traj, compile: bool) -> dict:
    """summary.json's settings: the solver's as planned, the output hold, and for the NLP its settings and strategy."""
    s = problem.solver
    settings = {"method": s.method, "order": s.order, "step_s": s.step, "form": s.form,
                "scaling_power": traj.stats.get("scaling_power"), "compile": compile,
                "output": {"sample_time_s": traj.stats.get("sample_time_s"), "hold": traj.stats.get("hold", "linear"),
                           "stated": problem.output.stated, "resampling": traj.stats.get("resampling")}}
    if s.method == "nlp":
        settings["nlp"] = {**asdict(problem.nlp), "strategy": traj.stats.get("strategy"),
                           "pre_actuation_s": traj.stats.get("pre_actuation_s"),
                           "post_actuation_s": traj.stats.get("post_actuation_s")}
    return settings
