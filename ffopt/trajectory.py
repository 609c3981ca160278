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
    hold: str | None = None  # how u is applied between rows: "zoh" (held from a row to the next), "linear" / None

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
        if self.hold == "zoh":
            u_meaning += " (held from this row's time to the next row)"
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


def sample_nodes(n_steps: int, m: int) -> np.ndarray:
    """Indices of the sample instants on a grid of n_steps steps, m steps per sample: 0, m, 2m, ...
    and the last grid point (a shorter last sample if n_steps is not a multiple of m)."""
    idx = np.arange(0, n_steps + 1, m)
    return idx if idx[-1] == n_steps else np.append(idx, n_steps)


def resample_to_hold(traj: Trajectory, m: int, hold: str) -> Trajectory:
    """The plan ``traj`` (on a constant-step grid) as a controller applies it: rows every m steps.

    States, references and motor-angle references are taken at the sample instants. The input (the
    solver's, linear between its steps) is replaced by its L2 projection onto the hold's functions:
    ``linear``: the continuous piecewise-linear function on the samples closest in L2 (a tridiagonal
    solve; for m = 1 the solver's own node values). On E12 with a BDF step of 2 ms / 4 and a 2 ms
    sample this re-simulates to 0.04 mm instead of 0.64 mm for the node values (results/nlp.md).
    ``zoh``: the average of the input over each sample (the same impulse per sample) corrected for the
    first moment of the hold: c_i = mean_i(u) - T^2/12 mean_i(u'') (= mean_i(u) - T/12 (u'(t_i+1) - u'(t_i)),
    u' by second-order differences on the solver's grid). Over a sample the held value leaves
    int (s - mid)(c - u) ds = -T^3/12 u' (to leading order), whose sum over the samples acts on a motion
    like a torque error T^2/12 u''; the correction cancels it (E12, 2 ms: 0.62 mm instead of 1.24 mm from
    a BDF on the same step, 0.039 / 0.0099 mm instead of 0.66 / 0.63 mm from a BDF on 1/4 / 1/8 of it).
    The last row repeats the last sample's value; it is never applied. With electrics the
    gear torques and currents (states) are taken at the sample instants. ``stats`` records what was done.
    """
    from dataclasses import replace

    n = len(traj.t) - 1
    idx = sample_nodes(n, m)
    stats = dict(traj.stats)

    def held(table):
        table = np.asarray(table, float)
        if hold == "linear":
            return table[idx].copy() if m == 1 else _project_linear(traj.t, table, idx)
        dt = np.diff(traj.t)[:, None]
        area = np.concatenate([np.zeros((1, table.shape[1])),
                               np.cumsum(0.5 * (table[1:] + table[:-1]) * dt, axis=0)])
        T = np.diff(traj.t[idx])[:, None]
        avg = np.diff(area[idx], axis=0) / T
        du = np.gradient(table, traj.t, axis=0, edge_order=2)[idx] if len(traj.t) > 2 else np.zeros_like(table[idx])
        c = avg - T / 12.0 * np.diff(du, axis=0)
        return np.vstack([c, c[-1:]])

    stats.update({"hold": hold, "sample_time_s": float(traj.t[idx[1]] - traj.t[idx[0]]) if len(idx) > 1 else None,
                  "resampling": ("node values of the solver's input (its own grid)" if hold == "linear" and m == 1
                                 else "L2 projection of the solver's input (linear between its steps) onto the "
                                 "continuous piecewise-linear functions on the samples, every %d steps" % m
                                 if hold == "linear" else
                                 "average over each sample of the solver's input (linear between its steps) "
                                 "minus T^2/12 times the sample's mean second derivative (first-moment "
                                 "correction of the hold), every %d steps" % m),
                  "solver_points": n + 1})
    return replace(traj, t=traj.t[idx].copy(), u=held(traj.u), q=traj.q[idx].copy(), v=traj.v[idx].copy(),
                   a=traj.a[idx].copy(), qm=traj.qm[idx].copy(), dqm=traj.dqm[idx].copy(),
                   y_ref=traj.y_ref[idx].copy(), tool=traj.tool[idx].copy(), stats=stats,
                   torque=None if traj.torque is None else traj.torque[idx].copy(),
                   current=None if traj.current is None else traj.current[idx].copy(), hold=hold)


def _project_linear(t: np.ndarray, table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Node values on t[idx] of the L2 projection of the piecewise-linear table (n, N) on t onto the continuous
    piecewise-linear functions on the coarse grid t[idx] (nested: every fine interval in one coarse one)."""
    from scipy.linalg import solve_banded

    T = t[idx]
    H = np.diff(T)
    coarse = np.searchsorted(idx, np.arange(len(t) - 1), side="right") - 1  # coarse element of each fine interval
    b = np.zeros((len(T), table.shape[1]))
    dt = np.diff(t)
    for frac, weight in ((0.0, 1 / 6), (0.5, 4 / 6), (1.0, 1 / 6)):  # Simpson: exact for (linear u) x (hat)
        s = t[:-1] + frac * dt
        us = table[:-1] + frac * (table[1:] - table[:-1])
        theta = ((s - T[coarse]) / H[coarse])[:, None]
        np.add.at(b, coarse, weight * dt[:, None] * (1 - theta) * us)
        np.add.at(b, coarse + 1, weight * dt[:, None] * theta * us)
    bands = np.zeros((3, len(T)))  # mass matrix of the hats: H/6 off the diagonal, (H_left + H_right)/3 on it
    bands[0, 1:] = H / 6
    bands[2, :-1] = H / 6
    bands[1, :-1] += H / 3
    bands[1, 1:] += H / 3
    return solve_banded((1, 1), bands, b)
