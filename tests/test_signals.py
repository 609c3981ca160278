"""SIGTERM (timeout, job schedulers, container stops) and SIGHUP (a closed terminal) stop ffopt as a Ctrl-C
does: one line, exit 128 + the signal's number (143, 129), no partial or temporary folder, a sweep's
finished runs in its table at once, no worker process left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ffopt import interrupt
from ffopt.cli.main import main
from ffopt.sweep import store

ROOT = Path(__file__).resolve().parents[1]
STOPS = [(signal.SIGTERM, 143, "ffopt: stopped by SIGTERM"), (signal.SIGHUP, 129, "ffopt: stopped by SIGHUP")]


@pytest.mark.parametrize("signum, code, line", STOPS, ids=["SIGTERM", "SIGHUP"])
def test_a_signal_while_the_files_are_written_leaves_no_temporary_folder(tmp_path, monkeypatch, capsys, signum, code,
                                                                         line):
    """The signal arrives while the plots are drawn into the temporary folder beside --out."""
    def signalled_plots(*args, **kwargs):
        os.kill(os.getpid(), signum)
        time.sleep(1)
        raise AssertionError(f"{signum!r} did not stop the plan")

    monkeypatch.setattr("ffopt.io.plots.write_plots", signalled_plots)
    out = tmp_path / "res"
    argv = ["plan", str(ROOT / "problems" / "e1_simplified.toml"), "--out", str(out), "--quiet", "--no-verify"]
    assert main(argv) == code
    assert capsys.readouterr().err.strip().splitlines()[-1] == line
    assert list(tmp_path.iterdir()) == []
    assert not interrupt.received()
    assert signal.getsignal(signum) in (signal.SIG_DFL, signal.SIG_IGN)  # handed back as it was


def test_a_signal_inside_a_deferred_block_is_held_until_it_ends(monkeypatch):
    with interrupt.catch_interrupts():
        with pytest.raises(KeyboardInterrupt):
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.1)
                done = True  # the block was not cut short
        assert done and interrupt.signal_number() == signal.SIGTERM


def _ffopt(*args):
    return [sys.executable, "-m", "ffopt.cli.main", *args]


def _signal_when(cmd, text, signum, cwd, group=False):
    """Run ffopt, send ``signum`` when ``text`` appears on its stderr (to its process group with ``group``, as
    ``timeout`` does); returns (exit code, stderr)."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=cwd,
                            start_new_session=True)
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if re.search(text, line):
                os.killpg(proc.pid, signum) if group else proc.send_signal(signum)
                break
        seen.append(proc.stderr.read())
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, "".join(seen), proc.pid


def test_sigterm_in_a_real_plan_exits_143_and_writes_nothing(tmp_path):
    code, err, _ = _signal_when(_ffopt("plan", str(ROOT / "problems" / "e12_line.toml"), "--out", "res"), "verifying",
                                signal.SIGTERM, tmp_path)
    assert code == 143, err
    assert err.strip().splitlines()[-1] == "ffopt: stopped by SIGTERM" and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_sigterm_to_a_sweeps_process_group_keeps_its_finished_runs_in_the_table(tmp_path):
    (tmp_path / "sweep.toml").write_text(f"""problem = "{ROOT / 'problems' / 'e1_complete.toml'}"
[plan]
verify = false
compile = false
plots = false
[[runs]]
[runs.parameters]
"model.joints.q2.damping" = {{ linspace = [500.0, 1500.0, 40] }}
""")
    cmd = _ffopt("sweep", "sweep.toml", "--out", "out", "--workers", "1")
    code, err, pid = _signal_when(cmd, r"runs: [1-9]", signal.SIGTERM, tmp_path, group=True)  # a run finished
    assert code == 143, err
    assert err.strip().splitlines()[-1] == "ffopt: stopped by SIGTERM" and "Traceback" not in err
    out = tmp_path / "out"
    finished = store.row_files(out)
    table = pq.read_table(out / store.TABLE).to_pandas()  # at once, without a rerun
    assert len(finished) >= 1 and sorted(table["run_id"]) == sorted(finished)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("a process of the sweep outlived it")
    assert not [p for p in tmp_path.rglob("*") if ".ffopt-tmp-" in p.name or p.name.startswith(".tmp-")]


def test_compilers_are_bounded_and_a_huge_source_is_not_compiled(tmp_path, monkeypatch):
    """A background -O2 build outlives the plan that started it: it runs under CPU-time and memory caps, and
    a source too large to compile in minutes is not built at all (the model stays in the virtual machine)."""
    from ffopt import codegen

    started = []
    monkeypatch.setattr(codegen.subprocess, "Popen", lambda cmd, **kw: started.append(cmd))
    big, small = tmp_path / "big.c", tmp_path / "small.c"
    big.write_bytes(b" " * (codegen.MAX_SOURCE_BYTES["-O2"] + 1))
    small.write_text("int f(void) { return 1; }\n")
    codegen.build_in_background(big, tmp_path / "big.so")
    assert started == [] and not list(tmp_path.glob("*.building"))
    codegen.build_in_background(small, tmp_path / "small.so")
    assert len(started) == 1 and f"ulimit -t {codegen.COMPILER_CPU_S}; ulimit -v " in started[0][-1]
    with pytest.raises(OSError, match=r"generated C code \(4.0 MB\) is above the 4 MB"):
        codegen.check_source_size(big)


def test_casadis_report_of_an_interrupt_is_dropped_and_other_lines_pass():
    """CasADi's SUNDIALS interface writes "rhs failed: ", "KeyboardInterrupt", "\\n" to sys.stderr when Ctrl-C stops
    CVODES; inside catch_interrupts that line is dropped (ffopt says "interrupted"), any other line passes whole."""
    import io

    sink = io.StringIO()
    stream = interrupt._WithoutInterruptReports(sink)
    for piece in ["[ 0.3 s] verifying\n", "rhs failed: ", "KeyboardInterrupt", "\n", "rhs failed: ", "CV_TOO_MUCH_WORK",
                  "\n", "progress 1/2\r", "jtimesF failed: ", "KeyboardInterrupt", "\n", "ffopt: interrupted\n"]:
        stream.write(piece)
    assert sink.getvalue() == "[ 0.3 s] verifying\nrhs failed: CV_TOO_MUCH_WORK\nprogress 1/2\rffopt: interrupted\n"
    stream.write("rhs failed: ")
    stream.release()  # a partial line at the end of the block is passed on
    assert sink.getvalue().endswith("rhs failed: ")
    before = sys.stderr
    with interrupt.catch_interrupts():
        assert isinstance(sys.stderr, interrupt._WithoutInterruptReports) and sys.stderr.stream is before
    assert sys.stderr is before


def test_ctrl_c_during_the_verification_prints_one_line():
    """A real SIGINT while CVODES simulates the Manutec r3 plan (0.5-1 s of verification): exit 130 and no
    "rhs failed: KeyboardInterrupt" from CasADi beside ffopt's own line."""
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from ffopt.cli.main import main; sys.exit(main(sys.argv[1:]))")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-c", code, "plan", str(ROOT / "problems" / "manutec_r3_benchmark.toml"),
                                 "--out", str(Path(tmp) / "out"), "--no-plots"], stderr=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        for line in proc.stderr:
            if "verifying feedforward" in line:
                break
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "failed: KeyboardInterrupt" not in err and err.strip().splitlines()[-1] == "ffopt: interrupted"


def test_dask_logs_are_dropped_once_a_signal_stopped_the_sweep(monkeypatch):
    """After a stop signal Dask's scheduler logs the ended workers' comms as errors with a traceback: not shown."""
    import logging

    from ffopt import interrupt
    from ffopt.sweep import runner

    record = logging.LogRecord("distributed.scheduler", logging.ERROR, __file__, 1, "comm closed", None, None)
    with runner._quiet_once_stopped():
        handlers = runner._handlers_of("distributed.scheduler")
        assert handlers and all(h.filter(record) for h in handlers)  # running: Dask's errors are shown
        monkeypatch.setattr(interrupt, "received", lambda: True)
        assert not any(h.filter(record) for h in handlers)  # stopped: dropped wherever they would go
    assert all(h.filter(record) for h in handlers)  # the filter goes with the sweep
