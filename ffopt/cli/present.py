"""``ffopt sweep``, ``ffopt report`` and ``ffopt animate``: thin layers on ffopt.sweep and ffopt.report.

Errors and exit codes are handled by ``ffopt.cli.main.main``.
"""

from __future__ import annotations


def add_parsers(subparsers, epilog: str = ""):
    from ffopt.cli.common import positive_int, positive_float

    s = subparsers.add_parser(
        "sweep", epilog=epilog, help="run a parameter sweep on Dask (resumable; one Parquet table)",
        description="Plan every run of a sweep file on a Dask cluster: a local cluster of worker processes, or "
                    "an existing scheduler. DIR/results.parquet has one row per run (inputs, status, error, "
                    "times, verification errors, peak torques, iterations); DIR/runs/<id>/ each run's plan files. "
                    "A rerun skips the runs that finished (and those that failed, unless --retry-failed). "
                    "Exit code 0 when every run is in the table, failed runs included (their error is in it).")
    s.add_argument("sweep", help="sweep file (TOML), e.g. problems/sweeps/e12_stiffness_duration.toml")
    s.add_argument("--out", required=True, metavar="DIR",
                   help="sweep folder: new, empty, or one ffopt sweep wrote (then resumed)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int, metavar="N",
                       help="worker processes of the local cluster (default: the CPU count)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (its workers need the "
                            "same ffopt version)")
    s.add_argument("--retry-failed", action="store_true", help="also rerun the runs that failed before")
    s.add_argument("--force", action="store_true",
                   help="also write into an existing folder ffopt did not create, and run a sweep of more than "
                        "10000 runs (refused without it)")
    s.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    s.set_defaults(func=run_sweep)

    r = subparsers.add_parser("report", epilog=epilog, help="write a self-contained HTML page for a plan folder",
                              description="Write DIR/report.html: problem, settings, solver statistics, "
                                          "verification table and every plot embedded (one file, no links).")
    r.add_argument("folder", metavar="DIR", help="a plan folder (ffopt plan --out DIR)")
    r.set_defaults(func=run_report)

    a = subparsers.add_parser(
        "animate", epilog=epilog, help="write an animated GIF of the arm moving along the path",
        description="Write DIR/animation.gif: the arm drawn from the plan's joint angles through the robot's "
                    "kinematics (a URDF arm through its links' frames), with the reference path; --exaggerate "
                    "draws the elastic deflections larger. The robot is read from DIR/problem.toml (written by "
                    "ffopt plan), else from the problem file summary.json names, else give --problem.")
    a.add_argument("folder", metavar="DIR", help="a plan folder (ffopt plan --out DIR)")
    a.add_argument("--problem", metavar="FILE", help="the problem file of the plan (when DIR has no problem.toml)")
    a.add_argument("--fps", type=positive_int, default=20, help="frames per second (default 20)")
    a.add_argument("--speed", type=positive_float, metavar="X",
                   help="playback speed, 1 = real time (default: slowed so the GIF lasts about 5 s)")
    a.add_argument("--exaggerate", type=positive_float, default=1.0, metavar="F",
                   help="draw the elastic deflections F times larger: an elastic gear at qm + F (q - qm) (motor "
                        "angle plus F times the gear's deflection), a passive joint at F q (default 1: as planned)")
    a.set_defaults(func=run_animate)


def run_sweep(args) -> int:
    import sys

    from ffopt.cli.common import progress_printer
    from ffopt.sweep import run_sweep as sweep

    report = sweep(args.sweep, args.out, workers=args.workers, scheduler=args.scheduler,
                   retry_failed=args.retry_failed, force=args.force, progress=progress_printer(args.quiet))
    print(report.text(), file=sys.stdout)
    return 0


def run_report(args) -> int:
    from ffopt.report.html import write_report

    print(write_report(args.folder))
    return 0


def run_animate(args) -> int:
    from ffopt.cli.common import progress_printer
    from ffopt.report.animation import write_animation

    say = progress_printer(getattr(args, "quiet", False))
    say(f"drawing the animation of {args.folder}")
    print(write_animation(args.folder, args.problem, fps=args.fps, speed=args.speed, progress=say,
                          exaggerate=args.exaggerate))
    return 0
