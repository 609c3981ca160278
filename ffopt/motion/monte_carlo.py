"""Monte Carlo verification: a torque table on every plant of the uncertainty (``ffopt.motion.uncertainty``).

Each plant runs the protocol of ``ffopt.motion.evaluate.run_table`` with the controller of the nominal model:
it starts at rest where the motor PD (the verification's gains, designed on the nominal model) holds it under
the table's first row, follows the table's torques and motor references with the PD, then is held for the
settle window by the nominal hold (the static torque of the path's end pose and the PD on its static motor
angles). A plant that differs from the model comes to rest off the end point under that hold (its statics
differ by the PD's finite stiffness against the changed load: E12 with body q3 20 % heavier rests 55 mm off, whatever
the time law). So the residual after the table is the tool's largest distance from the point where the plant comes
to rest in the window (the vibration the plan leaves, which a time law can change), reported beside the static
offset of that rest point and the largest distance from the path's end point (ffopt's verification's residual on
the nominal plant, where the two coincide); the settled cycle time is from the motion's start until the tool
stays within the tolerance of the rest point.

The plants run side by side in processes (``concurrent.futures.ProcessPoolExecutor``; each worker builds its
plants from the problem's table and the plant's values) or, given a scheduler address, on a Dask cluster
(``dask.distributed``); every plant is the same computation wherever it runs, so the numbers are the same.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Table", "PlantRun", "MonteCarlo", "table_of_plan", "monte_carlo", "simulate_plant", "PROGRESS_EVERY_S"]

PROGRESS_EVERY_S = 1.0  # a progress line at least this often (the brief: every 2 s)
RTOL = 1e-8  # CVODES tolerance of the plant runs (as run_table)


@dataclass
class Table:
    """A torque table with its motor references and the timed path (outputs) it follows."""

    t: np.ndarray
    u: np.ndarray
    qm: np.ndarray
    dqm: np.ndarray
    y_ref: np.ndarray
    t_start: float  # the motion's start and end on t
    t_motion_end: float


def table_of_plan(problem, traj) -> Table:
    """An ffopt plan (its problem: with the time law it moves by) as a Table."""
    spec = problem.reference_spec
    ref = problem.reference
    y_ref = np.asarray(ref.evaluate(traj.t))
    return Table(np.asarray(traj.t), np.asarray(traj.u), np.asarray(traj.qm), np.asarray(traj.dqm), y_ref,
                 float(ref.t_motion_start), float(ref.t_motion_end)) if spec is not None else None


@dataclass
class PlantRun:
    """One plant's numbers (mm, s)."""

    label: str
    values: dict
    max_mm: float  # largest tool error during the table against the timed path
    residual_mm: float  # largest distance from the plant's rest point (under the nominal hold) in the settle window
    static_offset_mm: float  # that rest point's distance from the path's end point
    end_error_mm: float  # largest distance from the path's end point in the settle window
    settled_cycle_s: float | None  # motion start until within the tolerance of the rest point for good
    wall_s: float = 0.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class MonteCarlo:
    """Statistics over the plants: per quantity median, 95th percentile and worst; the worst plant."""

    runs: list[PlantRun]
    tolerance_mm: float
    wall_s: float
    workers: int
    where: str  # "processes" or the Dask scheduler's address
    stats: dict = field(default_factory=dict)

    def __post_init__(self):
        for key in ("max_mm", "residual_mm", "end_error_mm", "static_offset_mm"):
            a = np.array([getattr(r, key) for r in self.runs])
            self.stats[key] = {"median": float(np.median(a)), "p95": float(np.percentile(a, 95)),
                               "worst": float(a.max())}
        cycles = [r.settled_cycle_s for r in self.runs]
        known = np.array([c for c in cycles if c is not None])
        self.stats["settled_cycle_s"] = {
            "min": float(known.min()) if known.size else None,
            "median": float(np.median(known)) if known.size else None,
            "max": float(known.max()) if known.size else None, "not_settled": sum(c is None for c in cycles)}

    @property
    def worst(self) -> PlantRun:
        """The plant with the largest residual after the table."""
        return max(self.runs, key=lambda r: r.residual_mm)

    @property
    def within_tolerance(self) -> bool:
        return self.stats["residual_mm"]["worst"] <= self.tolerance_mm

    def summary(self) -> dict:
        return {"plants": len(self.runs), "tolerance_mm": self.tolerance_mm, "wall_s": self.wall_s,
                "workers": self.workers, "where": self.where, **self.stats,
                "worst_plant": self.worst.to_dict(), "worst_within_tolerance": self.within_tolerance,
                "per_plant": [{"label": r.label, "max_mm": r.max_mm, "residual_mm": r.residual_mm} for r in self.runs]}

    def text(self) -> str:
        s = self.stats
        line = lambda k: f"median {s[k]['median']:.3g}, 95 % {s[k]['p95']:.3g}, worst {s[k]['worst']:.3g} mm"  # noqa
        c = s["settled_cycle_s"]
        cyc = ("never within the tolerance" if c["min"] is None else
               f"{c['min']:.3g}-{c['max']:.3g} s (median {c['median']:.3g})"
               + (f", {c['not_settled']} not settled" if c["not_settled"] else ""))
        w = self.worst
        vals = ", ".join(f"{k.rsplit('.', 2)[-2]}.{k.rsplit('.', 1)[-1]} {_fmt(v)}" for k, v in w.values.items())
        return (f"Monte Carlo, {len(self.runs)} plants ({self.wall_s:.1f} s, {self.workers} workers, {self.where}):\n"
                f"  during the move: {line('max_mm')}\n"
                f"  after the table (about the plant's rest): {line('residual_mm')}\n"
                f"  from the end point (static offset included): {line('end_error_mm')}\n  settled cycle: {cyc}\n"
                f"  worst plant: {w.label} ({vals}): {w.residual_mm:.3g} mm after the table; "
                + ("within" if self.within_tolerance else "NOT within") + f" the tolerance {self.tolerance_mm:.3g} mm")


def _fmt(v) -> str:
    return f"{v:.4g}" if np.isscalar(v) else "[" + ", ".join(f"{x:.4g}" for x in v) + "]"


# --------------------------------------------------------------------------- one plant (in a worker)
_NOMINAL: dict = {}  # per worker process: key -> (problem, nominal controller)


class NominalRun:
    """The nominal model's controller for a table: start guess, PD gains, hold of the end pose, settle grid."""

    def __init__(self, problem, table: Table, settle_s: float | None):
        from ffopt.dae.equilibrium import static_equilibrium
        from ffopt.sim.plant import input_gains, pd_gains
        from ffopt.sim.settle import default_tolerances, hold_pose, settle_duration, settle_grid

        m, ver = problem.model, problem.verification
        self.q0 = static_equilibrium(m, table.y_ref[0], problem.reference_spec.joint_guess)
        self.kp, self.kd = input_gains(m, *pd_gains(m, self.q0, ver.pd_bandwidth_hz, ver.pd_damping_ratio))
        self.q_end = static_equilibrium(m, table.y_ref[-1], self.q0[: m.layout.n_link], where="the end of the path")
        self.hold = hold_pose(m, self.q_end)
        window, _ = settle_duration(m, self.q_end, *pd_gains(m, self.q_end, ver.pd_bandwidth_hz,
                                                             ver.pd_damping_ratio), settle_s)
        self.t_settle = settle_grid(table.t[-1], window, float(np.diff(table.t).min()))
        self.tol_mm = ver.tolerance_mm if ver.tolerance_mm is not None else default_tolerances(m)[0]
        self.pos = [i for i, unit in enumerate(m.output_units) if unit == "m"]


def _nominal(job: dict):
    key = job["key"]
    if key not in _NOMINAL:
        from ffopt.io.problem import problem_from_dict

        problem = problem_from_dict(job["raw"], job["source"])
        _NOMINAL.clear()  # one problem and table at a time per worker
        _NOMINAL[key] = (problem, NominalRun(problem, job["table"], job["settle_s"]))
    return _NOMINAL[key]


def simulate_plant(job: dict) -> PlantRun:
    """One plant (job: the problem's table, the Table, the plant's label and values) through the table and the
    settle window with the nominal controller."""
    from ffopt.sim.settle import settled_cycle_time
    from ffopt.sim.cases import rest_state
    from ffopt.sim.plant import MotorPD, SimulationOptions, simulate

    tic = time.perf_counter()
    problem, nom = _nominal(job)
    tab: Table = job["table"]
    plant = problem.with_values(job["values"]).model if job["values"] else problem.model
    pd = MotorPD(nom.kp, nom.kd, tab.qm, tab.dqm)
    q0 = rest_state(plant, tab.u[0], pd, nom.q0)
    options = SimulationOptions(rtol=RTOL, atol=RTOL * 1e-2, compile=False)
    sim = simulate(plant, tab.t, tab.u, q0, None, pd=pd, options=options)
    n = len(nom.t_settle)
    hold_pd = MotorPD(nom.kp, nom.kd, np.tile(nom.hold.qm, (n, 1)), np.zeros((n, len(nom.hold.qm))))
    after = simulate(plant, nom.t_settle, np.tile(nom.hold.u, (n, 1)), sim.q[-1], sim.v[-1], pd=hold_pd,
                     options=options)
    q_rest = rest_state(plant, nom.hold.u, hold_pd, nom.q_end)
    pos, end = nom.pos, tab.y_ref[-1, nom.pos]
    y_rest = np.asarray(plant.output(q_rest[: plant.layout.n_link])).ravel()[pos]
    d_end = 1000 * np.linalg.norm(after.y[:, pos] - end, axis=1)
    d_rest_table = 1000 * np.linalg.norm(sim.y[:, pos] - y_rest, axis=1)
    d_rest = 1000 * np.linalg.norm(after.y[:, pos] - y_rest, axis=1)
    cycle = settled_cycle_time(np.concatenate([tab.t, nom.t_settle[1:]]),
                               np.concatenate([d_rest_table, d_rest[1:]]) > nom.tol_mm, tab.t_start, tab.t_motion_end)
    return PlantRun(job["label"], job["values"], float(1000 * np.linalg.norm(sim.y[:, pos] - tab.y_ref[:, pos],
                                                                               axis=1).max()),
                    float(d_rest.max()), float(1000 * np.linalg.norm(y_rest - end)), float(d_end.max()), cycle,
                    time.perf_counter() - tic)


# --------------------------------------------------------------------------- all plants
def monte_carlo(problem, table: Table, plant_list, processes: int | None = None, scheduler: str | None = None,
                settle_s: float | None = None, progress=None) -> MonteCarlo:
    """Every plant of ``plant_list`` (``ffopt.motion.uncertainty.plants``, values only is enough) through the table
    with the nominal controller. processes: worker processes (default: the machine's cores; 1: in this
    process); scheduler: a Dask scheduler's address (e.g. "tcp://10.0.0.1:8786") or a dask.distributed Client,
    instead of processes. progress: called with a line at least every PROGRESS_EVERY_S seconds."""
    tic = time.perf_counter()
    raw = problem.to_dict()
    key = hashlib.sha256(pickle.dumps((raw, problem.source, table.t, table.u, table.qm, settle_s))).hexdigest()
    jobs = [{"key": key, "raw": raw, "source": problem.source, "table": table, "settle_s": settle_s,
             "label": p.label, "values": p.values} for p in plant_list]
    say = progress or (lambda line: None)
    if scheduler is not None:
        runs, workers, where = _on_dask(jobs, scheduler, say)
    else:
        workers = max(1, min(processes or os.cpu_count() or 1, len(jobs)))
        runs, where = _on_processes(jobs, workers, say), "processes"
    return MonteCarlo(runs, nominal_tolerance(problem), time.perf_counter() - tic, workers, where)


def nominal_tolerance(problem) -> float:
    from ffopt.sim.settle import default_tolerances

    t = problem.verification.tolerance_mm
    return float(t) if t is not None else float(default_tolerances(problem.model)[0])


def _on_processes(jobs, workers: int, say) -> list[PlantRun]:
    if workers == 1:
        out, last = [], time.perf_counter()
        for k, job in enumerate(jobs):
            out.append(simulate_plant(job))
            if time.perf_counter() - last >= PROGRESS_EVERY_S:
                say(f"Monte Carlo: {k + 1}/{len(jobs)} plants")
                last = time.perf_counter()
        return out
    import multiprocessing

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(simulate_plant, job): k for k, job in enumerate(jobs)}
        out: list = [None] * len(jobs)
        pending, last = set(futures), time.perf_counter()
        while pending:
            done, pending = wait(pending, timeout=PROGRESS_EVERY_S, return_when=FIRST_COMPLETED)
            for f in done:
                out[futures[f]] = f.result()
            if time.perf_counter() - last >= PROGRESS_EVERY_S or not pending:
                say(f"Monte Carlo: {len(jobs) - len(pending)}/{len(jobs)} plants ({workers} processes)")
                last = time.perf_counter()
    return out


def _on_dask(jobs, scheduler, say) -> tuple[list[PlantRun], int, str]:
    try:
        from dask.distributed import Client, wait as dask_wait
    except ImportError as err:
        raise RuntimeError("a Dask scheduler was given but dask.distributed is not installed "
                           "(pip install 'dask[distributed]')") from err
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
        futures = client.map(simulate_plant, jobs, pure=False)
        pending, last = list(futures), time.perf_counter()
        while pending:
            try:
                pending = list(dask_wait(pending, timeout=PROGRESS_EVERY_S, return_when="FIRST_COMPLETED").not_done)
            except TimeoutError:  # none finished within the interval
                pass
            if time.perf_counter() - last >= PROGRESS_EVERY_S or not pending:
                say(f"Monte Carlo: {len(jobs) - len(pending)}/{len(jobs)} plants (Dask, {workers} threads)")
                last = time.perf_counter()
        return client.gather(futures), workers, str(client.scheduler.address)
    finally:
        if own:
            client.close()
