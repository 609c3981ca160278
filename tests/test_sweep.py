"""ffopt sweep: sweep files (grid, list, random; linked fields), run ids, the per-run row store, and
real Dask LocalClusters: a killed worker and a Ctrl-C lose no finished run, a rerun computes only
what is missing, failing and crashing runs are recorded and the sweep goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow.parquet as pq
import pytest
from helpers import snapshot

import ffopt
from ffopt.errors import ProblemError
from ffopt.sweep import load_sweep, read_results, run_sweep, run_task, sweep_from_dict
from ffopt.sweep import store

ROOT = Path(__file__).resolve().parents[1]
E1 = ROOT / "problems" / "e1_complete.toml"
PLANNED = ("verified", "missed_tolerance")  # a run that planned and was verified: its verdict is its status
# E1 runs as cheap as still meaningful: CasADi's VM (no gcc per run), verification without the payload cases
CHEAP = f"""
problem = "{E1}"
[set]
"verification.payload_scales" = []
[plan]
compile = false
"""


def sweep_file(tmp_path: Path, body: str, head: str = CHEAP, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(head + body)
    return path


# --- sweep files ------------------------------------------------------------------------------


def test_grid_list_and_random_blocks_expand_into_validated_runs(tmp_path):
    path = sweep_file(tmp_path, """
[[runs]]
name = "grid"
[runs.parameters]
"reference.duration" = [0.1, 0.2]
stiffness = { fields = ["model.joints.q2.stiffness"], logspace = [5e4, 2e5, 3] }

[[runs]]
name = "list"
mode = "list"
set = { "solver.order" = 4 }
[runs.parameters]
"model.joints.q2.damping" = [500, 800.5]
"reference.rest_after" = { linspace = [0.2, 0.3, 2] }

[[runs]]
name = "random"
mode = "random"
samples = 5
seed = 7
[runs.parameters]
"model.joints.q2.mass" = { uniform = [80.0, 120.0] }
"solver.order" = { integers = [3, 6] }
""")
    sweep = load_sweep(path)
    blocks = [r.block for r in sweep.runs]
    assert blocks == ["grid"] * 6 + ["list"] * 2 + ["random"] * 5
    grid = sweep.runs[:6]
    assert [(r.params["reference.duration"], r.params["stiffness"]) for r in grid] == \
        [(d, k) for d in (0.1, 0.2) for k in (5e4, 1e5, 2e5)]  # row-major, logspace exact at the ends
    assert [r.problem.chain.joints[1].stiffness for r in grid[:3]] == pytest.approx([5e4, 1e5, 2e5])
    assert grid[4].problem.reference_spec.duration == 0.2 and grid[4].problem.solver.order == 6
    lst = sweep.runs[6:8]
    assert [r.problem.chain.joints[1].damping for r in lst] == [500.0, 800.5]  # ints and floats -> one type
    assert [r.problem.reference_spec.rest_after for r in lst] == [0.2, 0.3] and lst[0].problem.solver.order == 4
    rand = sweep.runs[8:]
    masses = [r.problem.chain.joints[1].body.mass for r in rand]
    assert all(80 <= m <= 120 for m in masses) and len(set(masses)) == 5
    assert all(r.problem.solver.order in (3, 4, 5, 6) for r in rand)
    again = load_sweep(path)  # the same seed draws the same runs, with the same ids
    assert [r.run_id for r in again.runs] == [r.run_id for r in sweep.runs]
    assert len({r.run_id for r in sweep.runs}) == 13 and sweep.parameters[:2] == ["reference.duration", "stiffness"]
    path.write_text(path.read_text().replace("seed = 7", "seed = 8"))
    assert [r.problem.chain.joints[1].body.mass for r in load_sweep(path).runs[8:]] != masses


def test_a_sweep_from_a_dict_with_a_problem_object_and_unquoted_dotted_keys():
    base = ffopt.load_problem(E1).with_values({"solver.order": 5})
    sweep = sweep_from_dict({"set": {"verification": {"enabled": False}},
                             "runs": [{"mode": "list", "parameters": {"reference": {"duration": [0.1, 0.2]}}}]},
                            source="notebook", base=base)
    assert [r.params for r in sweep.runs] == [{"reference.duration": 0.1}, {"reference.duration": 0.2}]
    assert all(r.problem.solver.order == 5 and not r.problem.verification.enabled for r in sweep.runs)
    assert "base problem:" in sweep.text and "e1_complete.toml" in sweep.text
    with pytest.raises(ProblemError, match=r"notebook: problem: missing required key"):
        sweep_from_dict({"runs": [{"parameters": {"reference.duration": [0.1]}}]}, source="notebook")


@pytest.mark.parametrize("path", sorted((ROOT / "problems" / "sweeps").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_sweeps_load(path):
    sweep = load_sweep(path)
    assert len(sweep.runs) == {"e12_stiffness_duration.toml": 75, "e12_bench.toml": 100, "e1_random.toml": 20}[path.name]


def test_run_ids_hash_the_resolved_problem_the_plan_settings_and_the_version(tmp_path, monkeypatch):
    body = """
[[runs]]
[runs.parameters]
"reference.duration" = [0.1, 0.2]
[[runs]]
name = "again"
[runs.parameters]
"reference.duration" = [0.2, 0.15]
"""
    sweep = load_sweep(sweep_file(tmp_path, body))
    assert len(sweep.runs) == 3 and sweep.duplicates == 1  # duration 0.2 twice: one run
    ids = [r.run_id for r in sweep.runs]
    verify_off = load_sweep(sweep_file(tmp_path, body, CHEAP.replace("compile = false", "compile = false\nverify = false"),
                                       "b.toml"))
    assert not set(ids) & {r.run_id for r in verify_off.runs}
    # the same problem written differently (a parameter vs. a fixed value) is the same run
    same = load_sweep(sweep_file(tmp_path, '[[runs]]\nset = { "reference.duration" = 0.1 }\n[runs.parameters]\n'
                                           '"model.joints.q2.damping" = [1000.0]\n', name="c.toml"))
    assert same.runs[0].run_id == ids[0]
    monkeypatch.setattr("ffopt.sweep.spec.__version__", "0.0.0-other")  # the version a run id hashes
    assert not set(ids) & {r.run_id for r in load_sweep(sweep_file(tmp_path, body, name="d.toml")).runs}


@pytest.mark.parametrize("body, message", [
    ('[[runs]]\nmod = "grid"\n[runs.parameters]\n"reference.duration" = [0.1]\n',
     r"runs\[1\]\.mod: unknown key \(did you mean 'mode'\?\)"),
    ('[[runs]]\nmode = "list"\n[runs.parameters]\n"reference.duration" = [0.1, 0.2]\n"solver.order" = [3]\n',
     r"runs\[1\]\.parameters: mode = \"list\" .* equal lengths"),
    ('[[runs]]\nmode = "random"\nsamples = 3\n[runs.parameters]\n"reference.duration" = {uniform = [0.1, 0.2]}\n',
     r"runs\[1\]\.seed: mode = \"random\" needs samples .* and seed"),
    ('[[runs]]\n[runs.parameters]\n"reference.duration" = {uniform = [0.1, 0.2]}\n',
     r"runs\[1\]\.parameters\.\"reference\.duration\"\.uniform: unknown key \(random draws need mode = \"random\"\)"),
    ('[[runs]]\n[runs.parameters]\n"reference.duration" = {linspace = [0.1, 0.2]}\n',
     r"linspace: expected \[first, last, count\]"),
    ('[[runs]]\n[runs.parameters]\nstatus = { fields = ["solver.order"], values = [4, 5] }\n',
     r"runs\[1\]\.parameters\.status: the name 'status' is a column of the results table"),
    ('[[runs]]\n[runs.parameters]\n"model.joints.q9.stiffness" = [1e5]\n',
     r"runs\[1\]: run 1 \(model\.joints\.q9\.stiffness = 100000\.0\): .*no entry named 'q9'"),
    ('[[runs]]\n[runs.parameters]\n"model.joints.q2.stiffness" = [1e5, -1.0]\n',
     r"run 2 .*model\.joints\[2\]\.stiffness: must be >= 0, got -1\.0 \(set by with_values: "
     r"'model\.joints\.q2\.stiffness' = -1\.0\)"),
])
def test_sweep_file_errors_name_the_file_the_field_and_the_run(tmp_path, body, message):
    path = sweep_file(tmp_path, body)
    with pytest.raises(ProblemError, match=message) as err:
        load_sweep(path)
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize("args, message", [
    (["missing.toml"], "missing.toml: no such sweep file"),
    (["{sweep}", "--workers", "0"], "--workers: must be >= 1, got 0"),
    (["{sweep}", "--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"], "not allowed with argument"),
    (["{bad}"], r"runs[1].parameters: no parameters"),
])
def test_sweep_command_line_errors_exit_2_and_write_nothing(tmp_path, capsys, args, message):
    from ffopt.cli.main import main

    good = sweep_file(tmp_path, '[[runs]]\n[runs.parameters]\n"reference.duration" = [0.1]\n')
    bad = sweep_file(tmp_path, "[[runs]]\n[runs.parameters]\n", name="bad.toml")
    args = [a.format(sweep=good, bad=bad) for a in args]
    assert main(["sweep", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_missing_base_problem_is_named(tmp_path):
    path = sweep_file(tmp_path, '[[runs]]\n[runs.parameters]\n"reference.duration" = [0.1]\n',
                      head='problem = "nowhere.toml"\n')
    with pytest.raises(ProblemError, match=r"sweep\.toml: problem: no such problem file 'nowhere\.toml'"):
        load_sweep(path)


# --- the row store ----------------------------------------------------------------------------


def test_rows_of_different_shapes_assemble_into_one_table_in_sweep_order(tmp_path):
    (tmp_path / store.ROWS).mkdir()
    store.write_row(tmp_path, {"run": 2, "run_id": "b" * 16, "block": "1", "x": 0.5, "status": "failed",
                               "error_type": "SolverError", "error": "no convergence at t = 0.1 s"})
    store.write_row(tmp_path, {"run": 1, "run_id": "a" * 16, "block": "1", "x": 1, "status": "ok", "error_type": None,
                               "error": None, "peak_u_q1_Nm": 12.5, "t_plan_s": 0.3})
    (tmp_path / store.ROWS / "notes.txt").write_text("mine")  # not a row file: ignored, kept
    table = store.read_rows(tmp_path).to_pandas()
    assert table["run"].tolist() == [1, 2] and table["status"].tolist() == ["ok", "failed"]
    assert table["x"].tolist() == [1.0, 0.5]  # int and float rows promote to float
    assert table.loc[0, "peak_u_q1_Nm"] == 12.5 and np.isnan(table.loc[1, "peak_u_q1_Nm"])
    assert list(table.columns[:6]) == ["run", "run_id", "block", "status", "error_type", "error"]
    assert store.read_rows(tmp_path, ["b" * 16]).num_rows == 1
    assert not list((tmp_path / store.ROWS).glob(".tmp-*")) and (tmp_path / store.ROWS / "notes.txt").exists()


def test_sweep_refuses_a_folder_of_the_users_and_a_plan_folder(tmp_path):
    path = sweep_file(tmp_path, '[[runs]]\n[runs.parameters]\n"reference.duration" = [0.1]\n')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.csv").write_text("1")
    with pytest.raises(ffopt.errors.OutputError, match="not an ffopt result folder"):
        run_sweep(path, mine)
    ffopt.plan(E1, verify=False, compile=False).save(tmp_path / "plan", plots=False)
    with pytest.raises(ffopt.errors.OutputError, match="is the folder of an 'ffopt plan', not of an 'ffopt sweep'"):
        run_sweep(path, tmp_path / "plan")
    assert sorted(p.name for p in mine.iterdir()) == ["data.csv"]


# --- real clusters ----------------------------------------------------------------------------


def crash_on_run_2(task: dict) -> dict:
    """A run whose worker process dies (as native code crashing would), every time it is tried."""
    if task["row"]["run"] == 2:
        os._exit(3)
    return run_task(task)


def test_failing_and_crashing_runs_are_recorded_and_retried_only_when_asked(tmp_path):
    path = sweep_file(tmp_path, """
[[runs]]
mode = "list"
[runs.parameters]
"reference.duration" = [0.1, 0.12, 0.01]    # 0.01 s: solver.step 5 ms > duration / 4, an error in the plan
""")
    out = tmp_path / "out"
    report = run_sweep(path, out, workers=2, task=crash_on_run_2)
    assert (report.computed, report.ok, report.failed) == (3, 1, 2)
    df = read_results(out).set_index("run")
    # a real plan was made: 0.23 mm measured on 2026-11-27 (bound ~2x)
    assert df.loc[1, "status"] in PLANNED and df.loc[1, "error_feedforward_pd_max_mm"] < 0.5
    assert df.loc[2, "status"] == "failed" and df.loc[2, "error_type"] == "KilledWorker"
    assert "worker process died" in df.loc[2, "error"]
    assert df.loc[3, "status"] == "failed" and df.loc[3, "error_type"] == "ProblemError"
    assert "solver.step" in df.loc[3, "error"] and pd.isna(df.loc[3, "folder"])
    assert sorted(p.name for p in (out / "runs").iterdir()) == [df.loc[1, "run_id"]]
    ok_row = snapshot(out / "rows")[f"{df.loc[1, 'run_id']}.parquet"]

    assert run_sweep(path, out, workers=1).computed == 0  # failed runs stay failed without retry_failed
    report = run_sweep(path, out, workers=1, retry_failed=True)
    assert (report.computed, report.ok, report.failed) == (2, 1, 1)  # run 2 now plans; run 3 fails again
    df = read_results(out).set_index("run")
    assert df["status"].tolist()[2] == "failed" and set(df["status"].tolist()[:2]) <= set(PLANNED)
    assert snapshot(out / "rows")[f"{df.loc[1, 'run_id']}.parquet"] == ok_row  # run 1 not recomputed


def test_an_existing_scheduler_runs_the_sweep(tmp_path, monkeypatch):
    """--scheduler ADDRESS: the runs go to that cluster's workers (here one in this process, as threads)."""
    from distributed import LocalCluster

    path = sweep_file(tmp_path, '[plan]\nverify = false\n[[runs]]\n[runs.parameters]\n"reference.duration" = [0.1, 0.12]\n',
                      head=CHEAP.replace("[plan]\ncompile = false\n", ""))
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        report = run_sweep(path, tmp_path / "out", scheduler=cluster.scheduler_address)
    assert (report.computed, report.ok, report.workers) == (2, 2, 1)
    df = read_results(tmp_path / "out")
    assert (df["worker_pid"] == os.getpid()).all() and (df["status"] == "planned").all()  # not verified
    assert not any(c.startswith("error_feedforward") for c in df.columns)  # [plan] verify = false
    units = df.attrs["units"]  # from results.parquet's metadata
    assert units["t_plan_s"] == "s" and units["peak_u_q1_Nm"] == "N m" and units["status"] == ""
    assert set(units) == set(df.columns)
    monkeypatch.setattr("ffopt.sweep.runner.CONNECT_TIMEOUT", "1s")
    with pytest.raises(ProblemError, match=r"--scheduler tcp://127\.0\.0\.1:9: cannot connect"):
        run_sweep(path, tmp_path / "out2", scheduler="tcp://127.0.0.1:9")  # (nothing to do in out)


def _worker_processes(pid: int) -> list[psutil.Process]:
    """The LocalCluster's worker processes: forked by multiprocessing's fork server, a child of the client."""
    try:
        servers = [p for p in psutil.Process(pid).children() if "forkserver" in " ".join(p.cmdline())]
        return [w for s in servers for w in s.children()]
    except psutil.NoSuchProcess:
        return []


def _wait(condition, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_worker_and_ctrl_c_lose_no_finished_run_and_the_rerun_computes_only_the_rest(tmp_path):
    n = 40  # 16 runs were all done (2.4 runs/s) before a loaded machine's test process sent its Ctrl-C
    path = sweep_file(tmp_path, f"""
[[runs]]
[runs.parameters]
"model.joints.q2.damping" = {{ linspace = [500.0, 1500.0, {n}] }}
""")
    out = tmp_path / "out"
    rows = lambda: len(store.row_files(out))  # noqa: E731
    cmd = [sys.executable, "-m", "ffopt.cli.main", "sweep", str(path), "--out", str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait(lambda: rows() >= 2, 120, "the first runs")
        workers = _worker_processes(proc.pid)
        assert len(workers) == 2
        workers[0].kill()  # SIGKILL one worker process mid-sweep
        killed_at = rows()
        _wait(lambda: rows() >= killed_at + 3, 120, "runs after the kill")  # the sweep goes on
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    _wait(lambda: not _worker_processes(proc.pid) and not _group_alive(proc.pid), 30, "the workers to end")

    finished = store.row_files(out)
    assert 5 <= len(finished) < n
    table = pq.read_table(out / store.TABLE).to_pandas()  # readable, and holds every committed run
    assert sorted(table["run_id"]) == sorted(finished) and table["status"].isin(PLANNED).all()
    before = {**snapshot(out / "rows"), **{f"runs/{k}": v for k, v in snapshot(out / "runs").items()}}

    report = run_sweep(path, out, workers=2)
    assert report.computed == n - len(finished) and report.skipped_ok == len(finished)
    after = {**snapshot(out / "rows"), **{f"runs/{k}": v for k, v in snapshot(out / "runs").items()}}
    assert {k: after[k] for k in before} == before  # nothing finished was rewritten
    table = read_results(out)
    assert len(table) == n and table["run_id"].is_unique and table["status"].isin(PLANNED).all()
    assert table["run"].tolist() == list(range(1, n + 1))
    damping = np.linspace(500.0, 1500.0, n)
    assert np.allclose(table["model.joints.q2.damping"], damping)
    for _, row in table.iterrows():  # every run folder is that run's plan
        assert ffopt.load_plan(out / row["folder"]).problem().chain.joints[1].damping == pytest.approx(
            row["model.joints.q2.damping"])


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_worker_that_dies_during_the_start_up_check_is_not_diagnosed_as_a_missing_install():
    from ffopt.sweep.runner import _check_workers

    class KilledWorker(Exception):  # Dask's exception is matched by name (its constructor varies by version)
        pass

    class DyingClient:
        def run(self, fn):
            raise KilledWorker("ffopt-warm-up died on tcp://127.0.0.1:1")

    class RefusingClient:
        def run(self, fn):
            raise ModuleNotFoundError("No module named 'ffopt'")

    with pytest.raises(ProblemError, match="a worker died during the start-up check") as died:
        _check_workers(DyingClient(), None)
    assert "install ffopt" not in str(died.value)
    with pytest.raises(ProblemError, match="install ffopt in the workers' environment"):
        _check_workers(RefusingClient(), "tcp://example:8786")


def test_an_absurd_grid_is_refused_before_it_is_expanded_unless_forced(tmp_path, capsys, monkeypatch):
    """A 1000 x 1000 grid grew past 2.4 GB in silence while its million problems were built: now counted first
    and refused in one line (exit 2) unless --force / max_runs=None; the problems are checked with progress
    lines, and the sweep states its run count and a rough time before it starts."""
    import time

    from ffopt.cli.main import main
    from ffopt.sweep import spec
    from ffopt.sweep.runner import estimated_run_s

    path = sweep_file(tmp_path, """
[[runs]]
name = "huge"
[runs.parameters]
"model.joints.q2.damping" = { linspace = [500.0, 1500.0, 1000] }
"reference.duration" = { linspace = [0.3, 1.0, 1000] }
""")
    tic = time.perf_counter()
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    assert time.perf_counter() - tic < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "runs: 1,000,000 runs (runs[1] 'huge': 1,000,000)" in err[0] and "--force" in err[0]
    assert not (tmp_path / "out").exists()

    small = sweep_file(tmp_path, '[[runs]]\n[runs.parameters]\n"reference.duration" = [0.2, 0.3, 0.4]\n', name="s.toml")
    with pytest.raises(ProblemError, match="3 runs"):
        load_sweep(small, max_runs=2)
    monkeypatch.setattr(spec, "PROGRESS_S", 0.0)
    lines = []
    sweep = load_sweep(small, max_runs=None, progress=lines.append)
    assert len(sweep.runs) == 3 and lines[-1] == "checking the runs' problems: 3 of 3"
    assert 1.0 < estimated_run_s(sweep.runs[0].problem) < 60.0
