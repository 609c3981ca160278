"""``ffopt simulate PROBLEM.toml (--plan DIR | --exported DIR) [--plant PLANT.toml] [--set key=value ...] [--controller ...]``.

A saved plan on a plant that may differ from the planning model, in a feedback loop
(``ffopt.closed_loop``). Errors and exit codes are handled by ``ffopt.cli.main.main``.
"""

from __future__ import annotations

import tomllib

from ffopt.errors import ProblemError


def add_parser(subparsers, epilog: str = ""):
    from ffopt.cli.common import positive_float

    from ffopt.control.gains import CONTROLLERS

    p = subparsers.add_parser(
        "simulate", epilog=epilog, help="re-simulate a saved plan on another plant and/or with another controller",
        description="Simulate a saved plan (ffopt plan --out DIR) on a plant that may differ from the planning model "
                    "(fields changed by name, or another problem file's robot) with a feedback controller designed on "
                    "the planning model, and print the tool-error table (with --out also write simulation.csv, "
                    "summary.json and plots). On the nominal plant, --controller pd reproduces the plan's "
                    "feedforward_pd verification.")
    p.add_argument("problem", help="the problem the plan was made for (TOML), e.g. DIR/problem.toml")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan", metavar="DIR", help="a plan folder written by ffopt plan")
    source.add_argument("--exported", metavar="DIR",
                        help="instead of a plan: a folder written by ffopt export (compiled with the system C compiler "
                             "if needed); its step function runs sample by sample on PROBLEM's reference and its "
                             "torques and motor references replace the plan's table (same plant, controller, settle "
                             "window and verdict). PROBLEM's time law as given: for the rest-to-rest move export and "
                             "simulate a plan folder's problem.toml")
    p.add_argument("--plant", metavar="PLANT.toml",
                   help="a problem file whose [model] is the simulated robot (same joints and outputs as the plan's)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="values",
                   help="change a field of the plant's robot by dotted name, value as in TOML, e.g. "
                        "model.joints.q3.stiffness=0.8e5, model.payload.mass=20, 'model.payload.com=[0.2, 0, 0]' "
                        "(repeatable; on PLANT.toml if given, else on PROBLEM)")
    p.add_argument("--controller", choices=list(CONTROLLERS), default="pd",
                   help="none: open loop; pd: motor-side PD (default, as the plan's verification); pd+state: PD plus "
                        "link-side state feedback (LQR at the start pose)")
    p.add_argument("--baselines", action="store_true",
                   help="also run PD with static gravity compensation only (Tomei) and the rigid-model feedforward "
                        "with the same controller")
    p.add_argument("--pd-bandwidth", type=positive_float, metavar="HZ",
                   help="bandwidth of the motor loop (default: the problem's verification.pd_bandwidth_hz)")
    p.add_argument("--pd-damping", type=positive_float, metavar="ZETA",
                   help="damping ratio of the motor loop (default: the problem's verification.pd_damping_ratio)")
    p.add_argument("--tool-weight", type=float, metavar="RHO",
                   help="pd+state: LQR weight of the tool error against the motor errors (default 100)")
    p.add_argument("--out", metavar="DIR2",
                   help="result folder for simulation.csv, summary.json and plots (new, empty, or one ffopt simulate "
                        "wrote); without it only the table is printed")
    p.add_argument("--force", action="store_true", help="also write into an existing folder ffopt did not create")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)
    return p


def parse_values(items: list[str]) -> dict:
    """['model.joints.q3.stiffness=0.8e5', ...] -> {key: value}; values are TOML literals (bare words: strings)."""
    values = {}
    for item in items:
        key, sep, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key or not text:
            raise ProblemError(f"--set {item!r}: expected KEY=VALUE, e.g. model.joints.q3.stiffness=0.8e5")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            if any(c in text for c in "[]{}\"'=,"):
                raise ProblemError(f"--set {key}: {text!r} is not a TOML value (numbers 8e4, arrays [0.2, 0, 0], "
                                   "strings \"text\")") from None
            value = text
        values[key] = value
    return values


def run(args) -> int:
    from ffopt.cli.common import progress_printer
    from ffopt.closed_loop import output_files, simulate
    from ffopt.io.results import check_output_folder

    values = parse_values(args.values)
    if args.out:
        check_output_folder(args.out, output_files(not args.no_plots), args.force, "simulate")  # before simulating
    say = progress_printer(args.quiet)
    result = simulate(args.problem, args.plan, exported=args.exported, plant=args.plant, values=values, controller=args.controller,
                      baselines=args.baselines, bandwidth_hz=args.pd_bandwidth, damping_ratio=args.pd_damping,
                      tool_weight=args.tool_weight, progress=say)
    if args.out:
        out = result.save(args.out, plots=not args.no_plots, force=args.force)
        say(f"wrote {out}")
    print(result.table())
    from ffopt.cli.common import plan_exit_code

    return plan_exit_code(result)
