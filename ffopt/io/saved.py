"""A plan folder read back: ``ffopt.load_plan("out/e12")``.

What ``PlanResult.save`` (``ffopt plan --out DIR``) wrote: summary.json, trajectory.csv, the problem
as planned (problem.toml) and the plots. ``ffopt report`` and ``ffopt animate`` work from this.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.results import read_trajectory_csv


@dataclass
class SavedPlan:
    folder: Path
    summary: dict

    @cached_property
    def data(self) -> dict[str, np.ndarray]:
        """trajectory.csv as {column: values}."""
        return read_trajectory_csv(self.folder / "trajectory.csv")

    @property
    def files(self) -> list[str]:
        return list(self.summary.get("files", []))

    @property
    def actuated_joints(self) -> list[str]:
        return [c["name"][2:] for c in self.summary["columns"] if c["name"].startswith("u_")]

    @property
    def link_joints(self) -> list[str]:
        return [c["name"][2:] for c in self.summary["columns"] if c["name"].startswith("q_")]

    def to_dataframe(self):
        """trajectory.csv as a pandas DataFrame with units (as ``PlanResult.to_dataframe``)."""
        from ffopt.io.frames import frame_with_units

        return frame_with_units(self.data, self.summary["columns"])

    def verification_dataframe(self):
        """The verification table (as ``PlanResult.verification_dataframe``); None if not verified."""
        from ffopt.io.frames import verification_frame

        report = self.summary.get("verification")
        return None if report is None else verification_frame(report, self.actuated_joints)

    def problem(self, path: str | Path | None = None):
        """The problem that was planned: ``path`` if given, else the folder's problem.toml (the exact
        problem, after any change by name), else the file summary.json names (as given, then relative
        to the folder)."""
        from ffopt.io.problem import load_problem

        if path is not None:
            return load_problem(path)
        if (self.folder / "problem.toml").is_file():
            return load_problem(self.folder / "problem.toml")
        source = Path(self.summary["problem"].get("source", "<memory>"))
        for candidate in (source, self.folder / source):
            if candidate.is_file():
                return load_problem(candidate)
        raise ProblemError(f"{self.folder}: holds no problem.toml and the problem file summary.json names "
                           f"({source}) is not found; give the problem file (--problem FILE)")


def load_plan(folder: str | Path) -> SavedPlan:
    """Read a plan folder written by ``ffopt plan`` or ``PlanResult.save``."""
    folder = Path(folder)
    path = folder / "summary.json"
    if not folder.is_dir():
        raise ProblemError(f"{folder}: no such plan folder (ffopt plan --out {folder} writes one)")
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError:
        raise ProblemError(f"{folder}: not a plan folder (no summary.json; ffopt plan --out DIR writes one)") from None
    except (OSError, ValueError) as err:
        raise ProblemError(f"{path}: cannot read it: {err}") from None
    if not isinstance(summary, dict) or "columns" not in summary or "problem" not in summary:
        raise ProblemError(f"{path}: not a plan summary (no 'problem' and 'columns' entries)")
    if not (folder / "trajectory.csv").is_file():
        raise ProblemError(f"{folder}: no trajectory.csv (the plan folder is incomplete)")
    return SavedPlan(folder, summary)
