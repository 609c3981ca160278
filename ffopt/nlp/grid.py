"""The collocation grid of the NLP and the layout of its variables, and the control grid of a held input.

Grid: the horizon [t0, t0 + K h] in K intervals of the collocation rule (d points each, Radau's last at the
interval's end), and where each variable sits in the NLP vector

    w = [x0; vec(X); vec(U); vec(Uc)]

x0 the start state (n_x), X the states at the K d collocation points (n_x each, point by point), U the inputs
there (n_u each), Uc the held input's values on the control grid (n_u each, n_ctrl of them; none without a hold).
Interval k reads its start state (x0 for k = 0, else the last point of interval k - 1), its d states and its d
inputs: contiguous blocks of w at fixed strides.

HoldGrid: the control grid of period m h (m intervals per sample) and the interpolation weights P of the hold at
the collocation times, U = Uc P' (``ffopt.nlp.transcription``, "Held input").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse

from ffopt.nlp.collocation import CollocationRule, collocation_times
from ffopt.trajectory import sample_nodes


@dataclass(frozen=True, eq=False)
class HoldGrid:
    """A held input's control grid: the sample instants (interval indices ``nodes``, times ``t_nodes``), the
    sample of each collocation point, and the weights P (K d, n_ctrl) with U = Uc P'."""

    kind: str  # zoh | linear
    m: int  # collocation intervals per sample
    nodes: np.ndarray
    t_nodes: np.ndarray
    sample_of_point: np.ndarray
    P: scipy.sparse.csr_matrix

    @classmethod
    def on(cls, kind: str, m: int, t0: float, h: float, K: int, d: int, tc: np.ndarray) -> "HoldGrid":
        """The hold ``kind`` with samples of m intervals on K intervals of d points at times tc (a Radau point at
        an interval end belongs to the sample on its left)."""
        nodes = sample_nodes(K, m)
        t_nodes = t0 + h * nodes
        k = np.repeat(np.arange(K), d)  # interval of each collocation point
        sample = np.searchsorted(nodes, k, side="right") - 1
        n_pts = K * d
        rows = np.arange(n_pts)
        if kind == "zoh":
            n_ctrl = len(nodes) - 1
            P = scipy.sparse.csr_matrix((np.ones(n_pts), (rows, sample)), (n_pts, n_ctrl))
        else:
            n_ctrl = len(nodes)
            theta = (tc - t_nodes[sample]) / (t_nodes[sample + 1] - t_nodes[sample])
            P = scipy.sparse.csr_matrix((np.concatenate([1.0 - theta, theta]),
                                         (np.concatenate([rows, rows]), np.concatenate([sample, sample + 1]))),
                                        (n_pts, n_ctrl))
        return cls(kind, m, nodes, t_nodes, sample, P)

    @property
    def n_ctrl(self) -> int:
        """Held values per input: one per sample (zoh) or per sample instant (linear)."""
        return self.P.shape[1]

    def initial_values(self, us: np.ndarray, t0: float, tc: np.ndarray) -> np.ndarray:
        """Held values (n_u, n_ctrl) from inputs ``us`` (n_u, K d) at the collocation times: the mean per sample
        (zoh), the values at the sample instants (linear; the first point's value before it)."""
        if self.kind == "zoh":
            counts = np.bincount(self.sample_of_point, minlength=self.n_ctrl)
            return np.vstack([np.bincount(self.sample_of_point, weights=row, minlength=self.n_ctrl)
                              for row in us]) / np.maximum(counts, 1)
        return np.vstack([np.interp(self.t_nodes, np.concatenate([[t0], tc]), np.concatenate([[row[0]], row]))
                          for row in us])


@dataclass(frozen=True, eq=False)
class Grid:
    """The collocation grid (K intervals of h from t0 to tf, the rule's d points each at times ``tc``) and the layout of
    the NLP vector w (module text): n_x states, n_u inputs, n_out outputs per point, n_ctrl held values."""

    rule: CollocationRule
    t0: float
    tf: float
    h: float
    K: int
    tc: np.ndarray  # (K d,) collocation times, interval by interval
    n_x: int
    n_u: int
    n_out: int
    n_ctrl: int = 0

    @classmethod
    def over(cls, rule: CollocationRule, t0: float, tf: float, step: float, n_x: int, n_u: int, n_out: int,
             ) -> "Grid":
        """The grid of intervals as close to ``step`` as divide [t0, tf] (no held input: ``with_hold``)."""
        K = max(1, int(round((tf - t0) / step)))
        h = (tf - t0) / K
        return cls(rule, t0, tf, h, K, collocation_times(rule, t0, h, K), n_x, n_u, n_out)

    def with_hold(self, hold: HoldGrid | None) -> "Grid":
        """The same grid with the held values of ``hold`` at the end of w."""
        return self if hold is None else replace(self, n_ctrl=hold.n_ctrl)

    @property
    def d(self) -> int:
        return self.rule.degree

    @property
    def n_pts(self) -> int:
        return self.K * self.d

    @property
    def n_w(self) -> int:
        return self.n_x * (1 + self.n_pts) + self.n_u * (self.n_pts + self.n_ctrl)

    # where each block of w is
    @property
    def x0(self) -> slice:
        return slice(0, self.n_x)

    @property
    def X(self) -> slice:
        return slice(self.n_x, self.n_x * (1 + self.n_pts))

    @property
    def U(self) -> slice:
        first = self.n_x * (1 + self.n_pts)
        return slice(first, first + self.n_u * self.n_pts)

    @property
    def Uc(self) -> slice:
        return slice(self.n_x * (1 + self.n_pts) + self.n_u * self.n_pts, self.n_w)

    def interval_starts(self) -> np.ndarray:
        """Start time of every interval (K,)."""
        return self.t0 + self.h * np.arange(self.K)

    def interval_columns(self, local) -> np.ndarray:
        """Global w indices (n_local, K) of interval-local columns of [xs; vec(X); vec(U)] (every interval)."""
        d, K, nx, N = self.d, self.K, self.n_x, self.n_u
        n_state, k = nx * (d + 1), np.arange(K)[None, :]
        local = np.asarray(local)[:, None]
        return np.where(local < n_state, local + nx * d * k, nx * (1 + K * d) + N * d * k + (local - n_state))

    def state_derivatives(self, Xall: np.ndarray) -> np.ndarray:
        """xdot at the collocation points (n_x, K d) from states [x0, X] (n_x, 1 + K d)."""
        d = self.d
        P = np.stack([Xall[:, k * d: k * d + d + 1] for k in range(self.K)])  # (K, n_x, d+1)
        return np.concatenate(list(P @ self.rule.deriv / self.h), axis=1)
