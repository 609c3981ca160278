"""Settings of the collocation NLP (the optional [nlp] table of a problem file). No heavy imports: the problem
schema reads them (ffopt.io.problem) without importing the NLP."""

from __future__ import annotations

from dataclasses import dataclass

from ffopt.errors import ProblemError

TRACKING = ("exact", "band", "penalty")
OBJECTIVES = ("smoothness", "effort", "tracking")
SCHEMES = ("radau", "euler")
STRATEGIES = ("auto", "causal", "noncausal")
BACKENDS = ("casadi", "cyipopt", "ipopt-c", "pyomo", "fatrop", "auto")  # auto: the fastest (see backends/casadi_ipopt.solve_auto);
# fatrop: the stage-structured interior point on the stage-ordered NLP (ffopt/nlp/stages.py)
WARM_STARTS = ("bdf", "rigid", "none")  # rigid: the rigid model's feedforward (ffopt.nlp.solve.rigid_start)
# IPOPT's linear solver: MUMPS (every IPOPT here) or SPRAL (CasADi's IPOPT only; cyipopt's build has MUMPS
# alone). E12 bounded, h = 2 ms: MUMPS 0.58 s inside IPOPT, SPRAL 1.4 s at best (results/nlp.md).
LINEAR_SOLVERS = ("mumps", "spral")
# Default limits of an NLP solve. A converging solve needs far less (E12 torque bounded: 11
# IPOPT iterations, ~2 s); an infeasible or badly posed one would otherwise run for many minutes.
# The time limit is one of CPU time (what the solve costs, the same on a busy or an idle machine);
# wall time is only an outer guard (a stuck process, a machine shared with many jobs), by default
# WALL_GUARD_FACTOR x the CPU limit.
# An unstable zero z is resolved by the collocation grid while the rule's growth over one step, its stability
# function R(Re z h), stays within 2 % of exp(Re z h): up to these Re z h for Radau IIA of each degree (implicit
# Euler = degree 1), computed from the rules (tests/test_collocation.py). Beyond, R falls behind exp and, past
# its pole (degree 3: Re z h = 3.64), turns negative: the discrete unstable mode alternates in sign from step to
# step and the exact-tracking torques zigzag between collocation points (ffopt.auto_method, item 3).
RESOLVED_GROWTH_PER_STEP = {1: 0.19, 2: 1.01, 3: 2.09, 4: 3.29, 5: 4.51, 6: 5.79, 7: 7.05, 8: 8.36, 9: 9.64}
MAX_ITER = 1000
MAX_CPU_TIME_S = 120.0
WALL_GUARD_FACTOR = 3.0
MAX_WALL_TIME_S = WALL_GUARD_FACTOR * MAX_CPU_TIME_S  # the guard of the default CPU limit


@dataclass(frozen=True)
class NlpSettings:
    """Settings of the collocation NLP (the [nlp] table of a problem file)."""

    scheme: str = "radau"  # radau | euler (implicit Euler, the low-order rule)
    degree: int = 3
    step: float = 1e-3  # interval length h (s)
    objective: str = "smoothness"  # smoothness (of u) | effort | tracking (band/penalty only)
    torque_max: tuple[float, ...] | None = None  # per motor (N m)
    torque_rate_max: tuple[float, ...] | None = None  # per motor (N m/s)
    voltage_max: tuple[float, ...] | None = None  # per motor (V), drives with DC-motor electrics only
    tracking: str = "exact"  # exact | band | penalty
    band_mm: float = 1.0  # band half-width; also the error scale of the penalty (mm)
    penalty_weight: float = 1e3
    pre_actuation_s: float = 0.0
    post_actuation_s: float = 0.0
    strategy: str = "auto"  # auto | causal | noncausal
    backend: str = "auto"  # auto (Newton if square, else ipopt-c) | casadi | cyipopt | ipopt-c (IPOPT's C interface) | pyomo | fatrop
    square_by_newton: bool = True  # casadi / auto: a square NLP (a single feasible point) by Newton, not IPOPT
    warm_start: str = "bdf"  # bdf | none
    tol: float = 1e-8
    max_iter: int = MAX_ITER  # solver iterations (all runs: a Newton attempt and IPOPT share them)
    max_cpu_time_s: float = MAX_CPU_TIME_S  # CPU s of this process and its solver worker: transcription, set-up, iterations
    max_wall_time_s: float | None = None  # the outer guard (s); None: WALL_GUARD_FACTOR x max_cpu_time_s
    linear_solver: str = "mumps"  # IPOPT's: mumps | spral (CasADi's IPOPT only: backend auto then takes nlpsol)
    # the interval derivatives as compiled C (ffopt.nlp.compiled, cached on disk); False: CasADi's virtual machine
    compile: bool = True
    # the [output] table (set by ffopt.nlp.solve.plan_nlp, not keys of [nlp]): None = u at the collocation points
    hold: str | None = None  # zoh | linear: u lives on the control grid of period sample_time
    sample_time: float | None = None  # s, a whole multiple of step (None with a hold: step)

    @property
    def wall_time_limit_s(self) -> float:
        """The wall-time guard: max_wall_time_s, or WALL_GUARD_FACTOR x max_cpu_time_s if not set."""
        return float(self.max_wall_time_s) if self.max_wall_time_s is not None \
            else WALL_GUARD_FACTOR * float(self.max_cpu_time_s)


def poorly_resolved_per_step(settings: NlpSettings) -> float:
    """Re z h above which the collocation grid of ``settings`` does not resolve an unstable zero z."""
    return RESOLVED_GROWTH_PER_STEP[1 if settings.scheme == "euler" else int(settings.degree)]


def check_limits(settings: NlpSettings) -> None:
    """The limits must be positive (they also come from the CLI's --max-iter / --max-time)."""
    if not (isinstance(settings.max_iter, int) and settings.max_iter > 0):
        raise ProblemError(f"nlp.max_iter (--max-iter): must be an integer > 0, got {settings.max_iter!r}")
    if not (isinstance(settings.max_cpu_time_s, (int, float)) and settings.max_cpu_time_s > 0):
        raise ProblemError(f"nlp.max_cpu_time_s: must be > 0 s, got {settings.max_cpu_time_s!r}")
    if settings.max_wall_time_s is not None and not settings.max_wall_time_s > 0:
        raise ProblemError(f"nlp.max_wall_time_s (--max-time): must be > 0 s, got {settings.max_wall_time_s!r}")
