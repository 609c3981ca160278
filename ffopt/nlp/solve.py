"""Optimisation-based feedforward: strategy choice, warm start, NLP solve, diagnosis, Trajectory.

Time convention: with pre-/post-actuation the returned Trajectory covers the extended horizon
[-pre_actuation_s, t_end + post_actuation_s] of the problem's time axis, so ``t[0]`` is
NEGATIVE when pre-actuating. The reference is held at its start value for t < 0 and at its end
value for t > t_end (``Reference.evaluate`` clamps), and the robot is at rest in the static
equilibrium of the start point at t[0] (up to the small rest penalty of the non-causal NLP).
A verification must therefore start its simulation at ``traj.t[0]`` from ``traj.q[0]`` (or
the start equilibrium) and build y_ref = reference.evaluate(traj.t).
"""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from ffopt.dae.equilibrium import static_equilibrium
from ffopt.dae.forms import choose_dummy_set
from ffopt.dae.inverse import KnownColumns, trajectory_from_states
from ffopt.errors import FfoptError, ProblemError, SolverError
from ffopt.models.flexible import FlexibleModel
from ffopt.nlp.backends.common import stop_status
from ffopt.nlp.feasibility import TorqueNeeds, check_bounds, torque_needs
from ffopt.nlp.monitor import SolveMonitor
from ffopt.nlp.settings import (BACKENDS, LINEAR_SOLVERS, STRATEGIES, NlpSettings, poorly_resolved_per_step,
                                check_limits)
from ffopt.nlp.transcription import Transcription
from ffopt.sim.baselines import rigid_feedforward
from ffopt.trajectory import Trajectory

DIVERGED_TORQUE_FACTOR = 1e3  # BDF torques this many times the static torque scale: diverged


def hessian_mode(s: NlpSettings, noncausal: bool) -> str:
    """The Hessian IPOPT works with, by how far the NLP is from square (exact tracking, no bounds: the path fixes
    the torques but for the start state of a non-causal plan):

    - "limited-memory" (L-BFGS) where the NLP is square (causal): measured on E12 at 2 ms, the same solution
      (0.081 mm verified), solve 1.3-1.5 s instead of 3.1-3.6 s;
    - "gauss-newton" where it is square but for the non-causal start state: the Hessian of the objective alone,
      without the constraints' curvature sum lam_i grad^2 g_i. At the solution lam = -(J J')^-1 J grad f is as
      small as the objective's gradient, which such an NLP hardly moves (the arm with a passive forearm flexure:
      the objective changed in its 8th digit after the first step), so the dropped term is small and the steps
      keep Newton's rate. That arm: the same 3 iterations and solution to 8 digits as with the exact Hessian,
      NLP 5.9 s instead of 8.2-11.0 s (its interval Hessians: 1 s an evaluation, 15 s of gcc once per model);
    - "exact" otherwise (bounds, band or penalty tracking: the curvature matters)."""
    square = s.tracking == "exact" and s.torque_max is None and s.torque_rate_max is None and s.voltage_max is None
    if not square:
        return "exact"
    return "gauss-newton" if noncausal else "limited-memory"


def solve_backend(backend: str, nlp, warm: bool, settings: NlpSettings, monitor: SolveMonitor, transcription=None):
    """Run the NLP on one backend within the monitor's limits; the backend's NlpResult."""
    s = settings
    if s.linear_solver not in LINEAR_SOLVERS:
        raise ProblemError(f"nlp.linear_solver: must be one of {', '.join(LINEAR_SOLVERS)}; got {s.linear_solver!r}")
    if s.linear_solver != "mumps" and backend not in ("casadi", "auto", "ipopt-c"):
        raise ProblemError(f"nlp.linear_solver = {s.linear_solver!r} needs CasADi's IPOPT (nlp.backend = 'casadi', "
                           f"'ipopt-c' or 'auto'); the {backend} backend's IPOPT has MUMPS only")
    if backend == "pyomo":
        from ffopt.nlp.backends.pyomo_backend import solve_transcription

        return solve_transcription(transcription, nlp, warm, s.tol, monitor)
    if backend == "cyipopt":
        from ffopt.nlp.backends.cyipopt_backend import solve

        return solve(nlp, warm, s.tol, monitor)
    if backend == "ipopt-c":
        from ffopt.nlp.backends import ipopt_c

        return ipopt_c.solve(nlp, warm, s.tol, monitor, library=ipopt_c.library_for(s.linear_solver),
                             linear_solver=s.linear_solver)
    if backend == "fatrop":
        from ffopt.nlp.backends.fatrop_backend import solve

        return solve(transcription, nlp, warm, s.tol, monitor)
    if backend in ("casadi", "auto"):
        from ffopt.nlp.backends import casadi_ipopt

        solve = casadi_ipopt.solve_auto if backend == "auto" else casadi_ipopt.solve
        return solve(nlp, warm, s.tol, monitor, square_by_newton=s.square_by_newton)
    raise ProblemError(f"nlp.backend: must be one of {', '.join(BACKENDS)}; got {backend!r}")


def choose_strategy(model: FlexibleModel, reference, settings: NlpSettings, qa_guess=None,
                    bdf_step: float | None = None, zero_report=None) -> tuple[NlpSettings, dict]:
    """Resolve strategy = auto by the zero dynamics along the path; default pre/post-actuation.

    Non-minimum phase -> non-causal (stable inversion) with pre-/post-actuation of 10 time
    constants of the SLOWEST unstable zero (``pre_actuation_rate``; capped to [0.05, 3] s) unless
    the user set them. bdf_step: also the order of a BDF warm start at that step
    (info["warm_start_order"]: the highest <= WARM_START_ORDER stable on the zeros,
    ``ffopt.auto_method.bdf_order_choice``; None: none is, so no warm start).
    """
    info = {"strategy_requested": settings.strategy}
    if settings.strategy not in STRATEGIES:
        raise ProblemError(f"nlp.strategy: must be one of {', '.join(STRATEGIES)}; got {settings.strategy!r}")
    strategy, rate = settings.strategy, None
    try:
        from ffopt.analysis.linear import zero_dynamics

        rep = zero_report if zero_report is not None else zero_dynamics(model, reference, qa_guess)
        info["zero_dynamics"] = rep.summary()
        info["minimum_phase"] = bool(rep.minimum_phase)
        if not rep.minimum_phase:
            rate = pre_actuation_rate(rep)
            fastest = rep.fastest_unstable_zero()
            info["fastest_unstable_zero"] = float(fastest[0].real) if fastest else 0.0
        if bdf_step is not None:
            info.update(_warm_start_order(rep, reference, bdf_step))
    except (ImportError, FfoptError, np.linalg.LinAlgError) as err:  # analysis unavailable / failed
        info["zero_dynamics"] = f"not available ({err})"
    if strategy == "auto":
        strategy = "causal" if info.get("minimum_phase", True) else "noncausal"
        info["strategy_reason"] = ("minimum phase: causal inversion from rest" if strategy == "causal" else
                                   "non-minimum phase: non-causal inversion with pre-/post-actuation")
    else:
        info["strategy_reason"] = "set by the user"
    if strategy == "noncausal" and settings.pre_actuation_s == 0 and settings.post_actuation_s == 0:
        span = float(np.clip(10.0 / rate, 0.05, 3.0)) if rate else 0.3
        settings = replace(settings, pre_actuation_s=span, post_actuation_s=span)
        info["actuation_span_reason"] = f"10 / (slowest unstable zero {rate:.4g} 1/s)" if rate else "default 0.3 s"
    info["strategy"] = strategy
    return replace(settings, strategy=strategy), info


def _warm_start_order(rep, reference, step: float) -> dict:
    """The BDF order of the warm start: stable on the zero dynamics at ``step`` (a BDF-6 warm start
    on a lightly damped zero diverges, after compiling its step function for nothing)."""
    from ffopt.analysis.stability import choose_order, growth_margin
    from ffopt.auto_method import bdf_zeros

    times, zeros = bdf_zeros(rep.times, rep.zeros, step)
    choice = choose_order(times, zeros, WARM_START_ORDER, step, growth_margin(int(np.ceil(reference.t_end / step))))
    out = {"warm_start_order": choice.order}
    if choice.limiting_zero is not None:
        out["warm_start_order_reason"] = choice.reason()
    return out


def start_point(tr: Transcription, settings: NlpSettings, qa_guess, say):
    """The NLP's start without a BDF solution: rest (warm_start = 'none'), or for 'rigid' the rigid model's
    feedforward (rest where the rigid inverse fails, said)."""
    if settings.warm_start != "rigid":
        return tr.rest_guess()
    try:
        motion = rigid_start(tr.model, tr.reference, tr.tc, qa_guess)
    except FfoptError as err:
        say(f"no rigid-model start ({err}): the NLP starts from rest")
        return tr.rest_guess()
    return tr.guess_from_trajectory(motion)


def rigid_start(model: FlexibleModel, reference, times, qa_guess) -> SimpleNamespace:
    """The rigid model's feedforward (stiff gears, passive joints locked: ``ffopt.sim.baselines.rigid_feedforward``)
    as the elastic model's states: each motor ahead of its link by the gear deflection (u - Jm qa'') / k. On the
    path and bounded where the elastic inverse of a non-minimum-phase arm is not causal (its BDF solution
    diverges); the NLP then adds the gear and passive-joint dynamics. Held at its ends outside the reference."""
    t = np.unique(np.clip(np.concatenate([[0.0, reference.t_end], times]), 0.0, reference.t_end))
    rigid = rigid_feedforward(model, reference, t, qa_guess)
    L, joints = model.layout, model.chain.joints
    gear = list(L.gear)
    tau = rigid.u
    inputs = [L.actuated.index(i) for i in gear]
    stiffness = np.array([joints[i].stiffness for i in gear])
    motor_inertia = np.array([joints[i].motor_inertia for i in gear])
    deflection = (tau[:, inputs] - motor_inertia * rigid.ddqa[:, gear]) / stiffness
    q = np.hstack([rigid.qa, rigid.qa[:, gear] + deflection])
    v, a = (np.hstack([x, x[:, gear]]) for x in (rigid.dqa, rigid.ddqa))
    u, current = tau, None
    if model.n_z:  # DC-motor electrics: the armature voltages and currents of these torques
        rate = np.gradient(tau, t, axis=0)
        u, current = (np.array(x, float).T for x in model.input_from_torque.map(len(t))(q.T, v.T, tau.T, rate.T))
    return SimpleNamespace(t=t, q=q, v=v, a=a, u=u, current=current)


def pre_actuation_rate(rep) -> float:
    """Re z of the slowest unstable zero along the path (1/s): the pre-actuation needed by a stable
    inversion is set by the slowest-decaying (backwards in time) unstable mode, i.e. the smallest
    positive real part, not the largest (the worst zero), which would cut the span too short."""
    slowest = rep.slowest_unstable_zero()
    z = slowest[0] if slowest is not None else rep.worst_zero  # roundoff-level instability only
    return float(abs(z.real))


WARM_START_ORDER = 6  # the highest stable one at most (_warm_start_order)
WARM_START_FORM = "I1"  # DAE form of the BDF warm start: I1 (the NLP's own form) needs as many or one
# fewer iterations than I3 (E12 bounded 11 vs 11, E1 bounded 28 vs 29; results/nlp.md, results/nlp_solvers.py)


def warm_start_trajectory(model, reference, qa_guess, step: float, form: str = WARM_START_FORM,
                          order: int = WARM_START_ORDER) -> tuple[Trajectory | None, dict]:
    """The BDF solution (BDF-``order``, form ``form``) for warm starting, or None if it fails or diverges."""
    from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf

    tic = time.perf_counter()
    try:
        traj = solve_inverse_bdf(model, reference, BdfSettings(order=order, step=step, form=form), qa_guess=qa_guess)
    except FfoptError as err:
        return None, {"bdf_status": f"failed: {err}", "time_bdf_s": time.perf_counter() - tic}
    info = {"time_bdf_s": time.perf_counter() - tic, "bdf_form": form, "bdf_order": order,
            "bdf_peak_torque_Nm": np.abs(traj.u).max(axis=0).tolist()}
    scale = max(1.0, float(np.abs(traj.u[0]).max()), float(np.median(np.abs(traj.u))))
    if not np.all(np.isfinite(traj.u)) or np.abs(traj.u).max() > DIVERGED_TORQUE_FACTOR * scale:
        info["bdf_status"] = "diverged (unbounded torques)"
        return None, info
    info["bdf_status"] = "ok"
    return traj, info


def solve_inverse_nlp(model: FlexibleModel, reference, settings: NlpSettings, qa_guess=None,
                      warm: Trajectory | None = None, progress=None) -> Trajectory:
    """Solve the collocation NLP (strategy already resolved) and return the feedforward.

    warm: the BDF solution, the start point if settings.warm_start = 'bdf' (else a cold start
    from rest), and in any case what exact tracking needs for the bound check. progress: a
    callable taking a str (warnings, live iteration lines: ``ffopt.nlp.monitor.NlpProgress``).
    Raises SolverError before solving if a bound is infeasible (``ffopt.nlp.feasibility``), and
    with a diagnosis if the NLP is not solved within nlp.max_iter / nlp.max_cpu_time_s (or the wall-time
    guard nlp.max_wall_time_s); the diagnosis names the limit that ended it.
    A Ctrl-C (or an exception of ``progress``) propagates as it is.
    """
    s = settings
    check_limits(s)
    say = progress if progress is not None else (lambda msg: None)
    use_warm = warm is not None and s.warm_start == "bdf"
    # exact tracking from rest starts far from feasible and can run away (monitor.DIVERGENCE_SPAN)
    monitor = SolveMonitor(s.max_iter, s.wall_time_limit_s, progress,
                           stop_diverging=s.tracking == "exact" and not use_warm, max_cpu_time_s=s.max_cpu_time_s)
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q_rest = static_equilibrium(model, y0, qa_guess)
    dummy = choose_dummy_set(model, q_rest[: model.layout.n_link])
    noncausal = s.strategy == "noncausal"
    try:
        with monitor.guard():
            tic = time.perf_counter()
            tr = Transcription(model, reference, s, q_rest, noncausal, dummy, progress=say)
            needs = _check_bounds(tr, warm, qa_guess, say)
            guess = tr.guess_from_trajectory(warm) if use_warm else start_point(tr, s, qa_guess, say)
            nlp = tr.build(guess)
            nlp.info["hessian"] = hessian_mode(s, noncausal)
            nlp.info["linear_solver"] = s.linear_solver
            t_transcribe = time.perf_counter() - tic
            res = solve_backend(s.backend, nlp, use_warm, s, monitor, tr)
    except KeyboardInterrupt:
        monitor.close("interrupted")
        raise
    if res.status == "User_Requested_Stop" and monitor.stop_diverging and monitor.diverging():
        res.status = "Diverging_Iterates"  # stopped by the monitor (here or in a worker process)
    elif res.status == "User_Requested_Stop" and (monitor.expired() or monitor.limit_reached()):
        res.status = stop_status(monitor)  # stopped by the monitor at a limit (stop_reason: which)
    sol = tr.unpack(res.w, nlp.scales)
    if not res.success:
        monitor.close(f"stopped ({res.status})")
        raise SolverError(_diagnose(tr, res, sol, monitor, needs))
    traj = _trajectory(model, reference, tr, nlp, res, sol, t_transcribe, use_warm)
    traj.stats.update({"iterations_total": monitor.iterations, "time_nlp_stage_s": monitor.elapsed(),
                       "cpu_time_nlp_stage_s": monitor.cpu_elapsed(), "max_cpu_time_s": s.max_cpu_time_s,
                       "wall_time_limit_s": s.wall_time_limit_s, "nlp_solver": _solver_name(res)})
    return traj


def _solver_name(res) -> str:
    """Which solver produced the plan, for summary.json (e.g. "IPOPT via cyipopt")."""
    if res.method.startswith("newton"):
        return "Newton + SuperLU (square NLP)" if "SuperLU" in res.method else \
            "Newton + block forward substitution (square NLP)"
    if res.backend == "ipopt-c":
        return f"IPOPT ({res.extra.get('ipopt_library', '?')}'s library) via its C interface"
    return {"casadi": "IPOPT via CasADi nlpsol", "cyipopt": "IPOPT via cyipopt", "pyomo": "IPOPT via CasADi (Pyomo model)",
            "fatrop": "fatrop via CasADi (stage-ordered NLP)"}.get(res.backend, res.backend)


def _check_bounds(tr: Transcription, warm: Trajectory | None, qa_guess, say) -> TorqueNeeds | None:
    """Bounds against the holding torques and the exact-tracking needs: SolverError if no plan can
    meet them, a warning line if they only cost tool accuracy (``ffopt.nlp.feasibility``)."""
    s = tr.settings
    if s.torque_max is None and s.torque_rate_max is None:
        return None
    needs = torque_needs(tr.model, tr.reference, tr.q_rest, warm, qa_guess)
    tmax = None if s.torque_max is None else tr.per_motor(s.torque_max, "nlp.torque_max")
    rmax = None if s.torque_rate_max is None else tr.per_motor(s.torque_rate_max, "nlp.torque_rate_max")
    warnings = check_bounds(needs, tmax, rmax, s.tracking, tr.noncausal)
    for line in warnings:
        say(line)
    return needs


def _diagnose(tr: Transcription, res, sol, monitor: SolveMonitor, needs: TorqueNeeds | None) -> str:
    """Why the NLP was not solved: the limit or status, the last iterate, and what to try."""
    s = tr.settings
    limit = monitor.limit_reached(res.status)
    if limit == "max_wall_time":
        head = f"NLP stopped at its wall-time limit of {s.wall_time_limit_s:g} s (nlp.max_wall_time_s, --max-time)"
    elif limit == "max_cpu_time":
        head = f"NLP stopped at its CPU-time limit of {s.max_cpu_time_s:g} s (nlp.max_cpu_time_s)"
    elif limit == "max_iter":
        head = f"NLP stopped at its iteration limit of {s.max_iter} (nlp.max_iter, --max-iter)"
    elif res.status == "Diverging_Iterates":
        h = monitor.history
        head = (f"NLP diverging from rest with exact tracking (objective {h[1].objective:.3g} -> {h[-1].objective:.3g}, "
                f"infeasibility above its start of {h[0].infeasibility:.2g} for the last iterations), stopped")
    else:
        head = "NLP not solved"
    solver = monitor.solver or res.backend
    msg = [f"{head}: {solver} ended with status {res.status} after {monitor.iterations} iterations and "
           f"{monitor.elapsed():.1f} s ({monitor.cpu_elapsed():.1f} s of its {s.max_cpu_time_s:g} s of CPU)" + (f"; {res.note}" if res.note else "")
           + "."]
    if monitor.history:
        msg.append(_last_iterate(tr, res, sol, monitor) + ".")
        trend = monitor.trend()
        if trend:
            msg.append(trend[0].upper() + trend[1:] + ".")
    elif res.backend == "fatrop" and res.iterations:
        msg.append("fatrop reports no per-iteration progress (CasADi's fatrop plugin calls no iteration callback).")
    else:
        msg.append("No iteration was done.")
    msg.append("What to try: " + _advice(s, limit, needs, monitor, res.backend))
    return " ".join(msg)


def _last_iterate(tr: Transcription, res, sol, monitor: SolveMonitor) -> str:
    s = tr.settings
    viol = res.max_constraint_violation()
    infeasibility = viol if np.isfinite(viol) else monitor.last.infeasibility
    bits = [f"primal infeasibility {infeasibility:.2e} (scaled constraints)",
            f"tool error {1e3 * np.abs(sol['E']).max():.4g} mm"]
    u = sol["u"][:, 1:]
    if s.torque_max is not None:
        tmax = tr.per_motor(s.torque_max, "nlp.torque_max")
        bits.append("torque-bound use " + ", ".join(f"{x:.0%}" for x in np.abs(u).max(axis=1) / tmax))
    if s.torque_rate_max is not None:
        rmax = tr.per_motor(s.torque_rate_max, "nlp.torque_rate_max")
        dt = np.diff(sol["t"])
        rate = np.abs(np.diff(sol["u"], axis=1) / dt[None, :]).max(axis=1)
        bits.append("torque-rate-bound use " + ", ".join(f"{x:.0%}" for x in rate / rmax))
    return "At the last iterate: " + ", ".join(bits)


def _bound_gap(s: NlpSettings, needs) -> str:
    """What was measured of the torque bounds against what exact tracking needs (not a guess at 'far')."""
    if s.torque_max is None or needs is None or needs.peak is None:
        return "the penalty NLP under these bounds did not finish"
    bound = np.broadcast_to(np.asarray(s.torque_max, float), np.shape(needs.peak))
    below = 100.0 * (1.0 - bound / np.asarray(needs.peak, float))
    parts = ", ".join(f"{m} {b:.4g} N m ({-d:+.0f} % of its exact-tracking peak {p:.4g})" if d > 0 else
                      f"{m} {b:.4g} N m (above its exact-tracking peak {p:.4g})"
                      for m, b, d, p in zip(needs.motors, bound, below, needs.peak))
    return f"the penalty NLP under the bounds {parts} did not finish"


def _advice(s: NlpSettings, limit: str | None, needs: TorqueNeeds | None, monitor: SolveMonitor, backend: str) -> str:
    tips = []
    bounded = s.torque_max is not None or s.torque_rate_max is not None
    if bounded and needs is not None and needs.peak is not None:
        peaks = ", ".join(f"{p:.0f}" for p in needs.peak)
        need = f" (exact tracking peaks at {peaks} N m)"
    else:
        need = ""
    if bounded and s.tracking == "exact":
        tips.append("the bounds are probably too tight for exact tracking: set nlp.tracking = 'band' (with "
                    f"nlp.band_mm) or 'penalty', raise nlp.torque_max / torque_rate_max{need}, or slow the motion")
    elif bounded and s.tracking == "band":
        tips.append(f"no motion may keep the tool within nlp.band_mm = {s.band_mm:g} mm under these bounds: widen "
                    f"the band, use nlp.tracking = 'penalty', raise the bounds{need}, or slow the motion")
    elif bounded:
        tips.append(f"{_bound_gap(s, needs)}: raise nlp.torque_max / torque_rate_max or slow the motion "
                    "(reference.duration); a smaller nlp.penalty_weight eases the NLP but allows a larger tool error")
    elif limit is None and monitor.stop_diverging and monitor.diverging():
        tips.append("nlp.tracking = 'penalty' with a large nlp.penalty_weight (the default method auto does this "
                    "with 1e15: the penalty NLP starts feasible from rest), nlp.warm_start = 'bdf' for a "
                    "minimum-phase arm, or a slower motion (reference.duration)")
    else:
        tips.append("nlp.warm_start = 'bdf', a smaller nlp.step")
    if backend == "pyomo" and not monitor.history:
        tips.append("nlp.backend = 'auto' (the pyomo backend is for cross-checks: its set-up takes minutes on fine "
                    "grids)")
    if limit is not None:
        improving = len(monitor.history) > 1 and monitor.last.infeasibility < 0.1 * monitor.history[0].infeasibility
        key = {"max_wall_time": "--max-time / nlp.max_wall_time_s", "max_cpu_time": "nlp.max_cpu_time_s"}.get(
            limit, "--max-iter / nlp.max_iter")
        tips.append(f"a larger limit ({key})" + (" since the infeasibility was still falling" if improving else ""))
    return "; ".join(tips) + "."


def _planned_errors(model, E: np.ndarray):
    """Euclidean planned output errors at the collocation points: positions (m) and angles (rad) apart,
    like the verification's tool error (mm) and angle error (mrad); None where there are none."""
    units = list(model.output_units)
    pos = [i for i, u in enumerate(units) if u == "m"]
    ang = [i for i, u in enumerate(units) if u != "m"]
    norm = lambda rows: np.linalg.norm(E[rows, :], axis=0) if rows else None  # noqa: E731
    return norm(pos), norm(ang)


def _trajectory(model, reference, tr, nlp, res, sol, t_transcribe, warm) -> Trajectory:
    s = tr.settings
    if tr.hold is None:
        traj = trajectory_from_states(model, reference, sol["t"], sol["x"].T, sol["a"].T, method=f"nlp-{tr.rule.name}",
                                      known=KnownColumns(u=sol["u"].T.copy()))
    else:  # the table at the sample instants (interval ends: Radau's last node), u as planned
        idx = tr.hold.nodes * tr.d
        u = sol["u_held"].T.copy()
        if tr.hold.kind == "zoh":  # one value per sample; the last row (the end instant) repeats the last one
            u = np.vstack([u, u[-1:]])
        traj = trajectory_from_states(model, reference, sol["t"][idx], sol["x"][:, idx].T, sol["a"][:, idx].T,
                                      method=f"nlp-{tr.rule.name}", known=KnownColumns(u=u))
        traj.hold = tr.hold.kind
        traj.stats.update({"hold": tr.hold.kind, "sample_time_s": tr.hold.m * tr.h, "resampling": (
            f"planned on the control grid ({tr.hold.kind} hold, {tr.hold.m} collocation interval(s) per sample): exact"),
            "solver_points": len(sol["t"]), "states_follow_hold": True})
    err, err_ang = _planned_errors(model, np.asarray(sol["E"]))
    stats = {
        "scheme": s.scheme, "degree": tr.rule.degree, "step": tr.h, "n_intervals": tr.K,
        "formulation": nlp.info["formulation"], "hessian": nlp.info["hessian"], "tracking": s.tracking, "objective_kind": s.objective,
        "strategy": s.strategy, "t_start_s": tr.t0, "t_end_s": tr.tf,
        "pre_actuation_s": s.pre_actuation_s, "post_actuation_s": s.post_actuation_s,
        "n_variables": nlp.n_variables, "n_constraints": nlp.n_constraints, "warm_start": warm,
        "time_transcription_s": t_transcribe,
        "max_dae_residual_scaled": float(np.abs(sol["G"] * nlp.scales.rows[:, None]).max()),
    }
    if err is not None:  # position outputs (m): tool error in mm
        stats["planned_tool_error_max_mm"] = float(1e3 * err.max())
        # per coordinate, the measure of nlp.band_mm (a band bounds each coordinate, not the distance)
        pos = [i for i, u in enumerate(model.output_units) if u == "m"]
        stats["planned_tool_coordinate_error_max_mm"] = float(1e3 * np.abs(np.asarray(sol["E"])[pos]).max())
        stats["planned_tool_error_rms_mm"] = float(1e3 * np.sqrt(np.mean(err**2)))
    if err_ang is not None:  # angle outputs (rad: tool angles, joint outputs): in mrad, never mixed with mm
        stats["planned_angle_error_max_mrad"] = float(1e3 * err_ang.max())
        stats["planned_angle_error_rms_mrad"] = float(1e3 * np.sqrt(np.mean(err_ang**2)))
    stats.update(res.stats())
    if res.method == "ipopt":
        stats["linear_solver"] = s.linear_solver  # IPOPT's (nlp.linear_solver)
    stats["time_solve_s"] = res.time_total_s
    if s.torque_max is not None:
        tmax = tr.per_motor(s.torque_max, "nlp.torque_max")
        stats["torque_max_Nm"] = tmax.tolist()
        stats["torque_bound_use"] = (np.abs(traj.torques).max(axis=0) / tmax).tolist()
    if s.torque_rate_max is not None:
        rmax = tr.per_motor(s.torque_rate_max, "nlp.torque_rate_max")
        rate = np.abs(np.diff(traj.u, axis=0) / np.diff(traj.t)[:, None]).max(axis=0)
        stats["torque_rate_max_Nm_per_s"] = rmax.tolist()
        stats["torque_rate_bound_use"] = (rate / rmax).tolist()
    traj.stats.update(stats)
    return traj


# Exact tracking with a held input: the motor equations fix u at every collocation point, which a held u
# cannot follow. The plan then tracks by penalty on the forward model with a tool-error scale of
# HOLD_ERROR_SCALE_MM and weight HOLD_PENALTY_WEIGHT, raised x100 (re-solved from the BDF start) while the
# planned tool error exceeds HOLD_ERROR_SCALE_MM, up to HOLD_MAX_WEIGHT (results/nlp.md, "Held input":
# E12 needs 1e4, E1 non-minimum phase 1e8).
HOLD_ERROR_SCALE_MM = 1e-3
HOLD_PENALTY_WEIGHT = 1e4
HOLD_MAX_WEIGHT = 1e8
HOLD_OBJECTIVE = "smoothness"


def _planned_max(traj) -> float:
    """The largest planned output error: tool position (mm) or angle (mrad), whichever is larger."""
    st = traj.stats
    return max(st.get("planned_tool_error_max_mm", 0.0), st.get("planned_angle_error_max_mrad", 0.0))


def held_settings(settings: NlpSettings, output, say=None) -> NlpSettings:
    """NLP settings for the problem's [output] table: the hold and its sample time; exact tracking
    becomes penalised tracking (tight error scale) since a held input cannot satisfy the motor
    equations at every collocation point."""
    if output is None or not output.stated:
        return settings
    if settings.backend == "pyomo":
        raise ProblemError("output: the Pyomo backend does not model a held input; use nlp.backend = 'casadi', "
                           "'cyipopt' or 'auto'")
    s = replace(settings, hold=output.hold_kind, sample_time=output.sample_time)
    if s.tracking == "exact":
        s = replace(s, tracking="penalty", band_mm=HOLD_ERROR_SCALE_MM, penalty_weight=HOLD_PENALTY_WEIGHT,
                    objective=HOLD_OBJECTIVE)
        if say is not None:
            say(f"output hold {s.hold}: exact tracking replaced by penalised tracking (error scale "
                f"{HOLD_ERROR_SCALE_MM:g} mm), the input planned on the control grid")
    return s


def _zero_report_cached(problem):
    """The zero dynamics along the problem's path (``ffopt.analysis.linear.zero_dynamics``, 41 points, cross-checked)
    kept on disk (``ffopt.cache.on_disk``) under the problem as written and the version: a second NLP plan of the
    problem reads them (E12: 0.03 s of a 0.6 s bounded plan). None if they cannot be computed (the strategy then
    says why)."""
    import ffopt
    from ffopt.analysis.linear import report_from_zeros, zero_dynamics
    from ffopt.analysis.zero_encoding import decode_zeros, encode_zeros
    from ffopt.cache import on_disk

    try:
        key = f"{ffopt.__version__}\nzero_dynamics 41 cross_check\n{problem.to_toml()}"
    except FfoptError:  # a problem assembled from objects (with_chain) has no file form to key it by
        key = None

    def encode(rep):
        return {**encode_zeros(rep.times, rep.zeros), "cross_check_error": rep.cross_check_error}

    def decode(saved):
        return report_from_zeros(*decode_zeros(saved), saved["cross_check_error"])

    try:
        return on_disk("nlpzeros", key, lambda: zero_dynamics(problem.model, problem.reference,
                                                               problem.reference_spec.joint_guess), encode, decode)
    except (ImportError, FfoptError, np.linalg.LinAlgError):
        return None


def plan_nlp(problem, progress=None) -> Trajectory:
    """The `nlp` method of ``ffopt.plan``: strategy, BDF warm start, NLP, stats for summary.json."""
    say = progress if progress is not None else (lambda msg: None)
    model, reference = problem.model, problem.reference
    guess = problem.reference_spec.joint_guess
    if model.drives is not None and problem.nlp.backend == "pyomo":
        raise ProblemError(f"{problem.source}: nlp.backend: the Pyomo formulation does not model DC-motor electrics; "
                           "use casadi, cyipopt or auto")
    settings, info = choose_strategy(model, reference, held_settings(problem.nlp, problem.output, say), guess,
                                     zero_report=_zero_report_cached(problem),
                                     bdf_step=problem.solver.step)
    say(f"NLP strategy: {info['strategy']} ({info['strategy_reason']}); zero dynamics: {info['zero_dynamics']}")
    per_step = info.get("fastest_unstable_zero", 0.0) * settings.step
    if settings.tracking == "exact" and per_step > poorly_resolved_per_step(settings):
        say(f"note: the unstable zero {info['fastest_unstable_zero']:.4g} 1/s grows by exp({per_step:.2g}) over a step "
            f"(h = {settings.step * 1e3:g} ms), more than the collocation resolves to 2 % "
            f"(exp({poorly_resolved_per_step(settings):.3g})): the verification shows whether it matters; a smaller "
            "nlp.step resolves it")
    warm = None
    bounded = settings.torque_max is not None or settings.torque_rate_max is not None
    order = info.get("warm_start_order", WARM_START_ORDER)
    # without a BDF solution a non-causal NLP starts from the rigid model's feedforward (ffopt.auto_method, item 3)
    instead = "rigid" if settings.strategy == "noncausal" else "none"
    start_text = "the start: the rigid model's feedforward" if instead == "rigid" else "cold start from rest"
    if (settings.warm_start == "bdf" or bounded) and order is None:
        say(f"no BDF solution: {info['warm_start_order_reason']}; {start_text}")
        info["bdf_status"] = f"not run: {info['warm_start_order_reason']}"
    elif settings.warm_start == "bdf" or bounded:  # with bounds: also what exact tracking needs
        purpose = "warm start" if settings.warm_start == "bdf" else "what exact tracking needs (bound check)"
        why = f" ({info['warm_start_order_reason']})" if "warm_start_order_reason" in info else ""
        say(f"{purpose}: BDF-{order} ({WARM_START_FORM}), h = {problem.solver.step * 1e3:g} ms{why}")
        warm, winfo = warm_start_trajectory(model, reference, guess, problem.solver.step, order=order)
        info.update(winfo)
        if warm is None and settings.warm_start == "bdf":
            say(f"BDF solution not usable ({winfo['bdf_status']}): {start_text}")
    if warm is None and settings.warm_start == "bdf":
        settings = replace(settings, warm_start=instead)
    say(f"solving the NLP: {settings.scheme} degree {settings.degree}, h = {settings.step * 1e3:g} ms, "
        f"tracking {settings.tracking}, backend {settings.backend}; limits {settings.max_iter} iterations, "
        f"{settings.max_cpu_time_s:g} s of CPU (wall-time guard {settings.wall_time_limit_s:g} s)")
    traj = solve_inverse_nlp(model, reference, settings, guess, warm, progress)
    if settings.hold is not None and problem.nlp.tracking == "exact":  # tight tracking by penalty: tighten
        weights = [settings.penalty_weight]
        while _planned_max(traj) > HOLD_ERROR_SCALE_MM and settings.penalty_weight < HOLD_MAX_WEIGHT:
            settings = replace(settings, penalty_weight=settings.penalty_weight * 100)
            say(f"planned output error {_planned_max(traj):.3g} mm (or mrad) > {HOLD_ERROR_SCALE_MM:g}: "
                f"penalty weight raised to {settings.penalty_weight:g}")
            traj = solve_inverse_nlp(model, reference, settings, guess, warm, progress)
            weights.append(settings.penalty_weight)
        traj.stats["hold_penalty_weights"] = weights
    st = traj.stats
    say(f"NLP solved: {st.get('nlp_method')} ({st.get('backend')}), {st.get('iterations_total')} iterations, "
        f"{st.get('time_nlp_stage_s', float('nan')):.2f} s")
    traj.stats.update(info)
    return traj
