"""A refactoring changes no plan: every shipped problem planned by two versions of ffopt, compared bit for bit.

    python results/refactor_check.py                       # the working tree against the commit HEAD
    python results/refactor_check.py --base main           # ... against another commit
    python results/refactor_check.py --plan DIR [--source TREE]   # only plan every problem into DIR
    python results/refactor_check.py --compare DIR_A DIR_B        # only compare two such folders
    ... --only e12_line e1_nmp                                    # only these problems

Each problem in problems/*.toml is planned by ``ffopt plan PROBLEM --out DIR --no-verify --no-plots --quiet`` in
its own process, with the source tree first on the path (the base commit is unpacked by ``git archive`` into a
temporary folder). Compared per problem: the exit code and the error line, every array of trajectory.npz (dtype,
shape and bytes), problem.toml as written, and summary.json with what measures the machine or the cache left out
(times, whether a disk cache or compiled code served, library versions) and the source tree's own path (a URDF
problem names its file by absolute path). ``FFOPT_COMPILE=sync`` makes both runs use
the compiled code (the virtual machine and gcc -O2 may round differently); both share $FFOPT_CACHE_DIR, so a search
kept on disk by the first run serves the second, unless ``--cold`` gives each run an empty cache of its own.
Exit code 0 when every problem matches.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
# summary.json keys whose values measure the run, not the plan
MEASURED = re.compile(r"(^|_)time(_|$)|^cached$|^compiled$|^compile_level$|^versions$|^files$")


def plan_every_problem(source: Path, out: Path, cache: Path | None = None, only: list[str] | None = None) -> dict:
    """Plan problems/*.toml of ``source`` (``only``: those named) with the ffopt of ``source`` into out/<name>/;
    {name: exit code}."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(source), "FFOPT_COMPILE": "sync"}
    if cache is not None:
        env["FFOPT_CACHE_DIR"] = str(cache)
    codes = {}
    for problem in sorted((source / "problems").glob("*.toml")):
        if only and problem.stem not in only:
            continue
        folder = out / problem.stem
        command = [sys.executable, "-m", "ffopt.cli.main", "plan", str(problem.relative_to(source)), "--out",
                   str(folder), "--no-verify", "--no-plots", "--quiet"]
        tic = time.perf_counter()
        run = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True)
        codes[problem.stem] = run.returncode
        errors = [line for line in run.stderr.splitlines() if line.startswith("ffopt")]
        (out / f"{problem.stem}.exit").write_text(f"{run.returncode}\n" + "\n".join(errors))
        print(f"{problem.stem}: exit {run.returncode} ({time.perf_counter() - tic:.1f} s)", flush=True)
    return codes


# the absolute path of the source tree (a URDF problem's file in problem.toml and summary.json's urdf.file)
TREE = re.compile(r"(?:/[^\s\"']+)?/problems/")


def without_tree(text: str) -> str:
    """``text`` with the source tree's absolute path left out (two trees plan the same files)."""
    return TREE.sub("problems/", text)


def without_measurements(x):
    """summary.json without the values that measure the machine or the cache (``MEASURED``)."""
    if isinstance(x, dict):
        return {k: without_measurements(v) for k, v in x.items() if not MEASURED.search(k)}
    if isinstance(x, list):
        return [without_measurements(v) for v in x]
    return x


def differences(a: Path, b: Path) -> list[str]:
    """What differs between the plan folders a and b (empty: the same plan)."""
    found = []
    exit_a, exit_b = (p.with_suffix(".exit") for p in (a, b))
    if exit_a.read_text() != exit_b.read_text():
        found.append(f"exit code or error: {exit_a.read_text()!r} != {exit_b.read_text()!r}")
    if not (a / "trajectory.npz").exists() and not (b / "trajectory.npz").exists():
        return found
    with np.load(a / "trajectory.npz") as za, np.load(b / "trajectory.npz") as zb:
        if sorted(za.files) != sorted(zb.files):
            found.append(f"trajectory.npz arrays {sorted(za.files)} != {sorted(zb.files)}")
        for key in sorted(set(za.files) & set(zb.files)):
            x, y = za[key], zb[key]
            if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                found.append(f"trajectory.npz[{key}] differs")
    if without_tree((a / "problem.toml").read_text()) != without_tree((b / "problem.toml").read_text()):
        found.append("problem.toml differs")
    sa, sb = (without_measurements(json.loads(without_tree((p / "summary.json").read_text()))) for p in (a, b))
    if sa != sb:
        keys = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
        found.append(f"summary.json differs in {', '.join(keys)}")
    return found


def compare(a: Path, b: Path, only: list[str] | None = None) -> int:
    names = sorted(p.stem for p in a.glob("*.exit"))
    if only:
        names = [name for name in names if name in only]
    elif names != sorted(p.stem for p in b.glob("*.exit")):
        print(f"not the same problems: {names} / {sorted(p.stem for p in b.glob('*.exit'))}")
        return 1
    bad = 0
    for name in names:
        found = differences(a / name, b / name)
        bad += bool(found)
        print(f"{name}: " + ("identical" if not found else "; ".join(found)))
    print(f"{len(names) - bad} of {len(names)} problems identical")
    return 1 if bad else 0


def unpack(commit: str, into: Path) -> Path:
    """The tree of ``commit`` (git archive) in ``into``."""
    archive = into / "base.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "archive", commit], cwd=REPOSITORY, stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="HEAD", help="the commit to compare the working tree with (default HEAD)")
    parser.add_argument("--plan", metavar="DIR", type=Path, help="only plan every problem into DIR")
    parser.add_argument("--source", type=Path, default=REPOSITORY, help="with --plan: the source tree (default: this)")
    parser.add_argument("--compare", nargs=2, metavar="DIR", type=Path, help="only compare two --plan folders")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these problems (problems/NAME.toml)")
    parser.add_argument("--cold", action="store_true", help="each run with an empty cache folder of its own")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare, args.only)
    if args.plan:
        plan_every_problem(args.source.resolve(), args.plan, only=args.only)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = unpack(args.base, tmp)
        caches = (tmp / "cache_base", tmp / "cache_new") if args.cold else (None, None)
        print(f"base: {args.base}")
        plan_every_problem(base, tmp / "base", caches[0], args.only)
        print("working tree")
        plan_every_problem(REPOSITORY, tmp / "new", caches[1], args.only)
        return compare(tmp / "base", tmp / "new", args.only)


if __name__ == "__main__":
    sys.exit(main())
