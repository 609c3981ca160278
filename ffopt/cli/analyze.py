"""``ffopt analyze PROBLEM.toml [--json FILE]``: indices, eigenfrequencies, minimum phase.

Errors and exit codes are handled by ``ffopt.cli.main.main``.
"""

from __future__ import annotations


def add_parser(subparsers, epilog: str = ""):
    from ffopt.cli.common import positive_int

    p = subparsers.add_parser("analyze", help="strangeness/structural index, eigenfrequencies and zero dynamics",
                              epilog=epilog)
    p.add_argument("problem", help="problem file (TOML), e.g. problems/e12_line.toml")
    p.add_argument("--json", metavar="FILE",
                   help="also write the full report as JSON (a new file, or one ffopt wrote; replaced atomically)")
    p.add_argument("--points", type=positive_int, default=41, help="path points for the zero dynamics (default 41)")
    p.add_argument("--frequency-points", type=positive_int, default=21, help="path points for the eigenfrequencies")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ffopt.analysis.report import analyze_problem
    from ffopt.io.problem import load_problem
    from ffopt.io.results import check_output_file, write_json_file

    problem = load_problem(args.problem)
    if args.json:
        check_output_file(args.json)  # before the analysis, so a bad name costs nothing
    report = analyze_problem(problem, args.points, args.frequency_points)
    print(report.text())
    if args.json:
        write_json_file(args.json, report.to_dict(), "analyze")
    return 0
