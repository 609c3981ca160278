"""Writing a plan to disk: trajectory.csv, summary.json and plots, all or nothing.

Everything is written into a temporary sibling directory first and renamed into place at the
end, so a failure never leaves a half-written result directory behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ffopt.trajectory import Trajectory


def write_trajectory_csv(traj: Trajectory, path: Path) -> None:
    names, table = traj.columns()
    np.savetxt(path, table, delimiter=",", header=",".join(names), comments="", fmt="%.12g")


def read_trajectory_csv(path: str | Path) -> dict[str, np.ndarray]:
    """Read a trajectory.csv back into a dict of columns."""
    with open(path) as f:
        names = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {n: data[:, i] for i, n in enumerate(names)}


def write_json(obj: dict, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")


def _json_default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.bool_):
        return bool(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def atomic_directory(out: str | Path, fill) -> Path:
    """Create directory ``out`` with ``fill(tmp_dir)``; replace an existing one only on success."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        fill(tmp)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / out.name)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
