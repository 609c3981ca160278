"""``ffopt analyze PROBLEM.toml [--json FILE]``: indices, eigenfrequencies, minimum phase."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from ffopt.errors import FfoptError

EXIT_ERROR = 2


def add_parser(subparsers):
    p = subparsers.add_parser("analyze", help="strangeness/structural index, eigenfrequencies and zero dynamics")
    p.add_argument("problem", help="problem file (TOML), e.g. problems/e12_line.toml")
    p.add_argument("--json", metavar="FILE", help="also write the full report as JSON")
    p.add_argument("--points", type=int, default=41, help="path points for the zero dynamics (default 41)")
    p.add_argument("--frequency-points", type=int, default=21, help="path points for the eigenfrequencies")
    p.set_defaults(func=run)
    return p


def _write_json(path: Path, data: dict) -> None:
    """Write to a temporary file next to the target, then rename (no half-written results)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, allow_nan=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args) -> int:
    from ffopt.analysis.report import analyze_problem
    from ffopt.io.problem import load_problem

    try:
        if args.points < 1 or args.frequency_points < 1:
            print("ffopt: error: --points and --frequency-points must be >= 1", file=sys.stderr)
            return EXIT_ERROR
        report = analyze_problem(load_problem(args.problem), args.points, args.frequency_points)
        print(report.text())
        if args.json:
            _write_json(Path(args.json), report.to_dict())
    except FfoptError as err:
        print(f"ffopt: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    return 0
