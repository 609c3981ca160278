"""Linear stability of constant-step BDF-k on the zero dynamics: which order may integrate them.

The causal inverse (ffopt.dae.inverse) integrates the zero dynamics of the arm forward in time
(Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods)): linearised, a mode
x' = z x for every zero z of the plant. BDF-k applied to it is the recursion
``sum_l alpha_l x_{i-l} = h z x_i`` (``ffopt.dae.bdf.BDF_ALPHA``, sigma(zeta) = zeta^k), whose
characteristic polynomial is

    (alpha_0 - h z) zeta^k + alpha_1 zeta^(k-1) + ... + alpha_k.

BDF-k is stable at h z if every root zeta has modulus <= 1 (``bdf_stable``). BDF-1 and BDF-2 are
A-stable (stable for every Re(h z) < 0); BDF-3..6 are A(alpha)-stable only, with alpha = 86.03,
73.35, 51.84 and 17.84 degrees (Hairer & Wanner, Solving Ordinary Differential Equations II,
sec. V.2): a lightly damped zero (a stiff passive joint: z = -182 +- 1900j rad/s, h = 1 ms,
h z = -0.18 +- 1.9j, 84.5 degrees from the negative real axis) is stable for BDF-1..3 and
unstable for BDF-4..6 (largest root of BDF-6: 1.45, so errors grow by 1.45 per step). Outside the
sector the instability region is bounded: fast enough modes (|h z| large) are damped again, also
for Re z > 0 (BDF damps an unstable zero it cannot resolve).

The margin: a root of modulus 1 + m amplifies an error by (1 + m)^N over N steps. On undamped or
barely damped zeros BDF-3..6 have roots of 1 + 1e-9 and less (h |z| small), harmless over any
path; ``growth_margin`` turns "at most a factor G over the path" into m.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ORDER = 6
# Spurious amplification tolerated over the whole path (roots of modulus (GROWTH_LIMIT)^(1/N) over
# N steps): an error of roundoff size stays at roundoff size. The unstable case grows 1.45^N.
GROWTH_LIMIT = 10.0
# Published A(alpha) angles (degrees) of BDF-1..6 (Hairer & Wanner, Solving ODEs II, sec. V.2).
A_ALPHA_DEG = {1: 90.0, 2: 90.0, 3: 86.03, 4: 73.35, 5: 51.84, 6: 17.84}


def _alpha(order: int) -> np.ndarray:
    from ffopt.dae.bdf import BDF_ALPHA

    if order not in BDF_ALPHA:
        raise ValueError(f"BDF order must be 1..{MAX_ORDER}, got {order!r}")
    return BDF_ALPHA[order]


def bdf_root_modulus(order: int, h_lambda) -> np.ndarray:
    """Largest |zeta| among the roots of BDF-``order``'s characteristic polynomial at each h lambda
    (scalar or array; same shape out). Roots by the eigenvalues of the companion matrices (what
    numpy.roots does), all points at once."""
    a = _alpha(order)
    hl = np.asarray(h_lambda, dtype=complex)
    flat = hl.ravel()
    k = order
    lead = a[0] - flat  # coefficient of zeta^k; 0 at h lambda = alpha_0: a root at infinity
    degenerate = np.abs(lead) <= 1e-14 * np.abs(a).max()
    lead = np.where(degenerate, 1.0, lead)
    comp = np.zeros((flat.size, k, k), dtype=complex)
    comp[:, 0, :] = -a[1:][None, :] / lead[:, None]
    if k > 1:
        comp[:, np.arange(1, k), np.arange(k - 1)] = 1.0
    out = np.where(degenerate, np.inf, np.abs(np.linalg.eigvals(comp)).max(axis=1))
    return out.reshape(hl.shape) if hl.shape else float(out[0])


def bdf_stable(order: int, h_lambda, margin: float = 0.0):
    """True where BDF-``order`` is stable at h lambda: every root of rho(zeta) - h lambda sigma(zeta)
    has modulus <= 1 + margin (margin >= 0: the spurious growth per step tolerated; 0 is the
    textbook stability region, boundary included)."""
    ok = bdf_root_modulus(order, h_lambda) <= 1.0 + margin + 1e-12  # roundoff of the roots
    return bool(ok) if np.ndim(ok) == 0 else ok


def growth_margin(n_steps: int, growth: float = GROWTH_LIMIT) -> float:
    """The per-step margin m with (1 + m)^n_steps = growth."""
    return float(growth ** (1.0 / max(int(n_steps), 1)) - 1.0)


def stable_orders(zeros, h: float, max_order: int = MAX_ORDER, margin: float = 0.0) -> list[int]:
    """The orders 1..max_order stable at h z for every finite zero z (rad/s)."""
    z = np.asarray([complex(x) for x in np.ravel(zeros) if np.isfinite(x)], complex)
    if z.size == 0:
        return list(range(1, max_order + 1))
    z = np.unique(np.round(z.real, 12) + 1j * np.round(np.abs(z.imag), 12))  # a conjugate has the same roots
    return [k for k in range(1, max_order + 1) if np.all(bdf_stable(k, h * z, margin))]


def highest_stable_order(zeros, h: float, max_order: int = MAX_ORDER, margin: float = 0.0) -> int | None:
    """The highest BDF order <= max_order stable at h z for every zero z, or None if none is."""
    for k in range(max_order, 0, -1):
        if stable_orders(zeros, h, k, margin)[-1:] == [k]:
            return k
    return None


@dataclass
class OrderChoice:
    """What the stability check decided for a BDF run: order, step and the zero that decided it."""

    order: int | None  # None: no order up to the requested one is stable at any tried step
    step: float  # the step the order is stable at (the problem's step)
    requested_order: int
    requested_step: float
    limiting_zero: complex | None  # the zero that rules out the next higher order (None: nothing limits)
    limiting_time: float | None  # its path time (s)
    root_modulus: float | None  # the largest root of the next higher order at that zero (> 1 + margin)
    margin: float

    @property
    def changed(self) -> bool:
        return self.order != self.requested_order or self.step != self.requested_step

    def h_z(self) -> complex | None:
        return None if self.limiting_zero is None else self.limiting_zero * self.step

    def reason(self) -> str:
        """One clause for the console line and summary.json."""
        if self.limiting_zero is None:
            return f"BDF-{self.requested_order} stable on every zero at h = {self.requested_step * 1e3:g} ms"
        z, k = self.limiting_zero, self.requested_order if self.order is None else self.order
        bad = k + 1 if self.order is not None else 1
        hz = z * self.step
        where = (f"zero {z.real:.4g}{z.imag:+.4g}j rad/s at t = {self.limiting_time:.3g} s: h z = "
                 f"{hz.real:.3g}{hz.imag:+.3g}j at h = {self.step * 1e3:g} ms")
        if self.order is None:
            return f"no BDF order is stable on the {where}"
        text = (f"BDF-{bad}..{self.requested_order} unstable on the {where} (largest root of BDF-{bad}: "
                f"{self.root_modulus:.3g}), so BDF-{self.order}")
        if bad == self.requested_order:
            text = text.replace(f"BDF-{bad}..{self.requested_order}", f"BDF-{bad}")
        return text

    def to_dict(self) -> dict:
        hz = self.h_z()
        return {"order": self.order, "step_s": self.step, "requested_order": self.requested_order,
                "requested_step_s": self.requested_step,
                "limiting_zero": None if self.limiting_zero is None else [self.limiting_zero.real,
                                                                            self.limiting_zero.imag],
                "limiting_time_s": self.limiting_time,
                "h_z": None if hz is None else [hz.real, hz.imag],
                "root_modulus": self.root_modulus, "margin": self.margin}


def choose_order(times, zeros_per_time, order: int, h: float, margin: float = 0.0) -> OrderChoice:
    """The highest BDF order <= ``order`` stable on every zero along the path at step h, or order
    None if none is.

    No smaller step is tried where no order is stable: then BDF-1 is unstable at h z, i.e. h z lies
    in the disk |1 - h z| < 1, which contains the segment from 0 to h z, so BDF-1 is unstable at every
    smaller step too (and such a zero has Re z > 0: the arm is non-minimum phase).
    times, zeros_per_time: ``ZeroDynamicsReport.times`` and ``.zeros``. The limiting zero is the
    one that rules out the order above the chosen one (the zero of largest root modulus there)."""
    pairs = [(float(t), complex(z)) for t, zs in zip(times, zeros_per_time) for z in np.ravel(zs) if np.isfinite(z)]
    if not pairs:
        return OrderChoice(order, h, order, h, None, None, None, margin)
    ts = np.array([t for t, _ in pairs])
    zs = np.array([z for _, z in pairs])
    best = highest_stable_order(zs, h, order, margin)
    if best == order:
        return OrderChoice(order, h, order, h, None, None, None, margin)
    if best is not None:
        mod = bdf_root_modulus(best + 1, h * zs)
        i = int(np.argmax(mod))
        return OrderChoice(best, h, order, h, complex(zs[i].real, abs(zs[i].imag)), float(ts[i]), float(mod[i]),
                           margin)
    mod = bdf_root_modulus(1, h * zs)
    i = int(np.argmax(mod))
    return OrderChoice(None, h, order, h, complex(zs[i].real, abs(zs[i].imag)), float(ts[i]), float(mod[i]), margin)
