"""Butterworth prefilter of a raw reference (Thuemmel, Otter & Bals, control of robots with elastic
joints based on automatic generation of inverse dynamics models, 2001, eq. 12).

A raw reference that is not smooth enough to be inverted through an elastic gear (a step of the
joint angles, or a point-to-point profile with piecewise-constant acceleration) is passed through
a low-pass Butterworth filter of order n and cutoff f_c,

    H(s) = w^n / B_n(s),   B_n(s) = prod_k (s - p_k),   p_k = w exp(i (pi/2 + (2k - 1) pi / (2n))),

w = 2 pi f_c, k = 1..n. In the paper's controller canonical form the filter states are the output
and its first n - 1 derivatives, so the filtered reference is C^(n-1) and its n-th derivative
jumps where the raw input jumps. ffopt does not integrate the filter: it writes the filter's
response to the piecewise-polynomial raw input in closed form, as a CasADi expression of t whose
every derivative is exact (repeated differentiation of exp/cos/sin and polynomials).

Raw input. A scalar path parameter s(t) (0 before, 1 after the raw motion) written as a sum of
truncated powers, s(t) = sum_j c_j (t - t_j)_+^m_j / m_j!: a step at t0 is one term (t0, 0, 1);
a trapezoidal speed profile is four terms of degree 2 (acceleration +a, 0, -a). The references
move q(t) = q_start + (q_end - q_start) y(t) with y the filtered s: the filter is linear with DC
gain 1, so filtering each joint is the same as filtering s.

Closed form. The response of H to (t)_+^m / m! is, for tau = t - t_j >= 0,

    g_m(tau) = sum_{i=0..m} h_i tau^(m-i) / (m-i)!  +  sum_k R_k exp(p_k tau) / p_k^(m+1),

with H(s) = sum_i h_i s^i near s = 0 (h_0 = 1: DC gain) and R_k = w^n / prod_{l != k} (p_k - p_l) the
residues of H (partial fractions of H(s) / s^(m+1)); conjugate poles are combined into
2 exp(sigma tau) (Re C cos(omega tau) - Im C sin(omega tau)). g_m and its first n + m - 1
derivatives vanish at tau = 0.

Settling. After the raw motion ends (last knot t_J) the output is y(t) = 1 + sum_k A_k exp(p_k (t - t_J)),
so |y(t) - 1| <= E(t - t_J) = sum_k |A_k| exp(Re(p_k) (t - t_J)), a decreasing bound. The settling
time is where E falls to ``tolerance`` (relative to the move); the slowest pole has Re(p) =
-w sin(pi / (2n)), so a higher order settles more slowly at the same cutoff.

Trade-off of the cutoff. The filter delays a ramp by the DC group delay h_1 = -a_1 / w with
a_1 = 1 / sin(pi / (2n)) (``Butterworth.delay``); the k-th derivative of a filtered step scales
like w^k, so the motor torque through an elastic gear (which contains the 3rd or 4th derivative)
grows like w^3 to w^4 for a step, while a point-to-point profile that already limits speed and
acceleration is changed much less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import casadi as ca
import numpy as np

from ffopt.errors import ProblemError

__all__ = ["Butterworth", "RawProfile", "step_profile", "ptp_profile", "filtered_reference_expression",
           "DEFAULT_SETTLE_TOLERANCE", "RAW_KINDS"]

RAW_KINDS = ("step", "ptp")
DEFAULT_SETTLE_TOLERANCE = 1e-6  # relative to the move: 1 urad per rad of joint travel


@dataclass(frozen=True)
class RawProfile:
    """Raw path parameter s(t) = sum_j c_j (t - t_j)_+^m_j / m_j!, 0 before ``t_start``, 1 after ``t_end``.

    ``knots``: tuples (t_j, m_j, c_j). ``kind``: "step" or "ptp" (for reports).
    """

    kind: str
    knots: tuple[tuple[float, int, float], ...]
    t_start: float
    t_end: float

    @property
    def degree(self) -> int:
        """Largest m_j: the raw input is C^(degree - 1); its derivative ``degree`` jumps."""
        return max(m for _, m, _ in self.knots)

    def evaluate(self, t, order: int = 0) -> np.ndarray:
        """d^order s / dt^order at the times t (NumPy; one-sided from the right at a knot)."""
        t = np.asarray(t, dtype=float)
        out = np.zeros_like(t)
        for tj, m, c in self.knots:
            if order > m:
                continue
            tau = t - tj
            on = tau >= 0
            out = out + np.where(on, c * np.where(on, tau, 0.0) ** (m - order) / math.factorial(m - order), 0.0)
        return out


def step_profile(t0: float) -> RawProfile:
    """A unit step of the path parameter at t0 (the paper's benchmark: all joints 0 -> 1 rad at t = 0.1 s)."""
    return RawProfile("step", ((float(t0), 0, 1.0),), float(t0), float(t0))


def ptp_profile(t0: float, distance, speed_max, acceleration_max) -> RawProfile:
    """Synchronised point-to-point profile with piecewise-constant acceleration, as the Modelica Standard
    Library's KinematicPTP2 (used by the RobotR3 demo) generates it.

    Every joint follows one path parameter s; its speed and acceleration limits are those of the most
    limited joint: sd_max = 1 / max_j |dq_j| / qd_max_j, sdd_max = 1 / max_j |dq_j| / qdd_max_j. The
    profile accelerates with sdd_max for Ta, runs at sd_max (if reached) and decelerates symmetrically:
    Ta = sd_max / sdd_max and Te = Ta + 1 / sd_max, or (speed limit not reached) Ta = sqrt(1 / sdd_max),
    Te = 2 Ta.
    """
    d = np.abs(np.asarray(distance, float))
    sd_max = 1.0 / float(np.max(d / np.asarray(speed_max, float)))
    sdd_max = 1.0 / float(np.max(d / np.asarray(acceleration_max, float)))
    ta_triangle = math.sqrt(1.0 / sdd_max)
    ta_speed = sd_max / sdd_max
    if ta_triangle <= ta_speed:
        ta = tv = ta_triangle
    else:
        ta, tv = ta_speed, 1.0 / sd_max
    te = ta + tv
    a = sdd_max
    knots = ((t0, 2, a), (t0 + ta, 2, -a), (t0 + tv, 2, -a), (t0 + te, 2, a))
    return RawProfile("ptp", tuple((float(t), 2, float(c)) for t, _, c in knots), float(t0), float(t0 + te))


class Butterworth:
    """Low-pass Butterworth filter of order n >= 1 and cutoff ``cutoff_hz`` (-3 dB), DC gain 1."""

    def __init__(self, order: int, cutoff_hz: float):
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
            raise ProblemError(f"reference.order: the filter order must be an integer >= 1, got {order!r}")
        if not (isinstance(cutoff_hz, (int, float)) and math.isfinite(cutoff_hz) and cutoff_hz > 0):
            raise ProblemError(f"reference.cutoff_hz: must be a finite number > 0, got {cutoff_hz!r}")
        self.order = int(order)
        self.cutoff_hz = float(cutoff_hz)

    @property
    def omega(self) -> float:
        return 2.0 * math.pi * self.cutoff_hz

    @cached_property
    def poles(self) -> np.ndarray:
        """p_k = w exp(i (pi/2 + (2k - 1) pi / (2n))), k = 1..n (left half plane, conjugate pairs)."""
        n = self.order
        k = np.arange(1, n + 1)
        return self.omega * np.exp(1j * (np.pi / 2 + (2 * k - 1) * np.pi / (2 * n)))

    @cached_property
    def residues(self) -> np.ndarray:
        """R_k = w^n / prod_{l != k} (p_k - p_l): H(s) = sum_k R_k / (s - p_k)."""
        p = self.poles
        return np.array([self.omega**self.order / np.prod([p[k] - p[l] for l in range(len(p)) if l != k])
                         for k in range(len(p))])

    @cached_property
    def denominator(self) -> np.ndarray:
        """a_0..a_n (ascending, a_n = 1) of B_n(s) = s^n + a_(n-1) s^(n-1) + ... + a_0, a_0 = w^n."""
        return np.real(np.poly(self.poles))[::-1]

    def dc_series(self, m: int) -> np.ndarray:
        """h_0..h_m of H(s) = sum_i h_i s^i near s = 0 (h_0 = 1), from B(s) H(s) = a_0."""
        a = self.denominator / self.denominator[0]
        h = np.zeros(m + 1)
        h[0] = 1.0
        for i in range(1, m + 1):
            h[i] = -sum(a[j] * h[i - j] for j in range(1, min(i, self.order) + 1))
        return h

    @property
    def delay(self) -> float:
        """DC group delay -h_1 = 1 / (w sin(pi / (2n))) (s): how far a ramp lags behind after the transient."""
        return float(-self.dc_series(1)[1])

    @property
    def slowest_decay(self) -> float:
        """w sin(pi / (2n)) (1/s): decay rate of the slowest mode of the tail."""
        return float(-np.real(self.poles).max())

    def magnitude(self, f_hz) -> np.ndarray:
        """|H(i 2 pi f)| = 1 / sqrt(1 + (f / f_c)^(2n))."""
        s = 2j * np.pi * np.asarray(f_hz, float)
        return np.abs(self.omega**self.order / np.prod([s - p for p in self.poles], axis=0))

    # ------------------------------------------------------------------ responses
    def _mode_coefficients(self, m: int) -> np.ndarray:
        """C_k = R_k / p_k^(m+1): the modal part of the response to tau^m / m!."""
        return self.residues / self.poles ** (m + 1)

    def _upper(self) -> list[int]:
        """One pole of each conjugate pair (Im > 0) and the real pole (odd n)."""
        p = self.poles
        tol = 1e-12 * self.omega
        return [k for k in range(len(p)) if p[k].imag > tol or abs(p[k].imag) <= tol]

    def truncated_power_response(self, tau, m: int):
        """g_m(tau) for tau >= 0 (SX or NumPy), the filter's response to tau_+^m / m!, minus its value
        at 0 (exactly 0 in exact arithmetic; subtracted so the rest before a knot is exact)."""
        h = self.dc_series(m)
        lib = ca if isinstance(tau, (ca.SX, ca.MX, ca.DM)) else np
        poly = sum(h[i] * tau ** (m - i) / math.factorial(m - i) for i in range(m + 1))
        modes, at_zero = 0, h[m]
        C = self._mode_coefficients(m)
        tol = 1e-12 * self.omega
        for k in self._upper():
            p, c = self.poles[k], C[k]
            if abs(p.imag) <= tol:  # the real pole of an odd order
                modes = modes + c.real * lib.exp(p.real * tau)
                at_zero += c.real
            else:
                modes = modes + 2 * lib.exp(p.real * tau) * (c.real * lib.cos(p.imag * tau) - c.imag * lib.sin(p.imag * tau))
                at_zero += 2 * c.real
        return poly + modes - at_zero

    def response(self, profile: RawProfile, t):
        """y(t): the filter's output for the raw input ``profile`` (at rest at 0 before it), as SX of t
        (or NumPy for numeric t)."""
        symbolic = isinstance(t, (ca.SX, ca.MX))
        y = 0
        for tj, m, c in profile.knots:
            if symbolic:
                tau = ca.if_else(t < tj, 0, t - tj)  # d tau/dt = 0 before the knot: exact rest
            else:
                tau = np.maximum(np.asarray(t, float) - tj, 0.0)
            y = y + c * self.truncated_power_response(tau, m)
        return y

    def tail_amplitudes(self, profile: RawProfile) -> np.ndarray:
        """A_k with y(t) - 1 = sum_k A_k exp(p_k (t - t_end)) after the raw motion ends (all n poles)."""
        t_end = profile.t_end
        A = np.zeros(self.order, dtype=complex)
        for tj, m, c in profile.knots:
            A += c * self._mode_coefficients(m) * np.exp(self.poles * (t_end - tj))
        return A

    def settling_time(self, profile: RawProfile, tolerance: float = DEFAULT_SETTLE_TOLERANCE) -> float:
        """Time after the raw motion's end from which |y - 1| <= tolerance (the bound E of the module doc)."""
        A = np.abs(self.tail_amplitudes(profile))
        sigma = np.real(self.poles)

        # E(tau) = sum A_i exp(sigma_i tau) - tolerance is convex and decreasing (A_i >= 0, sigma_i < 0), so
        # Newton from tau = 0 climbs monotonically to the root without overshooting (no bracket needed);
        # written out because scipy.optimize's import alone costs a plan 0.25 s.
        def excess(tau):
            return float(np.sum(A * np.exp(sigma * tau))) - tolerance

        def slope(tau):
            return float(np.sum(A * sigma * np.exp(sigma * tau)))

        if excess(0.0) <= 0:
            return 0.0
        tau = 0.0
        for _ in range(200):
            step = excess(tau) / slope(tau)
            tau -= step
            if abs(step) <= 1e-12 * max(1.0, tau):
                return float(tau)
        raise RuntimeError(f"prefilter settling time: Newton did not converge (last tau {tau!r} s)")


def filtered_reference_expression(filt: Butterworth, profile: RawProfile, start, end) -> tuple[ca.SX, ca.SX]:
    """(t, q(t)) with q = start + (end - start) y(t), y the filtered path parameter (SX column)."""
    t = ca.SX.sym("t")
    y = filt.response(profile, t)
    start, end = np.asarray(start, float), np.asarray(end, float)
    return t, ca.DM(start) + ca.DM(end - start) * y
