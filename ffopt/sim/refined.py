"""Verification past the planning model's truncation: a flexible-link plan run on a beam that holds.

A flexible link modelled by a few assumed modes (``ffopt.models.flexible_links``) is a truncation twice over: it
keeps a few modes, and with linear kinematics a bent link keeps its chord length (a 6 m link bent by 0.29 m at
its tip is 9 mm shorter along its chord; the tool moves by that much, and no number of modes shows it). A plan
that tracks the tool exactly on its own model may therefore miss on the real arm, and a verification on the
planning model cannot see it (it simulates the same truncation). So when the model has flexible links, the
judged case (the plan's torques with the motor PD loop) also runs on richer plants, and the verdict judges the
last of them:

- ``reference="exact_beam"`` (the verification's default): the geometrically exact beam of
  ``ffopt.models.beam_chain`` (each link K rigid rods joined by springs EI / l; large rotations, no
  linearisation), K = 3, 6, 12, 24 rigid segments per link (``SEGMENTS``). Its tool path converges like 1 / K^2
  (the Canadarm plan: successive differences shrink by 4.0 and 4.0), so from each pair K, 2K the Richardson
  extrapolation (4 y_2K - y_K) / 3 of the tool trajectory (during the move and after the table) is the beam
  with K -> infinity to the next order; the judged tool error is that of the extrapolated trajectory, converged
  when it changes by less than ``REL_CHANGE`` between consecutive pairs (or by less than ``ABS_CHANGE_OF_TOL``
  of the tolerance). Measured on the shipped Canadarm plan: 37.0, 9.08, 2.11 mm on 3, 6, 12 segments, 0.292
  and 0.285 mm extrapolated; 0.288 mm extrapolated from 12 and 24 undamped segments (minutes instead of
  seconds);
- ``reference="modes"``: the same assumed-mode model with more modes and the static tip shapes xi^2, xi^3
  (``FlexibleLinkModel.refined``), until the same criterion holds or ``MAX_EXTRA_MODES`` refinements: this
  converges in the modes of the planning model's own kinematics and cannot see what they leave out.

What the richer plant shares with the planning model is what a real arm shares with it: the joints, the motors
and the outputs. The plan's torques and motor references are applied as they are, with the same PD gains; each
plant starts at rest in its own static equilibrium at the path's start and is held, after the table, at its own
static equilibrium at the path's end. Each run reports the largest tip deflection of a link as a fraction of its
length and the largest chord shortening (the criterion for linear kinematics: ``ffopt.models.flexible_links``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.models.beam_chain import link_bending, segment_coordinates, segmented_beam_model
from ffopt.progress import heartbeat
from ffopt.sim.baselines import reach
from ffopt.sim.cases import Case, Integration, motor_hold, run_case, settle_case, tool_errors
from ffopt.sim.settle import Hold, SettleWindow, Verdict, hold_pose

REFERENCES = ("exact_beam", "modes")
REL_CHANGE = 0.05  # converged: the judged error changes by less than this fraction between refinements
ABS_CHANGE_OF_TOL = 0.05  # ... or by less than this fraction of the tolerance (errors far below it)
MAX_EXTRA_MODES = 3  # at most this many modal refinements (modes added per link)
SEGMENTS = (4, 8, 16, 32)  # rigid segments per link of the exact beam, tried in this order
# CVODES tolerances of the refined runs, at the loosest: their stiff top modes (a 2 m link's reaches 1.4 kHz with 3
# clamped-free modes + 2 static shapes, 9 kHz as 24 rigid segments) cost minutes at the plans' 1e-9 / 1e-11, and
# the refined error is judged against a tolerance of 1e-4 of the reach, not to 9 digits. The absolute tolerance
# (rad, rad/s) is ATOL_OF_TOLERANCE of the tool tolerance over the arm's reach: on the Canadarm (1.5 mm, 15 m)
# 1e-6, at which an 11 s plan on 6 segments per link takes 7k steps against 107k at 1e-9, and its tool error
# differs from that of a run at 1e-8 by 3 um.
RTOL_REFINED = 1e-6
ATOL_OF_TOLERANCE = 1e-2


@dataclass
class JudgedRun:
    """The judged case as it ran on the planning model, ready to run on another plant: the plan's grid and table
    (``traj``), the references, the loop (a ``MotorPD`` or None) with its gains, the settle grid and the
    tolerances."""

    t: np.ndarray
    traj: object  # ffopt.trajectory.Trajectory
    y_ref: np.ndarray
    tool_ref: np.ndarray | None
    interpolation: str
    loop: object
    kp: np.ndarray
    kd: np.ndarray
    t_settle: np.ndarray | None
    tol_mm: float
    tol_mrad: float
    rtol: float
    case: str = "feedforward_pd"


@dataclass
class Refinement:
    modes: list[int]  # modal coordinates per flexible link (rigid segments per link for the exact beam)
    max_mm: float  # judged case during the move
    residual_mm: float | None  # in the settle window
    max_mrad: float | None = None
    residual_mrad: float | None = None
    t_max_s: float = 0.0  # when the largest error occurs (move or settle)
    wall_s: float = 0.0
    basis: str = ""  # the beam model in words
    deflection_ratio: float | None = None  # largest |tip deflection| / length of a link, during the move
    shortening_mm: float | None = None  # largest chord shortening of a link (0 for linear kinematics' own model)

    @property
    def judged_mm(self) -> float:
        return max(self.max_mm, self.residual_mm or 0.0)

    def to_dict(self) -> dict:
        return {"modes": self.modes, "basis": self.basis, "max_mm": self.max_mm, "residual_mm": self.residual_mm,
                "max_mrad": self.max_mrad, "residual_mrad": self.residual_mrad, "judged_mm": self.judged_mm,
                "t_max_s": self.t_max_s, "wall_s": self.wall_s, "deflection_ratio": self.deflection_ratio,
                "chord_shortening_mm": self.shortening_mm}


@dataclass
class RefinedVerification:
    case: str
    planning: Refinement  # the judged case on the planning model itself
    refinements: list[Refinement] = field(default_factory=list)
    extrapolated: list[Refinement] = field(default_factory=list)  # exact beam: Richardson from consecutive pairs
    converged: bool = False
    settled: bool = False  # not converged, but on the same side of the tolerance whatever the rest of the change
    rel_change: float = REL_CHANGE
    max_extra_modes: int = MAX_EXTRA_MODES
    rtol: float = RTOL_REFINED
    reference: str = "exact_beam"
    planning_links: tuple = ()  # the planning model's flexible links (their kinematics name the likely cause)

    @property
    def final(self) -> Refinement:
        """What the verdict judges: the last extrapolated beam, else the last refinement, else the planning model."""
        return (self.extrapolated or self.refinements or [self.planning])[-1]

    def to_dict(self) -> dict:
        what = ("the geometrically exact beam (each link rigid segments joined by springs EI / l), segments per link "
                f"{', '.join(map(str, SEGMENTS))}" if self.reference == "exact_beam"
                else f"at most {self.max_extra_modes} refinements (clamped-free modes + the static tip shapes)")
        kinematics = sorted({k.kinematics for k in self.planning_links})
        return {"case": self.case, "reference": self.reference, "planning_model": self.planning.to_dict(),
                "planning_kinematics": kinematics[0] if len(kinematics) == 1 else kinematics,
                "refinements": [r.to_dict() for r in self.refinements],
                "extrapolated": [r.to_dict() for r in self.extrapolated], "converged": self.converged,
                "verdict_settled": self.settled, "rtol": self.rtol,
                "judged_mm": self.final.judged_mm, "judged_modes": self.final.modes, "judged_basis": self.final.basis,
                "criterion": f"judged error changes by < {100 * self.rel_change:g} % (or < "
                             f"{100 * ABS_CHANGE_OF_TOL:g} % of the tolerance) between refinements; {what}"}

    def line(self) -> str:
        seq = ", ".join(f"{r.basis}: {r.judged_mm:.4g} mm" for r in [self.planning, *self.refinements,
                                                                     *self.extrapolated])
        state = ("converged" if self.converged else "not converged, but the verdict is settled (still changing by "
                 "less than half the distance to the tolerance)" if self.settled else "NOT converged (cap reached)")
        bent = max((r.deflection_ratio or 0.0 for r in [self.planning, *self.refinements]), default=0.0)
        what = "exact beam" if self.reference == "exact_beam" else "refined models"
        kinematics = " / ".join(sorted({k.kinematics.replace("_", "-") for k in self.planning_links}))
        return (f"{what} ({self.case}, largest error during the move or after the table): {seq}; {state}; "
                f"largest tip deflection {100 * bent:.3g} % of a link's length, chord shortening "
                f"{self.planning.shortening_mm or 0:.3g} mm (planned with {kinematics} kinematics)")


def _changed(a: Refinement, b: Refinement, tol_mm: float, rel: float) -> bool:
    d = abs(a.judged_mm - b.judged_mm)
    return d > rel * max(a.judged_mm, b.judged_mm) and d > ABS_CHANGE_OF_TOL * tol_mm


def _summary(run: JudgedRun, plant, counts, basis, errors, settle, wall=0.0, bending=None) -> Refinement:
    e_mm, e_mrad = errors
    k = int(np.argmax(e_mm))
    r = Refinement(list(counts), float(e_mm.max()), None if settle is None else settle.residual_mm,
                   None if e_mrad is None else float(e_mrad.max()), None if settle is None else settle.residual_mrad,
                   float(run.t[k]), wall, basis)
    if settle is not None and settle.residual_mm > r.max_mm:
        r.t_max_s = settle.residual_t_s
    if bending is not None:
        r.deflection_ratio, r.shortening_mm = bending
    return r


def run_on_plant(run: JudgedRun, plant, guess, rtol: float, atol: float, compile: bool = True):
    """The judged case on ``plant`` from its own static equilibrium (``guess``: its link coordinates), then the
    settle window at its own end pose: (simulation, (mm, mrad) errors, settle metrics or None, settle simulation or
    None). compile: the plant as C (worth it for a plant simulated again, not for the exact beams)."""
    n_link = plant.layout.n_link
    q0 = static_equilibrium(plant, run.y_ref[0], guess(run.traj.q[0]), where=f"t = {run.t[0]:.4g} s ({plant.name})")
    name = f"{run.case} on {plant.name}"
    integration = Integration(rtol, atol, compile)
    sim = run_case(name, Case(plant, run.traj.u, run.loop, q0, run.interpolation), run.t, integration)
    errors = tool_errors(sim, run.y_ref, run.tool_ref, plant.output_units)
    settle, settle_sim = None, None
    if run.t_settle is not None:
        q_end = static_equilibrium(plant, run.y_ref[-1], guess(run.traj.q[-1])[:n_link],
                                   where=f"the end of the path ({plant.name})")
        h = hold_pose(plant, q_end)
        after = Hold(h.u, h.qm if run.loop is not None else None, h.q, h.z)
        hold_loop = None if run.loop is None else motor_hold(run.kp, run.kd, after.qm, len(run.t_settle))
        window = SettleWindow(run.t_settle, run.y_ref, run.tool_ref, plant, run.tol_mm, run.tol_mrad)
        settle_sim, settle = settle_case(name, plant, sim, after, hold_loop, window, integration)
    return sim, errors, settle, settle_sim


def _bending(model, plant_q: np.ndarray, bend) -> tuple[float, float]:
    """(largest |w_tip| / L of a link, largest chord shortening in mm) along a run, from ``bend`` (q_link ->
    [w_tip, shortening] per link)."""
    values = np.array(bend.map(plant_q.shape[0])(plant_q.T)).T  # (n, 2 links)
    lengths = np.array([k.length for k in model.links])
    return float((np.abs(values[:, 0::2]) / lengths).max()), float(1000 * values[:, 1::2].max())


def planning_bending(model, q_link: np.ndarray) -> tuple[float, float]:
    """``_bending`` of the assumed-mode planning model: its tip deflections, and the chord shortening its bent
    links have (second-order kinematics) or would have on a real beam (linear kinematics, which ignore it)."""
    return _bending(model, q_link, model.link_bending)


def _exact_beams(model):
    for K in SEGMENTS:
        plant = segmented_beam_model(model, K)
        yield (plant, [K] * len(model.links), f"exact beam, {K} rigid segments per link",
               lambda q, K=K: segment_coordinates(model, K, q[:model.layout.n_link]), link_bending(plant, model, K),
               False)


def _modal_refinements(model, max_extra: int):
    from ffopt.models.flexible_links import MAX_MODES

    for extra in range(1, max_extra + 1):
        plant = model.refined(extra)
        if all(m >= MAX_MODES for m in model.mode_counts) or plant.mode_counts == model.mode_counts:
            return
        yield plant, plant.mode_counts, plant.basis, lambda q: q[:model.n_joints], plant.link_bending, True
        if all(m >= MAX_MODES for m in plant.mode_counts):
            return


def verify_refined(model, run: JudgedRun, planning_errors, planning_settle, reference: str = "exact_beam",
                   max_extra: int = MAX_EXTRA_MODES, rel_change: float = REL_CHANGE, progress=None
                   ) -> RefinedVerification:
    """Run the judged case ``run`` on richer plants than ``model`` (a ``FlexibleLinkModel``): the exact beam or
    more assumed modes (``reference``; see the module text) until its error converges. planning_errors /
    planning_settle: the same case on the planning model."""
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")
    rtol = max(run.rtol, RTOL_REFINED)
    atol = min(rtol, ATOL_OF_TOLERANCE * run.tol_mm * 1e-3 / reach(model.chain))
    planning = _summary(run, model, model.mode_counts, model.basis, planning_errors,
                        planning_settle, bending=planning_bending(model, run.traj.q[:, :model.layout.n_link]))
    out = RefinedVerification(run.case, planning, rel_change=rel_change, max_extra_modes=max_extra, rtol=rtol,
                              reference=reference, planning_links=tuple(model.links))
    plants = _exact_beams(model) if reference == "exact_beam" else _modal_refinements(model, max_extra)
    runs = []  # (segments, tool trajectory during the move, after the table) of the exact beams
    for plant, counts, basis, guess, bend, compile in plants:
        tic = time.perf_counter()
        if progress is not None:
            progress(f"verifying {run.case} on the {basis}: does the plan hold beyond its model?")
        with heartbeat(progress, lambda elapsed, basis=basis: f"simulating the {basis}: {elapsed:.0f} s"):
            sim, errors, settle, settle_sim = run_on_plant(run, plant, guess, rtol, atol, compile)
        current = _summary(run, plant, counts, basis, errors, settle, time.perf_counter() - tic,
                           _bending(model, sim.q[:, :plant.layout.n_link], bend))
        out.refinements.append(current)
        if reference == "exact_beam":
            runs.append((counts[0], _Tool(sim.y, sim.tool), None if settle_sim is None
                         else _Tool(settle_sim.y, settle_sim.tool)))
            if len(runs) < 2:
                continue
            current = _extrapolated(run, model, runs[-2], runs[-1], current)
            out.extrapolated.append(current)
            if len(out.extrapolated) < 2:
                continue
        previous = (out.extrapolated if reference == "exact_beam" else [out.planning, *out.refinements])[-2]
        if not _changed(previous, current, run.tol_mm, rel_change):
            out.converged = True
            break
        if _verdict_settled(previous, current, run.tol_mm):
            out.settled = True
            break
    return out


@dataclass
class _Tool:
    """A simulation's outputs and tool point (what ``tool_errors`` reads)."""

    y: np.ndarray
    tool: np.ndarray


def _richardson(a: _Tool, b: _Tool) -> _Tool:
    """(4 b - a) / 3: the limit of a quantity converging like 1 / K^2 from its values at K (a) and 2K (b)."""
    return _Tool((4 * b.y - a.y) / 3, (4 * b.tool - a.tool) / 3)


def _extrapolated(run: JudgedRun, model, coarse, fine, fine_summary: Refinement) -> Refinement:
    """The judged errors of the Richardson-extrapolated exact beam from the runs ``coarse`` and ``fine``
    ((segments, move, settle) with K and 2K segments)."""
    move = _richardson(coarse[1], fine[1])
    e_mm, e_mrad = tool_errors(move, run.y_ref, run.tool_ref, model.output_units)
    k = int(np.argmax(e_mm))
    r = Refinement(fine_summary.modes, float(e_mm.max()), None, None if e_mrad is None else float(e_mrad.max()),
                   None, float(run.t[k]), 0.0, f"exact beam extrapolated from {coarse[0]} and {fine[0]} segments",
                   fine_summary.deflection_ratio, fine_summary.shortening_mm)
    if fine[2] is not None:
        n = len(run.t_settle)
        end_ref = np.tile(run.y_ref[-1], (n, 1))
        end_tool = None if run.tool_ref is None else np.tile(run.tool_ref[-1], (n, 1))
        s_mm, s_mrad = tool_errors(_richardson(coarse[2], fine[2]), end_ref, end_tool, model.output_units)
        r.residual_mm = float(s_mm.max())
        r.residual_mrad = None if s_mrad is None else float(s_mrad.max())
        if r.residual_mm > r.max_mm:
            r.t_max_s = float(run.t_settle[int(np.argmax(s_mm))])
    return r


def _verdict_settled(a: Refinement, b: Refinement, tol_mm: float) -> bool:
    """Whether the verdict can no longer change: both errors on the same side of the tolerance, and farther from
    it than twice their difference (a rigid-segment beam's error converges like 1 / K^2: the change from K to 2K
    is a third of the remaining one, the next doubling a quarter of this one)."""
    d = abs(a.judged_mm - b.judged_mm)
    return (a.judged_mm > tol_mm) == (b.judged_mm > tol_mm) and abs(b.judged_mm - tol_mm) > 2 * d


def judge_refined(verdict: Verdict, refined: RefinedVerification, tol_mm: float, tol_mrad: float) -> Verdict:
    """Add to ``verdict`` the miss of the last refined plant (its judged error above the tolerance)."""
    r = refined.final
    if not refined.refinements:
        return verdict
    where = f"on the {r.basis}" + ("" if refined.converged or refined.settled else " (not converged)")
    shortening = refined.planning.shortening_mm or 0.0
    cause = (f"the plan holds on its own model ({refined.planning.basis}: {refined.planning.judged_mm:.3g} mm) but "
             "not on the beam: ")
    linear = [k for k in refined.planning_links if k.kinematics == "linear"]
    if refined.reference == "exact_beam" and shortening > 0.1 * tol_mm and linear:
        cause += (f"its links bend by up to {100 * (refined.planning.deflection_ratio or 0):.3g} % of their length, "
                  f"which shortens them along their chord by up to {shortening:.3g} mm; plan with "
                  "flexible.kinematics = \"second_order\" (the foreshortening in the model), more modes, or a "
                  "slower motion")
    else:
        cause += ("it excites what the model leaves out: plan with more modes (static_shapes = true), or limit what "
                  "the plan excites above the modelled band (a slower or smoother motion, a torque-rate bound)")
    misses = []  # first: the judged error is the refined plant's
    for err, tol, unit in ((r.judged_mm, tol_mm, "mm"),
                           (max(r.max_mrad or 0.0, r.residual_mrad or 0.0) if r.max_mrad is not None else None,
                            tol_mrad, "mrad")):
        if err is not None and err > tol:
            misses.append({"case": refined.case, "phase": where, "error": float(err), "unit": unit,
                           "tolerance": tol, "t_s": r.t_max_s, "cause": cause})
    verdict.misses[:0] = misses
    if verdict.misses:
        verdict.status = "missed_tolerance"
    return verdict
