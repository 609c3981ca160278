"""Support for the comparison-study notebooks in this folder (jupytext percent-format ``.py`` files).

In a notebook::

    import nbsupport
    SIZE = nbsupport.size()        # "ci" (reduced grids: what CI runs) or "full" (the study)

``$FFOPT_NOTEBOOK_SIZE`` sets the size (default ``full``). The notebooks use ffopt's public API only;
this module finds the shipped problems, asks for every verification case, and collects the
conclusion table, whose claims are checked (a claim that does not hold raises, so CI fails).

Headless, from the command line (needs the test extra: jupytext, nbclient, ipykernel)::

    python results/notebooks/nbsupport.py [--size ci|full] [--write] [NAME ...]

executes the notebooks in a kernel of this Python, prints each one's wall time, and with ``--write``
saves the executed notebook (outputs and plots) as ``NAME.ipynb`` beside its ``.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]  # the repository: problems/, results/
SIZES = ("ci", "full")
SIZE_VARIABLE = "FFOPT_NOTEBOOK_SIZE"
KERNEL = "ffopt-notebook"


def size() -> str:
    """The study size from $FFOPT_NOTEBOOK_SIZE: "ci" (reduced grids) or "full" (default)."""
    value = os.environ.get(SIZE_VARIABLE, "full").strip().lower()
    if value not in SIZES:
        raise ValueError(f"${SIZE_VARIABLE}: must be one of {', '.join(SIZES)}, got {value!r}")
    return value


def notebooks() -> list[Path]:
    """The study notebooks of this folder, in their order (a_..., b_..., ...)."""
    return sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name)


# --- inside a notebook --------------------------------------------------------------------------


def problem(name: str):
    """A shipped problem, problems/<name>.toml."""
    import ffopt

    return ffopt.load_problem(ROOT / "problems" / f"{name}.toml")


def every_case(problem, payload: bool = False):
    """The problem with every verification case: the rigid-model and PD-only baselines besides the
    plan's own open-loop and PD cases; the payload-mismatch cases only if ``payload``. (ffopt versions
    whose default verification is shorter have ``verification.cases = "full"`` for this.)"""
    values = {} if payload else {"verification.payload_scales": []}
    if hasattr(problem.verification, "cases"):
        values["verification.cases"] = "full"
    return problem.with_values(values) if values else problem


def require_cases(table, cases) -> None:
    """Fail with the names if the verification table lacks a case a study needs."""
    missing = [c for c in cases if c not in table.index]
    if missing:
        raise AssertionError(f"verification cases {missing} missing (the table has {list(table.index)})")


def torque_difference(result, reference) -> float:
    """max |u - u_ref| over ``result``'s grid points and motors (the reference's torques linear between its
    grid points) relative to the reference's peak torque."""
    import numpy as np

    t, u = result.trajectory.t, result.trajectory.u
    u_ref = np.column_stack([np.interp(t, reference.trajectory.t, col) for col in reference.trajectory.u.T])
    return float(np.abs(u - u_ref).max() / np.abs(reference.trajectory.u).max())


class Conclusions:
    """The conclusion table of a notebook: one row per finding, with what ffopt measured, the published
    figure where there is one, and whether the claim holds (None: a measurement, no claim)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, finding: str, measured: str, holds: bool | None = None, published: str | None = None) -> None:
        row = {"finding": finding, "ffopt (measured here)": measured}
        if published is not None or any("published" in r for r in self.rows):
            row["published"] = published or "-"
        row["holds"] = "-" if holds is None else ("yes" if holds else "NO")
        self.rows.append(row)

    def table(self):
        import pandas as pd

        df = pd.DataFrame(self.rows).fillna("-")
        columns = ["finding", "published", "ffopt (measured here)", "holds"]
        return df[[c for c in columns if c in df.columns]]

    def check(self) -> None:
        """Raise if a claim does not hold (the table says which)."""
        failed = [r["finding"] for r in self.rows if r["holds"] == "NO"]
        if failed:
            raise AssertionError(f"conclusions that do not hold: {failed}")


# --- executing notebooks headless ------------------------------------------------------------------


def execute(path: str | Path, size_: str = "ci", timeout: float = 600.0, write: bool = False):
    """Execute a percent-format notebook through jupytext and nbclient in a kernel of this Python
    (sys.executable: the kernel sees the same ffopt), at ``size_``. Returns (notebook, wall seconds);
    a failing cell raises nbclient's CellExecutionError; ``timeout`` is per cell (s)."""
    import jupytext
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    if size_ not in SIZES:
        raise ValueError(f"size: must be one of {', '.join(SIZES)}, got {size_!r}")
    path = Path(path).resolve()
    nb = jupytext.read(path)
    with tempfile.TemporaryDirectory(prefix="ffopt-kernel-") as tmp:
        spec_dir = Path(tmp) / KERNEL
        spec_dir.mkdir()
        spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": f"ffopt ({sys.executable})", "language": "python",
                "env": {SIZE_VARIABLE: size_,
                        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}}
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        km = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[tmp]))
        client = NotebookClient(nb, km=km, timeout=timeout, kernel_name=KERNEL,
                                resources={"metadata": {"path": str(path.parent)}})
        tic = time.perf_counter()
        try:
            client.execute()
        finally:  # the kernel is ours (a KernelManager given to nbclient is left running by it)
            if client.kc is not None:
                client.kc.stop_channels()
            if km.has_kernel:
                km.shutdown_kernel(now=True)
        seconds = time.perf_counter() - tic
    if write:
        import nbformat

        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, path.with_suffix(".ipynb"))
    return nb, seconds


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Execute the study notebooks headless (jupytext + nbclient).")
    parser.add_argument("names", nargs="*", help="notebooks (file names or stems; default: all)")
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument("--write", action="store_true", help="save each executed notebook as NAME.ipynb")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per cell, s (default 3600)")
    args = parser.parse_args(argv)
    chosen = [p for p in notebooks() if not args.names or p.name in args.names or p.stem in args.names]
    if not chosen:
        parser.error(f"no notebook named {args.names} in {HERE}")
    for path in chosen:
        _, seconds = execute(path, args.size, args.timeout, args.write)
        print(f"{path.name}: {seconds:.1f} s at size {args.size}" + (f", wrote {path.stem}.ipynb" if args.write else ""),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
