"""The scaled NLP handed to the backends: min f(w) s.t. lbg <= g(w) <= ubg, lbx <= w <= ubx. No heavy imports."""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np


@dataclass(frozen=True, eq=False)
class Scales:
    """How the NLP is scaled: the physical value per unit of each scaled state (``x``, n_x) and input (``u``,
    n_u), the factor each equation row is multiplied by (``rows``, one per equation, shared by all collocation
    points) and the objective's factor (``objective``)."""

    x: np.ndarray
    u: np.ndarray
    rows: np.ndarray
    objective: float


@dataclass
class NlpProblem:
    """A scaled NLP: min f(w) s.t. lbg <= g(w) <= ubg, lbx <= w <= ubx, with a start point and its scales.
    info: what it is (sizes, formulation), and the transcription's own evaluations where it has them ("g",
    "jac_g", "newton_step", "derivatives"; the backends fall back on CasADi's AD of the graph)."""

    w: ca.MX
    f: ca.MX
    g: ca.MX
    lbx: np.ndarray
    ubx: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    w0: np.ndarray
    info: dict = field(default_factory=dict)
    scales: Scales | None = None

    @property
    def n_variables(self) -> int:
        return int(self.w.numel())

    @property
    def n_constraints(self) -> int:
        return int(self.g.numel())
