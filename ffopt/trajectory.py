"""The result of a feedforward plan: time grid, motor torques, states, tool path."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trajectory:
    """Feedforward trajectory on a time grid (SI units, radians).

    u: (n, N) motor torques; q, v, a: (n, nq) coordinates [qa; qm], velocities, accelerations;
    qm, dqm: (n, N) the angle and speed of each actuator's motor (for direct-drive joints the
    joint itself); y_ref: (n, n_out) reference; tool: (n, 3) tool position from q.
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

    @property
    def n_inputs(self) -> int:
        return self.u.shape[1]

    def columns(self) -> tuple[list[str], np.ndarray]:
        """Column names and the (n, m) table written to trajectory.csv."""
        N = self.n_inputs
        names = (["t"] + [f"u{i + 1}" for i in range(N)] + [f"qm{i + 1}" for i in range(N)]
                 + [f"dqm{i + 1}" for i in range(N)] + ["tool_x", "tool_y", "tool_z"]
                 + [f"ref_{n}" for n in self.output_names]
                 + [f"q_{n}" for n in self.coordinate_names] + [f"dq_{n}" for n in self.coordinate_names])
        table = np.column_stack([self.t, self.u, self.qm, self.dqm, self.tool, self.y_ref, self.q, self.v])
        return names, table
