"""Worst-case-robust rest to rest: the time law along a fixed path whose plan rests on every plant of the ranges.

The plan tracks the path exactly on the nominal model and ends at rest there (``ffopt.dae.rest_to_rest``). On a
plant whose springs or masses differ, the nominal torques with the motor PD leave the arm ringing after the
table; the worst such residual over ``[uncertainty]``'s ranges (``ffopt.motion.uncertainty``) is what this
module makes small, in a move of a given length. The formulation, chosen by measurement on E12
(results/robust.md; every stiffness and body q3's mass +-20 %, the worst over the 16 vertices):

1. the path's time law is a base law convolved with an EI shaper (Singhose, Seering & Singer, residual
   vibration reduction using vector diagrams to generate shaped inputs) on the lowest mode of the arm held by
   the motor PD, the base law as long as the move leaves. Its design frequency and damping are not the
   nominal mode's: the mode moves to 0.82-1.09 Hz over the vertices (nominal 0.948 Hz), and the faster modes
   (5-7 Hz, damping 0.1-0.2) ring on the plants the base law excites with its end. A small minimax
   scan (the design frequency k f at 1.4 times the mode's damping, k in DESIGN_FACTORS, the vertex of a
   parabola through the best three, then the damping at the best k) picks the least worst vertex residual;
   each candidate is made rest to rest on the nominal model (``ffopt.dae.rest_to_rest``) and run on every
   vertex (``ffopt.motion.monte_carlo``).
   E12, 1.35 s move: 27 mm at k = 1 (the nominal mode) down to 6.4 mm at k = 1.15, damping 0.15;
2. the rest-to-rest search (sequential LP over the base law's shaping coefficients) with scenario rows: for the
   worst vertices, the closed-loop state at the table's last row minus the state the plant rests in under the
   nominal hold, weighted by the observability Gramian of its tool output held by the PD
   (|R e|^2 = int |y|^2 dt of the free response, mm s^0.5), Jacobians by finite differences as the rest
   search's; the worst vertex joins the scenarios after each round (minimax by an active set). Off by default
   (scenario_rounds = 0): on an E12 design near the best (EI at 1.09 Hz, damping 0.215) it gained 7.18 -> 7.17
   mm in 4 minutes; on a worse one (EI at 1.04 Hz, damping 0.2) 11.1 -> 8.4 mm.

What does not work (measured, results/robust.md): scenario rows alone, without a shaper (a 1.05 s move:
199 -> 191 mm; the base law's 8 shaping terms move the lowest mode's residual in two directions only, the
linear model asks for coefficients 100x the law's), and scenario rows on top of EI at the nominal mode with the
problem's 0.3 s base law (29.9 -> 29.0 mm): the residual left is in the lowest mode, which a 0.3 s base law
cannot reach (its phasors over the base law lie in a half plane, as ``ffopt.dae.robust_rest`` explains).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ffopt.io.problem import ROBUST_KINDS  # solver.robust: none, worst_case

__all__ = ["RobustPlan", "ScenarioRows", "robust_rest_plan", "pd_held_mode", "gramian_rows", "ROBUST_KINDS"]

N_SCENARIOS = 3  # vertex plants in the first scenario search
DESIGN_FACTORS = (1.0, 1.05, 1.1, 1.15, 1.2, 1.25)  # the EI's design frequency over the PD-held mode's, scanned
DAMPING_FACTORS = (1.4, 1.0, 2.0)  # its design damping over the mode's: the scan's, then tried at the best frequency


@dataclass
class RobustPlan:
    """The chosen law and its numbers: problem (with reference.shaper and time_law_shape set), move time, the
    worst residual over the vertices (and over all plants when measured), the per-plant numbers."""

    problem: object
    trajectory: object
    move_s: float
    shaper: tuple | None
    scenarios: list[str]
    worst_vertex_mm: float
    rounds: list[dict] = field(default_factory=list)
    monte_carlo: object = None  # ffopt.motion.monte_carlo.MonteCarlo over every plant, when measured
    wall_s: float = 0.0
    message: str = ""

    def summary(self) -> dict:
        out = {"move_s": self.move_s, "shaper": None if self.shaper is None else [self.shaper[0],
                                                                                  [list(m) for m in self.shaper[1]]],
               "scenarios": self.scenarios, "worst_vertex_residual_mm": self.worst_vertex_mm, "rounds": self.rounds,
               "wall_s": self.wall_s, "message": self.message,
               "time_law_shape": list(self.problem.reference_spec.time_law_shape)}
        if self.monte_carlo is not None:
            out["monte_carlo"] = self.monte_carlo.summary()
        return out


def pd_held_mode(problem) -> tuple[float, float]:
    """(Hz, damping ratio) of the lowest mode of the arm held at the path's end by the verification's motor PD."""
    from ffopt.plan.robust import ClosedLoop
    from ffopt.sim.shaping import lowest_modes

    loop = ClosedLoop(problem)
    f, z = lowest_modes(problem.model, loop.q_end, loop.gains.kp, loop.gains.kd, 1)[0]
    return float(f), float(z)


def gramian_rows(plant, q_rest, kp, kd) -> np.ndarray:
    """R with |R e|^2 = int_0^inf |y(t)|^2 dt (tool outputs in mm) of the plant held at q_rest by the motor PD
    from the state deviation e = [dq; dv]: R' R = W, A' W + W A + C' C = 0."""
    from scipy.linalg import solve_continuous_lyapunov

    from ffopt.analysis.linear import boundary_condition, linearize

    lin = linearize(plant, np.asarray(q_rest, float))
    M, D, K = boundary_condition(plant, lin, "pd", (np.asarray(kp, float), np.asarray(kd, float)))
    n = M.shape[0]
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, D)]])
    pos = [i for i, unit in enumerate(plant.output_units) if unit == "m"]
    C = 1000.0 * np.hstack([lin.Cq[pos], np.zeros_like(lin.Cq[pos])])
    W = solve_continuous_lyapunov(A.T, -C.T @ C)
    w, Q = np.linalg.eigh(0.5 * (W + W.T))
    return (Q * np.sqrt(np.clip(w, 0.0, None))).T


class ScenarioRows:
    """Each scenario plant's state at the table's last row minus its rest under the nominal hold, as Gramian
    rows (mm s^0.5): rows(traj) for the plan traj, the plants simulated side by side with the motor PD."""

    def __init__(self, problem, nominal, scenarios: dict[str, dict], rtol: float = 1e-8):
        from ffopt.sim.cases import rest_state
        from ffopt.sim.plant import MotorPD

        self.nom, self.rtol = nominal, rtol
        n_in = len(nominal.kp)
        hold = MotorPD(nominal.kp, nominal.kd, np.tile(nominal.hold.qm, (2, 1)), np.zeros((2, n_in)))
        self.plants = {k: problem.with_values(v).model for k, v in scenarios.items()}
        self.rest = {k: rest_state(p, nominal.hold.u, hold, nominal.q_end) for k, p in self.plants.items()}
        self.R = {k: gramian_rows(p, self.rest[k], nominal.kp, nominal.kd) for k, p in self.plants.items()}
        self.start: dict = {}

    def __call__(self, traj) -> np.ndarray:
        from ffopt.sim.cases import rest_state
        from ffopt.sim.plant import MotorPD, SimulationOptions, simulate_all

        pd = MotorPD(self.nom.kp, self.nom.kd, np.asarray(traj.qm), np.asarray(traj.dqm))
        for k, p in self.plants.items():  # the start: the static first row, the same for every law
            if k not in self.start:
                self.start[k] = rest_state(p, traj.u[0], pd, self.nom.q0)
        options = SimulationOptions(rtol=self.rtol, atol=self.rtol * 1e-2)
        sims = simulate_all({k: dict(model=p, t=traj.t, u=traj.u, q0=self.start[k], pd=pd, options=options)
                             for k, p in self.plants.items()})
        rows = []
        for k in self.plants:
            sim = sims[k]
            if isinstance(sim, Exception):
                raise sim
            rows.append(self.R[k] @ np.concatenate([sim.q[-1] - self.rest[k], sim.v[-1]]))
        return np.concatenate(rows)


def _scenario_plans(problem, rows: ScenarioRows, n_shape: int):
    """The rest search's plans with the scenario rows after the rest rows."""
    from ffopt.dae.rest_to_rest import REST_SPEED_RAD_S, REST_TORQUE_REL, LawPlans

    class Plans(LawPlans):
        def measure(self, c):
            tr = self.solve(c)
            r = np.concatenate([tr.v[-1] / self.speed_tol,
                                (tr.u[-1] - self.u_static) / (self.torque_rel * self.u_scale), rows(tr)])
            return tr.u.ravel() / self.u_scale, r

    return Plans(problem, n_shape, REST_SPEED_RAD_S, REST_TORQUE_REL)


def _law_problem(problem, shaper, duration: float | None, shape=()):
    values = {"reference.time_law_shape": [float(x) for x in shape]}
    if duration is not None:
        values["reference.duration"] = float(duration)
    if shaper is not None:
        values.update({"reference.shaper": shaper[0], "reference.shaper_modes": [list(m) for m in shaper[1]]})
    return problem.with_values(values)


def _vertex_runs(problem, traj, vertices, processes):
    from ffopt.motion.monte_carlo import monte_carlo, table_of_plan

    return monte_carlo(problem, table_of_plan(problem, traj), vertices, processes=processes)


@dataclass(frozen=True, kw_only=True)
class RobustOptions:
    """The settings of ``robust_rest_plan`` (its docstring says what each does)."""
    move_s: float | None = None
    shaper: str | None = "ei"
    factors: tuple = DESIGN_FACTORS
    damping_factors: tuple = DAMPING_FACTORS
    scenario_rounds: int = 0
    n_scenarios: int = N_SCENARIOS
    n_shape: int = 8
    max_iter: int = 12
    tolerance_mm: float | None = None
    processes: int | None = None
    samples: int | None = None


def robust_rest_plan(problem, ranges, progress=None, **options) -> RobustPlan:
    """The worst-case-robust rest-to-rest plan of ``problem`` over ``ranges`` (``uncertainty_from_dict``) in a move
    of ``move_s`` (default: the problem's duration plus one period of the PD-held mode, what an EI shaper costs,
    rounded down to 10 ms).

    First the problem's own move (made rest to rest): if its worst vertex residual is within the tolerance, it is the
    plan. Else the path's time law is a base law convolved with ``shaper`` ("ei", "ei2", "zvd") on the PD-held mode
    (``pd_held_mode``: f, zeta), designed for the frequency k f (k in ``factors``, then the vertex of a parabola
    through the best three) at the damping ratio damping_factors[0] zeta, then at the best frequency with the
    other damping factors; the base law is as long as the move leaves. Each design is made rest to rest on the
    nominal model (``shape_for_rest_cached``) and run on every vertex plant; the design with the least worst
    residual wins (minimax over the vertices on a small family).
    shaper None: the base law alone, the problem's duration. scenario_rounds > 0 then refines the base law by the
    rest search with scenario rows of the n_scenarios worst vertices (an active set; measured on E12 to gain a
    few per cent, see results/robust.md). samples: the Monte Carlo over that many plants at the end (None: the
    ranges' samples; 0: none)."""
    from ffopt.models.equilibrium import ends_at_rest
    from ffopt.motion.monte_carlo import nominal_tolerance, monte_carlo, table_of_plan
    from ffopt.motion.uncertainty import plants, vertex_points

    o = RobustOptions(**options)
    move_s, shaper, factors, damping_factors = o.move_s, o.shaper, o.factors, o.damping_factors
    n_shape, processes, samples = o.n_shape, o.processes, o.samples
    tic = time.perf_counter()
    say = progress or (lambda line: None)
    tol = nominal_tolerance(problem) if o.tolerance_mm is None else float(o.tolerance_mm)
    vertices = plants(problem, ranges, len(vertex_points(len(ranges.ranges), ranges.seed)), build=False)
    f1, z1 = pd_held_mode(problem)
    spec = problem.reference_spec
    move_s = np.floor(100 * (spec.duration + 1.0 / f1)) / 100 if move_s is None else float(move_s)  # 10 ms down
    zs = [min(0.5, a * z1) for a in damping_factors]
    designs = [None] if shaper is None else [(shaper, [(k * f1, zs[0])]) for k in factors]
    tried = []

    def attempt(design):
        if design is not None and any(d["design"] == [design[0], [list(m) for m in design[1]]] for d in tried):
            return  # tried already (a damping factor capped to the scan's)
        base = None if design is None else move_s - shaper_duration(*design)
        if base is not None and base < 0.25 * spec.duration:
            return  # the shaper alone takes the move
        p = _law_problem(problem, design, base)
        c = rest_law(p, n_shape, say)
        p = _law_problem(problem, design, base, c)
        traj = _solve(p)
        at_rest = ends_at_rest(p.model, traj)[0]
        runs = _vertex_runs(p, traj, vertices, processes)
        worst = max(r.residual_mm for r in runs.runs)
        tried.append({"design": None if design is None else [design[0], [list(m) for m in design[1]]],
                      "base_s": float(p.reference_spec.duration), "worst_vertex_mm": worst,
                      "worst_label": runs.worst.label,
                      "at_rest": at_rest, "problem": p, "traj": traj, "runs": runs})
        say(f"robust rest: {_design_text(design)}, base law {p.reference_spec.duration:.3g} s: worst vertex residual "
            f"{worst:.3g} mm ({runs.worst.label})" + ("" if at_rest else "; NOT at rest on the nominal model"))

    if shaper is not None:
        attempt(None)  # the problem's own move first: if it holds on every vertex, it is the shortest plan
        if tried and tried[0]["at_rest"] and tried[0]["worst_vertex_mm"] <= tol:
            designs = []
    for design in designs:
        attempt(design)
    shaped = [d for d in tried if d["design"] is not None]
    if shaped:
        k = _parabola_vertex([(d["design"][1][0][0] / f1, d["worst_vertex_mm"]) for d in shaped if d["at_rest"]])
        if k is not None:  # the scan's best refined once: the vertex of the parabola through it and its neighbours
            attempt((shaper, [(k * f1, zs[0])]))
        f_best = min(shaped, key=_rank)["design"][1][0][0]
        for z in zs[1:]:  # then the other design dampings at the best frequency
            attempt((shaper, [(f_best, z)]))
    if not tried:
        raise ValueError(f"no {shaper} design fits a {move_s:.3g} s move (the base law would be shorter than a "
                         "quarter of the problem's)")
    best = min(tried, key=_rank)
    p, traj, runs, worst = best["problem"], best["traj"], best["runs"], best["worst_vertex_mm"]
    design = None if best["design"] is None else (best["design"][0], [tuple(m) for m in best["design"][1]])
    record = [{k: v for k, v in d.items() if k not in ("problem", "traj", "runs")} for d in tried]
    worst = float(worst)
    chosen = [r.label for r in sorted(runs.runs, key=lambda r: -r.residual_mm)[:o.n_scenarios]]
    if o.scenario_rounds and worst > tol:
        p, traj, worst, more = _refine(problem, (p, traj, runs), (design, best["base_s"], chosen), (vertices, tol),
                                       o, say)
        record += more
    ref = p.reference
    out = RobustPlan(p, traj, float(ref.t_motion_end - ref.t_motion_start), design, chosen, worst, record)
    n = ranges.samples if samples is None else samples
    if n:
        out.monte_carlo = monte_carlo(p, table_of_plan(p, traj), plants(problem, ranges, n, build=False),
                                      processes=processes, progress=say)
    out.wall_s = time.perf_counter() - tic
    out.message = (("" if best["at_rest"] else "no design rests on the nominal model in this move; the best: ")
                   + f"{_design_text(design)}: worst residual over the vertices {worst:.3g} mm "
                   + ("within" if worst <= tol else "NOT within") + f" the tolerance {tol:.3g} mm "
                   f"in a {out.move_s:.4g} s move")
    return out


def _rank(tried: dict) -> tuple:
    """Designs that rest on the nominal model first, then by the worst vertex residual."""
    return (not tried["at_rest"], tried["worst_vertex_mm"])


def rest_law(problem, n_shape: int, say) -> np.ndarray:
    """``shape_for_rest``'s coefficients for the problem's own move (no longer moves tried: the move is given),
    kept on disk as ``shape_for_rest_cached`` keeps its own (under another key)."""
    import hashlib
    import json
    import os

    from ffopt._version import __version__
    from ffopt.codegen import cache_dir
    from ffopt.dae.rest_to_rest import JUNCTION_EXTRA, shape_for_rest

    text = f"{__version__}\n{n_shape}\njunction+{JUNCTION_EXTRA}\n{problem.to_toml()}"
    path = cache_dir() / f"rest_own_{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"
    plain = cache_dir() / f"rest_{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"  # shape_for_rest_cached's
    for saved in (path, plain):
        try:
            return np.asarray(json.loads(saved.read_text())["c"], float)  # the own move's law in either
        except (OSError, ValueError, KeyError):
            pass
    c, _ = shape_for_rest(problem, n_shape, duration_factors=(), progress=say)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"c": [float(x) for x in c]}))
        tmp.replace(path)
    except OSError:
        pass
    return c


def _parabola_vertex(points) -> float | None:
    """The abscissa of the least point's parabola through it and its neighbours (None at an end of the scan)."""
    points = sorted(points)
    if len(points) < 3:
        return None
    i = min(range(len(points)), key=lambda j: points[j][1])
    if i == 0 or i == len(points) - 1:
        return None
    (x0, y0), (x1, y1), (x2, y2) = points[i - 1: i + 2]
    den = (x0 - x1) * (x0 - x2) * (x1 - x2)
    a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / den
    b = (x2 ** 2 * (y0 - y1) + x1 ** 2 * (y2 - y0) + x0 ** 2 * (y1 - y2)) / den
    if a <= 0:
        return None
    return float(min(max(-b / (2 * a), x0), x2))


def shaper_duration(kind: str, modes) -> float:
    from ffopt.reference.shaping import shaper

    return float(shaper(kind, modes).duration)


def _design_text(design) -> str:
    if design is None:
        return "no shaper"
    return f"{design[0]} at " + ", ".join(f"{f:.4g} Hz (damping {z:.3g})" for f, z in design[1])


def _refine(problem, plan, design_of, judged, o: RobustOptions, say):
    """The rest search with scenario rows of the worst vertices, the worst vertex joining them after each round.
    plan: (problem with the design, its trajectory, its vertex runs); design_of: (design, base law's duration, the
    scenario labels); judged: (vertex plants, tolerance mm)."""
    p, traj, runs = plan
    design, base, chosen = design_of
    vertices, tol = judged
    rounds, n_shape, max_iter, processes = o.scenario_rounds, o.n_shape, o.max_iter, o.processes
    from ffopt.dae.rest_to_rest import search_law
    from ffopt.models.equilibrium import ends_at_rest
    from ffopt.motion.monte_carlo import NominalRun, table_of_plan

    worst = max(r.residual_mm for r in runs.runs)
    nominal = NominalRun(p, table_of_plan(p, traj), None)
    record = []
    for k in range(rounds):
        if worst <= tol:
            break
        scen = {r.label: r.values for r in runs.runs if r.label in chosen}
        plans = _scenario_plans(p, ScenarioRows(problem, nominal, scen), n_shape)
        n_rest = p.model.layout.nq + p.model.layout.n_u
        w, search = search_law(plans, plans.variables(p.reference_spec.time_law_shape), max_iter, progress=say,
                            n_rest_rows=n_rest)
        cand = _law_problem(problem, design, base, plans.coefficients(w))
        tr = _solve(cand)
        runs = _vertex_runs(cand, tr, vertices, processes)
        w_new = max(r.residual_mm for r in runs.runs)
        rest = ends_at_rest(cand.model, tr)[0]
        record.append({"scenarios": list(chosen), "worst_vertex_mm": w_new, "worst_label": runs.worst.label,
                       "iterations": search["iterations"], "bdf_solves": plans.solves, "at_rest": rest})
        say(f"robust rest: scenario round {k + 1} ({', '.join(chosen)}): worst vertex residual {w_new:.3g} mm "
            f"({runs.worst.label}), {'at rest' if rest else 'NOT at rest'} on the nominal model")
        if rest and w_new < worst:
            worst, p, traj = w_new, cand, tr
        if runs.worst.label in chosen:
            break
        chosen.append(runs.worst.label)
    return p, traj, worst, record


def _solve(problem):
    from ffopt.dae.inverse import solve_inverse_bdf

    s = problem.solver
    return solve_inverse_bdf(problem.model, problem.reference, s, qa_guess=problem.reference_spec.joint_guess)
