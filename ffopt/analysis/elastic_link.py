"""Closed-form inverse dynamics of one elastic link: an exact reference for ffopt's solvers.

The model is the elastic joint of Spong, "Modeling and control of elastic joint robots" (1987),
for one link swinging in a vertical plane (q = 0 hanging down, gravity along +x of the base):

    I q'' + m g c sin q = tau_g,        tau_g = K (qm - q) + D (qm' - q')      (link)
    J qm'' + F qm' + tau_g = u                                                 (motor)

with I the link inertia about the joint, c the distance joint - centre of mass, K, D the gear
stiffness and damping, J the motor inertia and F the viscous motor friction (arm side). The
controlled output is the tool coordinate z = l sin q; the path is the joint move
q(t) = q0 + (q1 - q0) s((t - t_start) / T) of a time law s, so q and all its derivatives are
known exactly and the link equation gives the gear torque tau_g(t) = I q'' + m g c sin q =: G(t).

- D = 0: qm = q + G / K, and qm', qm'' follow by differentiating (G'' needs q'''').
- D > 0: the deflection d = qm - q obeys D d' + K d = G(t), d = G / K at rest. Variation of
  constants with lambda = K / D,
      d(t) = exp(-lambda (t - a)) d(a) + (1 / D) int_a^t exp(-lambda (t - s)) G(s) ds,
  evaluated by 20-point Gauss-Legendre quadrature on panels of at most ``PANEL`` s (G is
  smooth inside the motion and constant in the rests); then d' = (G - K d) / D and
  d'' = (G' - K d') / D.

Finally u = J qm'' + F qm' + G. Nothing here calls ffopt's model or solvers; ``ElasticLink.model``
and ``ElasticLink.reference`` build the same robot and path for ffopt from the parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ffopt.reference.time_laws import TimeLaw, get_time_law

__all__ = ["ElasticLink", "LinkErrors", "LinkMotion"]

PANEL = 1e-3  # s, longest Gauss-Legendre panel of the deflection quadrature (D > 0)
_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)


@dataclass(frozen=True)
class LinkMotion:
    """Exact link angle q, motor angle qm (with derivatives) and motor torque u on times t."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    qm: np.ndarray
    dqm: np.ndarray
    ddqm: np.ndarray
    u: np.ndarray


@dataclass(frozen=True)
class LinkErrors:
    """Errors of a computed inverse (on its own time grid) against the exact one."""

    u: float  # max |u - u_exact| / max |u_exact|
    u_interior: float  # the same, only farther than ``window`` from both junctions
    t_u: float  # s, where the largest error of u sits
    q: float  # rad, max |q - q_exact| (link angle)
    qm: float  # rad, max |qm - qm_exact| (motor angle)
    window: float  # s


@dataclass(frozen=True)
class ElasticLink:
    """A single elastic-gear link moving its angle from ``q_start`` to ``q_end`` (rad) by a time law.

    Defaults: a 10 kg, 1 m link (I = 3 kg m^2 about the joint), gear stiffness 2000 N m/rad
    (4.1 Hz with the motor clamped), motor inertia 0.5 kg m^2, 1.5 rad in 0.5 s.
    """

    mass: float = 10.0  # kg
    com: float = 0.5  # m, joint to centre of mass
    inertia_com: float = 0.5  # kg m^2, about the centre of mass
    length: float = 1.0  # m, joint to tool point
    gravity: float = 9.81  # m/s^2
    stiffness: float = 2.0e3  # N m/rad
    damping: float = 0.0  # N m s/rad
    motor_inertia: float = 0.5  # kg m^2
    viscous_friction: float = 1.0  # N m s/rad, motor side
    q_start: float = -0.5  # rad
    q_end: float = 1.0  # rad
    duration: float = 0.5  # s
    rest_before: float = 0.05  # s
    rest_after: float = 0.2  # s
    time_law: str | TimeLaw = "poly11"

    @property
    def inertia(self) -> float:
        """Link inertia about the joint (parallel-axis theorem)."""
        return self.inertia_com + self.mass * self.com**2

    @property
    def t_end(self) -> float:
        return self.rest_before + self.duration + self.rest_after

    @property
    def junctions(self) -> tuple[float, float]:
        """Start and end of the motion (where it meets the rests)."""
        return self.rest_before, self.rest_before + self.duration

    # --------------------------------------------------------------- exact solution
    def joint_path(self, t, order: int) -> np.ndarray:
        """d^order q / dt^order, exact (the time law's own derivatives)."""
        law = get_time_law(self.time_law)
        tau = (np.asarray(t, dtype=float) - self.rest_before) / self.duration
        s = law(tau, order) * (self.q_end - self.q_start) / self.duration**order
        return s + self.q_start if order == 0 else s

    def gear_torque(self, t, order: int = 0) -> np.ndarray:
        """G = I q'' + m g c sin q and its time derivatives up to order 2."""
        q = [self.joint_path(t, k) for k in range(order + 3)]
        mgc = self.mass * self.gravity * self.com
        gravity = (mgc * np.sin(q[0]),
                   mgc * np.cos(q[0]) * q[1],
                   mgc * (np.cos(q[0]) * q[2] - np.sin(q[0]) * q[1] ** 2))
        return self.inertia * q[order + 2] + gravity[order]

    def deflection(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gear deflection d = qm - q and its first two derivatives at times t."""
        t = np.asarray(t, dtype=float)
        K, D = self.stiffness, self.damping
        if D == 0.0:
            return tuple(self.gear_torque(t, k) / K for k in range(3))
        d = self._damped_deflection(t)
        d1 = (self.gear_torque(t) - K * d) / D
        d2 = (self.gear_torque(t, 1) - K * d1) / D
        return d, d1, d2

    def _damped_deflection(self, t: np.ndarray) -> np.ndarray:
        """d(t) for D > 0 by variation of constants (module docstring)."""
        K, lam = self.stiffness, self.stiffness / self.damping
        a, b = self.junctions
        n_panels = int(np.ceil(self.duration / PANEL))
        edges = np.linspace(a, b, n_panels + 1)
        d_edges = np.empty(n_panels + 1)
        d_edges[0] = self.gear_torque(a) / K  # at rest in equilibrium
        for j in range(n_panels):
            d_edges[j + 1] = self._propagate(edges[j], d_edges[j], edges[j + 1])
        out = np.empty_like(t)
        before, after = t <= a, t >= b
        out[before] = d_edges[0]
        g_end = self.gear_torque(b) / K  # after the motion G is constant: exact exponential decay
        out[after] = g_end + (d_edges[-1] - g_end) * np.exp(-lam * (t[after] - b))
        inside = ~(before | after)
        panel = np.clip(np.searchsorted(edges, t[inside], side="right") - 1, 0, n_panels - 1)
        out[inside] = self._propagate(edges[panel], d_edges[panel], t[inside])
        return out

    def _propagate(self, start, d_start, end):
        """d(end) from d(start), exact exponential times Gauss-Legendre for the forcing term."""
        start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
        lam = self.stiffness / self.damping
        half = 0.5 * (end - start)
        s = (start + half)[..., None] + half[..., None] * _GL_X
        integral = half * np.sum(_GL_W * np.exp(-lam * (end[..., None] - s)) * self.gear_torque(s), axis=-1)
        return np.exp(-lam * (end - start)) * d_start + integral / self.damping

    def exact(self, t) -> LinkMotion:
        """The exact inverse dynamics on the times t (1-D)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        q, dq, ddq = (self.joint_path(t, k) for k in range(3))
        d, d1, d2 = self.deflection(t)
        qm, dqm, ddqm = q + d, dq + d1, ddq + d2
        u = self.motor_inertia * ddqm + self.viscous_friction * dqm + self.gear_torque(t)
        return LinkMotion(t=t, q=q, dq=dq, qm=qm, dqm=dqm, ddqm=ddqm, u=u)

    # --------------------------------------------------------------- the same robot for ffopt
    def chain(self):
        from ffopt.models.chain import Body, Chain, Joint

        body = Body(self.mass, np.array([self.com, 0.0, 0.0]), np.diag([0.0, self.inertia_com, 0.0]))
        joint = Joint(name="q", kind="elastic_gear", axis=np.array([0.0, -1.0, 0.0]), origin=np.zeros(3),
                      body=body, stiffness=self.stiffness, damping=self.damping,
                      motor_inertia=self.motor_inertia, viscous_friction=self.viscous_friction)
        return Chain((joint,), np.array([self.length, 0.0, 0.0]), np.array([self.gravity, 0.0, 0.0]))

    def model(self):
        """ffopt's FlexibleModel of this link with the tool coordinate z as output."""
        from ffopt.models.flexible import FlexibleModel

        return FlexibleModel(self.chain(), ("z",), "elastic link")

    def reference(self, model):
        """The tool path z(t) = l sin q(t) as ffopt's joint-space move (exact derivatives)."""
        from ffopt.reference import JointMove, joint_ptp

        return joint_ptp(JointMove(self.q_start, self.q_end), self.duration, model.output, self.time_law,
                         rest_before=self.rest_before, rest_after=self.rest_after, names=["z"])

    def errors(self, trajectory, window: float = 0.025) -> LinkErrors:
        """Compare an ffopt ``Trajectory`` of this link with the exact solution on its grid."""
        t = np.asarray(trajectory.t, dtype=float)
        exact = self.exact(t)
        du = np.abs(np.asarray(trajectory.u)[:, 0] - exact.u)
        peak = np.abs(exact.u).max()
        interior = np.min([np.abs(t - tj) for tj in self.junctions], axis=0) > window
        return LinkErrors(u=float(du.max() / peak), u_interior=float(du[interior].max() / peak),
                          t_u=float(t[np.argmax(du)]),
                          q=float(np.abs(np.asarray(trajectory.q)[:, 0] - exact.q).max()),
                          qm=float(np.abs(np.asarray(trajectory.qm)[:, 0] - exact.qm).max()), window=window)
