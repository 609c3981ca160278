"""One geometric path under many time laws, without rebuilding it: the planner's searches over the time law
(rest to rest, minimum time) make hundreds of BDF plans along the same path.

A path of one parameter, y(t) = g(sigma(tau)), tau = (t - t0) / T (a line, an arc, a joint move of one duration),
is built once with the identity law (sigma = tau); its derivatives g^(k)(sigma) come from that reference
(d^k/dt^k of the identity-law path is T^-k g^(k)). A law's path derivatives then follow by Faa di Bruno's formula,
evaluated as Taylor arithmetic: with delta(e) = sum_j sigma_j e^j / j! (sigma_j the law's j-th time derivative),
y(t + e) = sum_k g^(k) delta(e)^k / k!, truncated at the order needed. Rebuilding the symbolic path per law cost
40 ms of a 65 ms E12 plan; this costs ~1 ms. The values agree with the symbolic route to rounding (tested).
"""

from __future__ import annotations

from math import factorial

import numpy as np

from ffopt.reference.time_laws import TimeLaw

IDENTITY_LAW = TimeLaw("identity", (0.0, 1.0), 0)  # sigma = tau


class RetimedPath:
    """The spec's path g(sigma) built once; ``reference(law)`` the path moved by any time law."""

    def __init__(self, spec, model):
        from ffopt.reference.build import reference_from_spec  # build imports the path kinds; this module is below it

        self.spec = spec
        self.identity = reference_from_spec(spec, model, IDENTITY_LAW)
        self.t0, self.T = self.identity.t_motion_start, self.identity.duration

    @staticmethod
    def separable(spec) -> bool:
        """Whether the spec's outputs move along one path parameter over one interval (line, arc, a joint move of
        equal durations), without a shaper (which superposes shifted copies)."""
        if getattr(spec, "shaper", None) is not None:
            return False
        if spec.kind in ("line", "arc"):
            return True
        if spec.kind == "joint_ptp":
            return np.ptp(np.asarray(spec.params["durations"], float)) == 0.0
        return False

    def g(self, sigma: np.ndarray, n: int) -> list[np.ndarray]:
        """[g^(k)(sigma)] for k < n, each (len(sigma), n_out)."""
        t = (self.t0 + sigma * self.T).reshape(1, -1)
        return [np.array(self.identity.function(k).map(sigma.size)(t)).T * self.T**k for k in range(n)]

    def reference(self, law) -> "RetimedReference":
        return RetimedReference(self, law)


class RetimedReference:
    """What the BDF inverse reads from a reference (``evaluate``, ``path_rows``, ``t_end``, ``n_out``), for the
    path of a ``RetimedPath`` moved by ``law``."""

    def __init__(self, path: RetimedPath, law):
        self.path, self.law = path, law
        ident = path.identity
        self.t_motion_start, self.t_motion_end, self.t_end = ident.t_motion_start, ident.t_motion_end, ident.t_end
        self.n_out, self.names = ident.n_out, ident.names

    def path_rows(self, t: np.ndarray, n_derivs: int) -> np.ndarray:
        """[y; y'; ...; y^(n_derivs - 1)] at t, (len(t), n_out * n_derivs), as ``InverseDae.path_data`` lays it out."""
        derivs = self._derivatives(np.asarray(t, float).ravel(), n_derivs)
        return np.hstack(derivs)

    def evaluate(self, t, order: int = 0) -> np.ndarray:
        return self._derivatives(np.atleast_1d(np.asarray(t, float)).ravel(), order + 1)[order]

    def _derivatives(self, t: np.ndarray, n: int) -> list[np.ndarray]:
        p = self.path
        tau = np.clip((t - p.t0) / p.T, 0.0, 1.0)
        moving = ((t - p.t0) / p.T > 0.0) & ((t - p.t0) / p.T < 1.0)  # at rest outside: sigma's derivatives 0
        sigma = np.asarray(self.law(tau, 0), float)
        # Taylor coefficients of delta(e) = sigma(t + e) - sigma(t): s_j / j!, s_j = law^(j)(tau) / T^j
        delta = np.zeros((t.size, n))
        for j in range(1, n):
            delta[:, j] = np.where(moving, np.asarray(self.law(tau, j), float), 0.0) / p.T**j / factorial(j)
        g = p.g(sigma, n)
        series = [g[0].copy()] + [np.zeros_like(g[0]) for _ in range(n - 1)]  # Taylor coefficients of y(t + e)
        power = np.zeros((t.size, n))
        power[:, 0] = 1.0  # delta^0
        for k in range(1, n):
            power = _times(power, delta)  # delta^k (its coefficients below e^k vanish)
            for m in range(k, n):
                series[m] += power[:, m:m + 1] * g[k] / factorial(k)
        return [series[m] * factorial(m) for m in range(n)]


def _times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Product of truncated power series (rows: points, columns: coefficients of e^0 ..)."""
    n = a.shape[1]
    out = np.zeros_like(a)
    for i in range(n):
        out[:, i:] += a[:, i:i + 1] * b[:, : n - i]
    return out
