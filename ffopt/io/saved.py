"""A plan folder read back: ``ffopt.load_plan("out/e12")``.

What ``PlanResult.save`` (``ffopt plan --out DIR``) wrote: summary.json, trajectory.csv, the problem
as planned (problem.toml) and the plots. ``ffopt report`` and ``ffopt animate`` work from this.
"""

from __future__ import annotations

import json
import warnings
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
        """trajectory.csv as {column: values} (checked: one number per column in every row, a time column)."""
        path = self.folder / "trajectory.csv"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy's "input contained no data": the error below says it
                data = read_trajectory_csv(path)
        except (OSError, ValueError, IndexError) as err:
            raise ProblemError(f"{path}: cannot read the plan's table ({' '.join(str(err).split())[:200]}); plan "
                               "again with ffopt plan") from None
        return _checked_columns(data, path)

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

        if path is not None:  # the user's choice: it must be the robot the plan moves
            problem = load_problem(path)
            check_robot_of_plan(self, problem)
            return problem
        if (self.folder / "problem.toml").is_file():
            return load_problem(self.folder / "problem.toml")
        source = Path(self.summary["problem"].get("source", "<memory>"))
        for candidate in (source, self.folder / source):
            if candidate.is_file():
                return load_problem(candidate)
        raise ProblemError(f"{self.folder}: holds no problem.toml and the problem file summary.json names "
                           f"({source}) is not found; give the problem file (--problem FILE)")


def load_plan(folder: str | Path) -> SavedPlan:
    """Read a plan folder written by ``ffopt plan`` or ``PlanResult.save``; the files it reads are checked
    against the SHA-256 sums ffopt recorded in the folder's marker (a file changed, truncated or removed
    since: ProblemError naming it)."""
    folder = Path(folder)
    path = folder / "summary.json"
    if folder.is_file():
        raise ProblemError(f"{folder}: is a file, not a plan folder; give the folder that ffopt plan --out DIR wrote")
    if not folder.is_dir():
        raise ProblemError(f"{folder}: no such plan folder (ffopt plan --out {folder} writes one)")
    check_plan_files(folder)
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


PLAN_FILES = ("summary.json", "trajectory.csv", "trajectory.npz", "problem.toml")  # what the commands read


def check_plan_files(folder: Path) -> None:
    """Each file a command reads from a plan folder is as ffopt wrote it: present if the marker lists it, with
    the SHA-256 recorded there. A folder without ffopt's marker (copied without it) is read unchecked."""
    from ffopt.io.results import MARKER, file_sha256, read_marker

    recorded = read_marker(folder)
    if recorded is None:
        return
    for name in PLAN_FILES:
        path = folder / name
        if name not in recorded:
            continue
        if not path.is_file():
            raise ProblemError(f"{path}: missing (ffopt wrote it into this plan folder, {MARKER} lists it); the folder "
                               "is incomplete: plan again with ffopt plan, or restore the file")
        if file_sha256(path) != recorded[name]:
            raise ProblemError(f"{path}: changed since ffopt wrote it (its SHA-256 differs from the one in {MARKER}); "
                               "ffopt reads only plans as it wrote them: plan again with ffopt plan, or restore the file")


def _checked_columns(data: dict[str, np.ndarray], path: Path) -> dict[str, np.ndarray]:
    if "t" not in data or not len(data["t"]):
        raise ProblemError(f"{path}: no time column 't' or no rows; plan again with ffopt plan")
    t = data["t"]
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ProblemError(f"{path}: column 't' is not increasing finite times; plan again with ffopt plan")
    return data


# a robot given for a plan (--problem) draws the plan's joint angles: its tool must land on the plan's tool path
ROBOT_MISMATCH_OF_REACH = 0.01


def check_robot_of_plan(plan: SavedPlan, problem) -> None:
    """Raise ProblemError if ``problem``'s robot puts the tool, at the plan's joint angles, away from the tool
    path the plan holds (another robot with the same joint names: other link lengths, frames or tool)."""
    import casadi as ca

    from ffopt.models.rigid_body import tool_position
    from ffopt.sim.baselines import reach

    chain = problem.chain
    names = [j.name for j in chain.joints]
    data = plan.data
    columns = [f"q_{n}" for n in names] + [f"tool_{c}_mm" for c in "xyz"]
    if plan.link_joints != names or any(c not in data for c in columns):
        raise ProblemError(f"{plan.folder}: the plan's joints ({', '.join(plan.link_joints)}, the q_<joint> columns "
                           f"of trajectory.csv) are not the robot's ({', '.join(names)}) in {problem.source}: is it the "
                           "problem this plan was computed for? (--problem FILE)")
    q = np.column_stack([data[f"q_{n}"] for n in names])
    qs = ca.SX.sym("q", len(names))
    f = ca.Function("tool", [qs], [tool_position(chain, qs)])
    tool = np.array(f.map(len(q))(q.T)).T * 1000.0
    planned = np.column_stack([data[f"tool_{c}_mm"] for c in "xyz"])
    off = np.linalg.norm(tool - planned, axis=1)
    reach_mm = 1000.0 * reach(chain)
    allowed = ROBOT_MISMATCH_OF_REACH * (10.0 if problem.flexible_links else 1.0)  # the path holds the links' deflection
    if off.max() > allowed * max(reach_mm, 1.0):
        k = int(off.argmax())
        raise ProblemError(f"{problem.source}: is not the robot of the plan in {plan.folder}: at the plan's joint "
                           f"angles its tool is {off[k]:.4g} mm from the plan's tool path (t = {data['t'][k]:.4g} s); "
                           f"give the problem this plan was computed for ({plan.folder / 'problem.toml'})")
