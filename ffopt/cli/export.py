"""``ffopt export PROBLEM.toml|PLAN_DIR --out DIR [--sample-time T] [--straight-line]``: the BDF inverse model as
portable C for a robot controller (ffopt.export); a plan folder exports the problem as planned (its problem.toml:
the method and order method auto chose, the rest-to-rest time law of its reference). Errors and exit codes are handled by ``ffopt.cli.main.main``: 2 for what
cannot run online (a non-minimum-phase arm, torque bounds, a zoh hold) or bad input, 1 for a solver failure.
"""

from __future__ import annotations


def add_parser(subparsers, epilog: str = ""):
    from ffopt.cli.common import positive_float

    p = subparsers.add_parser(
        "export", help="write the inverse model as portable C for a controller (one BDF step per sample)",
        epilog=epilog,
        description="Write the problem's inverse model (BDF, the problem's order and form) as C99 code for a "
                    "robot controller: ffopt_init / ffopt_step / ffopt_reset, fixed memory, libm only, with a "
                    "test harness, a CMakeLists.txt and a README. Each ffopt_step takes the next reference "
                    "sample (outputs and derivatives) and returns the motor torques and the motor angle and "
                    "speed references. Given a plan folder (ffopt plan --out DIR), the problem as planned (its "
                    "problem.toml: the method's order, the rest-to-rest time law). Refused: non-minimum-phase arms "
                    "(non-causal inverse), torque bounds (they need the NLP), a zoh output hold.")
    p.add_argument("problem", help="problem file (TOML), e.g. problems/e12_line.toml, or a plan folder (ffopt plan "
                                   "--out DIR): its problem.toml as planned")
    p.add_argument("--out", required=True, help="folder for the C code: new, empty, or one ffopt export wrote")
    p.add_argument("--force", action="store_true", help="also write into an existing folder ffopt did not create")
    p.add_argument("--sample-time", type=positive_float, metavar="T",
                   help="controller sample period in s = the BDF step (default: output.sample_time, else solver.step)")
    p.add_argument("--straight-line", action="store_true",
                   help="every operation as a C statement: the fastest steps (UR5: 22 us instead of 140 us), but gcc "
                        "-O2 needs 15-45 s for a 6-axis arm instead of ~3 s (default: the largest functions as "
                        "instruction tables)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ffopt.cli.common import progress_printer
    from ffopt.export import export_problem
    from ffopt.io.problem import load_problem

    say = progress_printer(args.quiet)
    problem = _problem_or_plan(args.problem, say)
    info = export_problem(problem, args.out, sample_time=args.sample_time, force=args.force, say=say,
                          straight_line=args.straight_line)
    print(f"{problem.name}: BDF-{info.order}, form {info.form}, h = {info.sample_time * 1e3:g} ms: "
          f"{info.n_u} inputs, reference sample of {info.n_ref} values ({info.n_out} outputs x {info.n_derivs}), "
          f"{info.work['sz_w']} work doubles; written to {info.folder}")
    return 0


def _problem_or_plan(path: str, say):
    """The problem of a problem file, or of a plan folder as planned (its problem.toml, checked against the
    folder's SHA-256 sums)."""
    from pathlib import Path

    from ffopt.io.problem import load_problem

    if not Path(path).is_dir():
        return load_problem(path)
    from ffopt.io.saved import load_plan

    plan = load_plan(path)
    problem = plan.problem()
    say(f"exporting the plan in {path} as planned: {problem.source} (method {problem.solver.method}, BDF-"
        f"{problem.solver.order}, form {problem.solver.form}"
        + (", its rest-to-rest time law)" if problem.reference_spec.time_law_shape else ")"))
    return problem
