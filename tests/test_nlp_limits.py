"""Bounded NLP solve time: iteration and wall-time limits in every backend, live progress,
Ctrl-C, and the infeasibility diagnosis before any solver iteration (ffopt.nlp.monitor,
ffopt.nlp.feasibility).

The test NLP: E1 complete (no gravity) at h = 10 ms with penalty tracking and |u| bounded at 20 %
of what exact tracking needs. It is feasible but hard: IPOPT needs ~135 iterations (2 s) to solve
it, so small limits stop it mid-way.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ffopt.nlp.solve as nlp_solve
from ffopt.errors import ProblemError, SolverError
from ffopt.io.problem import load_problem
from helpers import paper_problem
from ffopt.nlp.monitor import NlpProgress, SolveMonitor
from ffopt.nlp.settings import NlpSettings
from ffopt.nlp.solve import solve_inverse_nlp, warm_start_trajectory

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"
BACKENDS = ["casadi", "cyipopt", "ipopt-c", "auto", pytest.param("pyomo", marks=pytest.mark.slow)]


@functools.lru_cache(maxsize=None)
def _e1_peak() -> float:
    """|u| peak of exact tracking on E1 complete, computed here by BDF-6 at 1 ms on form I3, a formulation the
    NLP's feasibility check does not use (it takes its warm start, form I1): 42706.06 N m at t = 0.056 s, the
    two forms agreeing to 1e-7 (measured on 2026-11-27)."""
    from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf

    p = paper_problem(PROBLEMS / "e1_complete.toml")
    traj = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=1e-3, form="I3"),
                             qa_guess=p.reference_spec.joint_guess)
    return float(np.abs(traj.u).max())


@functools.lru_cache(maxsize=None)
def _problem(name):
    p = paper_problem(PROBLEMS / name)
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    warm, _ = warm_start_trajectory(m, r, g, 1e-3)
    return p, m, r, g, warm


def _hard_e1(**changes):
    """The slow-to-solve E1 NLP (penalty tracking, bound at 20 % of the need)."""
    s = NlpSettings(strategy="causal", step=1e-2, tracking="penalty", torque_max=(0.2 * _e1_peak(),))
    return dataclasses.replace(s, **changes)


def _solve(settings, name="e1_complete.toml", progress=None):
    _, m, r, g, warm = _problem(name)
    return solve_inverse_nlp(m, r, settings, g, warm, progress)


class Recorder(list):
    """A progress callback that keeps every message; live messages at every iteration."""

    live_interval_s = 0.0

    def __call__(self, msg):
        self.append(msg)


# ------------------------------------------------------------------------------ limits
@pytest.mark.parametrize("backend", BACKENDS)
def test_iteration_limit_ends_the_solve_with_a_diagnosis(backend):
    with pytest.raises(SolverError) as err:
        _solve(_hard_e1(backend=backend, max_iter=5))
    msg = str(err.value)
    assert "NLP stopped at its iteration limit of 5 (nlp.max_iter, --max-iter)" in msg
    assert "Maximum_Iterations_Exceeded after 5 iterations" in msg
    # the last iterate: infeasibility, tool error, use of the bound; and what to try
    assert "primal infeasibility" in msg and "tool error" in msg and "torque-bound use" in msg
    assert "a larger limit (--max-iter / nlp.max_iter)" in msg


@pytest.mark.parametrize("backend", ["casadi", "cyipopt", "ipopt-c", pytest.param("pyomo", marks=pytest.mark.slow)])
def test_wall_time_limit_is_what_ends_the_solve(backend):
    # Solved without a limit in 202 iterations, 5.7 s (casadi; regression value measured on 2026-11-27),
    # so a 1 s limit ends it mid-way. Checked: the limit is the reason the solve ended (IPOPT's status
    # Maximum_WallTime_Exceeded, our diagnosis names the limit), not how long it took (a shared machine).
    with pytest.raises(SolverError, match=r"NLP stopped at its wall-time limit of 1 s \(nlp.max_wall_time_s, "
                                          r"--max-time\): IPOPT via \w+ ended with status Maximum_WallTime_Exceeded "
                                          r"after \d+ iterations.*What to try:.*--max-time"):
        _solve(_hard_e1(backend=backend, step=2.5e-3, max_wall_time_s=1.0))


@pytest.mark.parametrize("backend", ["casadi", "cyipopt", "ipopt-c"])
def test_an_ipopt_iteration_that_never_returns_is_ended_at_the_limit(monkeypatch, backend, tmp_path):
    """IPOPT checks its limits only between iterations; one iteration (a MUMPS factorisation of a
    diverging non-causal NLP) was seen running 15 minutes past a 120 s limit. IPOPT runs in a
    worker process that is ended a grace after the limit: here a solve stuck after iteration 0.
    Checked: the worker process is gone and never woke up from its stuck call (it was killed, not
    waited for), and the diagnosis says why it ended."""
    from ffopt.nlp.backends import casadi_ipopt, common, cyipopt_backend, ipopt_c

    pid_file, woke_file = tmp_path / "worker.pid", tmp_path / "worker.woke"

    def stuck(problem, warm, tol, monitor, w_start, *library_and_solver):
        pid_file.write_text(str(os.getpid()))
        monitor.begin("IPOPT (stuck)")
        monitor.iteration(0, 1.0, 1e3)
        time.sleep(60)  # stands for a native call that never returns to Python
        woke_file.write_text("the worker was not ended")

    module, name = {"casadi": (casadi_ipopt, "_solve_ipopt"), "cyipopt": (cyipopt_backend, "_solve"),
                    "ipopt-c": (ipopt_c, "_solve")}[backend]
    monkeypatch.setattr(module, name, stuck)
    monkeypatch.setattr(common, "ipopt_grace_s", lambda monitor: 0.5)
    with pytest.raises(SolverError, match=r"wall-time limit of 1 s.*Maximum_WallTime_Exceeded.*still inside one "
                                          r"iteration 0.5 s after the wall-time limit"):
        _solve(_hard_e1(backend=backend, step=2.5e-3, max_wall_time_s=1.0))
    pid = int(pid_file.read_text())
    assert pid != os.getpid()  # the stuck call ran in a worker process
    with pytest.raises(ProcessLookupError):  # ... which is gone (ended and reaped)
        os.kill(pid, 0)
    assert not woke_file.exists()  # ... and was killed inside the stuck call, not waited for


# (iteration, objective, infeasibility) of IPOPT runs from rest with exact tracking, as measured
DIVERGING_ARM = [(0, 0.0, 823), (1, 123.9, 700), (2, 3.11e6, 660), (3, 7.12e8, 1.2e3), (4, 2.99e9, 1.0e4),
                 (5, 1.19e10, 3.9e4), (6, 1.36e10, 2.0e4)]  # a drawn arm with a soft passive joint
E1_NMP = [(0, 0.0, 72), (1, 4.74e5, 36), (2, 1.89e6, 0.19), (3, 1.89e6, 5.9e-6), (4, 1.89e6, 9.7e-11)]
CANADARM = [(0, 0.0, 26), (1, 5.84e4, 23), (2, 6.05e4, 8.1), (3, 6.61e4, 1.0), (4, 6.53e4, 0.017),
            (5, 6.53e4, 1.1e-5), (6, 6.53e4, 6.2e-8), (7, 6.53e4, 1.7e-8)]


@pytest.mark.parametrize("history, stops_after", [(DIVERGING_ARM, 5), (E1_NMP, None), (CANADARM, None)])
def test_a_diverging_exact_nlp_is_stopped_and_converging_ones_are_not(history, stops_after):
    monitor = SolveMonitor(1000, 100.0, stop_diverging=True)
    monitor.begin("IPOPT")
    go_on = [monitor.iteration(k, f, inf) for k, f, inf in history]
    assert (go_on.index(False) if False in go_on else None) == stops_after
    off = SolveMonitor(1000, 100.0)  # without stop_diverging (warm starts, band and penalty tracking): never
    assert all(off.iteration(k, f, inf) for k, f, inf in history)


def test_newton_route_honours_both_limits(monkeypatch):
    """Square NLP (exact causal tracking, no bounds): Newton from rest needs several iterations.
    An iteration limit of 1 stops it (no IPOPT fallback with a fresh budget); so does the wall
    time, here on a clock that advances 1 s per reading."""
    settings = NlpSettings(strategy="causal", step=1e-2, warm_start="none")
    traj = _solve(settings)
    assert traj.stats["nlp_method"].startswith("newton") and traj.stats["iterations"] >= 2
    with pytest.raises(SolverError, match=r"iteration limit of 1 .*Newton \(square NLP\) ended with status "
                                          r"Maximum_Iterations_Exceeded after 1 iterations"):
        _solve(dataclasses.replace(settings, max_iter=1))
    ticks = iter(range(10**6))
    monkeypatch.setattr(nlp_solve, "SolveMonitor", functools.partial(SolveMonitor, clock=lambda: float(next(ticks))))
    with pytest.raises(SolverError, match=r"wall-time limit of 4 s.*Newton \(square NLP\) ended with status "
                                          r"Maximum_WallTime_Exceeded"):
        _solve(dataclasses.replace(settings, max_wall_time_s=4.0))


def test_limits_from_problem_file_cli_and_validation():
    p = load_problem(PROBLEMS / "e1_complete.toml")
    # defaults: 120 s of CPU; the wall time only as a guard, 3x that
    assert (p.nlp.max_iter, p.nlp.max_cpu_time_s, p.nlp.max_wall_time_s) == (1000, 120.0, None)
    assert p.nlp.wall_time_limit_s == 360.0
    assert dataclasses.replace(p.nlp, max_cpu_time_s=10.0).wall_time_limit_s == 30.0
    assert dataclasses.replace(p.nlp, max_wall_time_s=5.0).wall_time_limit_s == 5.0
    from ffopt.cli.main import build_parser
    from ffopt.plan import plan

    args = build_parser().parse_args(["plan", "x.toml", "--out", "o", "--max-iter", "7", "--max-time", "2.5"])
    assert (args.max_iter, args.max_time) == (7, 2.5)
    with pytest.raises(ProblemError, match=r"--max-iter / --max-cpu-time / --max-time limit the NLP solve.*'bdf'"):
        plan(p, method="bdf", max_time=10.0)
    with pytest.raises(ProblemError, match=r"nlp.max_wall_time_s \(--max-time\): must be > 0 s"):
        plan(p, method="nlp", max_time=-1.0)
    with pytest.raises(ProblemError, match=r"nlp.max_iter \(--max-iter\): must be an integer > 0"):
        plan(p, method="nlp", max_iter=0)
    with pytest.raises(ProblemError, match=r"nlp.max_cpu_time_s: must be > 0 s"):
        plan(p.with_nlp(max_cpu_time_s=0.0), method="nlp")


def test_ipopt_gets_the_cpu_limit_as_its_own():
    from ffopt.nlp.backends.common import ipopt_options

    opts = ipopt_options(False, 1e-8, 100, 360.0, max_cpu_time=120.0)
    assert (opts["max_cpu_time"], opts["max_wall_time"]) == (120.0, 360.0)
    assert "max_cpu_time" not in ipopt_options(False, 1e-8, 100, 360.0)


@pytest.mark.parametrize("backend", ["casadi", "cyipopt", "ipopt-c"])
def test_cpu_time_limit_is_what_ends_the_solve(backend):
    """The same hard NLP with 1 s of CPU and a wall-time guard far away: the CPU limit ends it, and the
    status and the diagnosis say so (a busy machine stretches the wall time, not the CPU time)."""
    with pytest.raises(SolverError, match=r"NLP stopped at its CPU-time limit of 1 s \(nlp.max_cpu_time_s\): IPOPT "
                                          r"via \w+ ended with status Maximum_CpuTime_Exceeded after \d+ iterations "
                                          r"and [\d.]+ s \([\d.]+ s of its 1 s of CPU\).*What to try:.*a larger "
                                          r"limit \(nlp.max_cpu_time_s\)"):
        _solve(_hard_e1(backend=backend, step=2.5e-3, max_cpu_time_s=1.0, max_wall_time_s=600.0))


def test_wall_guard_and_cpu_limit_are_told_apart(monkeypatch):
    """Newton (square NLP, in this process) on injected clocks: a wall clock that runs 1 s per reading
    with a CPU clock that stands still (a machine busy with other jobs) ends at the wall-time guard;
    a CPU clock that runs ends at the CPU limit. The diagnosis names the one that ended the solve."""
    settings = NlpSettings(strategy="causal", step=1e-2, warm_start="none", max_cpu_time_s=4.0, max_wall_time_s=8.0)
    ticks = iter(range(10**6))
    monkeypatch.setattr(nlp_solve, "SolveMonitor", functools.partial(
        SolveMonitor, clock=lambda: float(next(ticks)), cpu_clock=lambda: 0.0))
    with pytest.raises(SolverError, match=r"wall-time limit of 8 s \(nlp.max_wall_time_s, --max-time\): Newton "
                                          r"\(square NLP\) ended with status Maximum_WallTime_Exceeded"):
        _solve(settings)
    cpu_ticks = iter(range(10**6))
    monkeypatch.setattr(nlp_solve, "SolveMonitor", functools.partial(
        SolveMonitor, clock=lambda: 0.0, cpu_clock=lambda: float(next(cpu_ticks))))
    with pytest.raises(SolverError, match=r"CPU-time limit of 4 s \(nlp.max_cpu_time_s\): Newton \(square NLP\) "
                                          r"ended with status Maximum_CpuTime_Exceeded"):
        _solve(settings)


def test_a_worker_busy_in_one_iteration_is_ended_at_the_cpu_limit(monkeypatch, tmp_path):
    """A worker that burns CPU inside one call (a factorisation that does not finish) is ended a grace
    after the CPU limit, read from /proc, long before the wall-time guard; the diagnosis says which."""
    from ffopt.nlp.backends import casadi_ipopt, common, isolated

    if isolated.worker_cpu_s(os.getpid()) is None:
        pytest.skip("no /proc: the CPU time of a worker is not known here")
    woke_file = tmp_path / "worker.woke"

    def busy(problem, warm, tol, monitor, w_start):
        monitor.begin("IPOPT (busy)")
        monitor.iteration(0, 1.0, 1e3)
        end = time.perf_counter() + 60
        while time.perf_counter() < end:  # stands for a native call that never returns to Python
            pass
        woke_file.write_text("the worker was not ended")

    monkeypatch.setattr(casadi_ipopt, "_solve_ipopt", busy)
    monkeypatch.setattr(common, "ipopt_grace_s", lambda monitor: 0.5)
    with pytest.raises(SolverError, match=r"CPU-time limit of 1 s.*Maximum_CpuTime_Exceeded.*still inside one "
                                          r"iteration 0.5 s after the CPU-time limit"):
        _solve(_hard_e1(backend="casadi", step=2.5e-3, max_cpu_time_s=1.0, max_wall_time_s=120.0))
    assert not woke_file.exists()


# ------------------------------------------------------------------------------ progress
def test_a_worker_inside_one_long_step_is_not_silent():
    """While a worker reports no iterate (IPOPT inside one long factorisation: 39 s before iteration 0 on a
    drawn 6-axis arm), the parent says so at the progress callback's live interval, as a live message."""
    from ffopt.nlp.backends import isolated
    from ffopt.nlp.monitor import NlpWaiting

    def slow_first_step(monitor):
        time.sleep(1.0)  # stands for a native call that reports nothing (5 live intervals of 0.2 s)
        return "done"

    lines = []

    def progress(msg):
        lines.append(msg)

    progress.live_interval_s = 0.2
    monitor = SolveMonitor(max_iter=10, max_wall_time_s=60.0, progress=progress)
    assert isolated.run_isolated(slow_first_step, monitor, "IPOPT (test)") == "done"
    waiting = [m for m in lines if isinstance(m, NlpWaiting)]
    assert waiting and all(m.live for m in waiting), lines
    assert waiting[0].startswith("NLP: IPOPT (test) on its first iteration for ")


@pytest.mark.parametrize("backend", ["casadi", "cyipopt", "ipopt-c", pytest.param("pyomo", marks=pytest.mark.slow)])
def test_progress_callback_receives_every_iteration(backend):
    seen = Recorder()
    traj = _solve(_hard_e1(backend=backend, torque_max=(0.8 * _e1_peak(),)), progress=seen)
    live = [m for m in seen if isinstance(m, NlpProgress)]
    assert traj.stats["success"] and [m.iteration for m in live] == list(range(len(live)))
    # iterations 0..n; CasADi calls once more when IPOPT enters its restoration phase (here once)
    assert len(live) == traj.stats["iterations"] + 1 + (backend not in ("cyipopt", "ipopt-c"))
    assert live[-1].infeasibility < 1e-9 < live[0].infeasibility
    assert np.all(np.diff([m.elapsed_s for m in live]) >= 0)  # readings in order; no bound on the time taken
    assert "IPOPT" in live[0].solver and live[0].startswith("NLP iteration 0/1000: objective")


def test_progress_is_rate_limited_for_plain_callbacks():
    """Without a live_interval_s attribute, a callback gets a live message at most every 2 s, and
    a closing plain line after live ones."""
    now = [0.0]
    seen = []
    monitor = SolveMonitor(1000, 60.0, seen.append, clock=lambda: now[0])
    monitor.begin("IPOPT via test")
    for k in range(10):  # an iteration every 0.5 s of the injected clock (now), not of wall time
        now[0] = 0.5 * k
        assert monitor.iteration(k, 1.0, 1e-3)
    live = [m for m in seen if isinstance(m, NlpProgress)]
    assert [m.iteration for m in live] == [0, 4, 8] and np.all(np.diff([m.elapsed_s for m in live]) >= 2.0)
    monitor.close("stopped")
    assert seen[-1] == "NLP IPOPT via test: stopped after 9 iterations, 4.5 s" and not isinstance(seen[-1], NlpProgress)


def test_console_updates_one_line_on_a_terminal_and_writes_lines_to_a_log():
    import io

    from ffopt.io.console import ConsoleProgress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    lines, tty = [], Tty()
    console = ConsoleProgress(lines.append, tty)
    assert console.live_interval_s < 1.0
    console(NlpProgress("IPOPT", 1, 2.0, 1e-3, 0.5, 100, 120))
    console(NlpProgress("IPOPT", 2, 1.0, 1e-4, 0.8, 100, 120))
    console("NLP solved")
    assert tty.getvalue().count("\r\x1b[K") == 2 and tty.getvalue().endswith("\n")
    assert "NLP iteration 2/100: objective 1," in tty.getvalue() and lines == ["NLP solved"]
    log_lines = []
    log = ConsoleProgress(log_lines.append, io.StringIO())
    # a log gets fewer lines than a terminal's updates, but one at least every 2 s (no stage silent for longer)
    assert console.live_interval_s < log.live_interval_s < 2.0
    log(NlpProgress("IPOPT", 1, 2.0, 1e-3, 0.5, 100, 120))
    assert log_lines == ["NLP iteration 1/100: objective 2, infeasibility 1.0e-03, 0.5 s of 120 s (IPOPT)"]


# ------------------------------------------------------------------------------ Ctrl-C
@pytest.mark.parametrize("backend", ["casadi", "cyipopt", "ipopt-c", "newton",
                                     pytest.param("pyomo", marks=pytest.mark.slow)])
def test_keyboard_interrupt_in_the_solve_propagates(backend):
    """A KeyboardInterrupt raised during the solve (here by the progress callback at iteration 2)
    leaves as KeyboardInterrupt: not a 'user requested stop' status, not a SolverError."""
    class Interrupt(Recorder):
        def __call__(self, msg):
            if isinstance(msg, NlpProgress) and msg.iteration == 2:
                raise KeyboardInterrupt
            self.append(msg)

    settings = (NlpSettings(strategy="causal", step=1e-2, warm_start="none") if backend == "newton"
                else _hard_e1(backend=backend))
    seen = Interrupt()
    with pytest.raises(KeyboardInterrupt):
        _solve(settings, progress=seen)
    assert [m.iteration for m in seen if isinstance(m, NlpProgress)] == [0, 1]


def _cli_with_sigint_handler(*argv) -> list[str]:
    """The CLI in a subprocess with Python's SIGINT handler (a background shell would ignore SIGINT)."""
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from ffopt.cli.main import main; sys.exit(main(sys.argv[1:]))")
    return [sys.executable, "-c", code, *argv]


@pytest.mark.parametrize("backend", ["casadi", "ipopt-c", pytest.param("cyipopt", marks=pytest.mark.slow)])
def test_ctrl_c_during_ipopt_exits_130_and_writes_nothing(tmp_path, backend):
    """A real SIGINT while IPOPT iterates: CasADi's IPOPT interface catches it (status
    NonIpopt_Exception_Thrown); ffopt must still exit 130 with no output folder."""
    problem = tmp_path / "e1_hard.toml"  # the hard E1 NLP at h = 2.5 ms: ~5 s of IPOPT iterations
    paper_move = (PROBLEMS / "e1_complete.toml").read_text().replace("duration = 0.3 ", "duration = 0.1 ")
    assert "duration = 0.1 " in paper_move  # the paper's move (helpers.PAPER_MOVES)
    problem.write_text(paper_move + "\n[nlp]\nstep = 2.5e-3\n"
                       f'tracking = "penalty"\ntorque_max = [{0.2 * _e1_peak()}]\n')
    out = tmp_path / "out"
    proc = subprocess.Popen(_cli_with_sigint_handler("plan", str(problem), "--out", str(out), "--no-plots",
                                                     "--method", "nlp", "--backend", backend, "--max-time", "60"),
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in proc.stderr:  # wait for the first iteration line, then press Ctrl-C
        if "NLP iteration 0/" in line:
            break
    else:
        pytest.fail(f"no iteration line; exit code {proc.wait()}")
    time.sleep(0.5)  # inside IPOPT's iterations (in the iteration callback, Python would raise it itself)
    assert proc.poll() is None  # still solving: the exit below is the signal's doing
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=30) == 130, rest  # timeout: a hang guard, not a claim about speed
    assert "interrupted" in rest and "error" not in rest
    # the solve ended at the signal: no further progress line, no closing "solved/stopped after n
    # iterations" line (a solve that ran on to its end would print one)
    assert not [line for line in rest.splitlines() if "NLP" in line], rest
    assert not out.exists()


# ------------------------------------------------------------------------------ diagnosis before solving
def _gravity_holding_torques(chain, qa) -> np.ndarray:
    """|torque| that gravity exerts about each actuated joint at rest (statics by hand: sum over
    the bodies outboard of joint j of (c_i - p_j) x m_i g, along the joint axis)."""
    R, p, frames = np.eye(3), np.zeros(3), []
    for joint, q in zip(chain.joints, qa):
        p = p + R @ joint.origin
        axis = R @ joint.axis
        K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        R = (np.eye(3) + np.sin(q) * K + (1 - np.cos(q)) * K @ K) @ R  # Rodrigues, about the world axis
        frames.append((p.copy(), axis, p + R @ joint.body.com, joint.body.mass))
    torques = []
    for j in chain.actuated:
        p_j, axis, _, _ = frames[j]
        torques.append(sum(np.cross(c - p_j, m * chain.gravity) @ axis for _, _, c, m in frames[j:]))
    return np.abs(torques)


@pytest.mark.parametrize("tracking", ["exact", "band", "penalty"])
def test_bound_below_the_holding_torque_is_infeasible_before_any_iteration(tracking, monkeypatch):
    p, m, r, g, warm = _problem("e12_torque_bounded.toml")
    from ffopt.models.equilibrium import static_equilibrium

    q0 = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    hold = _gravity_holding_torques(p.chain, q0[: m.layout.n_link])
    # E12 at the start: ~6 kN m on the first motor (regression value of the statics by hand above, measured
    # on 2026-11-27; the message below must name the same number, computed independently by ffopt)
    assert hold[0] == pytest.approx(5963, rel=1e-3)
    bound = (0.9 * hold[0], 1e5)
    seen = Recorder()

    def no_solver(*args, **kwargs):
        raise AssertionError("the NLP solver was started before the bounds were found infeasible")

    monkeypatch.setattr(nlp_solve, "solve_backend", no_solver)
    settings = dataclasses.replace(p.nlp, strategy="causal", step=1e-2, tracking=tracking, torque_max=bound)
    with pytest.raises(SolverError) as err:
        solve_inverse_nlp(m, r, settings, g, warm, seen)
    msg = str(err.value)
    assert f"nlp.torque_max[1] = {bound[0]:.0f} N m (motor of joint q1) is below the {hold[0]:.0f} N m needed to " \
           "hold the arm at rest at the start of the path (t = 0 s" in msg
    assert "infeasible for every tracking mode" in msg and "torque_max[2]" not in msg
    assert not any(isinstance(x, NlpProgress) for x in seen)  # no solver iteration ran (nor started: no_solver)


def test_bound_below_the_end_holding_torque_is_infeasible():
    """E12's path reversed: the first motor holds ~2.7 kN m at the start and ~6.0 kN m at the end;
    a bound between the two is caught at the end of the path."""
    import tomllib

    from ffopt.io.problem import problem_from_dict

    _, _, _, _, warm = _problem("e12_torque_bounded.toml")
    raw = tomllib.loads((PROBLEMS / "e12_torque_bounded.toml").read_text())
    ref = raw["reference"]
    ref["start_mm"], ref["end_mm"] = ref["end_mm"], ref["start_mm"]
    ref["joint_guess"] = warm.q[-1, :3].tolist()  # the forward path's end configuration
    raw["nlp"].update(step=1e-2, torque_max=[4000.0, 1e5], strategy="causal")
    p = problem_from_dict(raw)
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    warm_reversed, _ = warm_start_trajectory(m, r, g, 1e-3)
    from ffopt.models.equilibrium import static_equilibrium

    y_end = np.asarray(r.evaluate(np.array([r.t_end]))).ravel()
    q_end = static_equilibrium(m, y_end, warm_reversed.q[-1, :3])
    hold_end = _gravity_holding_torques(p.chain, q_end[:3])[0]
    q_start = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    hold_start = _gravity_holding_torques(p.chain, q_start[:3])[0]
    # the premise, by the statics by hand: the 4000 N m bound lies between the holding torques at the start and
    # at the end (measured 5963 N m at the end on 2026-11-27, the forward path's start)
    assert hold_start < 4000.0 < hold_end
    with pytest.raises(SolverError, match=rf"torque_max\[1\] = 4000 N m .* below the {hold_end:.0f} N m needed to "
                                          rf"hold the arm at rest at the end of the path \(t = 0.82 s") as err:  # t_end of the file
        solve_inverse_nlp(m, r, p.nlp, g, warm_reversed)
    assert "start of the path" not in str(err.value)


def test_bounds_below_the_exact_tracking_need_per_tracking_mode():
    """Below the exact-tracking peak (above the holding torques): infeasible for exact causal
    tracking, a warning with the numbers for band and penalty (which then solve)."""
    peak = _e1_peak()
    bound = (0.8 * peak,)
    with pytest.raises(SolverError, match=r"torque_max\[1\] = (\d+) N m .* is 80% of the (\d+) N m that exact "
                                          r"tracking needs at t = 0\.0\d+ s") as err:
        _solve(_hard_e1(tracking="exact", torque_max=bound))
    printed = re.search(r"torque_max\[1\] = (\d+) N m .* is 80% of the (\d+) N m", str(err.value)).groups()
    # the bound as given and the need the check found, against the independent BDF (form I3) peak: 0.5 N m is
    # the rounding of the printed integers plus 1e-5 of the peak
    assert float(printed[0]) == pytest.approx(0.8 * peak, abs=0.5 + 1e-5 * peak)
    assert float(printed[1]) == pytest.approx(peak, abs=0.5 + 1e-5 * peak)
    seen = Recorder()
    traj = _solve(_hard_e1(tracking="penalty", torque_max=bound, backend="cyipopt"), progress=seen)
    assert traj.stats["success"]
    warnings = [m for m in seen if m.startswith("warning:")]
    assert len(warnings) == 1 and f"is 80% of the {printed[1]} N m that exact tracking needs" in warnings[0]
    assert "penalty trades tool error for torque" in warnings[0]
    # torque rate: the exact-tracking need from the BDF solution
    _, _, _, _, warm = _problem("e1_complete.toml")
    need = np.abs(np.diff(warm.u[:, 0]) / np.diff(warm.t)).max()
    with pytest.raises(SolverError, match=rf"torque_rate_max\[1\] = .* is 50% of the {need:.0f} N m/s"):
        _solve(_hard_e1(tracking="exact", torque_max=None, torque_rate_max=(0.5 * need,)))


def test_bound_vectors_need_one_value_per_motor():
    """A torque_max list with one value for two motors is an error, never broadcast."""
    import tomllib

    from ffopt.io.problem import problem_from_dict

    raw = tomllib.loads((PROBLEMS / "e12_torque_bounded.toml").read_text())
    raw["nlp"]["torque_max"] = [1.2e5]
    with pytest.raises(ProblemError, match=r"x.toml: nlp.torque_max: expected 2 values \(one per motor: q1, q2\), "
                                           r"got 1"):
        problem_from_dict(raw, source="x.toml")
    raw["nlp"]["torque_max"] = [1.2e5, -1.0]
    with pytest.raises(ProblemError, match=r"nlp.torque_max: every value must be > 0"):
        problem_from_dict(raw, source="x.toml")
    p, m, r, g, warm = _problem("e12_torque_bounded.toml")
    with pytest.raises(ProblemError, match=r"nlp.torque_rate_max: expected 2 values \(one per motor: q1, q2\)"):
        solve_inverse_nlp(m, r, dataclasses.replace(p.nlp, torque_rate_max=(1e6,)), g, warm)
