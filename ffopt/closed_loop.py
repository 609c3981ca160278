"""``ffopt simulate``: a saved plan on a plant that may differ from the planning model, in a loop.

    plan folder (trajectory, summary) + PROBLEM (the planning model, its path and settings)
        + plant (PROBLEM with fields changed by name, or another problem file's robot)
        + controller (none, pd, pd+state; gains designed on the planning model)
    -> tool-error table, simulated trajectory (CSV), plots

The controller is designed on the planning model, as on a real robot: the plant's changes (a
heavier payload, softer gears, unknown friction) are what the loop has to cope with. On the
nominal plant the plan's own feedforward starts where the plan's verification starts (at rest in
the static equilibrium of the path's start) on the same integrator, so ``ffopt simulate`` with
``--controller pd`` reproduces the plan's ``feedforward_pd`` numbers; on another plant every case
starts where its loop holds that plant at rest before the motion (a heavier arm sags there).
``baselines=True`` adds PD with static gravity compensation only (Tomei) and the rigid-model
feedforward with the same controller (``ffopt.control.references``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.problem import Problem, load_problem
from ffopt.trajectory import LENGTH_OUTPUTS, Trajectory

CASE_SUFFIX = {"none": "open_loop", "pd": "pd", "pd+state": "pd_state"}
REFERENCE_TOL = {"m": 1e-9, "rad": 1e-9}  # plan's saved reference against PROBLEM's path (m / rad)
PLANT_TABLES = ("model.",)  # --set may change the robot only: the path and grid are the plan's


@dataclass
class SimulationResult:
    """The closed-loop runs of one ``simulate`` call; ``save`` writes them like ``PlanResult.save``."""

    problem: Problem
    plant_label: str  # "nominal", "PLANT.toml", "with model.joints.q3.stiffness = 8e4, ..."
    plant_changes: list[str]
    plan_source: str
    gains: object  # ffopt.control.Gains
    runs: dict  # name -> ffopt.control.ClosedLoopRun
    main: str  # name of the case with the plan's feedforward
    plan: Trajectory  # the plan's feedforward as read back (planned tool path, reference)
    model: object = field(repr=False)  # planning model (the controller's design model)
    plant: object = field(repr=False)  # the simulated plant
    timings: dict = field(default_factory=dict)
    settle: dict = field(default_factory=dict)  # the window after the table and the hold (ffopt.sim.settle)
    verdict: object = None  # ffopt.sim.settle.Verdict on the main case
    settle_simulations: dict = field(default_factory=dict, repr=False)

    @property
    def status(self) -> str:
        return "verified" if self.verdict is None else self.verdict.status

    @property
    def cases(self) -> dict:
        """name -> CaseError (max_mm, rms_mm, start_mm, final_mm, peak torques)."""
        return {n: r.error for n, r in self.runs.items()}

    @property
    def simulations(self) -> dict:
        """name -> SimResult (what the plots draw)."""
        return {n: r.simulation for n, r in self.runs.items()}

    @property
    def plot_cases(self) -> list[str]:
        return list(self.runs)

    def table(self) -> str:
        from ffopt.sim.verify import case_table

        lines = [f"plant: {self.plant_label}", self.gains.text(self.model)] + case_table(self.cases.values())
        if self.settle:
            lines.append(f"after the table: {self.settle['window_s']:.3g} s holding the final pose "
                         f"({self.settle['settle_s_source']})")
        if self.verdict is not None:
            lines.append(self.verdict.line())
        return "\n".join(lines)

    def summary(self) -> dict:
        from ffopt.plan import versions

        return {"problem": {"name": self.problem.name, "source": self.problem.source,
                            "outputs": list(self.problem.outputs)},
                "plan": self.plan_source,
                "plant": {"label": self.plant_label, "changes": self.plant_changes},
                "controller": self.gains.to_dict(),
                "main_case": self.main,
                "status": self.status, "verdict": None if self.verdict is None else self.verdict.to_dict(),
                "settle": self.settle,
                "tool_error": {n: r.to_dict() for n, r in self.runs.items()},
                "integrator": "cvodes", "rtol": self.problem.verification.rtol,
                "wall_time_s": self.timings, "versions": versions()}

    def trajectory(self, case: str | None = None) -> Trajectory:
        """The simulated run ``case`` (default: the plan's feedforward) as a Trajectory: u = the applied
        torque (feedforward + feedback), q, v, tool = what the plant did."""
        sim = self.runs[case or self.main].simulation
        L = self.plant.layout
        motor = L.motor_of_input
        return Trajectory(t=sim.t, u=sim.u_applied, q=sim.q, v=sim.v, a=sim.a, qm=sim.q[:, motor],
                          dqm=sim.v[:, motor], y_ref=self.plan.y_ref, tool=sim.tool,
                          coordinate_names=self.plan.coordinate_names, output_names=self.plan.output_names,
                          method=f"simulate {case or self.main}", input_names=self.plan.input_names,
                          link_names=self.plan.link_names, link_units=self.plan.link_units)

    def save(self, out: str | Path, plots: bool = True, force: bool = False) -> Path:
        """Write simulation.csv, summary.json and plots into folder ``out`` (the rules of
        ``ffopt.io.results``; a folder of kind 'simulate')."""
        from ffopt.io.results import write_result_folder

        return write_result_folder(out, lambda tmp: self.write_files(tmp, plots), force, command="simulate")

    def write_files(self, folder: Path, plots: bool = True) -> list[str]:
        from ffopt.io.results import write_json

        folder = Path(folder)
        traj = self.trajectory()
        columns = simulation_columns(traj)
        names = [c[0] for c in columns]
        np.savetxt(folder / "simulation.csv", np.column_stack([c[3] for c in columns]), delimiter=",",
                   header=",".join(names), comments="", fmt="%.12g")
        files = ["simulation.csv", "summary.json"]
        if plots:
            from ffopt.io.plots import applied_torque_figure, save_figure, tool_error_figure, tool_path_figure

            save_figure(applied_torque_figure(traj.t, self.plan.u, traj.u, traj.actuated_joints, self.main),
                        folder / "torques.png")
            save_figure(tool_path_figure(self.plan, self), folder / "tool_path.png")
            save_figure(tool_error_figure(self.plan, self, title=f"Tool-path error, plant: {self.plant_label}"),
                        folder / "tool_error.png")
            files += ["torques.png", "tool_path.png", "tool_error.png"]
        summary = self.summary()
        summary["files"] = files
        summary["columns"] = [{"name": n, "unit": u, "meaning": m} for n, u, m, _ in columns]
        write_json(summary, folder / "summary.json")
        return files

    def verification_dataframe(self):
        """One row per case (tool errors in mm, peak applied torques), as ``PlanResult.verification_dataframe``."""
        from ffopt.io.frames import verification_frame

        return verification_frame({"tool_error": {n: r.error.to_dict() for n, r in self.runs.items()}},
                                  self.plan.actuated_joints)


def output_files(plots: bool) -> list[str]:
    return ["simulation.csv", "summary.json"] + (["torques.png", "tool_path.png", "tool_error.png"] if plots else [])


SIMULATED_MEANING = {"u": "applied motor torque (feedforward + feedback)", "qm": "simulated motor angle",
                     "dqm": "simulated motor speed", "tool": "simulated tool position",
                     "q": "simulated link-side coordinate", "dq": "simulated link-side rate"}


def simulation_columns(traj: Trajectory) -> list[tuple[str, str, str, np.ndarray]]:
    """trajectory.csv's columns (same names and units) with meanings for a simulated run."""
    out = []
    for name, unit, meaning, values in traj.column_spec():
        prefix = name.split("_", 1)[0]
        if prefix in SIMULATED_MEANING and name != "t":
            meaning = f"{SIMULATED_MEANING[prefix]}, {name.split('_', 1)[1]}"
        out.append((name, unit, meaning, values))
    return out


# ------------------------------------------------------------------------------------ pipeline
@dataclass(frozen=True, kw_only=True)
class SimulateOptions:
    """The plant and the controller of ``simulate`` (its keyword arguments; see there)."""
    plant: object = None
    values: dict | None = None
    controller: str = "pd"
    baselines: bool = False
    bandwidth_hz: float | None = None
    damping_ratio: float | None = None
    tool_weight: float | None = None
    plant_label: str | None = None


def simulate(problem: Problem | str | Path, plan=None, *, progress=None, exported=None, **options) -> SimulationResult:
    """Re-simulate a plan on a plant with a controller (``ffopt simulate``); ``options``: ``SimulateOptions``.

    problem: the planning problem (robot, path, verification settings) or its file. plan: a plan
    folder (``ffopt plan --out DIR``), a ``SavedPlan`` or a ``PlanResult``. plant: the simulated robot:
    None (the problem's), a problem file or ``Problem`` (its [model] is used), or a ``FlexibleModel``
    with the problem's coordinates. values: fields changed by dotted name (``{"model.joints.q3.stiffness":
    8e4}``; model fields only), on the plant (PROBLEM's, or the plant file's). controller: "none", "pd"
    or "pd+state"; gains by the rules of ``ffopt.control.gains`` on the planning model with the
    problem's ``verification.pd_bandwidth_hz`` / ``pd_damping_ratio`` unless given; tool_weight: the
    LQR weight rho of pd+state (default ``ffopt.control.gains.TOOL_WEIGHT``).
    baselines: add PD with static compensation only (Tomei) and the rigid-model feedforward, same loop.
    exported: instead of a plan, a folder written by ``ffopt export`` (compiled if needed): its step
    function runs sample by sample on PROBLEM's reference (``ffopt.export.runtime.exported_trajectory``)
    and its torques and motor references take the place of the plan's table; PROBLEM's time law as given
    (for the rest-to-rest move, a plan folder's problem.toml). Give ``plan`` or ``exported``, not both.
    Raises ProblemError (bad input: plan and problem or plant do not match) or VerificationError.
    """
    from ffopt.control import (ClosedLoopSetup, design, from_trajectory, rigid_model, run_closed_loop,
                               static_compensation)
    from ffopt.models.equilibrium import static_equilibrium

    o = SimulateOptions(**options)
    plant, values, controller, baselines = o.plant, o.values, o.controller, o.baselines
    bandwidth_hz, damping_ratio, tool_weight, plant_label = o.bandwidth_hz, o.damping_ratio, o.tool_weight, o.plant_label
    say = progress or (lambda msg: None)
    timings = {}
    tic = time.perf_counter()
    if (plan is None) == (exported is None):
        raise ProblemError("simulate: give either a plan (--plan DIR) or an exported inverse model (--exported DIR), "
                           "not both" if plan is not None else "simulate: give a plan (--plan DIR) or an exported "
                           "inverse model (--exported DIR)")
    if not isinstance(problem, Problem):
        problem = load_problem(problem)
    if exported is not None:
        from ffopt.export.runtime import exported_trajectory

        traj, plan_source = exported_trajectory(exported, problem, say)
        _check_reference(problem, traj, plan_source)
    else:
        problem = _with_planned_time_law(plan, problem, say)
        traj, plan_source = plan_trajectory(plan, problem)
        note = _planned_robot_note(plan, problem)
        if note:
            say(note)
    model, reference = problem.model, problem.reference
    plant_model, label, changes = _plant(problem, plant, values, plant_label)
    ver = problem.verification
    t, L = traj.t, model.layout
    y_ref = np.asarray(reference.evaluate(t))
    tool_ref = None if getattr(reference, "tool_path", None) is None else np.asarray(reference.tool_path.evaluate(t))
    guess = problem.reference_spec.joint_guess
    guess = traj.q[0, :L.n_link] if guess is None else guess
    q0 = static_equilibrium(model, y_ref[0], traj.q[0, :L.n_link], where=f"t = {t[0]:.4g} s")
    gains = design(controller, model, q0, bandwidth_hz or ver.pd_bandwidth_hz, damping_ratio or ver.pd_damping_ratio,
                   tool_weight)
    if baselines and controller == "none":
        raise ProblemError("--baselines compare feedforwards inside a feedback loop: choose --controller pd or pd+state")
    timings["setup"] = time.perf_counter() - tic

    nominal = plant_model is model
    sources = [from_trajectory(model, t, traj.u, traj.q, traj.v, hold=traj.hold or "linear")]
    if baselines:
        say("baselines: static gravity compensation (Tomei) and rigid-model feedforward")
        sources += [static_compensation(model, reference, t, guess), rigid_model(model, reference, t, guess)]
    names = {"elastic": "feedforward", "static": "static_compensation", "rigid": "rigid_feedforward"}
    runs = {}
    setup = ClosedLoopSetup(plant_model, model, gains, y_ref, tool_ref, ver.rtol, label)
    tic = time.perf_counter()
    for ff in sources:
        name = f"{names[ff.name]}_{CASE_SUFFIX[controller]}"
        say(f"simulating {name} on the {label} plant")
        start = q0 if nominal and ff.name == "elastic" else None
        runs[name] = run_closed_loop(name, ff, setup, q_start=start, q_guess=q0)
    main = f"feedforward_{CASE_SUFFIX[controller]}"
    say(f"after the table: holding the final pose on the {label} plant")
    settle, verdict, settle_sims = _after_the_table(problem, traj, runs, main, setup)
    timings["simulation"] = time.perf_counter() - tic
    return SimulationResult(problem, label, changes, plan_source, gains, runs, main, traj, model, plant_model, timings,
                            settle, verdict, settle_sims)


def _after_the_table(problem, traj, runs, main, setup):
    """Every run goes on for the settle window with the controller holding the final pose of the planning
    model (its static torque; the loop about its static state), as ``ffopt plan``'s verification; the
    verdict on the main case. ``setup``: the runs' ``ClosedLoopSetup``. Returns (settle info, Verdict, settle
    simulations)."""
    from ffopt.models.equilibrium import static_equilibrium
    from ffopt.sim.plant import StateFeedback, pd_gains
    from ffopt.sim.settle import SettleWindow, hold_pose, judge, plan_end_state, settle_duration, settle_grid
    from ffopt.sim.cases import Integration, motor_hold, settle_case, tool_errors
    from ffopt.sim.verify import tolerances

    model, ver = problem.model, problem.verification
    gains, plant, y_ref, tool_ref = setup.gains, setup.plant, setup.y_ref, setup.tool_ref
    L = model.layout
    q_end = static_equilibrium(model, y_ref[-1], traj.q[-1, :L.n_link], where=f"the end of the path (t = {traj.t[-1]:.4g} s)")
    hold = hold_pose(model, q_end)
    kp, kd = pd_gains(model, q_end, ver.pd_bandwidth_hz, ver.pd_damping_ratio)
    window, info = settle_duration(model, q_end, kp, kd, ver.settle_s)
    if window <= 0:
        return {}, None, {}
    t_settle = settle_grid(traj.t[-1], window, np.diff(traj.t).min())
    n = len(t_settle)
    tolerance = tol_mm, tol_mrad, _ = tolerances(model, ver)
    x_hold = np.concatenate([q_end, np.zeros(L.nq)])
    loop = {"none": None, "pd": motor_hold(gains.kp, gains.kd, hold.qm, n) if gains.controller == "pd" else None,
            "pd+state": StateFeedback(np.asarray(gains.K, float), np.tile(x_hold, (n, 1)))}[gains.controller]
    sims = {}
    for name, run in runs.items():
        sims[name], run.error.settle = settle_case(name, plant, run.simulation, hold, loop,
                                                   SettleWindow(t_settle, y_ref, tool_ref, model, tol_mm, tol_mrad),
                                                   Integration(ver.rtol))
    errors = tool_errors(runs[main].simulation, y_ref, tool_ref, model.output_units)
    end = plan_end_state(model, traj) if np.all(np.isfinite(traj.v[-1])) else None
    verdict = judge(main, errors, runs[main].error.settle, traj.t, tolerance, end)
    if plant is not model:  # what the plan cannot know about
        for miss in verdict.misses:
            miss["cause"] = f"the plant differs from the planning model ({setup.plant_label}); or {miss['cause']}"
    return {"window_s": window, **info, "hold_input": hold.u.tolist()}, verdict, sims


def plan_trajectory(plan, problem: Problem) -> tuple[Trajectory, str]:
    """The plan as a Trajectory on PROBLEM's coordinates (checked to match), and where it came from."""
    from ffopt.io.saved import SavedPlan, load_plan
    from ffopt.plan import PlanResult

    if isinstance(plan, PlanResult):
        traj, source = plan.trajectory, "<PlanResult>"
        _check_names(problem, list(traj.actuated_joints), list(traj.link_names or []), list(traj.output_names), source)
    else:
        saved = plan if isinstance(plan, SavedPlan) else load_plan(plan)
        source = str(saved.folder)
        _check_names(problem, saved.actuated_joints, saved.link_joints, list(saved.summary["problem"].get("outputs", [])),
                     source)
        traj = _saved_trajectory(saved, problem)
    _check_reference(problem, traj, source)
    return traj, source


def _with_planned_time_law(plan, problem: Problem, say) -> Problem:
    """PROBLEM with the time-law shape the plan was made with (``ffopt plan`` shapes the time law of a plan
    that would end moving: its problem.toml holds ``reference.time_law_shape``), said on the console."""
    import tomllib

    from ffopt.plan import PlanResult

    if isinstance(plan, PlanResult):
        shape = list(plan.problem.reference_spec.time_law_shape)
    else:
        path = Path(getattr(plan, "folder", plan)) / "problem.toml"
        try:
            shape = list(tomllib.loads(path.read_text()).get("reference", {}).get("time_law_shape", []))
        except (OSError, ValueError):
            return problem
    if not shape or list(problem.reference_spec.time_law_shape) == shape:
        return problem
    say(f"note: the plan was made with a rest-to-rest time law (reference.time_law_shape = {shape}); "
        f"{problem.source}'s path is simulated with it")
    return problem.with_values({"reference.time_law_shape": shape})


def _planned_robot_note(plan, problem: Problem) -> str | None:
    """A note when PROBLEM's robot is not the one the plan folder's problem.toml was planned on."""
    import tomllib

    path = Path(plan) / "problem.toml" if isinstance(plan, (str, Path)) else None
    if path is None or problem.raw is None or not path.is_file():
        return None
    try:
        planned = tomllib.loads(path.read_text()).get("model")
    except (OSError, ValueError):
        return None
    if planned == problem.raw.get("model"):
        return None
    return (f"note: {problem.source}'s [model] differs from the one the plan was made for ({path}); the controller "
            f"is designed on, and the nominal plant is, {problem.source}'s robot")


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    import zipfile

    try:
        with np.load(path) as f:
            return {k: np.asarray(f[k], float) for k in f.files if k not in ("columns", "units", "meanings")}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise ProblemError(f"{path}: cannot read it ({' '.join(str(err).split())[:200]}); plan again with ffopt "
                           "plan") from None


def _saved_trajectory(saved, problem: Problem) -> Trajectory:
    """The plan's arrays from trajectory.npz (exact doubles) or else trajectory.csv (12 digits)."""
    model = problem.model
    L = model.layout
    npz = saved.folder / "trajectory.npz"
    data = _read_npz(npz) if npz.is_file() else saved.data
    joints = [j.name for j in model.chain.joints]
    links = model.coordinate_names()[:L.n_link]
    gear = [joints[i] for i in L.gear]
    acts = [joints[i] for i in L.actuated]
    try:
        q = np.column_stack([data[f"q_{n}"] for n in links] + [data[f"qm_{n}"] for n in gear])
        v = np.column_stack([data[f"dq_{n}"] for n in links] + [data[f"dqm_{n}"] for n in gear])
        u = np.column_stack([data[f"u_{n}"] for n in acts])
        tool = np.column_stack([data[f"tool_{c}_mm"] for c in "xyz"]) / 1000.0
        y_ref = np.column_stack([data[f"ref_{o}_mm"] / 1000.0 if o in LENGTH_OUTPUTS else data[f"ref_{o}"]
                                 for o in problem.outputs])
        t = data["t"]
        if len(t) == 0 or any(len(c) != len(t) for c in (q, v, u, tool, y_ref)):
            raise ValueError("columns of different lengths")
    except KeyError as err:
        raise ProblemError(f"{saved.folder}: the plan has no column {err.args[0]!r} (written by another ffopt "
                           "version, or edited); plan again with ffopt plan") from None
    except ValueError:
        raise ProblemError(f"{saved.folder}: the plan's columns are empty or of different lengths (a damaged "
                           "trajectory file); plan again with ffopt plan") from None
    units = {c["name"]: c["unit"] for c in saved.summary.get("columns", [])}
    motor = L.motor_of_input
    return Trajectory(t=t, u=u, q=q, v=v, a=np.full_like(q, np.nan), qm=q[:, motor], dqm=v[:, motor], y_ref=y_ref,
                      tool=tool, coordinate_names=model.coordinate_names(), output_names=list(problem.outputs),
                      method=str(saved.summary.get("method", "plan")), stats={}, input_names=acts, link_names=links,
                      link_units=[units.get(f"q_{n}", "rad") for n in links],
                      hold=(saved.summary.get("settings", {}).get("output") or {}).get("hold"))


def _check_names(problem: Problem, actuated: list[str], links: list[str], outputs: list[str], source: str) -> None:
    model = problem.model
    L = model.layout
    want_act = [model.chain.joints[i].name for i in L.actuated]
    want_links = model.coordinate_names()[:L.n_link]
    for what, have, want in (("actuated joints", actuated, want_act), ("link-side joints", links, want_links),
                             ("outputs", outputs, list(problem.outputs))):
        if have != want:
            raise ProblemError(f"{source}: the plan was made for {what} {have}, but {problem.source} has {want}: "
                               "simulate a plan with the problem it was planned for (the plan folder's problem.toml)")


def _check_reference(problem: Problem, traj: Trajectory, source: str) -> None:
    """The plan's grid and saved reference must be PROBLEM's path: same outputs at every time."""
    t = np.asarray(traj.t, float)
    if t.ndim != 1 or len(t) < 2 or not np.all(np.diff(t) > 0):
        raise ProblemError(f"{source}: the plan's time column is not a strictly increasing grid")
    ref = problem.reference
    y = np.asarray(ref.evaluate(t))
    units = problem.model.output_units
    for i, (name, unit) in enumerate(zip(problem.outputs, units)):
        diff = np.abs(y[:, i] - traj.y_ref[:, i])
        k = int(np.argmax(diff))
        if diff[k] > REFERENCE_TOL.get(unit, 1e-9):
            shown = f"{1000 * diff[k]:.4g} mm" if unit == "m" else f"{diff[k]:.4g} rad"
            raise ProblemError(f"{source}: the plan's reference of output {name} differs from {problem.source}'s "
                               f"[reference] by {shown} at t = {t[k]:.4g} s (plan grid {t[0]:.4g}..{t[-1]:.4g} s, "
                               f"path {0.0:g}..{ref.t_end:.4g} s): the plan follows another path or timing; "
                               "simulate it with the problem it was planned for")


def _plant(problem: Problem, plant, values: dict | None, label: str | None):
    """(plant model, label, changes) from the arguments of ``simulate``; checks the coordinates match."""
    from ffopt.models.flexible import FlexibleModel

    values = dict(values or {})
    for key in values:
        if not any(str(key).startswith(p) for p in PLANT_TABLES):
            raise ProblemError(f"--set {key}: only the robot (model.*) differs between plan and plant; the path and "
                               "grid are the plan's, the controller's gains are set by --pd-bandwidth / --pd-damping")
    changes = [f"{k} = {v!r}" for k, v in values.items()]
    if isinstance(plant, FlexibleModel):
        if values:
            raise ProblemError("simulate: values change a problem's fields; with a model object as the plant, "
                               "change its chain instead")
        _check_plant(problem, plant, label or "given model")
        return plant, label or "given model", changes
    if plant is None and not values:
        return problem.model, label or "nominal", changes
    base = problem if plant is None else (plant if isinstance(plant, Problem) else load_problem(plant))
    source = base.source
    plant_problem = base.with_values(values) if values else base
    _check_plant(problem, plant_problem.model, base.source)
    text = label or (source if not changes else f"{source} with {', '.join(changes)}")
    return plant_problem.model, text, changes


def _modes_per_link(model) -> dict[str, int]:
    """Joint name -> modal coordinates of its flexible link (none for a rigid model)."""
    return {model.chain.joints[link.joint].name: link.modes for link in getattr(model, "links", ())}


def _modes_difference(plan: dict[str, int], plant: dict[str, int]) -> str:
    """The links whose modal coordinates differ, e.g. "link 'shoulder': 3 modes in the plant, 2 in the planning
    model (model.joints.shoulder.flexible.modes)"."""
    def count(n: int) -> str:
        return f"{n} mode{'s' * (n != 1)}" if n else "rigid"

    return "; ".join(f"link {name!r}: {count(plant.get(name, 0))} in the plant, {count(plan.get(name, 0))} in the "
                     f"planning model (model.joints.{name}.flexible.modes)"
                     for name in dict.fromkeys([*plan, *plant]) if plan.get(name, 0) != plant.get(name, 0))


def _check_plant(problem: Problem, plant, source: str) -> None:
    """ProblemError naming what differs between the planning model and the plant: the joints (names, kinds,
    order), the flexible links' modal coordinates, or the outputs. The plan's torques, references and states
    belong to the planning model's coordinates."""
    model = problem.model
    kinds = lambda m: [(j.name, j.kind) for j in m.chain.joints]  # noqa: E731
    if kinds(model) != kinds(plant):
        raise ProblemError(f"{source}: the plant's joints {kinds(plant)} do not match the planning model's "
                           f"{kinds(model)}: the plan's torques and references belong to those joints (same names, "
                           "kinds and order)")
    if model.layout != plant.layout or model.coordinate_names() != plant.coordinate_names():
        modes_plan, modes_plant = _modes_per_link(model), _modes_per_link(plant)
        if modes_plan != modes_plant:
            raise ProblemError(f"{source}: the plant has other modal coordinates than the planning model: "
                               f"{_modes_difference(modes_plan, modes_plant)}; the plan's states and references hold "
                               "the planning model's coordinates: simulate it on a plant with the same modes per link "
                               "(or plan on the plant's model)")
        raise ProblemError(f"{source}: the plant's coordinates {plant.coordinate_names()} do not match the planning "
                           f"model's {model.coordinate_names()}")
    if tuple(plant.outputs) != tuple(problem.outputs):
        raise ProblemError(f"{source}: the plant's outputs {list(plant.outputs)} differ from the plan's "
                           f"{list(problem.outputs)}: the tool error is measured on the plan's outputs")
