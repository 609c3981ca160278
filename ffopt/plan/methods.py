"""The planning methods by name, as SciPy's ``solve_ivp`` keeps its ``METHODS``: each entry solves the inverse
dynamics of a checked problem with the settings objects the problem holds (``problem.solver``, ``problem.nlp``)
and the options of the run (``Run``). A new method is one entry; its name also goes to
``ffopt.settings.methods.METHODS`` (the problem schema's and the CLI's choices), which a test holds equal to the keys
here (plus auto, which chooses among them: ``ffopt.auto_method``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ffopt.errors import ProblemError, SolverError
from ffopt.io.problem import Problem, samples_per_period
from ffopt.settings.methods import METHODS as METHOD_NAMES
from ffopt.settings.methods import MOBERG_HANSSEN_METHODS
from ffopt.progress import heartbeat
from ffopt.trajectory import Trajectory, resample_to_hold


@dataclass(frozen=True)
class Run:
    """How a plan runs, beside the problem's settings: where its progress lines go, whether generated code is
    compiled, and whether a BDF failure is explained by the zero dynamics (method auto explains its own)."""
    say: Callable[[str], None] = lambda msg: None
    compile: bool = True
    hint: bool = True


@dataclass(frozen=True)
class Method:
    """One entry of ``METHODS``: ``solve(problem, run)`` returns the Trajectory on the method's own grid;
    ``steps_bdf``: it steps a BDF on solver.step (the plan is then resampled to the [output] hold), else it
    plans on the sample grid itself (the NLP)."""
    solve: Callable[[Problem, Run], Trajectory]
    steps_bdf: bool = True


def _bdf(problem: Problem, run: Run) -> Trajectory:
    from ffopt.dae.inverse import solve_inverse_bdf  # the DAE stack: loaded by the method that uses it

    s, model, reference, say = problem.solver, problem.model, problem.reference, run.say
    guess = problem.reference_spec.joint_guess
    say(f"solving the inverse dynamics: BDF-{s.order}, h = {s.step * 1e3:g} ms, form {s.form}")
    i3_min_step = 5e-4 if model.drives is None else 2e-3  # electrics raise the index by one
    if s.form == "I3" and s.step < i3_min_step:
        # roundoff in u grows like eps / h^index on the original form (results/conditioning.md)
        say(f"warning: form I3 with h = {s.step * 1e3:g} ms < {i3_min_step * 1e3:g} ms amplifies roundoff in "
            "u; use form I1")
    try:
        with heartbeat(say, lambda elapsed: f"solving the inverse dynamics: {elapsed:.0f} s"):  # one long call
            return solve_inverse_bdf(model, reference, s, qa_guess=guess, compile=run.compile)
    except SolverError as err:
        if not run.hint:
            raise
        raise SolverError(f"{err}{zero_dynamics_hint(model, reference, guess)}") from None


def _dummy_derivatives(problem: Problem, run: Run) -> Trajectory:
    from ffopt.dae.dummy_derivatives import solve_inverse_dd

    s = problem.solver
    run.say(f"solving the inverse dynamics: automatic dummy derivatives (DD), BDF-{s.order}, h = {s.step * 1e3:g} ms")
    return solve_inverse_dd(problem.model, problem.reference, s.order, s.step, problem.reference_spec.joint_guess,
                            compile=run.compile, scaling_power=s.scaling_power)


def _moberg_hanssen(problem: Problem, run: Run) -> Trajectory:
    """Moberg & Hanssen's variants (ffopt.replication; docs/references.md)."""
    from ffopt.replication.moberg_hanssen import solve_inverse_variant

    s = problem.solver
    run.say(f"solving the inverse dynamics: Moberg & Hanssen variant {s.method.upper()}, BDF-{s.order}, "
            f"h = {s.step * 1e3:g} ms")
    traj = solve_inverse_variant(problem.model, problem.reference, s.method.upper(), s,
                                 problem.reference_spec.joint_guess, engine="compiled" if run.compile else "vm")
    if traj.stats.get("engine_fallback"):
        run.say(f"note: {traj.stats['engine_fallback']}")
    return traj


def _nlp(problem: Problem, run: Run) -> Trajectory:
    from ffopt.nlp.solve import plan_nlp

    if not run.compile and problem.nlp.compile:  # plan(compile=False) / --no-compile: the NLP in the VM too
        problem = replace(problem, nlp=replace(problem.nlp, compile=False))
    return plan_nlp(problem, run.say)  # with an [output] hold: planned on the sample grid (ffopt.nlp.transcription)


METHODS: dict[str, Method] = {"bdf": Method(_bdf), "nlp": Method(_nlp, steps_bdf=False),
                              **{name: Method(_moberg_hanssen) for name in MOBERG_HANSSEN_METHODS},
                              "dd": Method(_dummy_derivatives)}  # dd: the production route, not the replication's


def solve_method(problem: Problem, run: Run) -> Trajectory:
    """The plan of ``problem`` by its explicit method (not auto), on the [output] hold if one is stated."""
    method = METHODS.get(problem.solver.method)
    if method is None:
        raise ProblemError(f"solver.method: {problem.solver.method!r} is not available (use one of "
                           f"{', '.join(METHOD_NAMES)})")
    traj = method.solve(problem, run)
    return held(problem, traj, problem.solver.step, run.say) if method.steps_bdf else traj


def held(problem: Problem, traj, step: float, say):
    """A solver's trajectory on its own grid resampled to the [output] sample period and hold (if stated)."""
    out = problem.output
    if not out.stated:
        return traj
    m = samples_per_period(out.period(step), step)
    traj = resample_to_hold(traj, m, out.hold_kind)
    say(f"output: {traj.stats['resampling']} ({out.hold_kind} hold, sample time {out.period(step) * 1e3:g} ms)")
    return traj


def zero_dynamics_hint(model, reference, guess) -> str:
    """Why causal BDF may have failed: unstable zero dynamics (the inverse integrates them)."""
    from ffopt.analysis.linear import zero_dynamics  # the analysis stack: loaded only to explain a failure

    try:
        zd = zero_dynamics(model, reference, guess, n_points=11)
    except Exception:  # the hint is optional; the solver error stands on its own
        return ""
    if zd.minimum_phase:
        return ""
    return (f" The system is non-minimum phase (zero at {zd.worst_zero:.4g} rad/s, t = {zd.worst_time:.3g} s): "
            "the causal inverse diverges; use --method nlp (pre-actuation, stable inversion) or leave the method "
            "at auto, the default, which chooses it.")
