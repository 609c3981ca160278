"""A plan's result: the trajectory, the verification, the settings, the method choice and summary.json."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffopt._version import __version__
from ffopt.errors import ProblemError, VerificationError
from ffopt.io.problem import Problem
from ffopt.trajectory import Trajectory


@dataclass
class PlanResult:
    problem: Problem
    trajectory: Trajectory
    verification: object | None
    settings: dict
    timings: dict = field(default_factory=dict)
    method_choice: dict = field(default_factory=dict)  # requested, chosen, reason, attempts (method auto)
    rest_to_rest: object | None = None  # ffopt.plan.rest.RestToRest (method_choice["rest_to_rest"] as a record)
    monte_carlo: object | None = None  # ffopt.motion.monte_carlo.MonteCarlo over the [uncertainty] plants

    def summary(self) -> dict:
        tr = self.trajectory
        drives = {} if not tr.electric else {"peak_voltage_V": np.abs(tr.u).max(axis=0).tolist(),
                                             "peak_current_A": np.abs(tr.current).max(axis=0).tolist()}
        return {
            "status": "not_verified" if self.verification is None else self.verification.status,
            "problem": {"name": self.problem.name, "source": self.problem.source,
                        "description": self.problem.description,
                        "outputs": list(self.problem.outputs),
                        "t_end_s": float(self.trajectory.t[-1])},
            "method": self.trajectory.method,
            "method_choice": self.method_choice,
            "settings": self.settings,
            "solver": self.trajectory.stats,
            "wall_time_s": self.timings,
            "peak_torque_Nm": np.abs(tr.torques).max(axis=0).tolist(),
            **drives,
            "reference": reference_summary(self.problem.reference),
            **urdf_summary(self.problem, tr),
            "verification": None if self.verification is None else self.verification.to_dict(),
            "monte_carlo": None if self.monte_carlo is None else self.monte_carlo.summary(),
            "versions": versions(),
        }

    def save(self, out: str | Path, plots: bool = True, force: bool = False) -> Path:
        """Write trajectory.csv/.npz/.mat, problem.toml, summary.json and plots to folder ``out``
        (ffopt.io.results: all or nothing; an existing folder only if ffopt wrote it, or with ``force``
        beside the user's files)."""
        from ffopt.io.results import write_result_folder

        return write_result_folder(out, lambda tmp: self.write_files(tmp, plots), force)

    def write_files(self, folder: Path, plots: bool = True) -> list[str]:
        """Write the plan's files into ``folder`` (no safety checks: use ``save``); returns their names."""
        from ffopt.io.results import write_json, write_trajectory_csv, write_trajectory_mat, write_trajectory_npz

        folder = Path(folder)
        write_trajectory_csv(self.trajectory, folder / "trajectory.csv")
        write_trajectory_npz(self.trajectory, folder / "trajectory.npz")
        write_trajectory_mat(self.trajectory, folder / "trajectory.mat")
        files = ["trajectory.csv", "trajectory.npz", "trajectory.mat", "summary.json"]
        if self.problem.raw is not None:  # the exact problem planned (after changes by name): re-plannable
            (folder / "problem.toml").write_text(f"# The problem as planned (from {self.problem.source}, with every change "
                                                 f"by name); ffopt plan reads it as it is.\n{self.problem.to_toml()}")
            files.insert(3, "problem.toml")
        if plots:
            from ffopt.io.plots import write_plots  # matplotlib: imported only when plotting

            files += write_plots(self.trajectory, self.verification, folder)
        summary = self.summary()
        summary["files"] = files
        summary["columns"] = self.trajectory.column_info()
        write_json(summary, folder / "summary.json")
        return files

    # --- for scripts and notebooks (pandas and matplotlib are imported when used) --------------

    def to_dataframe(self):
        """The trajectory as a pandas DataFrame: trajectory.csv's columns; units in ``df.attrs["units"]``."""
        from ffopt.io.frames import trajectory_frame

        return trajectory_frame(self.trajectory)

    def verification_dataframe(self):
        """One row per verification case (tool errors in mm, peak torques); None without verification."""
        from ffopt.io.frames import verification_frame

        return None if self.verification is None else verification_frame(self.verification.to_dict(),
                                                                          self.trajectory.actuated_joints)

    def simulation_dataframe(self, case: str = "feedforward_pd"):
        """One verification simulation on the plan's grid: ``t``, the torque the motors applied
        (``u_<joint>``: feedforward, + PD where the case has the loop), the simulated tool position
        (``tool_x_mm`` ...), the outputs (``y_<output>_mm`` / rad) and ``error_mm``, the tool error over the
        position outputs (its maximum is the case's ``max_mm``). Cases: ``verification_dataframe().index``."""
        from ffopt.io.frames import simulation_frame

        report = self._verified("simulation_dataframe")
        if case not in report.simulations:
            raise ProblemError(f"simulation_dataframe: no verification case {case!r} in this plan "
                               f"(cases: {', '.join(report.simulations)})")
        return simulation_frame(self.trajectory, report.simulations[case])

    def plot_torques(self):
        """Figure of the motor torques (with the bounds the plan enforced)."""
        from ffopt.io.plots import torque_figure

        return torque_figure(self.trajectory, self.trajectory.stats.get("torque_max_Nm"))

    def plot_tool_path(self):
        """Figure of the simulated tool paths with the reference on top (needs the verification)."""
        from ffopt.io.plots import tool_path_figure

        return tool_path_figure(self.trajectory, self._verified("plot_tool_path"))

    def plot_tool_error(self):
        """Figure of the tool-path error of every verification case (log scale)."""
        from ffopt.io.plots import tool_error_figure

        return tool_error_figure(self.trajectory, self._verified("plot_tool_error"))

    def _verified(self, what: str):
        if self.verification is None:
            raise VerificationError(f"{what}: this plan was not verified (plan(..., verify=True) simulates it)")
        return self.verification


def urdf_summary(problem: Problem, traj) -> dict:
    """{"urdf": ...} for a URDF problem, else {}: the file, the chain from base_link to tip_link, each joint
    with its kind and the URDF's limits (None: not given), the locked joints, and the effort limits the plan
    exceeds (``effort_limits_exceeded``)."""
    u = problem.urdf
    if u is None:
        return {}
    kinds = {j.name: j.kind for j in problem.chain.joints}

    def given(x: float):
        return float(x) if np.isfinite(x) else None

    joints = [{"name": j.name, "kind": kinds.get(j.name), "urdf_type": j.urdf_type, "lower_rad": given(j.q_min),
               "upper_rad": given(j.q_max), "velocity_rad_s": given(j.velocity), "effort_Nm": given(j.effort)}
              for j in u.joints]
    types = u.locked_types  # a locked joint's value is an angle, or a prismatic joint's position
    joints += [{"name": name, "kind": "locked", "urdf_type": types.get(name),
                ("position_m" if types.get(name) == "prismatic" else "angle_rad"): float(x)}
               for name, x in u.locked.items()]
    return {"urdf": {"file": str(u.path), "robot": u.robot, "base_link": u.base_link, "tip_link": u.tip_link,
                     "joints": joints, "effort_limits_exceeded": effort_limits_exceeded(problem, traj),
                     "velocity_limits_exceeded": velocity_limits_exceeded(problem, traj)}}


def effort_limits_exceeded(problem: Problem, traj) -> list[dict]:
    """The actuated joints whose planned peak torque |u| (gear output, as nlp.torque_max bounds it) exceeds
    the URDF's <limit effort>: joint, peak_Nm, t_s (of the peak), limit_Nm."""
    limits = {} if problem.urdf is None else {j.name: j.effort for j in problem.urdf.joints}
    found = []
    for k, name in enumerate(traj.actuated_joints):
        torque = np.abs(traj.torques[:, k])
        i, limit = int(np.argmax(torque)), limits.get(name, np.inf)
        if torque[i] > limit * (1 + 1e-6):  # IPOPT holds a bound to 1e-8 relative (bound_relax_factor)
            found.append({"joint": name, "peak_Nm": float(torque[i]), "t_s": float(traj.t[i]),
                          "limit_Nm": float(limit)})
    return found


def velocity_limits_exceeded(problem: Problem, traj) -> list[dict]:
    """The joints whose planned peak link speed exceeds their speed limit (model.joints' speed_max_rad_s, else the
    URDF's <limit velocity>): joint, peak_rad_s, t_s, limit_rad_s. The rigid path is checked before the solve
    (``check_joint_speeds``); this is the plan as made, after a rest-to-rest or robust time law has reshaped the
    timing along the path (and with the elastic deflection rates)."""
    from ffopt.motion.min_time import joint_speed_limits  # the motion stage: loaded with the planner

    given = joint_speed_limits(problem)
    limits = {} if given is None else {j.name: float(x) for j, x in zip(problem.chain.joints, given)}
    found = []
    for k, joint in enumerate(problem.chain.joints):
        limit = limits.get(joint.name, np.inf)
        if not np.isfinite(limit):
            continue
        speed = np.abs(traj.v[:, k])
        i = int(np.argmax(speed))
        if speed[i] > limit * (1 + 1e-9):
            found.append({"joint": joint.name, "peak_rad_s": float(speed[i]), "t_s": float(traj.t[i]),
                          "limit_rad_s": float(limit)})
    return found


def reference_summary(reference) -> dict:
    """The reference's time line, and for a prefiltered one the filter (order and why, cutoff, settling)."""
    out = {"time_law": reference.time_law, "t_motion_start_s": reference.t_motion_start,
           "t_motion_end_s": reference.t_motion_end, "t_end_s": reference.t_end}
    if getattr(reference, "prefilter", None):
        out["prefilter"] = reference.prefilter
    return out


def output_files(plots: bool, verification: bool) -> list[str]:
    """The files ``PlanResult.save`` writes (for checking an output folder before planning)."""
    from ffopt.io.plots import plot_names

    return ["trajectory.csv", "trajectory.npz", "trajectory.mat", "problem.toml", "summary.json"] + \
        (plot_names(verification) if plots else [])


def versions() -> dict:
    """Versions of Python and of the libraries this run used (SciPy only if it was loaded: a BDF
    plan with the default verification does not need it, and importing it for its version alone
    cost ~20 ms)."""
    import casadi  # loaded already by every plan

    out = {"ffopt": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
           "casadi": casadi.__version__, "numpy": np.__version__}
    if "scipy" in sys.modules:
        out["scipy"] = sys.modules["scipy"].__version__
    return out
