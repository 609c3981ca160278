"""Settings of the collocation NLP (the optional [nlp] table of a problem file). No heavy imports."""

from __future__ import annotations

from dataclasses import dataclass

TRACKING = ("exact", "band", "penalty")
OBJECTIVES = ("smoothness", "effort", "tracking")
SCHEMES = ("radau", "euler")
STRATEGIES = ("auto", "causal", "noncausal")
BACKENDS = ("casadi", "cyipopt", "pyomo", "auto")  # auto: the fastest (see backends/casadi_ipopt.solve_auto)
WARM_STARTS = ("bdf", "none")


@dataclass(frozen=True)
class NlpSettings:
    """Settings of the collocation NLP (the [nlp] table of a problem file)."""

    scheme: str = "radau"  # radau | euler (implicit Euler, the low-order rule)
    degree: int = 3
    step: float = 1e-3  # interval length h (s)
    objective: str = "smoothness"  # smoothness (of u) | effort | tracking (band/penalty only)
    torque_max: tuple[float, ...] | None = None  # per motor (N m)
    torque_rate_max: tuple[float, ...] | None = None  # per motor (N m/s)
    tracking: str = "exact"  # exact | band | penalty
    band_mm: float = 1.0  # band half-width; also the error scale of the penalty (mm)
    penalty_weight: float = 1e3
    pre_actuation_s: float = 0.0
    post_actuation_s: float = 0.0
    strategy: str = "auto"  # auto | causal | noncausal
    backend: str = "casadi"  # casadi | cyipopt | pyomo | auto
    square_by_newton: bool = True  # casadi / auto: a square NLP (a single feasible point) by Newton, not IPOPT
    warm_start: str = "bdf"  # bdf | none
    tol: float = 1e-8
    max_iter: int = 3000
    max_wall_time_s: float = 600.0
