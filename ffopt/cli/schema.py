"""``ffopt schema [--markdown] [SECTION]``: the problem- and sweep-file reference, generated from the schemas.

Errors and exit codes are handled by ``ffopt.cli.main.main``.
"""

from __future__ import annotations

import os
import sys


def add_parser(subparsers, epilog: str = ""):
    p = subparsers.add_parser(
        "schema", epilog=epilog,
        help="print the problem- and sweep-file reference: every key with type, unit, default and meaning",
        description="Print the reference of problem and sweep files, generated from the schemas ffopt validates "
                    "them with: the conventions, then every table with each key's type, unit, default, allowed "
                    "values and meaning, and examples from the shipped problem files. The same as Markdown is "
                    "docs/problem-format.md in the repository (ffopt schema --markdown).")
    p.add_argument("section", nargs="?",
                   help="one table, e.g. model, model.joints, reference.arc, nlp, sweep.runs; or one key, e.g. "
                        "model.joints.stiffness (default: everything)")
    p.add_argument("--markdown", action="store_true", help="print Markdown (the page docs/problem-format.md)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ffopt.io import format_reference as ref

    selected = ref.find(args.section) if args.section else None
    if args.markdown:
        out = ref.markdown() if selected is None else ref.markdown_sections(selected)
    else:
        out = ref.text(selected)
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:  # `ffopt schema | head`: the reader has gone, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
