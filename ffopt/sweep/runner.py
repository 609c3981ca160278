"""Running a sweep on Dask distributed: a LocalCluster of worker processes, or an existing scheduler.

Each run is one Dask task (``run_task``): the worker builds the run's problem from its tables, plans
it with ``ffopt.plan``, and returns the Parquet row and the plan files (as bytes, so the workers need
no shared file system). The client commits each finished run at once (``store``: the run folder,
then its row file, each by rename), so a worker that dies, a Ctrl-C or a crash of the client never
loses a finished run. A run that raises is recorded as failed with its error; a run whose worker
process dies is retried once on another worker (Dask's ``allowed-failures``) and then recorded as
failed; the sweep goes on either way.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ffopt._version import __version__
from ffopt import interrupt
from ffopt.errors import FfoptError, ProblemError
from ffopt.progress import heartbeat
from ffopt.sweep import store
from ffopt.sweep.spec import MAX_RUNS, Run, Sweep, load_sweep

STRING_STATS = ("status", "strategy", "bdf_status", "backend", "tracking", "formulation")
ALLOWED_FAILURES = 1  # a run whose worker dies is retried once elsewhere, then recorded as failed
CONNECT_TIMEOUT = "20s"  # for --scheduler


@dataclass
class SweepReport:
    """What one call of ``run_sweep`` did."""

    folder: Path
    runs: int  # runs in the sweep
    computed: int = 0  # runs computed now
    ok: int = 0  # runs computed now that planned (verified, or missed their tolerance, or not verified)
    missed: int = 0  # ... of which missed their verification tolerance
    failed: int = 0  # runs computed now that failed (error or dead worker)
    skipped_ok: int = 0  # finished before, not recomputed
    skipped_failed: int = 0  # failed before, not retried (retry_failed=False)
    workers: int = 0
    wall_s: float = 0.0  # from the first submission to the last commit
    startup_s: float = 0.0  # starting the cluster and warming the workers up (imports)

    @property
    def table(self) -> Path:
        return self.folder / store.TABLE

    def text(self) -> str:
        lines = [f"{self.runs} runs: {self.computed} computed now ({self.ok} planned, of which {self.missed} "
                 f"missed their tolerance; {self.failed} failed), "
                 f"{self.skipped_ok} finished before, {self.skipped_failed} failed before (not retried)"]
        if self.computed:
            lines.append(f"{self.workers} workers, {self.wall_s:.1f} s ({self.computed / self.wall_s:.3g} runs/s; "
                         f"cluster start {self.startup_s:.1f} s)")
        lines.append(f"table: {self.table}")
        return "\n".join(lines)


# --- the task, on a worker -------------------------------------------------------------------


def run_task(task: dict) -> dict:
    """Plan one run (on a Dask worker). Never raises: a failure is a row with status 'failed'."""
    from ffopt.io.problem import problem_from_dict
    from ffopt.plan import plan

    tic = time.perf_counter()
    row = {**task["row"], "status": "failed", "error_type": None, "error": None}
    files = {}
    try:
        problem = problem_from_dict(task["problem"], source=task["source"])
        t0 = time.perf_counter()
        result = plan(problem, verify=task["plan"]["verify"], compile=task["plan"]["compile"])
        row["t_plan_s"] = time.perf_counter() - t0
        row.update(result_columns(result))
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ffopt-run-") as tmp:
            names = result.write_files(Path(tmp), plots=task["plan"]["plots"])
            files = {name: (Path(tmp) / name).read_bytes() for name in names}
        row["t_files_s"] = time.perf_counter() - t0
        row["status"] = run_status(result)
    except Exception as err:  # recorded, the sweep goes on (KeyboardInterrupt etc. are not caught)
        row.update(error_type=type(err).__name__, error=_one_line(err))
        files = {}
    row.update(t_task_s=time.perf_counter() - tic, worker_pid=os.getpid(), worker_host=socket.gethostname(),
               ffopt_version=__version__)
    return {"row": row, "files": files}


def run_status(result) -> str:
    """A planned run's status: the verification's verdict ("verified" or "missed_tolerance"), "planned"
    without verification; a run that raised is "failed"."""
    return "planned" if result.verification is None else result.verification.status


def _one_line(err: Exception) -> str:
    text = str(err) if isinstance(err, FfoptError) else f"{type(err).__name__}: {err}"
    return " ".join(text.split())


def result_columns(result) -> dict:
    """A plan's numbers for the sweep table: stage times, peak torques, solver statistics, verification errors."""
    traj = result.trajectory
    cols = {"method": traj.method, "n_points": len(traj.t)}
    cols.update({f"t_{stage}_s": float(t) for stage, t in result.timings.items()})
    peaks = abs(traj.u).max(axis=0)
    cols.update({f"peak_u_{j}_Nm": float(x) for j, x in zip(traj.actuated_joints, peaks)})
    for key, value in traj.stats.items():
        if isinstance(value, bool):
            cols[f"solver_{key}"] = value
        elif isinstance(value, (int, float)) and math.isfinite(value):
            cols[f"solver_{key}"] = float(value)
        elif isinstance(value, str) and key in STRING_STATS:
            cols[f"solver_{key}"] = value
        elif isinstance(value, list) and value and all(isinstance(x, (int, float)) for x in value):
            cols[f"solver_{key}_max"] = float(max(value))
    if result.verification is not None:
        for name, case in result.verification.cases.items():
            cols[f"error_{name}_max_mm"] = case.max_mm
            cols[f"error_{name}_rms_mm"] = case.rms_mm
            cols[f"error_{name}_final_mm"] = case.final_mm
            if case.max_mrad is not None:
                cols[f"error_{name}_max_mrad"] = case.max_mrad
            if case.settle is not None:  # after the table, the controller holding the final pose
                cols[f"error_{name}_residual_mm"] = case.settle.residual_mm
                cols[f"error_{name}_settling_time_s"] = (math.nan if case.settle.settling_time_s is None
                                                         else case.settle.settling_time_s)
                cols[f"error_{name}_settled_cycle_s"] = (math.nan if case.settle.settled_cycle_s is None
                                                         else case.settle.settled_cycle_s)
        if result.monte_carlo is not None:  # [uncertainty]: the plan on the plants of the ranges
            stats = result.monte_carlo.stats["residual_mm"]
            cols.update(monte_carlo_residual_median_mm=stats["median"], monte_carlo_residual_p95_mm=stats["p95"],
                        monte_carlo_residual_worst_mm=stats["worst"],
                        monte_carlo_max_worst_mm=result.monte_carlo.stats["max_mm"]["worst"])
        verdict = result.verification.verdict
        if verdict is not None:
            cols.update(tolerance_mm=verdict.tolerance_mm, tolerance_mrad=verdict.tolerance_mrad)
        if result.verification.end_state is not None:
            cols["end_link_speed_rad_s"] = result.verification.end_state["link_speed_max_rad_s"]
            cols["end_motor_speed_rad_s"] = result.verification.end_state["motor_speed_max_rad_s"]
    if result.method_choice.get("reason"):
        cols["method_reason"] = result.method_choice["reason"]
    return cols


def _warm_up() -> str:
    """Import the planning stack once per worker (so the first run's time is its own) and say the version."""
    import scipy.io  # noqa: F401  (trajectory.mat)
    import tomlkit  # noqa: F401  (problem.toml)

    import ffopt.plan  # noqa: F401
    import ffopt.sim.verify  # noqa: F401

    return __version__


def _forkserver_ignoring_sigint() -> None:
    """Start multiprocessing's fork server (from which the LocalCluster forks its worker processes, and
    restarts them) with SIGINT ignored: the workers inherit that, so a Ctrl-C in the terminal, sent to
    the whole process group, reaches only the client, which stops the cluster. (Blocking the signal
    is not enough: a spawned process starts with an empty signal mask; an ignored signal stays ignored.)"""
    import signal
    import threading
    from multiprocessing import forkserver

    from distributed.utils import get_mp_context

    get_mp_context()  # Dask's modules to preload in the fork server, set before it starts
    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


# --- the client -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Workers:
    """Where the runs go: ``count`` local worker processes (None: one per core, at most one per run) or the
    workers of the Dask ``scheduler`` at that address; each calls ``task`` with a run."""

    count: int | None
    scheduler: str | None
    task: object


def run_sweep(sweep: Sweep | str | Path, out: str | Path, workers: int | None = None, scheduler: str | None = None,
              retry_failed: bool = False, force: bool = False, progress=None, task=run_task) -> SweepReport:
    """Run the sweep's missing runs (and, with ``retry_failed``, its failed ones) into folder ``out``.

    workers: LocalCluster worker processes (default: the CPU count, at most the number of runs to do);
    scheduler: address of an existing Dask scheduler instead (``tcp://host:8786``; its workers need
    ffopt installed, the same version); progress: called with one line of text; task: the function
    each worker calls with a run (default ``run_task``). Returns a SweepReport; the table is
    ``out/results.parquet`` (``read_results``)."""
    say = progress or (lambda line: None)
    sweep = sweep if isinstance(sweep, Sweep) else load_sweep(sweep, max_runs=None if force else MAX_RUNS,
                                                              progress=say)
    out = Path(out).absolute()
    store.open_sweep_folder(out, sweep.text, force)
    ids = [r.run_id for r in sweep.runs]
    before = store.statuses(out, ids)
    failed_before = {run_id for run_id, status in before.items() if status == "failed"}
    todo = [r for r in sweep.runs if r.run_id not in before or (retry_failed and r.run_id in failed_before)]
    report = SweepReport(out, len(sweep.runs), skipped_ok=len(before) - len(failed_before),
                         skipped_failed=0 if retry_failed else len(failed_before))
    table = _TableRefresh(lambda: store.write_table(out, sweep.text, ids))
    try:
        if todo:
            _run(sweep, todo, out, _Workers(workers, scheduler, task), report, say, table)
    finally:  # also on Ctrl-C, SIGTERM or SIGHUP: the table of what finished
        table.write()
    return report


class _TableRefresh:
    """results.parquet assembled again while the sweep runs, so that it holds the finished runs even after a
    SIGKILL or a crash of the client: at most every ``interval_s``, and never more than a tenth of the time
    (the assembly reads every row file)."""

    def __init__(self, write, interval_s: float = 5.0):
        self._write, self.interval_s = write, interval_s
        self.last, self.cost = time.perf_counter(), 0.0

    def write(self) -> None:
        tic = time.perf_counter()
        self._write()
        self.last, self.cost = time.perf_counter(), time.perf_counter() - tic

    def maybe(self) -> None:
        if time.perf_counter() - self.last >= max(self.interval_s, 10 * self.cost):
            self.write()


# A run's time before any has run: the process's fixed cost plus the plan's rows x coordinates at the rate of a
# BDF plan with its verification (two-link arm, 300 s at 1 ms: 18 s for 1.2e6 row-coordinates); the NLP ~10x.
RUN_OVERHEAD_S = 2.0  # E1 complete with its rest-to-rest search: 2.3 s a run on a warm worker
S_PER_ROW_COORDINATE = 1.5e-5


def estimated_run_s(problem) -> float:
    """A rough time of one run of ``problem`` (the ETA a sweep states before its first run ends)."""
    from ffopt.plan import BYTES_PER_ROW_AND_COORDINATE, plan_size

    row_coordinates = plan_size(problem)[1] / BYTES_PER_ROW_AND_COORDINATE
    slower = 10.0 if problem.solver.method == "nlp" else 1.0
    return RUN_OVERHEAD_S + slower * S_PER_ROW_COORDINATE * row_coordinates


def _run(sweep, todo, out, workers: _Workers, report, say, table) -> None:
    from distributed import as_completed

    tic = time.perf_counter()
    scheduler = workers.scheduler
    n = workers.count or min(os.cpu_count() or 1, len(todo))
    say(f"{len(todo)} runs to do ({report.skipped_ok} finished before, {report.skipped_failed} failed before"
        f"{' and not retried: --retry-failed reruns them' if report.skipped_failed else ''}), roughly "
        f"{_duration(estimated_run_s(todo[0].problem) * len(todo) / n)} on {n} worker{'s' if n > 1 else ''} (from the "
        "grid's size; the measured rate follows); "
        + (f"connecting to {scheduler}" if scheduler else f"starting a local Dask cluster of {n} worker processes"))
    with _client(n, scheduler, say) as client:
        report.workers = len(client.scheduler_info(n_workers=-1)["workers"])
        report.startup_s = time.perf_counter() - tic
        progress = _Progress(len(todo), say)
        futures = {client.submit(workers.task, _task(sweep, run),
                                 key=f"ffopt-run-{run.run_id}-{uuid.uuid4().hex[:8]}", pure=False): run for run in todo}
        t0 = time.perf_counter()
        with heartbeat(say, lambda elapsed: progress.line()):  # runs longer than the progress interval
            for future in as_completed(futures):
                run = futures.pop(future)
                outcome = _outcome(future, run)
                future.release()
                _commit(out, outcome, report)
                progress.update(outcome["row"]["status"] != "failed", outcome["row"]["status"] == "missed_tolerance")
                table.maybe()
        report.wall_s = time.perf_counter() - t0


class _QuietOnceStopped(logging.Filter):
    """Drops Dask's log records once a signal stopped the command (Ctrl-C, SIGTERM, SIGHUP): its scheduler then
    logs the comms of the workers the signal ended as errors with a traceback (seen 1 in 5 times on SIGTERM to
    the process group), which the user who stopped the sweep needs no account of."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not interrupt.received()


def _handlers_of(name: str) -> list[logging.Handler]:
    """Every handler a record of logger ``name`` reaches: its own and, while they propagate, its parents'
    (Dask adds its own stderr handler to ``distributed`` only where the root logger has none)."""
    found, logger = [], logging.getLogger(name)
    while logger is not None:
        found += logger.handlers
        logger = logger.parent if logger.propagate else None
    return found


@contextmanager
def _quiet_once_stopped():
    """``_QuietOnceStopped`` on the handlers Dask's ``distributed`` records reach while the block runs."""
    import distributed  # noqa: F401  (its import sets up the logger's handler)

    handlers, quiet = _handlers_of("distributed"), _QuietOnceStopped()
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


@contextmanager
def _client(n_workers: int, scheduler: str | None, say=None):
    with _quiet_once_stopped():
        with _dask_client(n_workers, scheduler, say) as client:
            yield client


@contextmanager
def _dask_client(n_workers: int, scheduler: str | None, say=None):
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as err:
            raise ProblemError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler there ({err})") from None
        with _closing(client, None):
            _check_workers(client, scheduler)
            yield client
        return
    config = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
              "distributed.worker.multiprocessing-method": "forkserver"}  # for the restarts too: kept while it runs
    with dask.config.set(config):
        _forkserver_ignoring_sigint()
        with heartbeat(say, lambda elapsed: f"starting the workers: {elapsed:.0f} s"):
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
        with _closing(client, cluster):
            with heartbeat(say, lambda elapsed: f"starting the workers: {elapsed:.0f} s (imports)"):
                _check_workers(client, None)
            yield client


@contextmanager
def _closing(client, cluster):
    try:
        yield
    finally:
        with interrupt.deferred():
            client.close()
            if cluster is not None:
                cluster.close()


def _worker_died(err: Exception) -> bool:
    """A worker process that disappeared (Dask's KilledWorker, a closed comm), not one that raised."""
    names = {type(e).__name__ for e in (err, err.__cause__, err.__context__) if e is not None}
    return bool(names & {"KilledWorker", "CommClosedError", "StreamClosedError"})


def _check_workers(client, scheduler: str | None) -> None:
    """Warm every worker up (imports) and check it runs this ffopt version (a run's id includes it)."""
    try:
        versions = client.run(_warm_up)
    except Exception as err:  # e.g. ffopt not installed on a remote worker, or a worker that died
        where = f"--scheduler {scheduler}" if scheduler else "the local Dask cluster"
        if _worker_died(err):
            raise ProblemError(f"{where}: a worker died during the start-up check ({type(err).__name__}: {err}); it was "
                               "killed or ran out of memory, not refused ffopt: check the workers' memory and logs, "
                               "and run the sweep again (finished runs are kept)") from None
        raise ProblemError(f"{where}: the workers cannot run ffopt ({type(err).__name__}: {err}); "
                           "install ffopt in the workers' environment") from None
    wrong = {w: v for w, v in versions.items() if v != __version__}
    if wrong:
        raise ProblemError(f"--scheduler {scheduler}: workers run ffopt {sorted(set(wrong.values()))}, this is "
                           f"{__version__}; a run's id includes the version: install the same on the workers")


def _task(sweep: Sweep, run: Run) -> dict:
    shown = ", ".join(f"{k} = {v!r}" for k, v in run.params.items())
    row = {"run": run.index + 1, "run_id": run.run_id, "block": run.block, **run.params}
    return {"problem": run.problem.to_dict(), "plan": sweep.plan, "row": row,
            "source": f"{sweep.source} run {run.index + 1} ({shown})"}


def _outcome(future, run: Run) -> dict:
    if future.status == "finished":
        return future.result()
    err = future.exception()
    if type(err).__name__ == "KilledWorker":
        text = (f"the worker process died while running it, also when retried on another worker ({err}); a crash "
                "(native code), out of memory, or killed")
    else:
        text = _one_line(err)
    row = {"run": run.index + 1, "run_id": run.run_id, "block": run.block, **run.params, "status": "failed",
           "error_type": type(err).__name__, "error": text}
    return {"row": row, "files": {}}


def _commit(out: Path, outcome: dict, report: SweepReport) -> None:
    """The run's folder, then its row: a row exists only for a complete run (both by rename)."""
    row, files = outcome["row"], outcome["files"]
    tic = time.perf_counter()
    with interrupt.deferred():
        if files:
            store.write_run_folder(out, row["run_id"], files)
            row["folder"] = f"{store.RUNS}/{row['run_id']}"
        row["t_commit_s"] = time.perf_counter() - tic
        row["finished_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        store.write_row(out, row)
    report.computed += 1
    report.ok += row["status"] != "failed"
    report.missed += row["status"] == "missed_tolerance"
    report.failed += row["status"] == "failed"


class _Progress:
    """Runs done / failed / remaining, rate and ETA: a line at most every ``interval`` seconds, and at the end."""

    def __init__(self, total: int, say, interval: float = 2.0):
        self.total, self.say, self.interval = total, say, interval
        self.done = self.failed = self.missed = 0
        self.t0 = self.last = time.perf_counter()

    def update(self, ok: bool, missed: bool = False) -> None:
        self.done += 1
        self.failed += not ok
        self.missed += missed
        now = time.perf_counter()
        if now - self.last >= self.interval or self.done == self.total:
            self.say(self.line())
            self.last = now

    def line(self) -> str:
        elapsed = time.perf_counter() - self.t0
        remaining = self.total - self.done
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = _duration(remaining / rate) if rate > 0 and remaining else "-"
        return (f"runs: {self.done}/{self.total} done ({self.failed} failed, {self.missed} missed their tolerance), "
                f"{remaining} remaining, "
                f"{rate:.3g} runs/s, ETA {eta}")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
