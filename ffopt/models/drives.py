"""DC-motor electrics of the drives (Jankowski & Van Brussel, discrete-time inverse dynamics control
of flexible joint robots, eq. 3): the input of every actuated joint becomes its armature voltage.

For actuated joint j with gear ratio i_j (motor angle = i_j x the arm-side motor angle qm_j, or the
joint angle for a direct drive) and motor-side constants L, R, C_t, C_v:

    L di/dt + R i + C_v i_j vm_j = V        (armature circuit, vm_j the arm-side motor speed)
    tau_j = i_j C_t i                       (torque at the gear output: the mechanical input u)

The currents z = i (one per actuated joint, A) are extra first-order states of the plant: the
simulator integrates them, the inverse DAE carries them as unknowns (the torque rows
tau(q, v, a) = i_j C_t z_j; the voltage is recovered from the circuit with dz/dt), the NLP
collocates them. Every function here is elementwise and takes NumPy or CasADi arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ElectricDrives:
    """The armature circuits of the N actuated joints, in input order (constants as (N,) arrays)."""

    names: tuple[str, ...]  # actuated joints, input order
    ratio: np.ndarray  # gear ratio i (signed)
    inductance: np.ndarray  # H
    resistance: np.ndarray  # Ohm
    torque_constant: np.ndarray  # N m/A
    back_emf_constant: np.ndarray  # V s/rad

    @classmethod
    def from_joints(cls, joints) -> "ElectricDrives":
        """From the actuated ``Joint`` objects (each with ``electrics``), in input order."""
        e = [j.electrics for j in joints]
        arr = lambda name: np.array([getattr(x, name) for x in e], float)  # noqa: E731
        return cls(tuple(j.name for j in joints), np.array([j.gear_ratio for j in joints], float),
                   arr("inductance"), arr("resistance"), arr("torque_constant"), arr("back_emf_constant"))

    @property
    def n_states(self) -> int:
        return len(self.names)

    @property
    def torque_per_ampere(self) -> np.ndarray:
        """d tau / d i on the arm side, N m/A (i_j C_t)."""
        return self.ratio * self.torque_constant

    def back_emf(self, vm):
        """C_v x motor speed, V (vm: arm-side motor speeds)."""
        return self.back_emf_constant * self.ratio * vm

    def torque(self, current):
        """Torque at the gear output, N m (the mechanical input u)."""
        return self.torque_per_ampere * current

    def current_for_torque(self, tau):
        return tau / self.torque_per_ampere

    def current_rate(self, vm, current, voltage):
        """di/dt of the armature circuit, A/s."""
        return (voltage - self.resistance * current - self.back_emf(vm)) / self.inductance

    def voltage(self, vm, current, current_rate):
        """The armature voltage that gives di/dt = current_rate (the circuit solved for V)."""
        return self.inductance * current_rate + self.resistance * current + self.back_emf(vm)

    def steady_current(self, vm, voltage):
        """The current at which di/dt = 0 under ``voltage`` at motor speed vm."""
        return (voltage - self.back_emf(vm)) / self.resistance

    def volts_per_newton_metre(self) -> np.ndarray:
        """Static voltage per arm-side torque, R / (i_j C_t) (V per N m): converts torque feedback
        gains into voltage gains (the back EMF adds its own damping)."""
        return self.resistance / self.torque_per_ampere

    def voltage_table(self, t, dqm, tau) -> tuple[np.ndarray, np.ndarray]:
        """(voltage, current) (n, N) that make the drives deliver the torque table tau (n, N) on the
        grid t at arm-side motor speeds dqm (n, N); di/dt by second-order finite differences
        (``numpy.gradient``). For baselines given as torque tables (rigid-model feedforward)."""
        current = self.current_for_torque(np.asarray(tau, float))
        rate = np.gradient(current, np.asarray(t, float), axis=0, edge_order=2) if len(t) > 2 else \
            np.zeros_like(current)
        return self.voltage(np.asarray(dqm, float), current, rate), current
