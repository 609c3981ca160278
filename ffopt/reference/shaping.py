"""Input shaping of a reference's time law: Singer & Seering's ZV and ZVD shapers.

Singer & Seering (preshaping command inputs to reduce system vibration, 1990): convolving a command
with a few impulses placed by a mode's natural frequency omega and damping ratio zeta cancels the
vibration that mode is left with at the end of the move. With K = exp(-zeta pi / sqrt(1 - zeta^2)) and
the damped period T = 2 pi / omega_d, omega_d = omega sqrt(1 - zeta^2):

- ZV (zero vibration): amplitudes 1/(1+K), K/(1+K) at 0, T/2;
- ZVD (zero vibration and derivative): 1, 2K, K^2 over (1+K)^2 at 0, T/2, T; zero residual and zero
  slope of the residual in omega at the design point, so it tolerates frequency errors (computed here
  for zeta = 0: residual below 5 % within +-3.2 % of omega for ZV, +-14.4 % for ZVD; Singer & Seering
  quote roughly +-5 % and +-15 %);
- two modes: the convolution of one shaper per mode (``Shaper.convolve``).

The amplitudes are positive and sum to 1, so a shaped path stays on the geometric path (a convex
combination of points of the same line, or of joint vectors of the same joint move) and ends where
the original does; the move is longer by the shaper's duration. ``shape_reference`` shapes a
``Reference`` exactly (theta_s(t) = sum_i A_i theta(t - t_i), to every derivative); a reference mapped
from a joint path takes the mappings of the joint move (the rigid forward kinematics of
``ffopt.reference.build``) from its caller. Which modes to shape (the plant's) is ``ffopt.sim.shaping``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.reference.reference import Reference

__all__ = ["Shaper", "zv", "zvd", "shaper", "residual_vibration", "insensitivity_band", "shape_signal",
           "shape_reference", "SHAPERS"]

SHAPERS = ("zv", "zvd")


@dataclass(frozen=True)
class Shaper:
    """Impulses (amplitudes, times in s, times ascending from 0) and the modes they were designed for."""

    amplitudes: np.ndarray
    times: np.ndarray
    name: str = ""
    modes: tuple = ()  # ((natural frequency Hz, damping ratio), ...)

    def __post_init__(self):
        a, t = np.asarray(self.amplitudes, float).ravel(), np.asarray(self.times, float).ravel()
        if a.shape != t.shape or a.size == 0:
            raise ValueError("a shaper needs as many amplitudes as times (at least one)")
        order = np.argsort(t, kind="stable")
        object.__setattr__(self, "amplitudes", a[order])
        object.__setattr__(self, "times", t[order])

    @property
    def duration(self) -> float:
        """How much longer a shaped move is (s): the last impulse's time."""
        return float(self.times[-1] - self.times[0])

    def convolve(self, other: "Shaper") -> "Shaper":
        """The shaper of both in series (impulse trains convolved; coincident impulses merged)."""
        a = np.outer(self.amplitudes, other.amplitudes).ravel()
        t = np.add.outer(self.times, other.times).ravel()
        tt, inv = np.unique(np.round(t, 12), return_inverse=True)
        aa = np.zeros(tt.size)
        np.add.at(aa, inv, a)
        return Shaper(aa, tt, f"{self.name}*{other.name}", tuple(self.modes) + tuple(other.modes))

    def residual(self, freq_hz, zeta=0.0) -> np.ndarray:
        """Residual vibration of a second-order mode (natural frequency freq_hz, damping zeta) after the
        last impulse, relative to the unshaped step's (Singer & Seering's V)."""
        return residual_vibration(self.amplitudes, self.times, freq_hz, zeta)

    def describe(self) -> str:
        modes = ", ".join(f"{f:.4g} Hz zeta {z:.3g}" for f, z in self.modes)
        return f"{self.name.upper()} on {modes}: {len(self.times)} impulses over {self.duration:.4g} s"


def _k_and_period(freq_hz: float, zeta: float) -> tuple[float, float]:
    if not (freq_hz > 0 and 0 <= zeta < 1):
        raise ValueError(f"a shaper needs a vibration mode: frequency > 0 and 0 <= damping ratio < 1, "
                         f"got {freq_hz} Hz, {zeta}")
    root = np.sqrt(1.0 - zeta**2)
    return float(np.exp(-zeta * np.pi / root)), float(1.0 / (freq_hz * root))  # K, damped period T


def zv(freq_hz: float, zeta: float = 0.0) -> Shaper:
    """Zero-vibration shaper of one mode (natural frequency in Hz, damping ratio)."""
    K, T = _k_and_period(freq_hz, zeta)
    return Shaper(np.array([1.0, K]) / (1.0 + K), np.array([0.0, T / 2]), "zv", ((float(freq_hz), float(zeta)),))


def zvd(freq_hz: float, zeta: float = 0.0) -> Shaper:
    """Zero-vibration-and-derivative shaper of one mode."""
    K, T = _k_and_period(freq_hz, zeta)
    return Shaper(np.array([1.0, 2 * K, K**2]) / (1.0 + K) ** 2, np.array([0.0, T / 2, T]), "zvd",
                  ((float(freq_hz), float(zeta)),))


def shaper(kind: str, modes) -> Shaper:
    """``kind`` ("zv" or "zvd") on each of ``modes`` ((Hz, zeta) pairs), convolved."""
    make = {"zv": zv, "zvd": zvd}.get(kind)
    if make is None:
        raise ValueError(f"shaper kind must be one of {', '.join(SHAPERS)}, got {kind!r}")
    modes = list(modes)
    if not modes:
        raise ValueError("a shaper needs at least one mode")
    out = make(*modes[0])
    for m in modes[1:]:
        out = out.convolve(make(*m))
    return Shaper(out.amplitudes, out.times, kind if len(modes) == 1 else f"{kind}x{len(modes)}", out.modes)


def residual_vibration(amplitudes, times, freq_hz, zeta=0.0) -> np.ndarray:
    """V(omega, zeta) of Singer & Seering: the amplitude of a damped mode's free vibration after the last
    impulse, relative to that of one unit impulse at the last impulse's time (1 unshaped)."""
    a, t = np.asarray(amplitudes, float), np.asarray(times, float)
    w = 2 * np.pi * np.asarray(freq_hz, float)[..., None]
    z = np.asarray(zeta, float)[..., None]
    wd = w * np.sqrt(1.0 - z**2)
    decay = np.exp(z * w * (t - t[-1]))
    c = np.sum(a * decay * np.cos(wd * t), axis=-1)
    s = np.sum(a * decay * np.sin(wd * t), axis=-1)
    return np.hypot(c, s)


def insensitivity_band(sh: Shaper, level: float = 0.05, zeta: float | None = None,
                       span: float = 0.5, n: int = 20001) -> tuple[float, float]:
    """(lowest, highest) frequency ratio omega / omega_design around 1 within which the residual stays
    below ``level`` (the shaper's first mode; zeta: the mode's damping, default the design value)."""
    f0, z0 = sh.modes[0]
    r = np.linspace(1 - span, 1 + span, n)
    v = sh.residual(f0 * r, z0 if zeta is None else zeta)
    i = int(np.argmin(np.abs(r - 1)))
    if v[i] > level:
        return 1.0, 1.0
    lo, hi = i, i
    while lo > 0 and v[lo - 1] <= level:
        lo -= 1
    while hi < n - 1 and v[hi + 1] <= level:
        hi += 1
    return float(r[lo]), float(r[hi])


def shape_signal(t, y, sh: Shaper, y_before=None) -> np.ndarray:
    """A sampled command y(t) (rows on the uniform-or-not grid t) shaped: sum_i A_i y(t - t_i), linear
    interpolation, y_before (default y[0]) before t[0]."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    out = np.zeros_like(y)
    y2 = y.reshape(len(t), -1)
    before = y2[0] if y_before is None else np.atleast_1d(np.asarray(y_before, float))
    for a, ti in zip(sh.amplitudes, sh.times):
        shifted = np.column_stack([np.interp(t - ti, t, y2[:, j], left=before[j]) for j in range(y2.shape[1])])
        out += a * shifted.reshape(out.shape)
    return out


def shape_reference(reference: Reference, sh: Shaper, output_map: ca.Function | None = None,
                    tool_map: ca.Function | None = None) -> Reference:
    """The reference with its time law shaped: theta_s(t) = sum_i A_i theta(t - t_i), exact to every
    derivative (a CasADi expression of the original, clamped path), the motion and the horizon longer
    by the shaper's duration (the rest after the move as before).

    A reference mapped from a joint path (``joint_ptp``, a joint-space ``prefilter``) is shaped in joint
    space and mapped again: ``output_map`` takes the joint move to its outputs, ``tool_map`` to its tool
    point (needed if the reference has a tool path), e.g. ``ffopt.reference.build.rigid_forward_kinematics``
    of the model and of its tool; its outputs and its tool path are then those of the shaped joint move."""
    base = reference.joint if reference.joint is not None else reference
    t = base.t
    theta = base.symbolic(0)
    motion = sum(float(a) * ca.substitute(theta, t, t - float(ti)) for a, ti in zip(sh.amplitudes, sh.times))
    extra = sh.duration
    shaped = Reference(t, motion, t_motion_start=base.t_motion_start, t_motion_end=base.t_motion_end + extra,
                       t_end=base.t_end + extra, names=base.names, time_law=f"{base.time_law} * {sh.name}",
                       breakpoints=[b + ti for b in base.breakpoints for ti in sh.times])
    if reference.joint is None:
        shaped.tool_path = None if reference.tool_path is None else shape_reference(reference.tool_path, sh)
        return shaped
    if output_map is None:
        raise ValueError("shape_reference: a reference mapped from a joint path needs the mapping of its joint move "
                         "to the outputs (output_map)")
    if reference.tool_path is not None and tool_map is None:
        raise ValueError("shape_reference: a reference mapped from a joint path with a tool path needs the mapping "
                         "of its joint move to the tool point (tool_map)")
    out = shaped.map(output_map, names=reference.names)
    out.tool_path = None if reference.tool_path is None else shaped.map(tool_map, names=["x", "y", "z"])
    return out
