"""Reference output paths theta(t) with exact derivatives of any order (CasADi SX).

    from ffopt.reference import line, joint_ptp
    ref = line([0.0, 0.5], [0.3, 0.5], duration=1.0, rest_before=0.2, rest_after=0.5, names=["x", "z"])
    ref.function(4)          # casadi.Function t -> d^4 theta / dt^4
    ref.expression(t_mx, 2)  # embed into a solver's own residual
    ref.evaluate(ts, 1)      # numpy (len(ts), n_out)
    ref.check_smoothness(5)  # ~0 for poly11
    polyline([[0, 0], [1, 0], [1, 1]], durations=[1.0, 1.0], blends=0.3)   # rounded corner
    arc(ArcGeometry(center=[0, 0], start=[1, 0], angle=np.pi / 2), duration=1.0)   # quarter circle
    Butterworth(4, 10.0).response(ptp_profile(0.1, [1.0], [1.5], [15.0]), t)  # prefiltered PTP (SX of t)
"""

from ffopt.reference.paths import (
    ArcGeometry,
    JointMove,
    arc,
    circle_through,
    duration_for_limits,
    duration_for_speed,
    joint_ptp,
    line,
    polyline,
    time_law_peak,
)
from ffopt.reference.prefilter import Butterworth, RawProfile, ptp_profile, step_profile
from ffopt.reference.reference import Reference, TimeLine
from ffopt.reference.time_laws import (
    TIME_LAWS,
    TimeLaw,
    get_time_law,
    make_time_law,
    rest_to_rest_coefficients_exact,
    rest_to_rest_polynomial,
)



def __getattr__(name):  # poly11, hermite9, septic, quintic: built on first use (see TIME_LAWS)
    if name in ("poly11", "hermite9", "septic", "quintic"):
        return TIME_LAWS[name]
    raise AttributeError(f"module 'ffopt.reference' has no attribute {name!r}")

__all__ = [
    "Reference",
    "TimeLine",
    "Butterworth",
    "RawProfile",
    "step_profile",
    "ptp_profile",
    "line",
    "polyline",
    "arc",
    "ArcGeometry",
    "circle_through",
    "joint_ptp",
    "JointMove",
    "time_law_peak",
    "duration_for_speed",
    "duration_for_limits",
    "TimeLaw",
    "TIME_LAWS",
    "get_time_law",
    "make_time_law",
    "rest_to_rest_polynomial",
    "rest_to_rest_coefficients_exact",
    "poly11",
    "hermite9",
    "septic",
    "quintic",
]
