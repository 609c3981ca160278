"""Verification of a plan by forward simulation of the flexible plant.

Two case sets. ``cases="default"`` runs what a user of the plan needs: the plan's torques open
loop and with the motor PD loop (the headline number), on one CVODES integrator shared by both.
``cases="full"`` (``[verification] cases = "full"``, ``ffopt plan --verify full``) adds the
baselines and the model-mismatch table: the cubic-spline torques, the rigid-model feedforward,
PD alone and the payload cases. The default costs two plant simulations instead of seven (E12:
about 0.26 s of CPU instead of 1.2 s); its two numbers are those of the full table, bit for bit.

Cases (all on the plan's time grid, CVODES with tight tolerances, tool error = Euclidean norm
of Gamma(qa) - theta(t) over the tool-position outputs in mm over the whole run; angle outputs
(tool angles, joint angles) as a separate norm in mrad; with no position output the tool error
is that of the tool point against the rigid tool path of a joint-space reference; torques and
references linear between grid points unless said otherwise):

- ``feedforward_open_loop``: the plant driven by u(t) alone, from rest in static equilibrium.
- ``feedforward_pd``: u(t) plus a motor-side PD loop tracking the planned qm(t), dqm(t)
  (the two-degree-of-freedom structure of Thuemmel, Otter & Bals). The headline number.
(full set only:)
- ``feedforward_open_loop_cubic_u``: as open loop, but u(t) a cubic spline through the samples.
  Linear interpolation of the torque table costs O(h^2) (the dominant error at E1's 5 ms and
  E12's 1 ms); the spline leaves the inversion's own error.
- ``rigid_feedforward_pd``: the rigid-model feedforward (stiff gears, passive joints locked)
  with the PD loop tracking the rigid motor reference: the industrial baseline.
- ``pd_only``: no feedforward (u = 0), the PD loop on the rigid motor reference; it starts where
  the loop holds the plant at rest (under gravity that is a sagged pose).
- ``payload_x<s>``: feedforward + PD on a plant whose last body has s times the mass and
  inertia (model mismatch); it starts where the PD loop holds it at rest before the motion.
  Skipped (with the reason in ``skipped``) for a constant inertia matrix (E1 simplified): there is
  no body to scale.

The nominal cases start at rest in the static equilibrium at the start of the path (where a real
robot is); ``initial_state_offset`` reports how far the plan's own first state is from it.

Flexible links (assumed modes, a truncation): the judged case also runs on refined models (more modes and
the static tip shapes per link) until its error converges (``ffopt.sim.refined``, ``refined`` in the report); the verdict
judges the last refined model's error, so a plan that only holds on its own truncation misses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ffopt.codegen import available_cores
from ffopt.models.equilibrium import static_equilibrium
from ffopt.models.equilibrium import not_at_rest_text
from ffopt.errors import VerificationError
from ffopt.io.problem import VerificationSettings
from ffopt.models.flexible import FlexibleModel
from ffopt.sim.baselines import pd_only, rigid_feedforward
from ffopt.sim.cases import (Case, CaseError, Integration, case_error, motor_hold, rest_state, run_case,  # noqa: F401 (run_case:
                             settle_case, simulate_cases, tool_errors)  # imported from here by studies and tests)
from ffopt.progress import heartbeat
from ffopt.sim.plant import MotorPD, SimResult, compiled_plant, input_gains, pd_gains, plant_needs_compiling
from ffopt.sim.settle import (JUDGED_CASE, Hold, SettleWindow, Tolerance, Verdict, default_tolerances, held_eigenvalues, hold_pose, judge,
                              plan_end_state, settle_duration, settle_grid)

CASE_SETS = ("default", "full")
OPEN_LOOP_GROWTH_NOTED = 1e-2  # 1/s: an unstable held pose worth a console note (below: roundoff of a rigid mode)
DEFAULT_CASES = ("feedforward_open_loop", "feedforward_pd")


@dataclass
class VerificationReport:
    cases: dict[str, CaseError]
    simulations: dict[str, SimResult] = field(repr=False)
    pd_gains: dict
    rtol: float
    initial_state_offset: dict = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    case_set: str = "full"
    settle_simulations: dict[str, SimResult] = field(default_factory=dict, repr=False)
    settle: dict = field(default_factory=dict)  # window, how it was chosen, the hold
    end_state: dict | None = None  # the plan's own distance from rest at its last row
    verdict: Verdict | None = None
    refined: object | None = None  # ffopt.sim.refined.RefinedVerification (flexible links: more assumed modes)

    @property
    def status(self) -> str:
        """"verified" or "missed_tolerance" (the verdict's status)."""
        return "verified" if self.verdict is None else self.verdict.status

    def to_dict(self) -> dict:
        return {"status": self.status, "verdict": None if self.verdict is None else self.verdict.to_dict(),
                "case_set": self.case_set, "tool_error": {n: c.to_dict() for n, c in self.cases.items()},
                "settle": self.settle, "plan_end_state": self.end_state,
                "skipped": self.skipped, "pd_gains": self.pd_gains, "integrator": "cvodes", "rtol": self.rtol,
                "initial_state_offset": self.initial_state_offset,
                **({} if self.refined is None else {"refined": self.refined.to_dict()})}

    def table(self) -> str:
        return "\n".join(case_table(self.cases.values()) + [f"{n:30s} skipped: {why}" for n, why in self.skipped.items()]
                         + (["(baselines and payload mismatch: --verify full)"] if self.case_set == "default" else [])
                         + self.rest_lines())

    def rest_lines(self) -> list[str]:
        lines = []
        if self.settle:
            lines.append(f"after the table: {self.settle['window_s']:.3g} s with the controller holding the final "
                         f"pose ({self.settle['settle_s_source']})")
            growth = self.settle["open_loop_growth_rate_1_s"]
            if growth > OPEN_LOOP_GROWTH_NOTED and "feedforward_open_loop" in self.cases:
                lines.append(f"(open loop the held pose is unstable, growth rate {growth:.3g} 1/s: the open-loop "
                             "residual grows from any error at the table's end)")
        e = self.end_state
        if e is not None:
            lines.append("plan ends at rest" if e["at_rest"] else not_at_rest_text(e))
        if self.refined is not None:
            lines.append(self.refined.line())
        if self.verdict is not None:
            lines.append(self.verdict.line())
        return lines


def case_table(cases) -> list[str]:
    """The console table of verification cases: errors during the move and after the table."""
    cases = list(cases)
    angles = any(c.max_mrad is not None for c in cases)
    settled = any(c.settle is not None for c in cases)
    lines = [f"{'case':30s} {'max [mm]':>11s} {'rms [mm]':>11s} {'start [mm]':>11s} {'final [mm]':>11s}"
             + (f" {'max [mrad]':>11s}" if angles else "")
             + (f" {'residual[mm]':>12s} {'settled [s]':>11s}" if settled else "")]
    for c in cases:
        row = (f"{c.name:30s} {c.max_mm:11.4g} {c.rms_mm:11.4g} {c.start_mm:11.4g} {c.final_mm:11.4g}"
               + (f" {c.max_mrad:11.4g}" if angles else ""))
        if settled and c.settle is not None:
            st = c.settle.settling_time_s
            row += f" {c.settle.residual_mm:12.4g} {'never' if st is None else format(st, '.3g'):>11s}"
        lines.append(row)
    return lines


def verify(model: FlexibleModel, reference, traj, settings: VerificationSettings | None = None,
           guess=None, hold: str | None = None, progress=None, compile: bool = True) -> VerificationReport:
    """Simulate the plant with the plan's torques (and, for ``settings.cases`` "full", the baselines and the
    payload mismatch) and go on after the table for the settle window with the controller holding the
    final pose (``ffopt.sim.settle``); tool errors in mm, and the verdict against the tolerance.
    ``hold``: how the plan's input is applied between its rows, "linear" or "zoh" (None: the plan's own
    ``traj.stats["hold"]``, else linear), the hold the plan was made for ([output] hold). progress: called
    with a line per simulation. compile: the plant as compiled C (``ffopt.sim.plant.compiled_plant``; the
    same numbers, 4-6x faster)."""
    say = progress or (lambda msg: None)
    settings = settings or VerificationSettings()
    case_set = settings.cases
    if case_set not in CASE_SETS:
        raise VerificationError(f"verification cases must be one of {', '.join(CASE_SETS)}, got {case_set!r}")
    hold = hold or traj.stats.get("hold") or "linear"
    held = "" if hold == "linear" else f" ({hold})"
    t = np.asarray(traj.t, float)
    y_ref = np.asarray(reference.evaluate(t))
    motion = (reference.t_motion_start, reference.t_motion_end)  # the settled cycle counts from the motion's start
    tool_ref = None if getattr(reference, "tool_path", None) is None else np.asarray(reference.tool_path.evaluate(t))
    n_link = model.layout.n_link
    # Start at rest in the static equilibrium of the path's start, where the robot really is; a plan
    # whose first state differs (a non-causal NLP whose rest is a soft penalty) pays for it here.
    q0 = static_equilibrium(model, y_ref[0], traj.q[0, :n_link], where=f"t = {t[0]:.4g} s")
    offset = {"q_max_abs": float(np.abs(traj.q[0] - q0).max()), "v_max_abs": float(np.abs(traj.v[0]).max())}
    kp_torque, kd_torque = pd_gains(model, q0, settings.pd_bandwidth_hz, settings.pd_damping_ratio)
    kp, kd = input_gains(model, kp_torque, kd_torque)  # V/rad with DC-motor electrics
    # A plan for a stated hold has its table at the sample period: the PD references between the samples
    # are then the planned motion (cubic Hermite from the planned angle, speed and acceleration).
    pd = MotorPD(kp, kd, traj.qm, traj.dqm, _motor_accelerations(model, traj, hold) if "hold" in traj.stats else None)
    runs = {
        "feedforward_open_loop": Case(model, traj.u, None, q0, hold, f"plan torques{held}, no feedback"),
        "feedforward_pd": Case(model, traj.u, pd, q0, hold, f"plan torques{held} + motor PD on planned qm"),
    }
    skipped = {}
    if case_set == "full":
        guess = guess if guess is not None else traj.q[0, :n_link]
        runs.update(_baseline_runs(model, reference, traj, t, q0, guess, kp, kd))
        runs.update(_payload_runs(model, traj, pd, settings.payload_scales, skipped, hold))

    # After the table: the static equilibrium of the path's end point, held by its static torque
    q_end = static_equilibrium(model, y_ref[-1], traj.q[-1, :n_link], where=f"the end of the path (t = {t[-1]:.4g} s)")
    plan_hold = hold_pose(model, q_end)
    window, settle_info = settle_duration(model, q_end, kp_torque, kd_torque, settings.settle_s)
    t_settle = settle_grid(t[-1], window, np.diff(t).min()) if window > 0 else None
    tol_mm, tol_mrad, tol_source = tolerances(model, settings)
    end_state = plan_end_state(model, traj)

    if compile and plant_needs_compiling(model, n_rows=len(t)):
        say("compiling the plant's equations to C for the simulations (once per model; cached)")
        with heartbeat(say, lambda elapsed: f"compiling the plant: {elapsed:.0f} s"):
            compiled_plant(model, "pd", len(t))  # here, so that gcc's seconds are not silent
    cases, settle_sims, judged_errors = {}, {}, None
    runs = {name: case.at_rest(q0) for name, case in runs.items()}
    after_text = "" if t_settle is None else f", then {window:.3g} s after the table"
    say(f"verifying {', '.join(runs)}" + (f" ({min(len(runs), available_cores())} at a time)" if len(runs) > 1 else "")
        + after_text)
    sims = simulate_cases(runs, t, settings.rtol, compile, progress)
    for name, case in runs.items():
        errors = tool_errors(sims[name], y_ref, tool_ref, model.output_units)
        cases[name] = case_error(name, sims[name], y_ref, tool_ref, model.output_units, case.text, errors)
        if name == JUDGED_CASE:
            judged_errors = errors
        if t_settle is not None:
            after = case.after or Hold(plan_hold.u, plan_hold.qm if case.loop is not None else None, plan_hold.q,
                                       plan_hold.z)
            hold_loop = None if case.loop is None else motor_hold(kp, kd, after.qm, len(t_settle))
            settle_sims[name], cases[name].settle = settle_case(
                name, case.plant, sims[name], after, hold_loop, SettleWindow(t_settle, y_ref, tool_ref, model, tol_mm,
                                                                             tol_mrad, motion), Integration(settings.rtol, compile=compile))
    gains = {"kp": kp.tolist(), "kd": kd.tolist(), "bandwidth_hz": settings.pd_bandwidth_hz,
             "damping_ratio": settings.pd_damping_ratio}
    if model.drives is not None:  # gains on the voltage; the torque gains they come from
        gains.update(unit="V/rad, V s/rad", kp_torque=kp_torque.tolist(), kd_torque=kd_torque.tolist())
    settle = {} if t_settle is None else {"window_s": window, **settle_info,
                                          "open_loop_growth_rate_1_s": _open_loop_growth(model, q_end),
                                          "hold_input": plan_hold.u.tolist(),
                                          "hold_motor_angles_rad": plan_hold.qm.tolist(),
                                          "grid_step_s": float(t_settle[1] - t_settle[0])}
    verdict = judge(JUDGED_CASE, judged_errors, cases[JUDGED_CASE].settle, t, Tolerance(tol_mm, tol_mrad, tol_source),
                    end_state, traj.stats.get("planned_tool_error_max_mm"))
    refined = None
    if getattr(model, "links", None):  # flexible links: the plan also on more assumed modes (ffopt.sim.refined)
        from ffopt.sim.refined import JudgedRun

        judged = runs[JUDGED_CASE]
        run = JudgedRun(t, traj, y_ref, tool_ref, judged.interpolation, judged.loop, kp, kd, t_settle, tol_mm,
                        tol_mrad, settings.rtol, JUDGED_CASE)
        refined = _refined(model, run, judged_errors, cases[JUDGED_CASE].settle, verdict, say)
    return VerificationReport(cases, sims, gains, settings.rtol, offset, skipped, case_set, settle_sims, settle,
                              end_state, verdict, refined)


def _refined(model, run, errors, settle, verdict, say=None):
    """The judged case ``run`` (a ``ffopt.sim.refined.JudgedRun``) on the exact beam of a model with flexible
    links; adds its miss to ``verdict``."""
    from ffopt.sim.refined import judge_refined, verify_refined

    refined = verify_refined(model, run, errors, settle, progress=say)
    judge_refined(verdict, refined, run.tol_mm, run.tol_mrad)
    return refined


def _open_loop_growth(model, q_end) -> float:
    """Largest real part (1/s) of the arm's eigenvalues held by its static torque alone (no feedback): above
    0 the open-loop case cannot stay at the pose after the table, whatever the plan (gravity tips it)."""
    zero = np.zeros(model.layout.n_u)
    return float(np.real(held_eigenvalues(model, q_end, zero, zero)).max())


def tolerances(model, settings) -> Tolerance:
    """(tolerance_mm, tolerance_mrad, where they come from): [verification]'s, else the defaults."""
    mm, mrad = default_tolerances(model)
    source = ("verification.tolerance_mm" if settings.tolerance_mm is not None
              else "default: 1e-4 of the arm's reach")
    return Tolerance(settings.tolerance_mm if settings.tolerance_mm is not None else mm,
                     settings.tolerance_mrad if settings.tolerance_mrad is not None else mrad, source)


def _motor_accelerations(model, traj, hold):
    """The planned motor accelerations for Hermite PD references: the table's; or for a plan made for a
    zero-order hold of the torque (``stats["states_follow_hold"]``: the NLP, whose motion jumps in
    acceleration at every sample) the one-sided values at both ends of each sample, from the model (forward
    dynamics at the planned state under the torque held over that sample). A resampled plan (BDF) keeps its
    own smooth motion as the reference (E12, 2 ms zoh from a 0.25 ms BDF: PD 0.0009 mm; with one-sided
    accelerations, inconsistent with its states, 0.18 mm)."""
    motor = model.layout.motor_of_input
    if hold != "zoh" or model.drives is not None or not traj.stats.get("states_follow_hold"):
        return traj.a[:, motor]
    n = len(traj.t)
    fd = model.forward_dynamics.map(n - 1)
    u = traj.u[:-1].T
    start = np.array(fd(traj.q[:-1].T, traj.v[:-1].T, u)).T
    end = np.array(fd(traj.q[1:].T, traj.v[1:].T, u)).T
    return start[:, motor], end[:, motor]


def _baseline_runs(model, reference, traj, t, q0, guess, kp, kd) -> dict:
    """The plan's torques as a cubic spline, the rigid-model feedforward and PD alone (full set)."""
    rigid = rigid_feedforward(model, reference, t, guess)
    none = pd_only(model, reference, t, guess, rigid=rigid)
    if model.drives is not None:  # the rigid torques as the voltages that make them (PD only: zero volts)
        rigid.u = model.drives.voltage_table(t, rigid.dqm, rigid.u)[0]
    return {
        "feedforward_open_loop_cubic_u": Case(model, traj.u, None, q0, "cubic",
                                              "plan torques as a cubic spline, no feedback"),
        "rigid_feedforward_pd": Case(model, rigid.u, MotorPD(kp, kd, rigid.qm, rigid.dqm), None, "linear",
                                     "rigid-model torques + motor PD on rigid qm", Hold(rigid.u[-1], rigid.qm[-1])),
        "pd_only": Case(model, none.u, MotorPD(kp, kd, none.qm, none.dqm), None, "linear",
                        "no feedforward, motor PD on rigid qm", Hold(none.u[-1], none.qm[-1])),
    }


def _payload_runs(model, traj, pd, scales, skipped, hold="linear") -> dict:
    """Feedforward + PD on plants whose last body is scaled (full set); ``skipped`` gets the reasons."""
    runs = {}
    for s in scales:
        name = f"payload_x{s:g}"
        if model.chain.constant_inertia is not None:
            skipped[name] = "constant inertia matrix (no payload body to scale)"
            continue
        plant = model.variant(model.chain.with_payload_scale(s))
        runs[name] = Case(plant, traj.u, pd, None, hold, f"plan torques + motor PD, last body mass and inertia x{s:g}")
    return runs


