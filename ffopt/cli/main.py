"""Command line: ``ffopt plan``, ``ffopt analyze``, ``ffopt bench``; ``sweep``, ``report``, ``animate`` in cli/present.py;
``simulate`` in cli/simulate.py.

Every error is one line on stderr. Exit codes: 0 ok (a plan: verified), 1 solver failure (SolverError,
VerificationError), 2 bad input (ProblemError, PathError, OutputError, command-line errors), 3 a plan
written but missing its verification tolerance (during the move or after the table), 130 interrupted (Ctrl-C, in every stage; no partial or temporary folder is left), 143 / 129 stopped by SIGTERM / SIGHUP (the same).
"""

from __future__ import annotations

import argparse
import re
import sys

from ffopt import interrupt
from ffopt._version import __version__
from ffopt.cli.common import (EXIT_INPUT, EXIT_INTERRUPTED, EXIT_MISSED_TOLERANCE, EXIT_OK, EXIT_SOLVER,  # noqa: F401
                              finite_float, plan_exit_code, positive_int, progress_printer)
from ffopt.errors import FfoptError, PathError, ProblemError, SolverError, VerificationError
from ffopt.io.problem import BDF_FORMS, HOLDS, VERIFICATION_CASES
from ffopt.settings.bench import BENCH_TABLES
from ffopt.settings.reference import DURATION_FROM_LIMIT_KEYS
from ffopt.settings.methods import BDF_FAMILY, BDF_ORDER_MAX, BDF_ORDER_MIN, METHODS
from ffopt.settings.nlp import BACKENDS, WARM_STARTS

EXIT_CODES_HELP = """exit codes:
  0    ok (ffopt plan: the plan is written and verified within its tolerance)
  1    solver failure: the inverse dynamics, the NLP or the verification did not succeed
  2    bad input: problem file, command-line value or output path (one line names the file,
       field or option; nothing is written)
  3    ffopt plan / simulate: the plan is written, but the verification found the tool outside
       [verification] tolerance_mm during the move or after the table (the line "MISSED
       TOLERANCE" names the case, the time and the likely cause; summary.json: status)
  130  interrupted (Ctrl-C) in any stage; no partial or temporary folder is left
  143  stopped by SIGTERM (timeout, a job scheduler, a container stop), 129 by SIGHUP: as
       for Ctrl-C, nothing partial is left and a sweep's finished runs are in its table
"""

# which --options apply to which methods, and what they set (a method missing here, e.g. "auto",
# accepts them all: they apply to whichever method it runs)
OPTION_METHODS = {
    "order": (BDF_FAMILY, "it sets the BDF order; the NLP's collocation degree is [nlp] degree in the problem file"),
    "form": (("bdf",), "it picks the DAE form of method bdf; Moberg & Hanssen's variants (hi..dc) and the NLP "
                       "build their own index-reduced systems"),
    "scaling_power": (BDF_FAMILY, "it scales the BDF Newton rows; the NLP scales its rows itself"),
    "backend": (("nlp",), "it chooses the solver of method nlp"),
    "warm_start": (("nlp",), "it chooses the start point of method nlp"),
    "max_iter": (("nlp",), "it limits the iterations of method nlp's solver"),
    "max_time": (("nlp",), "it limits the wall time of method nlp's solver"),
    "max_cpu_time": (("nlp",), "it limits the CPU time of method nlp's solver"),
}

# argparse takes "-1e-3" for an option; accept every float literal as a (negative) value
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


class Parser(argparse.ArgumentParser):
    """argparse with negative numbers in scientific notation as values and one-line errors (exit 2)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message):
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def cmd_plan(args) -> int:
    from ffopt.io.console import ConsoleProgress
    from ffopt.io.problem import load_problem
    from ffopt.io.results import check_output_folder
    from ffopt.plan import output_files, plan, verification_cases

    if args.no_verify and args.verify is not None:
        raise ProblemError(f"--verify {args.verify} and --no-verify contradict each other; give one of them")
    problem = load_problem(args.problem)
    held = {f"output.{k}": v for k, v in (("sample_time", args.sample_time), ("hold", args.hold)) if v is not None}
    if held:  # [output] from the command line (validated like the file's table)
        problem = problem.with_values(held)
    if args.min_time and not problem.reference_spec.minimum_time:  # as reference.duration = "min"
        problem = _with_min_time(problem)
    check_plan_options(args, problem)
    verify = False if args.no_verify else args.verify
    verifies = verification_cases(problem, verify) is not None
    check_output_folder(args.out, output_files(not args.no_plots, verifies), args.force, "plan")  # before the solve
    say = progress_printer(args.quiet)
    progress = say if args.quiet else ConsoleProgress(say)  # NLP iterations as one live line
    try:
        result = plan(problem, method=args.method, order=args.order, step=args.step, form=args.form,
                      scaling_power=args.scaling_power, verify=verify, compile=not args.no_compile, progress=progress,
                      backend=args.backend, warm_start=args.warm_start, max_iter=args.max_iter,
                      max_time=args.max_time, max_cpu_time=args.max_cpu_time)
    except PathError as err:  # name the file whose [reference] cannot be followed
        raise PathError(f"{problem.source}: {err}" if not str(err).startswith(problem.source) else str(err)) from None
    interrupt.check()
    from ffopt.progress import heartbeat

    say("writing the result files" + (" and plots" if not args.no_plots else ""))  # announced: it can take seconds
    with heartbeat(say, lambda elapsed: f"writing the result files: {elapsed:.0f} s"):  # a long table's CSV, plots
        out = result.save(args.out, plots=not args.no_plots, force=args.force)
    say(f"wrote {out}")
    print(summary_text(result))
    return plan_exit_code(result.verification)


def _with_min_time(problem):
    """--min-time: the problem with reference.duration = "min", the speed and acceleration limits that set its
    duration dropped (the search sets it), and the file's duration, if longer than the default, as duration_max."""
    from ffopt.io.reference_spec import DURATION_MAX_S

    spec = problem.reference_spec
    if spec.kind not in ("line", "arc", "joint_ptp"):
        raise ProblemError(f"{problem.source}: --min-time searches one duration: reference.kind '{spec.kind}' has "
                           "none (use a line, an arc or a joint move)")
    data = problem.to_dict()
    ref = data["reference"]
    for key in DURATION_FROM_LIMIT_KEYS:
        ref.pop(key, None)
    ref.update(duration="min", duration_max=max(DURATION_MAX_S, spec.duration))
    return problem.from_dict(data, problem.source)


def check_plan_options(args, problem) -> None:
    """Command-line values in range, and every option given applies to the method that runs."""
    if args.step is not None and args.step <= 0:
        raise ProblemError(f"--step: must be > 0 s (it sets solver.step and nlp.step), got {args.step:g}")
    method = args.method or problem.solver.method
    source = "--method" if args.method else f"solver.method in {problem.source}"
    for option, (methods, why) in OPTION_METHODS.items():
        if getattr(args, option) is not None and method in BDF_FAMILY + ("nlp",) and method not in methods:
            flag = "--" + option.replace("_", "-")
            raise ProblemError(f"{flag} does not apply to method {method} (from {source}): {why}")


def summary_text(result) -> str:
    tr = result.trajectory
    peaks = ", ".join(f"u_{j} {x:.4g}" for j, x in zip(tr.actuated_joints, abs(tr.u).max(axis=0)))
    lines = [f"{result.problem.name}: {tr.method}, {len(tr.t)} points, "
             f"solve {tr.stats.get('time_solve_s', float('nan')) * 1e3:.1f} ms, peak |u|: {peaks} {tr.input_unit}"]
    if tr.electric:  # the input is the voltage: the torques and currents it makes
        lines.append("peak torque: " + ", ".join(f"{j} {x:.4g} N m, {c:.4g} A" for j, x, c in zip(
            tr.actuated_joints, abs(tr.torques).max(axis=0), abs(tr.current).max(axis=0))))
    from ffopt.plan import effort_limits_exceeded, velocity_limits_exceeded

    for e in effort_limits_exceeded(result.problem, tr):  # written and verified as planned, but said (ffopt.plan.diagnostics)
        lines.append(f"above the URDF effort limit: {e['joint']} {e['peak_Nm']:.4g} N m at t = {e['t_s']:.4g} s "
                     f"> {e['limit_Nm']:.4g} N m (summary.json urdf.effort_limits_exceeded)")
    for e in velocity_limits_exceeded(result.problem, tr):
        lines.append(f"above the URDF velocity limit: {e['joint']} {e['peak_rad_s']:.4g} rad/s at t = {e['t_s']:.4g} s "
                     f"> {e['limit_rad_s']:.4g} rad/s (summary.json urdf.velocity_limits_exceeded)")
    if result.verification is not None:
        lines.append(result.verification.table())
    judged = None if result.verification is None else result.verification.cases.get("feedforward_pd")
    if judged is not None and judged.settle is not None:
        cycle = judged.settle.settled_cycle_s
        move = result.problem.reference.t_motion_end - result.problem.reference.t_motion_start
        lines.append(f"settled cycle (feedforward_pd): " + ("not within the tolerance by the window's end" if cycle is None
                     else f"{cycle:.4g} s from the motion's start to within the tolerance for good (move {move:.4g} s)"))
    if result.monte_carlo is not None:  # [uncertainty]: the plan on the plants of the ranges
        lines.append("over the uncertainty ranges: " + result.monte_carlo.text())
    if "minimum_time" in result.method_choice:
        from ffopt.motion.min_time import minimum_time_text

        lines.append(minimum_time_text(result.method_choice["minimum_time"]))
    return "\n".join(lines)


def cmd_bench(args) -> int:
    from ffopt.bench import run_bench

    print(run_bench(quick=args.quick, repeats=args.repeats,
                    tables=args.table or BENCH_TABLES))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="ffopt", description="Feedforward planning for flexible robot arms.",
                    epilog=EXIT_CODES_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="compute, verify and write a feedforward plan", epilog=EXIT_CODES_HELP,
                       description="Compute, verify and write a feedforward plan. Options left out take the "
                                   "problem file's [solver] and [nlp] settings; an option that does not apply "
                                   "to the method that runs is an error.")
    p.add_argument("problem", help="problem file (TOML), e.g. problems/e12_line.toml")
    p.add_argument("--out", required=True,
                   help="result folder: new, empty, or one ffopt wrote before (only ffopt's own files in it "
                        "are replaced; a user's files are kept); written in full or not at all")
    p.add_argument("--force", action="store_true",
                   help="also write into an existing folder ffopt did not create, beside its files (a file "
                        "of yours with the same name as one of ffopt's is still an error, never replaced)")
    p.add_argument("--method", choices=list(METHODS),
                   help="auto: the zero dynamics choose bdf (minimum phase) or the non-causal nlp, and a "
                        "failed solve falls back to the next formulation; bdf or nlp: only that method; hi, dd "
                        "(automatic dummy derivatives), km, dc: Moberg & Hanssen's solver family, any model; "
                        "dd43..dd49: their hand-made E1 systems; default: the problem's solver.method (default auto)")
    p.add_argument("--order", type=int, choices=range(BDF_ORDER_MIN, BDF_ORDER_MAX + 1), metavar="K",
                   help=f"BDF order k ({BDF_ORDER_MIN}..{BDF_ORDER_MAX}); BDF methods")
    p.add_argument("--step", type=finite_float, metavar="H",
                   help="time step in seconds, e.g. 0.001: the BDF step and the NLP's collocation interval "
                        "(sets solver.step and nlp.step)")
    p.add_argument("--form", choices=BDF_FORMS, help="DAE form: original (I3) or differentiated; method bdf")
    p.add_argument("--scaling-power", type=finite_float, metavar="P",
                   help="scale the constraint rows by (1/h)^P; BDF methods")
    p.add_argument("--backend", choices=BACKENDS,
                   help="NLP backend (method nlp); auto: Newton if the NLP is square, else IPOPT through its C "
                        "interface (ipopt-c)")
    p.add_argument("--warm-start", choices=WARM_STARTS, help="NLP start point: BDF solution, rigid-model feedforward or rest (method nlp)")
    p.add_argument("--verify", choices=VERIFICATION_CASES,
                   help="verification cases: default = the plan open loop and with the motor PD loop; full = also "
                        "the cubic-spline torques, rigid-model feedforward, PD only and the payload mismatch "
                        "(default: the problem's verification.cases)")
    p.add_argument("--no-verify", action="store_true", help="skip the verification simulations")
    p.add_argument("--min-time", action="store_true",
                   help="the shortest move along the path within the problem's limits that ends at rest (as "
                        "reference.duration = \"min\"; limits: nlp.torque_max or \"urdf\", nlp.torque_rate_max, "
                        "the URDF's velocity limits)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-compile", action="store_true", help="run CasADi's virtual machine, no C code")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--sample-time", type=finite_float, metavar="T",
                   help="controller sample period in s: the plan is made for it and written at it ([output] sample_time)")
    p.add_argument("--hold", choices=HOLDS,
                   help="how the controller applies the torque between samples ([output] hold)")
    # --- NLP limits (ffopt/nlp/monitor.py) ---
    p.add_argument("--max-iter", type=int, metavar="N",
                   help="NLP iteration limit (default: the problem's nlp.max_iter, 1000)")
    p.add_argument("--max-cpu-time", type=float, metavar="S",
                   help="NLP CPU-time limit in seconds (this process and the solver's worker: transcription, "
                        "set-up and iterations), per NLP attempt (method auto makes at most two); the same on a "
                        "loaded machine (default: the problem's nlp.max_cpu_time_s, 120)")
    p.add_argument("--max-time", type=float, metavar="S",
                   help="NLP wall-time guard in seconds, per NLP attempt (default: the problem's "
                        "nlp.max_wall_time_s, else 3 x the CPU-time limit)")
    # --- end NLP limits ---
    p.set_defaults(func=cmd_plan)

    b = sub.add_parser("bench", help="time BDF forms against SUNDIALS IDAS, the whole plan process, and the cost "
                                     "against steps and bodies", epilog=EXIT_CODES_HELP)
    b.add_argument("--quick", action="store_true", help="fewer settings, for a smoke test")
    b.add_argument("--table", action="append", choices=list(BENCH_TABLES),
                   help="run only this table (repeatable): forms = BDF forms vs IDAS at Moberg & Hanssen's "
                        "settings, plan = the whole `ffopt plan` process (E12), steps / bodies = time against the "
                        "number of steps / bodies, nlp = the NLP's paths (compiled kernels, VM, nlpsol with MUMPS "
                        "and SPRAL, Newton's step) on E12, motion = minimum-time moves against TOPP-RA and Ruckig "
                        "(E12, UR5); default: all")
    b.add_argument("--repeats", type=positive_int, default=5, help="timed repetitions (the median is reported)")
    b.set_defaults(func=cmd_bench)

    from ffopt.cli import analyze, export, present, schema, simulate

    analyze.add_parser(sub, epilog=EXIT_CODES_HELP)
    export.add_parser(sub, epilog=EXIT_CODES_HELP)  # the inverse model as C for a controller
    simulate.add_parser(sub, epilog=EXIT_CODES_HELP)  # a saved plan on another plant / controller
    present.add_parsers(sub, epilog=EXIT_CODES_HELP)  # sweep, report, animate
    schema.add_parser(sub, epilog=EXIT_CODES_HELP)  # the problem-format reference
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit code (0, 1, 2, 3 or 130, see EXIT_CODES_HELP)."""
    with interrupt.catch_interrupts():
        try:
            args = build_parser().parse_args(argv)
            return args.func(args)
        except SystemExit as exc:  # argparse: --help, --version, bad arguments
            return exc.code if isinstance(exc.code, int) else EXIT_INPUT
        except KeyboardInterrupt:
            return _interrupted()
        except FfoptError as err:
            if interrupt.received():  # a Ctrl-C that native code turned into a solver error
                return _interrupted()
            print(f"ffopt: error: {err}", file=sys.stderr)
            return EXIT_SOLVER if isinstance(err, (SolverError, VerificationError)) else EXIT_INPUT
        except MemoryError:
            if interrupt.received():
                return _interrupted()
            print("ffopt: error: out of memory: the plan's time grid, the model or the sweep is too large for this "
                  "machine; use a larger step (--step, solver.step), a shorter move or fewer runs", file=sys.stderr)
            return EXIT_INPUT
        except NUMERICAL_FAILURES as err:
            if interrupt.received():
                return _interrupted()
            print(f"ffopt: error: numerical failure ({type(err).__name__}: {' '.join(str(err).split())[:200]}); the "
                  "problem's numbers are likely beyond what its arm can mean: check masses, inertias, stiffnesses, "
                  "gear ratios and the step (ffopt analyze PROBLEM shows the modes and zeros)", file=sys.stderr)
            return EXIT_SOLVER
        except Exception:
            if interrupt.received():
                return _interrupted()
            raise


def _numerical_failures() -> tuple[type, ...]:
    import numpy as np

    return (np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError)


NUMERICAL_FAILURES = _numerical_failures()  # an extreme model that slipped past the checks: one line, exit 1


def _interrupted() -> int:
    """One line and the shell's convention 128 + the signal's number (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
    signum = interrupt.signal_number()
    name = {int(s): s.name for s in interrupt.SIGNALS}.get(signum, str(signum))
    print("ffopt: interrupted" if name == "SIGINT" else f"ffopt: stopped by {name}", file=sys.stderr)
    return 128 + signum  # EXIT_INTERRUPTED for SIGINT


if __name__ == "__main__":
    code = main()
    # Under `python -m`, CPython exits by SIGINT instead of with this code if a Ctrl-C ever ended a
    # string exec() (its "unhandled keyboard interrupt" flag, set even when the interrupt was
    # caught); every string exec resets that flag first.
    exec("pass")
    sys.exit(code)
