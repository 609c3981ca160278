"""Linear analysis along the path: zero dynamics (minimum phase?) and eigenfrequencies.

Operating points: at each sampled path time t the robot is linearised about its *static
equilibrium* with the tool at theta(t) (v = a = 0, u = the holding torque; gravity and spring
deflection included). These are true equilibria of the forward model, so the linearisation
is exact to first order and its zeros/poles are well defined; Moberg & Hanssen, inverse
dynamics of flexible manipulators (DAE methods), sec. 7.4, "linearized and analyzed along the
solution trajectory" without saying more. For slow paths
both choices agree; for fast paths velocity terms are left out (stated in every report).

Linearised forward model (Moberg & Hanssen eq. 1, x = [q; v], input u, output y = Gamma(qa)):
    M dv + Dm v + K q = Bu u,      y = Cq q,
    A = [[0, I], [-M^-1 K, -M^-1 Dm]],  B = [[0], [M^-1 Bu]],  C = [Cq, 0],  D = 0.
Zeros: the finite s where the Rosenbrock pencil [[A - sI, B], [C, D]] loses rank (SLICOT AB08ND).

With DC-motor electrics (``model.drives``) the armature currents z join the state and the input is
the voltage (``plant_state_space``): L z' = V - R z - C_v i S v, torque i C_t z. An invertible
first-order lag on the input adds poles but no finite zeros, and one to the relative degree (the
voltage needs one more derivative of the path than the torque).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import casadi as ca
import numpy as np
import scipy.linalg

from ffopt.models.equilibrium import static_equilibrium
from ffopt.models.flexible import FlexibleModel

# Relative tolerance of AB08ND's rank decisions. Its default (0: a multiple of eps) let roundoff
# decide the infinite-zero structure at some path points of random arms with a direct drive and an
# elastic gear (three zeros instead of one, two of them at +-2e8 rad/s); on 86 random and shipped
# arms x 41 path points every value in 1e-12..1e-10 gave one zero count per path and no zero beyond
# 1e6 rad/s, while 1e-8 already dropped physical zeros.
ZEROS_RANK_TOL = 1e-11
OPERATING_POINT = "static equilibrium with the tool at theta(t) (v = 0, holding torque), velocity terms left out"


# ----------------------------------------------------------------------------- linearisation
@dataclass
class LinearModel:
    """Second-order linearisation M dv + Dm v + K q = Bu u, y = Cq q, and its state space."""

    M: np.ndarray
    Dm: np.ndarray
    K: np.ndarray
    Bu: np.ndarray
    Cq: np.ndarray

    @property
    def nq(self) -> int:
        return self.M.shape[0]

    def state_space(self):
        """(A, B, C, D) with x = [q; v]."""
        n, m = self.nq, self.Bu.shape[1]
        Minv = np.linalg.inv(self.M)
        A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ self.K, -Minv @ self.Dm]])
        B = np.vstack([np.zeros((n, m)), Minv @ self.Bu])
        C = np.hstack([self.Cq, np.zeros((self.Cq.shape[0], n))])
        return A, B, C, np.zeros((C.shape[0], m))


def plant_state_space(model: FlexibleModel, lin: LinearModel):
    """(A, B, C, D) of the plant with the model's input: ``lin.state_space()`` for torque inputs; with
    DC-motor electrics x = [q; v; z] and the armature voltages as input."""
    A, B, C, D = lin.state_space()
    d = model.drives
    if d is None:
        return A, B, C, D
    n, N = A.shape[0], B.shape[1]
    S = np.zeros((N, lin.nq))  # motor speeds vm = S v
    S[np.arange(N), model.layout.motor_of_input] = 1.0
    Ae = np.zeros((n + N, n + N))
    Ae[:n, :n] = A
    Ae[:n, n:] = B @ np.diag(d.torque_per_ampere)
    Ae[n:, lin.nq:n] = -np.diag(d.back_emf_constant * d.ratio / d.inductance) @ S
    Ae[n:, n:] = -np.diag(d.resistance / d.inductance)
    Be = np.vstack([np.zeros((n, N)), np.diag(1.0 / d.inductance)])
    Ce = np.hstack([C, np.zeros((C.shape[0], N))])
    return Ae, Be, Ce, np.zeros((Ce.shape[0], N))


def input_derivative_order(model: FlexibleModel, reference, guess=None) -> int | None:
    """Highest derivative of the path the input needs: the largest relative degree of the plant
    linearised at rest at the start of the path (None without a vector relative degree)."""
    q0 = equilibrium_path(model, reference, np.array([reference.t_motion_start]), guess)[0]
    r, _ = relative_degree(*plant_state_space(model, linearize(model, q0))[:3])
    return None if r is None else int(r.max())


def _jacobian_function(model: FlexibleModel) -> ca.Function:
    cached = getattr(model, "_ffopt_linearisation", None)
    if cached is None:
        q, v, a, u = model.q, model.v, model.a, model.u
        res = model.equations_of_motion(q, v, a, u)
        qa = q[: model.layout.n_link]
        y = model.output(qa)
        cached = ca.Function("linearise", [q, v, a, u],
                             [ca.jacobian(res, a), ca.jacobian(res, v), ca.jacobian(res, q),
                              -ca.jacobian(res, u), ca.jacobian(y, q)])
        model._ffopt_linearisation = cached
    return cached


def linearize(model: FlexibleModel, q: np.ndarray, v: np.ndarray | None = None,
              a: np.ndarray | None = None, u: np.ndarray | None = None) -> LinearModel:
    """Jacobians of the equations of motion at (q, v, a, u); v = a = 0 and the holding torque by default."""
    L = model.layout
    q = np.asarray(q, float).ravel()
    v = np.zeros(L.nq) if v is None else np.asarray(v, float).ravel()
    a = np.zeros(L.nq) if a is None else np.asarray(a, float).ravel()
    if u is None:
        u = np.array(model.input_torque(q, v, a)).ravel()
    M, Dm, K, Bu, Cq = (np.array(m, dtype=float) for m in _jacobian_function(model)(q, v, a, u))
    return LinearModel(M, Dm, K, Bu, Cq)


def linearize_at_rest(model: FlexibleModel, qs: np.ndarray) -> list[LinearModel]:
    """``linearize`` at rest (v = a = 0, holding torque) at each row of qs, in one mapped call."""
    n, nq = len(qs), model.layout.nq
    zero = np.zeros((nq, n))
    u = model.input_torque.map(n)(qs.T, zero, zero)
    mats = [np.array(m, dtype=float) for m in _jacobian_function(model).map(n)(qs.T, zero, zero, u)]
    # a mapped output is the horizontal concatenation of the n per-point matrices
    split = [m.reshape(m.shape[0], n, -1).transpose(1, 0, 2) for m in mats]
    return [LinearModel(*(s[k] for s in split)) for k in range(n)]


def equilibrium_path(model: FlexibleModel, reference, times: np.ndarray,
                     guess: np.ndarray | None = None) -> np.ndarray:
    """Static equilibria q(t_k) (rows) with the tool at theta(t_k), by continuation along the path."""
    y = reference.evaluate(times)
    qs = []
    qa_guess = guess
    for t, yk in zip(times, y):
        q = static_equilibrium(model, yk, qa_guess, where=f"t = {t:.4g} s")
        qs.append(q)
        qa_guess = q[: model.layout.n_link]
    return np.array(qs)


def path_times(reference, n_points: int) -> np.ndarray:
    """n_points times over the motion interval (the rests add nothing new)."""
    if n_points < 1:
        raise ValueError("n_points must be >= 1")
    return np.linspace(reference.t_motion_start, reference.t_motion_end, n_points)


# ----------------------------------------------------------------------------- zeros
def relative_degree(A, B, C, rtol: float = 1e-9):
    """Vector relative degree r (per output) and decoupling matrix L, or (None, None).

    r_i is the first k with c_i A^(k-1) B != 0 (relative to the sizes involved).
    """
    n = A.shape[0]
    scale_b = max(np.linalg.norm(B), 1e-300)
    r, rows = [], []
    for c in C:
        row = c.copy()
        for k in range(1, n + 1):
            lb = row @ B
            if np.linalg.norm(lb) > rtol * max(np.linalg.norm(row), 1e-300) * scale_b:
                r.append(k)
                rows.append(lb)
                break
            row = row @ A
        else:
            return None, None
    return np.array(r), np.array(rows)


def normal_form_zeros(A, B, C, rtol: float = 1e-9):
    """Zeros as eigenvalues of the zero dynamics (Isidori normal form); None if no vector relative degree.

    With y^(r_i) = c_i A^r_i x + c_i A^(r_i-1) B u, holding y = 0 means x in V = ker [c_i A^k]_(k<r_i)
    and u = -L^-1 Cr x; the zero dynamics is A - B L^-1 Cr restricted to V (invariant).
    """
    r, L = relative_degree(A, B, C, rtol)
    if r is None or np.linalg.cond(L) > 1.0 / rtol:
        return None
    obs = np.vstack([c @ np.linalg.matrix_power(A, k) for c, ri in zip(C, r) for k in range(ri)])
    Cr = np.vstack([c @ np.linalg.matrix_power(A, ri) for c, ri in zip(C, r)])
    V = scipy.linalg.null_space(obs)
    if V.shape[1] == 0:
        return np.zeros(0, complex)
    Acl = A - B @ np.linalg.solve(L, Cr)
    return np.linalg.eigvals(V.T @ Acl @ V)


def invariant_zeros(A, B, C, D=None, cross_check: bool = True):
    """Finite invariant zeros of (A, B, C, D): the s where the Rosenbrock pencil [[A - sI, B], [C, D]] loses rank.

    SLICOT AB08ND (through slycot) reduces the pencil by orthogonal transformations to a regular
    pencil Af - s Bf whose generalized eigenvalues are exactly the finite zeros (Emami-Naeini & Van
    Dooren, computation of zeros of linear multivariable systems). QZ on the full pencil is not
    enough: the zeros at infinity form Jordan blocks that roundoff splits into large finite values
    ~ eps^(-1/size); no threshold separates them from real zeros, e.g. a spurious +1.5e7 rad/s
    "zero" at one path point of a planar arm with a passive base, an elastic gear and a direct drive
    (no vector relative degree, so the normal-form count of zeros is not available either).
    The rank decisions of the reduction use ZEROS_RANK_TOL on the balanced system.
    Returns (zeros sorted by decreasing real part, normal_form_zeros or None) for cross-checking;
    cross_check=False skips the normal form (the zero-dynamics check of ``method = "auto"``).
    """
    from slycot import ab08nd

    A, B, C = (np.atleast_2d(np.asarray(m, float)) for m in (A, B, C))
    n, m, p = A.shape[0], B.shape[1], C.shape[0]
    if p != m:
        raise ValueError(f"invariant_zeros needs a square system, got {p} outputs and {m} inputs")
    D = np.zeros((p, m)) if D is None else np.atleast_2d(np.asarray(D, float))
    nu, *_, Af, Bf = ab08nd(n, m, p, A, B, C, D, equil="S", tol=ZEROS_RANK_TOL)
    zeros = scipy.linalg.eigvals(Af[:nu, :nu], Bf[:nu, :nu]) if nu else np.zeros(0, complex)
    nf = normal_form_zeros(A, B, C) if cross_check and not np.any(D) else None
    return zeros[np.argsort(-zeros.real)], nf


def _match_error(z1: np.ndarray, z2: np.ndarray) -> float:
    """Largest relative distance from a zero in z1 to the nearest in z2 (same count)."""
    if len(z1) != len(z2):
        return np.inf
    if len(z1) == 0:
        return 0.0
    dist = np.abs(z1[:, None] - z2[None, :]) / np.maximum(1.0, np.abs(z1[:, None]))
    return float(dist.min(axis=1).max())


@dataclass
class ZeroDynamicsReport:
    """Invariant zeros of the linearised forward model along the path (rad/s, complex s)."""

    minimum_phase: bool
    worst_zero: complex  # the zero with the largest real part over the whole path
    worst_time: float  # path time (s) where it occurs
    times: np.ndarray
    zeros: list  # one array of zeros per time
    margin: float  # -max Re(zero) in 1/s: > 0 means minimum phase with this decay rate
    operating_point: str = OPERATING_POINT
    cross_check_error: float = 0.0  # QZ zeros vs normal-form zero dynamics (relative)

    def unstable_zeros(self, rtol: float = 1e-8) -> list[tuple[complex, float]]:
        """(zero, path time) of every zero with Re z > rtol max(1, |z|) (roundoff on undamped zeros
        is not instability), over the whole path."""
        return [(complex(z), float(t)) for t, zs in zip(self.times, self.zeros) for z in zs
                if np.isfinite(z) and z.real > rtol * max(1.0, abs(z))]

    def slowest_unstable_zero(self, rtol: float = 1e-8) -> tuple[complex, float] | None:
        """(zero, path time) of the unstable zero with the SMALLEST real part over the path: the
        slowest-growing mode of the zero dynamics, whose time constant 1 / Re z sets how long a
        stable inversion must pre-actuate (a faster unstable zero decays backwards in time faster).
        None if no zero is unstable."""
        unstable = self.unstable_zeros(rtol)
        return min(unstable, key=lambda zt: zt[0].real) if unstable else None

    def fastest_unstable_zero(self, rtol: float = 1e-8) -> tuple[complex, float] | None:
        """(zero, path time) of the unstable zero with the LARGEST real part over the path (the one a
        collocation grid resolves worst), or None."""
        unstable = self.unstable_zeros(rtol)
        return max(unstable, key=lambda zt: zt[0].real) if unstable else None

    def summary(self) -> str:
        verdict = "minimum phase" if self.minimum_phase else "NON-MINIMUM PHASE"
        n = len(self.zeros[0]) if self.zeros else 0
        return (f"{verdict}: {n} zeros per point, worst zero {self.worst_zero.real:.4g}"
                f"{self.worst_zero.imag:+.4g}j rad/s at t = {self.worst_time:.4g} s "
                f"(margin {self.margin:.4g} 1/s over {len(self.times)} points)")

    def to_dict(self) -> dict:
        return {
            "minimum_phase": bool(self.minimum_phase),
            "worst_zero": [float(self.worst_zero.real), float(self.worst_zero.imag)],
            "worst_time_s": float(self.worst_time),
            "margin_per_s": float(self.margin),
            "n_points": int(len(self.times)),
            "operating_point": self.operating_point,
            "cross_check_error": float(self.cross_check_error),
            "times_s": [float(t) for t in self.times],
            "zeros_re": [[float(z.real) for z in zs] for zs in self.zeros],
            "zeros_im": [[float(z.imag) for z in zs] for zs in self.zeros],
        }


def zeros_along(model: FlexibleModel, reference, times, guess: np.ndarray | None = None,
                cross_check: bool = False) -> tuple[list, float]:
    """(invariant zeros at each of ``times`` (static equilibria by continuation from ``guess``), the
    largest normal-form cross-check error)."""
    qs = equilibrium_path(model, reference, np.asarray(times, float), guess)
    all_zeros, err = [], 0.0
    for lin in linearize_at_rest(model, qs):
        z, nf = invariant_zeros(*plant_state_space(model, lin), cross_check=cross_check)
        if nf is not None:
            err = max(err, _match_error(z, nf))
        all_zeros.append(z)
    return all_zeros, err


def zero_dynamics(model: FlexibleModel, reference, guess: np.ndarray | None = None,
                  n_points: int = 41, cross_check: bool = True) -> ZeroDynamicsReport:
    """Minimum-phase check: invariant zeros of the linearised plant at n_points path points.

    guess: link-side angles near the start of the path (picks the inverse-kinematics branch).
    cross_check: also compute the zeros from the normal form (reported as cross_check_error).
    """
    times = path_times(reference, n_points)
    all_zeros, err = zeros_along(model, reference, times, guess, cross_check)
    return report_from_zeros(times, all_zeros, err)


def report_from_zeros(times, all_zeros, err: float = 0.0) -> ZeroDynamicsReport:
    """The ZeroDynamicsReport of the zeros ``all_zeros`` (one array per time of ``times``), e.g. read back from a
    cache; ``err``: the normal-form cross-check error."""
    times = np.asarray(times, float)
    all_zeros = [np.asarray(z, complex) for z in all_zeros]
    worst_re, worst_zero, worst_time = -np.inf, complex(np.nan), float("nan")
    for t, z in zip(times, all_zeros):
        if len(z) and z.real.max() > worst_re:
            k = int(np.argmax(z.real))
            worst_re, worst_zero, worst_time = z.real[k], complex(z[k].real, abs(z[k].imag)), float(t)
    if not np.isfinite(worst_re):  # no finite zeros: trivially minimum phase
        return ZeroDynamicsReport(True, complex(np.nan), float("nan"), times, all_zeros, np.inf,
                                  cross_check_error=err)
    tol = 1e-9 * max(1.0, abs(worst_zero))
    return ZeroDynamicsReport(bool(worst_re < -tol), worst_zero, worst_time, times, all_zeros,
                              float(-worst_re), cross_check_error=err)


# ----------------------------------------------------------------------------- eigenfrequencies
CONDITIONS = ("clamped", "free", "pd")


def boundary_condition(model: FlexibleModel, lin: LinearModel, condition: str, pd=None):
    """(M, Dm, K) for motors clamped (their coordinates removed), free (u = 0) or under PD control."""
    L = model.layout
    motor = L.motor_of_input
    if condition == "clamped":
        keep = [i for i in range(L.nq) if i not in motor]
        ix = np.ix_(keep, keep)
        return lin.M[ix], lin.Dm[ix], lin.K[ix]
    if condition == "free":
        return lin.M, lin.Dm, lin.K
    if condition == "pd":
        kp, kd = pd  # u = -kp dqm - kd dvm  (motor-side PD, Thuemmel, Otter & Bals)
        S = np.zeros((L.n_u, L.nq))
        S[np.arange(L.n_u), motor] = 1.0
        return lin.M, lin.Dm + lin.Bu @ np.diag(kd) @ S, lin.K + lin.Bu @ np.diag(kp) @ S
    raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")


@dataclass
class Modes:
    """Modes of one linearisation: undamped (from K, M) and damped (state-space) frequencies."""

    undamped_hz: np.ndarray  # sqrt(eig(K, M)) / 2 pi, ascending, for eig > 0
    n_unstable: int  # eigenvalues of M^-1 K < 0 (e.g. gravity acting as negative stiffness)
    n_rigid: int  # eigenvalues ~ 0 (rigid-body modes)
    damped_hz: np.ndarray  # |Im lambda| / 2 pi of the complex pairs, ascending
    natural_hz: np.ndarray  # |lambda| / 2 pi of the same pairs
    damping_ratio: np.ndarray  # -Re lambda / |lambda| of the same pairs


def modes(M, Dm, K, rigid_rtol: float = 1e-8) -> Modes:
    lam = np.linalg.eigvals(np.linalg.solve(M, K)).real  # omega^2
    scale = max(np.abs(lam).max(), 1e-300)
    rigid = np.abs(lam) <= rigid_rtol * scale
    undamped = np.sort(np.sqrt(lam[(lam > 0) & ~rigid])) / (2 * np.pi)
    n = M.shape[0]
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ K, -Minv @ Dm]])
    ev = np.linalg.eigvals(A)
    big = max(1.0, np.abs(ev).max())
    pairs = ev[(ev.imag > 1e-9 * big) & (np.abs(ev) > 1e-6 * big)]  # skip perturbed rigid-body pairs
    order = np.argsort(np.abs(pairs))
    pairs = pairs[order]
    return Modes(undamped, int(np.sum((lam < 0) & ~rigid)), int(rigid.sum()),
                 np.abs(pairs.imag) / (2 * np.pi), np.abs(pairs) / (2 * np.pi), -pairs.real / np.abs(pairs))


@dataclass
class FrequencyReport:
    """Lowest eigenfrequencies (Hz) along the path for each boundary condition."""

    times: np.ndarray
    conditions: tuple[str, ...]
    lowest_undamped_hz: dict  # condition -> array over times (nan if none)
    lowest_damped_hz: dict  # condition -> damped frequency of the lowest complex pair
    lowest_damping_ratio: dict
    all_undamped_hz: dict  # condition -> list of arrays
    n_unstable: dict  # condition -> array of counts over times
    gravity_stiffness: bool = True
    pd_gains: tuple | None = None
    operating_point: str = OPERATING_POINT

    def minimum(self, condition: str, damped: bool = False) -> float:
        vals = (self.lowest_damped_hz if damped else self.lowest_undamped_hz)[condition]
        return float(np.nanmin(vals)) if np.any(np.isfinite(vals)) else float("nan")

    def to_dict(self) -> dict:
        out = {"operating_point": self.operating_point, "gravity_stiffness": self.gravity_stiffness,
               "times_s": [float(t) for t in self.times]}
        for c in self.conditions:
            out[c] = {
                "min_lowest_undamped_hz": self.minimum(c),
                "max_lowest_undamped_hz": float(np.nanmax(self.lowest_undamped_hz[c])),
                "min_lowest_damped_hz": self.minimum(c, damped=True),
                "lowest_undamped_hz": [float(x) for x in self.lowest_undamped_hz[c]],
                "lowest_damped_hz": [float(x) for x in self.lowest_damped_hz[c]],
                "lowest_damping_ratio": [float(x) for x in self.lowest_damping_ratio[c]],
                "max_unstable_modes": int(np.max(self.n_unstable[c])),
            }
        return out


def _without_gravity(model: FlexibleModel) -> FlexibleModel:
    return model.variant(replace(model.chain, gravity=np.zeros(3)))


def eigenfrequencies(model: FlexibleModel, reference, guess: np.ndarray | None = None, n_points: int = 21,
                     conditions=CONDITIONS, pd_gains: tuple | None = None,
                     gravity_stiffness: bool = True) -> FrequencyReport:
    """Eigenfrequencies of the plant linearised at static equilibria along the path.

    clamped: motor angles (and directly driven joints) held fixed; free: u = 0 (motors free);
    pd: u = -kp dqm - kd dvm with pd_gains = (kp, kd) (e.g. ffopt.sim.plant.pd_gains).
    gravity_stiffness=False drops d(gravity torque)/dq from K (the equilibria still include gravity).
    """
    if "pd" in conditions and pd_gains is None:
        raise ValueError("condition 'pd' needs pd_gains=(kp, kd)")
    times = path_times(reference, n_points)
    qs = equilibrium_path(model, reference, times, guess)
    no_g = None if gravity_stiffness else _without_gravity(model)
    low_u, low_d, low_z, all_u, unstable = ({c: [] for c in conditions} for _ in range(5))
    for q in qs:
        lin = linearize(model, q)
        if no_g is not None:
            lin.K = linearize(no_g, q, u=np.array(model.input_torque(q, 0 * q, 0 * q)).ravel()).K
        for c in conditions:
            md = modes(*boundary_condition(model, lin, c, pd_gains))
            all_u[c].append(md.undamped_hz)
            low_u[c].append(md.undamped_hz[0] if len(md.undamped_hz) else np.nan)
            low_d[c].append(md.damped_hz[0] if len(md.damped_hz) else np.nan)
            low_z[c].append(md.damping_ratio[0] if len(md.damping_ratio) else np.nan)
            unstable[c].append(md.n_unstable)
    arr = lambda d: {c: np.array(v) for c, v in d.items()}  # noqa: E731
    return FrequencyReport(times, tuple(conditions), arr(low_u), arr(low_d), arr(low_z), all_u, arr(unstable),
                           gravity_stiffness, pd_gains)
