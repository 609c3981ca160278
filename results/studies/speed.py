"""The whole `ffopt plan problems/e12_line.toml --no-plots` process, stage by stage, for this checkout
and (optionally) a previous one, measured side by side (runs alternate) on the same machine.

    python results/studies/speed.py [--previous DIR] [--runs N]

DIR is a checkout of an older ffopt (e.g. ``git archive e9caab0 | tar -x -C /tmp/ffopt-old``); it
runs with this environment's Python and libraries. Per process: wall and CPU time (user + system
of the child), peak RSS, and from the progress lines and summary.json the stages: start-up
(interpreter, imports, problem file, output-folder check: the time before the first progress
line), path check, inverse dynamics, verification, and writing the files. Prints a Markdown table
of medians, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "problems" / "e12_line.toml"
STAMP = re.compile(r"^\[\s*([0-9.]+) s\] (.*)$")


def run_once(source: Path, out: Path, extra=()) -> dict:
    """One `ffopt plan` process with ffopt from ``source``: times (s) and peak RSS (MB)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    args = [sys.executable, "-m", "ffopt.cli.main", "plan", str(PROBLEM), "--no-plots", "--out", str(out), *extra]
    tic = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=out.parent)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - tic
    lines = proc.stderr.read().decode().splitlines()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("\n".join(lines[-3:]))
    stamps = [(float(m.group(1)), m.group(2)) for m in map(STAMP.match, lines) if m]
    s = json.loads((out / "summary.json").read_text())
    t = s["wall_time_s"]
    wrote = next(ts for ts, msg in stamps if msg.startswith("wrote"))
    stages = t["path_check"] + t["inverse_dynamics"] + t.get("verification", 0.0)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
            "startup": wall - wrote, "path_check": t["path_check"], "inverse_dynamics": t["inverse_dynamics"],
            "bdf_call": s["solver"].get("time_total_s"), "verification": t.get("verification", 0.0),
            "write": max(0.0, wrote - stages),
            "cases": len(s["verification"]["tool_error"]) if s.get("verification") else 0}


def measure(sources: dict, runs: int, extra=()) -> dict:
    results = {name: [] for name in sources}
    with tempfile.TemporaryDirectory(prefix="ffopt_speed_") as tmp:
        for name, src in sources.items():  # warm-up: compile caches filled
            run_once(src, Path(tmp) / f"{name}_warm", extra)
        for i in range(runs):
            for name, src in sources.items():
                results[name].append(run_once(src, Path(tmp) / f"{name}_{i}", extra))
    return results


def table(results: dict) -> str:
    keys = [("wall", "whole process, wall [s]", 1), ("cpu", "whole process, CPU [s]", 1),
            ("rss_mb", "peak RSS [MB]", 1), ("startup", "start-up: interpreter, imports, problem, output check [ms]", 1e3),
            ("path_check", "path check [ms]", 1e3), ("inverse_dynamics", "inverse dynamics stage [ms]", 1e3),
            ("bdf_call", "  of which the BDF call [ms]", 1e3), ("verification", "verification [ms]", 1e3),
            ("write", "between the stages (imports on first use) and writing the files [ms]", 1e3), ("cases", "verification cases", 1)]
    names = list(results)
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key, label, scale in keys:
        cells = []
        for n in names:
            vals = [r[key] * scale for r in results[n] if r.get(key) is not None]
            cells.append("-" if not vals else f"{statistics.median(vals):.3g} ({min(vals):.3g}-{max(vals):.3g})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous", type=Path, help="checkout of an older ffopt to measure beside this one")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sources = {"this checkout": ROOT}
    if args.previous:
        sources = {"previous": args.previous.resolve(), **sources}
    load0 = os.getloadavg()
    results = measure(sources, args.runs)
    load1 = os.getloadavg()
    print(f"median (min-max) of {args.runs} processes each, alternating; load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after, {os.cpu_count()} cores\n")
    print(table(results))


if __name__ == "__main__":
    main()
