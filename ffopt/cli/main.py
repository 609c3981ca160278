"""Command line: ``ffopt plan``, ``ffopt analyze``, ``ffopt bench``. Errors print one line and exit non-zero."""

from __future__ import annotations

import argparse
import sys
import time

from ffopt.errors import FfoptError
from ffopt.io.problem import METHODS

EXIT_ERROR = 2


def _progress(msg: str, _t0=[None]) -> None:
    if _t0[0] is None:
        _t0[0] = time.perf_counter()
    print(f"[{time.perf_counter() - _t0[0]:7.2f} s] {msg}", file=sys.stderr, flush=True)


def cmd_plan(args) -> int:
    from ffopt.plan import plan

    result = plan(args.problem, method=args.method, order=args.order, step=args.step, form=args.form,
                  scaling_power=args.scaling_power, verify=False if args.no_verify else None,
                  compile=not args.no_compile, progress=None if args.quiet else _progress,
                  backend=args.backend, warm_start=args.warm_start)
    out = result.save(args.out, plots=not args.no_plots)
    if not args.quiet:
        _progress(f"wrote {out}")
    print(_summary_text(result))
    return 0


def _summary_text(result) -> str:
    tr = result.trajectory
    lines = [f"{result.problem.name}: {tr.method}, {len(tr.t)} points, "
             f"solve {tr.stats.get('time_solve_s', float('nan')) * 1e3:.1f} ms, "
             f"peak |u| = {', '.join(f'{x:.4g}' for x in abs(tr.u).max(axis=0))} N m"]
    if result.verification is not None:
        lines.append(result.verification.table())
    return "\n".join(lines)


def cmd_bench(args) -> int:
    from ffopt.bench import run_bench

    print(run_bench(quick=args.quick, repeats=args.repeats))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ffopt", description="Feedforward planning for flexible robot arms.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="compute, verify and write a feedforward plan")
    p.add_argument("problem", help="problem file (TOML), e.g. problems/e12_line.toml")
    p.add_argument("--out", required=True, help="output directory (replaced only on success)")
    p.add_argument("--method", choices=list(METHODS),
                   help="auto: the zero dynamics choose bdf (minimum phase) or the non-causal nlp, and a "
                        "failed solve falls back to the next formulation; bdf or nlp: only that method; hi, dd "
                        "(automatic dummy derivatives), km, dc: seed 000's solver family, any model; dd43..dd49: "
                        "the seed's hand-made E1 systems; default: the problem's solver.method (default auto)")
    p.add_argument("--order", type=int, help="BDF order k (1..6)")
    p.add_argument("--step", type=float, help="step size h in seconds, e.g. 0.001")
    p.add_argument("--form", choices=["I3", "I2", "I1"], help="DAE form: original (I3) or differentiated")
    p.add_argument("--scaling-power", type=float, help="scale the constraint rows by (1/h)^p")
    p.add_argument("--backend", choices=["casadi", "cyipopt", "pyomo", "auto"],
                   help="NLP backend (method nlp); auto: Newton if the NLP is square, else IPOPT via cyipopt")
    p.add_argument("--warm-start", choices=["bdf", "none"], help="NLP start point: BDF solution or rest")
    p.add_argument("--no-verify", action="store_true", help="skip the verification simulations")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-compile", action="store_true", help="run CasADi's virtual machine, no C code")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_plan)

    b = sub.add_parser("bench", help="time BDF forms against SUNDIALS IDAS on E1 and E12")
    b.add_argument("--quick", action="store_true", help="fewer settings, for a smoke test")
    b.add_argument("--repeats", type=int, default=5, help="timed repetitions (the median is reported)")
    b.set_defaults(func=cmd_bench)

    from ffopt.cli import analyze

    analyze.add_parser(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except FfoptError as err:
        print(f"ffopt: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ffopt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
