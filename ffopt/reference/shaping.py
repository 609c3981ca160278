"""Input shaping of a reference's time law: Singer & Seering's ZV and ZVD shapers, Singhose's EI shapers.

Singer & Seering (preshaping command inputs to reduce system vibration, 1990): convolving a command
with a few impulses placed by a mode's natural frequency omega and damping ratio zeta cancels the
vibration that mode is left with at the end of the move. With K = exp(-zeta pi / sqrt(1 - zeta^2)) and
the damped period T = 2 pi / omega_d, omega_d = omega sqrt(1 - zeta^2):

- ZV (zero vibration): amplitudes 1/(1+K), K/(1+K) at 0, T/2;
- ZVD (zero vibration and derivative): 1, 2K, K^2 over (1+K)^2 at 0, T/2, T; zero residual and zero
  slope of the residual in omega at the design point, so it tolerates frequency errors (computed here
  for zeta = 0: residual below 5 % within +-3.2 % of omega for ZV, +-14.4 % for ZVD; Singer & Seering
  quote roughly +-5 % and +-15 %);
- EI (extra insensitive; Singhose, Seering & Singer, residual vibration reduction using vector diagrams to
  generate shaped inputs, 1994): three impulses at 0, T/2, T like ZVD, but with the residual at the design
  frequency allowed up to V (5 %) at the top of a hump, so that it stays below V over a wider band: +-20 %
  for an undamped mode against ZVD's +-14 %, at the same duration (undamped: (1 + V)/4, (1 - V)/2, (1 + V)/4);
- two-hump EI: four impulses at 0, T/2, T, 3T/2, two humps of height V with a zero between them at the design
  frequency: +-35 % in 1.5 periods (Vaughan, Yano & Singhose, comparison of robust input shapers, 2008,
  compare these shapers);
- two modes: the convolution of one shaper per mode (``Shaper.convolve``).

EI and two-hump EI of a damped mode keep the impulse times (multiples of half the damped period) and solve
for the amplitudes that put the humps at height V exactly (``_ei_amplitudes``); undamped they are Singhose's
closed forms. With these times a two-hump EI exists for light damping only (ratio 0.02: +-32 %, 0.05: none);
``ei2`` then says so.

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

from ffopt.reference.reference import Reference, TimeLine

__all__ = ["Shaper", "zv", "zvd", "ei", "ei2", "shaper", "residual_vibration", "insensitivity_band", "shape_signal",
           "shape_reference", "SHAPERS"]

SHAPERS = ("zv", "zvd", "ei", "ei2")
EI_VIBRATION = 0.05  # V: the residual an EI shaper allows at the top of its humps


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


def ei(freq_hz: float, zeta: float = 0.0, vibration: float = EI_VIBRATION) -> Shaper:
    """Extra-insensitive shaper of one mode: impulses at 0, T/2, T, the residual V = ``vibration`` at the design
    frequency and there at the top of its hump (zero slope)."""
    K, T = _k_and_period(freq_hz, zeta)
    times = np.array([0.0, T / 2, T])
    guess = np.array([(1 + vibration) / 4, (1 - vibration) / 2 * K, (1 + vibration) / 4 * K**2])
    return Shaper(_ei_amplitudes(times, guess, freq_hz, zeta, vibration, humps=1), times, "ei",
                  ((float(freq_hz), float(zeta)),))


def ei2(freq_hz: float, zeta: float = 0.0, vibration: float = EI_VIBRATION) -> Shaper:
    """Two-hump extra-insensitive shaper: impulses at 0, T/2, T, 3T/2, zero residual at the design frequency and
    two humps of height V = ``vibration`` beside it."""
    K, T = _k_and_period(freq_hz, zeta)
    times = np.array([0.0, T / 2, T, 1.5 * T])
    x = (vibration**2 * (np.sqrt(1 - vibration**2) + 1)) ** (1 / 3)
    a1 = (3 * x**2 + 2 * x + 3 * vibration**2) / (16 * x)  # Singhose's undamped closed form
    guess = np.array([a1, (0.5 - a1) * K, (0.5 - a1) * K**2, a1 * K**3])
    return Shaper(_ei_amplitudes(times, guess, freq_hz, zeta, vibration, humps=2), times, "ei2",
                  ((float(freq_hz), float(zeta)),))


def _ei_amplitudes(times, guess, freq_hz, zeta, vibration, humps: int) -> np.ndarray:
    """Amplitudes (summing to 1) with the impulse times ``times`` whose residual curve V(omega) has ``humps``
    maxima of height ``vibration``: one at the design frequency, or two with V = 0 between them at the design
    frequency. Newton on these conditions (the humps' places are unknowns too), from the undamped closed form
    scaled by the decay, which it reproduces for an undamped mode."""
    from scipy.optimize import fsolve

    n = len(times) - 1  # free amplitudes (the last one closes the sum)

    def v(r, a):
        return float(residual_vibration(a, times, freq_hz * r, zeta))

    def slope(r, a, h=1e-6):
        return (v(r + h, a) - v(r - h, a)) / (2 * h)

    def amplitudes(x):
        return np.append(x[:n], 1.0 - np.sum(x[:n]))

    def conditions(x):
        a = amplitudes(x)
        if humps == 1:
            return [v(1.0, a) - vibration, slope(1.0, a)]
        lo, hi = x[n:]
        return [v(1.0, a), v(lo, a) - vibration, slope(lo, a), v(hi, a) - vibration, slope(hi, a)]

    x0 = guess[:n] / np.sum(guess)
    if zeta == 0.0:
        return guess / np.sum(guess)  # the closed form
    if humps == 2:  # the humps' places: those of the undamped closed form
        r = np.linspace(0.6, 1.4, 8001)
        curve = residual_vibration(guess / np.sum(guess), times, freq_hz * r, 0.0)
        x0 = np.concatenate([x0, [r[np.argmax(np.where(r < 1, curve, 0))], r[np.argmax(np.where(r > 1, curve, 0))]]])
    x = fsolve(conditions, x0, xtol=1e-13, full_output=True)[0]  # judged by the conditions below, not its flag
    a = amplitudes(x)
    if np.any(a <= 0) or np.max(np.abs(conditions(x))) > 1e-8:
        raise ValueError(f"no {'two-hump ' if humps == 2 else ''}EI shaper with impulses at multiples of half the "
                         f"damped period for {freq_hz:g} Hz, damping ratio {zeta:g} (use {'ei' if humps == 2 else 'zvd'})")
    return a


def shaper(kind: str, modes) -> Shaper:
    """``kind`` ("zv", "zvd", "ei" or "ei2") on each of ``modes`` ((Hz, zeta) pairs), convolved."""
    make = {"zv": zv, "zvd": zvd, "ei": ei, "ei2": ei2}.get(kind)
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
    level = level * (1 + 1e-6)  # an EI shaper's humps touch the level it was designed for
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
    timeline = TimeLine(base.t_motion_start, base.t_motion_end + extra, base.t_end + extra,
                        f"{base.time_law} * {sh.name}", [b + ti for b in base.breakpoints for ti in sh.times])
    shaped = Reference(t, motion, timeline, base.names)
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
