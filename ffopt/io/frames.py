"""pandas views of a plan: the trajectory (trajectory.csv's columns) and the verification table.

Both work from what a plan folder holds as well (the CSV and summary.json), so a plan computed now and
one loaded from disk (``ffopt.load_plan``) give the same tables.
"""

from __future__ import annotations

import pandas as pd

from ffopt.trajectory import Trajectory

CASE_COLUMNS = ("max_mm", "rms_mm", "start_mm", "final_mm", "max_mrad", "rms_mrad")


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
