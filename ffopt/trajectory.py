"""The result of a feedforward plan: time grid, motor torques, states, tool path."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


LENGTH_OUTPUTS = ("x", "y", "z")  # tool coordinates (m inside ffopt, mm in files); other outputs are angles


@dataclass
class Trajectory:
    """Feedforward trajectory on a time grid (SI units, radians).

    u: (n, N) the planned input: motor torques, or with DC-motor electrics the armature voltages
    (``input_unit`` "V"; then ``torque`` (n, N) holds the torques at the gear outputs and ``current``
    (n, N) the armature currents); q, v, a: (n, nq) coordinates [qa; qm], velocities, accelerations;
    qm, dqm: (n, N) the angle and speed of each actuator's motor (for direct-drive joints the
    joint itself); y_ref: (n, n_out) reference; tool: (n, 3) tool position from q;
    input_names: the actuated joint of each input (chain order); link_names: the joints of the
    link-side coordinates qa = q[:, :n_link]. Both name the CSV columns.
    """

    t: np.ndarray
    u: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    qm: np.ndarray
    dqm: np.ndarray
    y_ref: np.ndarray
    tool: np.ndarray
    coordinate_names: list[str]
    output_names: list[str]
    method: str
    stats: dict = field(default_factory=dict)
    input_names: list[str] | None = None
    link_names: list[str] | None = None
    link_units: list[str] | None = None  # unit of each link-side coordinate ("rad"; "m" for modal coordinates)
    torque: np.ndarray | None = None  # (n, N) gear-output torques when u is not the torque (electrics)
    current: np.ndarray | None = None  # (n, N) armature currents (electrics)
    input_unit: str = "N m"  # unit of u: "N m" (torque) or "V" (armature voltage)

    @property
    def torques(self) -> np.ndarray:
        """(n, N) torques at the gear outputs (N m), whatever the input is."""
        return self.u if self.torque is None else self.torque

    @property
    def electric(self) -> bool:
        return self.current is not None

    @property
    def n_inputs(self) -> int:
        return self.u.shape[1]

    @property
    def actuated_joints(self) -> list[str]:
        """Names of the actuated joints in input order (``1``, ``2``, ... if not known)."""
        return list(self.input_names) if self.input_names is not None else [str(i + 1) for i in range(self.n_inputs)]

    def column_spec(self) -> list[tuple[str, str, str, np.ndarray]]:
        """(name, unit, meaning, values) of every trajectory.csv column, in file order."""
        cols = [("t", "s", "time", self.t)]
        joints = self.actuated_joints
        u_meaning = "feedforward armature voltage (the planned input)" if self.electric else "feedforward motor torque"
        tables = [("u", self.input_unit, u_meaning, self.u)]
        if self.electric:
            tables += [("torque", "N m", "motor torque at the gear output (arm side)", self.torque),
                       ("current", "A", "armature current", self.current)]
        tables += [("qm", "rad", "motor angle reference for the motor-side loop", self.qm),
                   ("dqm", "rad/s", "motor speed reference", self.dqm)]
        for prefix, unit, meaning, data in tables:
            cols += [(f"{prefix}_{j}", unit, f"{meaning}, joint {j}", data[:, i]) for i, j in enumerate(joints)]
        cols += [(f"tool_{c}_mm", "mm", f"planned tool position {c} (from the planned joint angles)",
                  1000.0 * self.tool[:, i]) for i, c in enumerate("xyz")]
        for i, name in enumerate(self.output_names):
            if name in LENGTH_OUTPUTS:
                cols.append((f"ref_{name}_mm", "mm", f"reference of tool output {name}", 1000.0 * self.y_ref[:, i]))
            else:
                cols.append((f"ref_{name}", "rad", f"reference of output {name}", self.y_ref[:, i]))
        links = self.link_names if self.link_names is not None else \
            [n for n in self.coordinate_names if not n.startswith("qm_")]
        units = self.link_units or ["rad"] * len(links)
        angle = {"rad": "link-side angle of joint", "m": "modal coordinate (its share of the tip deflection)"}
        speed = {"rad": "link-side speed of joint", "m": "rate of the modal coordinate"}
        cols += [(f"q_{j}", un, f"{angle[un]} {j}", self.q[:, i]) for i, (j, un) in enumerate(zip(links, units))]
        cols += [(f"dq_{j}", f"{un}/s", f"{speed[un]} {j}", self.v[:, i]) for i, (j, un) in enumerate(zip(links, units))]
        return cols

    def columns(self) -> tuple[list[str], np.ndarray]:
        """Column names and the (n, m) table written to trajectory.csv."""
        spec = self.column_spec()
        return [c[0] for c in spec], np.column_stack([c[3] for c in spec])

    def column_info(self) -> list[dict]:
        """Every column's name, unit and meaning (the ``columns`` entry of summary.json)."""
        return [{"name": n, "unit": unit, "meaning": meaning} for n, unit, meaning, _ in self.column_spec()]
