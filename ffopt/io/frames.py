"""pandas views of a plan: the trajectory (trajectory.csv's columns) and the verification table.

Both work from what a plan folder holds as well (the CSV and summary.json), so a plan computed now and
one loaded from disk (``ffopt.load_plan``) give the same tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ffopt.trajectory import LENGTH_OUTPUTS, Trajectory

CASE_COLUMNS = ("max_mm", "rms_mm", "start_mm", "final_mm", "max_mrad", "rms_mrad", "residual_mm", "settling_time_s",
                "settled_cycle_s")


def trajectory_frame(traj: Trajectory) -> pd.DataFrame:
    """trajectory.csv as a DataFrame; ``attrs["units"]`` and ``attrs["meanings"]`` map column -> text."""
    spec = traj.column_spec()
    return frame_with_units({name: values for name, _, _, values in spec},
                            [{"name": n, "unit": u, "meaning": m} for n, u, m, _ in spec])


def frame_with_units(columns: dict, info: list[dict]) -> pd.DataFrame:
    """A DataFrame of ``columns`` with the units and meanings of ``info`` (summary.json's ``columns``)."""
    df = pd.DataFrame(columns)
    df.attrs["units"] = {c["name"]: c["unit"] for c in info}
    df.attrs["meanings"] = {c["name"]: c["meaning"] for c in info}
    return df


def verification_frame(report: dict, joints: list[str]) -> pd.DataFrame:
    """One row per verification case (index ``case``): tool errors in mm (angle outputs in mrad, where
    the model has them), peak applied torque per actuated joint, description. Skipped cases are in
    ``attrs["skipped"]`` with the reason."""
    rows = []
    for name, case in report["tool_error"].items():
        row = {"case": name, **{k: case[k] for k in CASE_COLUMNS if k in case}}
        row.update({f"peak_u_{j}_Nm": x for j, x in zip(joints, case["peak_torque_Nm"])})
        row["description"] = case["description"]
        rows.append(row)
    df = pd.DataFrame(rows).set_index("case")
    df.attrs["skipped"] = dict(report.get("skipped", {}))
    df.attrs["units"] = {**{c: c.rsplit("_", 1)[1] for c in df.columns if c in CASE_COLUMNS},
                         **{c: "N m" for c in df.columns if c.startswith("peak_u_")}}
    return df


def simulation_frame(traj: Trajectory, sim) -> pd.DataFrame:
    """A verification simulation (``ffopt.sim.plant.SimResult`` on the plan's grid) as a DataFrame with units."""
    joints = traj.actuated_joints
    cols = [("t", "s", "time", sim.t)]
    cols += [(f"u_{j}", "N m", f"motor torque applied, joint {j}", sim.u_applied[:, i]) for i, j in enumerate(joints)]
    cols += [(f"tool_{c}_mm", "mm", f"simulated tool position {c}", 1000.0 * sim.tool[:, i])
             for i, c in enumerate("xyz")]
    position = [i for i, name in enumerate(traj.output_names) if name in LENGTH_OUTPUTS]
    for i, name in enumerate(traj.output_names):
        length = name in LENGTH_OUTPUTS
        cols.append((f"y_{name}_mm" if length else f"y_{name}", "mm" if length else "rad",
                     f"simulated output {name}", (1000.0 if length else 1.0) * sim.y[:, i]))
    if position:
        error = 1000.0 * np.linalg.norm(sim.y[:, position] - traj.y_ref[:, position], axis=1)
        cols.append(("error_mm", "mm", "tool error over the position outputs", error))
    return frame_with_units({name: values for name, _, _, values in cols},
                            [{"name": n, "unit": u, "meaning": m} for n, u, m, _ in cols])
