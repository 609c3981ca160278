"""Export the BDF inverse model of a problem as portable C (``ffopt export``).

What runs online is what ``ffopt.dae.inverse.solve_inverse_bdf`` runs offline, one step per
controller sample: the same DAE form with the path as data (``InverseDae.F_path``), the same BDF
step Function (``ffopt.dae.bdf.build_bdf_functions``: extrapolated start, guarded Newton iterations
with the exact sparse Jacobian and QR, the same tolerances), the same recovery of the motor
torques. Only the loop over the steps moves into the controller: the history of the last k states
is the state of the exported code, and each call takes the next sample of the reference (the
outputs and the derivatives the form needs) and returns the motor torques and the motor angle and
speed references. The start is the static equilibrium at the start pose (computed here in Python
for the problem's start pose and embedded; another start pose is solved by a generated Newton
iteration on the same static equations).

What cannot run online is refused (``check_exportable``): a non-minimum-phase arm (the causal
inverse integrates its unstable zero dynamics forward and diverges; the non-causal NLP plan needs a
preview of ~10 time constants of the slowest unstable zero), a method that needs the NLP (torque
or torque-rate bounds, ``solver.method = "nlp"``), a zoh output hold (its torque is a projection
that needs the samples ahead), and models whose functions CasADi cannot generate as C.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt._version import __version__
from ffopt.cache import per_model
from ffopt.errors import ProblemError
from ffopt.export import templates
from ffopt.export.tables import DEFAULT_BUDGET, tabulate

# The settings solve_inverse_bdf passes to solve_bdf (its defaults): the exported Newton is the same.
NEWTON_TOL, STEP_TOL, MAX_NEWTON_ITER = 1e-10, 1e-9, 20
# The static equilibrium for another start pose (ffopt_init with a pose): Newton on the static rows.
EQUILIBRIUM_TOL, EQUILIBRIUM_MAX_ITER = 1e-12, 50
PREVIEW_TIME_CONSTANTS = 10  # non-causal plans pre-actuate for 10 time constants (ffopt.nlp)
GENERATED, WRAPPER, HEADER = "ffopt_generated.c", "ffopt_inverse.c", "ffopt_inverse.h"
FILES = (HEADER, WRAPPER, GENERATED, "ffopt_generated.h", "harness.c", "CMakeLists.txt", "README.md",
         "reference.bin", "meta.json")
CFLAGS = ("-O2", "-std=c99", "-Wall", "-Wextra", "-Werror")


@dataclass
class ExportInfo:
    """What was exported (also written to meta.json)."""

    folder: str
    problem: str
    form: str
    order: int
    sample_time: float
    n_u: int
    n_out: int
    n_derivs: int  # derivatives 0..n_derivs-1 of the outputs per reference sample
    n_ref: int  # n_out * n_derivs
    n_x: int
    n_steps: int  # reference.bin holds n_steps + 1 samples (t = 0, h, ..., n_steps h)
    input_names: list[str]
    input_unit: str
    output_names: list[str]
    output_units: list[str]
    work: dict = field(default_factory=dict)  # sz_arg, sz_res, sz_iw, sz_w of the generated functions
    zero_dynamics: str = ""
    code: dict = field(default_factory=dict)  # ffopt.export.tables.TableReport: what runs from instruction tables

    def to_dict(self) -> dict:
        return asdict(self)


def check_exportable(problem, sample_time: float | None = None) -> tuple[float, dict]:
    """(sample time h, zero-dynamics summary) if the problem's inverse can run online; else ProblemError
    (or SolverError from the zero-dynamics analysis) naming what cannot and why."""
    s, nlp, out = problem.solver, problem.nlp, problem.output
    where = problem.source
    h = float(sample_time if sample_time is not None else (out.sample_time or s.step))
    if not (np.isfinite(h) and h > 0):
        raise ProblemError(f"--sample-time: must be a finite number > 0 s, got {h!r}")
    if h < 1e-5 or h > 0.1:
        raise ProblemError(f"--sample-time: {h:g} s is outside 1e-5 .. 0.1 s (a controller's sample period)")
    zd = _zero_dynamics(problem, h)  # first: the reason no setting can remove
    bounds = [name for name, v in (("nlp.torque_max", nlp.torque_max), ("nlp.torque_rate_max", nlp.torque_rate_max))
              if v is not None]
    if bounds:
        raise ProblemError(f"{where}: {' and '.join(bounds)} given: a plan under bounds needs the NLP over the whole "
                           "move, which cannot run sample by sample; the exported inverse tracks the path exactly "
                           "without bounds (remove the bounds, or plan offline with ffopt plan)")
    if out.hold == "zoh":
        raise ProblemError(f"{where}: output.hold = \"zoh\": the held torque of a zoh plan is a projection over each "
                           "sample that needs the samples ahead; the exported step returns the torque at each sample "
                           "instant (a linear hold): remove output.hold or set it to \"linear\"")
    if s.method not in ("auto", "bdf"):
        raise ProblemError(f"{where}: solver.method = {s.method!r}: ffopt export runs the BDF inverse (method bdf, "
                           f"form {s.form}); set solver.method = \"bdf\" or \"auto\"")
    return h, zd


def _zero_dynamics(problem, h: float) -> dict:
    """The zero-dynamics check of method auto (ffopt.auto_method): minimum phase on the grid of step h,
    or ProblemError naming the unstable zero and the preview a non-causal plan needs."""
    from ffopt.analysis.linear import zero_dynamics
    from ffopt.auto_method import UNRESOLVED_PER_STEP, UNSTABLE_RTOL, ZERO_DYNAMICS_POINTS

    zd = zero_dynamics(problem.model, problem.reference, problem.reference_spec.joint_guess,
                       n_points=ZERO_DYNAMICS_POINTS, cross_check=False)
    unstable = [(z, t) for z, t in zd.unstable_zeros(UNSTABLE_RTOL) if z.real * h <= UNRESOLVED_PER_STEP]
    if unstable:
        z, t = min(unstable, key=lambda zt: zt[0].real)  # the slowest: its time constant sets the preview
        tc = 1.0 / z.real
        raise ProblemError(
            f"{problem.source}: the arm is non-minimum phase along this path: unstable zero {z.real:.4g}"
            f"{z.imag:+.4g}j rad/s at t = {t:.3g} s (time constant {tc:.3g} s). Its inverse is non-causal: run "
            f"sample by sample, the exported BDF inverse would integrate this zero forward and diverge. The NLP "
            f"plan (ffopt plan --method nlp) needs a preview of ~{PREVIEW_TIME_CONSTANTS} time constants "
            f"({PREVIEW_TIME_CONSTANTS * tc:.3g} s) of the reference, so it cannot run online")
    return {"minimum_phase": True, "summary": zd.summary()}


def reference_samples(problem, sample_time: float, dae=None) -> tuple[np.ndarray, np.ndarray]:
    """(t, r): the reference samples the exported step takes, t_i = i h for i = 0..round(t_end / h), row i
    r(t_i) = [y; y'; ...] (the outputs, then each derivative the form needs, output by output)."""
    if dae is None:
        dae = inverse_functions(problem)[0]
    n_steps = int(round(problem.reference.t_end / sample_time))
    t = sample_time * np.arange(n_steps + 1)
    return t, np.array(dae.path_data(problem.reference, t))


def _start(problem):
    from ffopt.models.equilibrium import static_equilibrium
    from ffopt.dae.forms import choose_dummy_set

    from ffopt.sim.baselines import start_configuration

    model, spec = problem.model, problem.reference_spec
    y0 = np.asarray(problem.reference.evaluate(np.array([0.0]))).ravel()
    guess = spec.joint_guess  # else the start the path check of a plan finds
    q0 = static_equilibrium(model, y0, guess if guess is not None else
                            start_configuration(model, problem.reference, None, spec.start_field))
    return y0, q0, choose_dummy_set(model, q0[: model.layout.n_link])


def inverse_functions(problem):
    """(InverseDae, recovery, y0, q0) exactly as solve_inverse_bdf builds them (the same per-model cache key)."""
    from ffopt.dae.inverse import inverse_dae_with_path_data

    model, form = problem.model, problem.solver.form
    y0, q0, dummy = _start(problem)
    dae, recovery = per_model(model, ("inverse_dae", form, dummy), lambda: inverse_dae_with_path_data(model, form, dummy))
    return dae, recovery, y0, q0


def build_functions(problem, sample_time: float):
    """The two generated Functions and the constants of the wrapper.

    ffopt_bdf_step (hist[n k], t, c[1 + n], r[n_ref]) -> (hist shifted, diag): the offline BDF step.
    ffopt_equilibrium (q_guess[nq], y_start[n_out]) -> (x0[n], extra0, [converged, max |G|]).
    """
    from ffopt.dae.bdf import build_bdf_functions, expanded_function
    from ffopt.models.equilibrium import torque_scale
    from ffopt.dae.forms import DEFAULT_SCALING_POWER

    s, model = problem.solver, problem.model
    dae, recovery, y0, q0 = inverse_functions(problem)
    funcs = build_bdf_functions(expanded_function(dae.F_path), s.order, (NEWTON_TOL, STEP_TOL), MAX_NEWTON_ITER, None, recovery)
    ins = [ca.MX.sym(f"i{i}", funcs.step.sparsity_in(i)) for i in range(4)]
    step = ca.Function("ffopt_bdf_step", ins, funcs.step(*ins), ["hist", "t", "c", "r"], ["hist_next", "diag"])

    L, n_x = model.layout, dae.n_x
    G = per_model(model, "static_equilibrium", lambda: _static(model))[0]
    tq, q, qd, y = ca.SX.sym("t"), ca.SX.sym("q", L.nq), ca.SX.sym("qdot", L.nq), ca.SX.sym("y", G.size1_in(1))
    static = ca.Function("static_rows", [tq, q, qd, y], [G(q, y)])
    eq = build_bdf_functions(static, 1, (EQUILIBRIUM_TOL, EQUILIBRIUM_TOL), EQUILIBRIUM_MAX_ITER, None)
    qg, ys = ca.MX.sym("q_guess", L.nq), ca.MX.sym("y_start", G.size1_in(1))
    # order 1: the shifted history is the solution itself. Using it (not diag[:nq]) leaves no output of the
    # step unused: with a NULL output CasADi's code makes GCC 12 warn (-Warray-bounds) on a branch never taken
    qe, diag = eq.step(qg, 0, ca.DM.ones(1 + L.nq), ys)
    parts = [qe, ca.MX.zeros(n_x - L.nq - dae.n_z)]
    if dae.n_z:
        parts.append(dae.rest_drive_states(qe))
    x0 = ca.vertcat(*parts)
    extra0 = recovery(x0, ca.MX.zeros(n_x))
    status = ca.vertcat(diag[3 * L.nq], ca.mmax(ca.fabs(diag[L.nq:2 * L.nq])))
    equilibrium = ca.Function("ffopt_equilibrium", [qg, ys], [x0, extra0, status], ["q_guess", "y_start"],
                              ["x0", "extra0", "status"])

    p = DEFAULT_SCALING_POWER[s.form] if s.scaling_power is None else s.scaling_power
    c = np.concatenate([[1.0 / sample_time], dae.row_scale(sample_time, p)])
    x0_num = dae.initial_state(q0)
    extra0_num = np.array(recovery(x0_num, np.zeros(n_x))).ravel()
    return step, equilibrium, dae, recovery, {"c": c, "x0": x0_num, "q0": q0, "y0": y0, "extra0": extra0_num,
                                              "scaling_power": p, "torque_scale": torque_scale(model)}


def _static(model):
    from ffopt.models.equilibrium import static_solver

    return static_solver(model)


def generate_c(functions, folder: Path, budget: int | None = DEFAULT_BUDGET) -> dict:
    """CasADi C code of ``functions`` into folder/ffopt_generated.{c,h}, made clean under -Wall -Wextra:
    CasADi's generated functions leave some of their standard arguments unused; each such function
    gets (void) casts of them (no change to what it computes). Straight-line functions beyond ``budget``
    statements become instruction tables (``ffopt.export.tables``; None: none). Returns the table report."""
    # avoid_stack: CasADi keeps the scalars in w, not as local variables whose addresses it passes between
    # the generated functions; with those, GCC 12 at -O2 warned (-Warray-bounds, a false positive after
    # inlining CasADi's copy helper) depending on inlining decisions. Same operations, same results.
    gen = ca.CodeGenerator(GENERATED, {"with_header": True, "avoid_stack": True})
    for f in functions:
        gen.add(f)
    try:
        gen.generate(str(folder) + os.sep)
    except RuntimeError as err:
        raise ProblemError(f"CasADi cannot generate C code for this model: {str(err).strip().splitlines()[-1]} "
                           "(a model option outside code generation, e.g. an external or callback function)")
    path = folder / GENERATED
    text = path.read_text()
    if re.search(r"\b(malloc|calloc|free|printf)\s*\(", text):
        raise ProblemError("the generated code of this model allocates memory or prints: it cannot run in a "
                           "controller with fixed memory (a model option not covered by ffopt export)")
    text = _void_unused(text)
    report = {}
    if budget is not None:
        text, tables = tabulate(text, budget)
        report = tables.to_dict()
    path.write_text(text)
    return report


_SIGNATURE = re.compile(
    r"^((?:static |CASADI_SYMBOL_EXPORT )?int \w+\(const casadi_real\*\* arg, casadi_real\*\* res, "
    r"casadi_int\* iw, casadi_real\* w, int mem\) ?\{\n)", re.M)
_RELEASE = re.compile(r"^(CASADI_SYMBOL_EXPORT void \w+_release\(int mem\) \{\n)", re.M)


def _void_unused(text: str) -> str:
    text = _SIGNATURE.sub(lambda m: m.group(1) + "  (void) arg; (void) res; (void) iw; (void) w; (void) mem;\n", text)
    return _RELEASE.sub(lambda m: m.group(1) + "  (void) mem;\n", text)


def export_problem(problem, out, sample_time: float | None = None, force: bool = False, say=lambda msg: None,
                   straight_line: bool = False) -> ExportInfo:
    """Write the exported inverse of ``problem`` into folder ``out`` (new or empty, or one ffopt export wrote;
    ``force``: beside other files). Returns what was exported. Raises ProblemError for what cannot run online.
    ``straight_line``: every generated function as straight-line C (the fastest steps; for a 6-axis arm a
    compile of minutes), else the largest as instruction tables (``ffopt.export.tables``)."""
    from ffopt.io.results import check_output_folder, write_result_folder

    out = Path(out)
    check_output_folder(out, FILES, force, "export")  # before the work
    say("checking that the inverse can run online (zero dynamics, method, options)")
    h, zd = check_exportable(problem, sample_time)
    say(f"building the BDF-{problem.solver.order} step (form {problem.solver.form}, h = {h * 1e3:g} ms)")
    step, equilibrium, dae, recovery, const = build_functions(problem, h)
    model = problem.model
    L = model.layout
    work = {k: int(max(getattr(f, k)() for f in (step, equilibrium))) for k in ("sz_arg", "sz_res", "sz_iw", "sz_w")}
    t, r = reference_samples(problem, h, dae)
    info = ExportInfo(folder=str(out), problem=problem.name, form=problem.solver.form, order=problem.solver.order,
                      sample_time=h, n_u=L.n_u, n_out=len(model.outputs), n_derivs=dae.n_path_derivs,
                      n_ref=r.shape[1], n_x=dae.n_x, n_steps=len(t) - 1,
                      input_names=[model.chain.joints[i].name for i in L.actuated], input_unit=model.input_unit,
                      output_names=list(model.outputs), output_units=list(model.output_units), work=work,
                      zero_dynamics=zd["summary"])
    say("generating C code")

    def fill(tmp: Path) -> None:
        info.code = generate_c([step, equilibrium], tmp, None if straight_line else DEFAULT_BUDGET)
        if info.code.get("tabled_instructions"):
            say(f"{info.code['tabled_instructions']} operations as instruction tables, "
                f"{info.code['straight_line_statements']} as straight-line C (--straight-line: all of them)")
        texts = templates.render(info, const, _layout(model, dae, L), __version__, ca.__version__)
        for name, text in texts.items():
            (tmp / name).write_text(text)
        np.ascontiguousarray(r, dtype="<f8").tofile(tmp / "reference.bin")
        meta = {**info.to_dict(), "ffopt_version": __version__, "casadi_version": ca.__version__,
                "scaling_power": const["scaling_power"], "x0": const["x0"].tolist(), "y0": const["y0"].tolist(),
                "reference_file": {"name": "reference.bin", "dtype": "float64 little-endian", "rows": len(t),
                                   "columns": info.n_ref, "row_i_time_s": f"i * {h!r}"}}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")

    info.folder = str(write_result_folder(out, fill, force, command="export"))
    return info


def _layout(model, dae, L) -> dict:
    """Where the wrapper finds each output in the step's diagnostics (see ffopt.dae.bdf.build_bdf_functions:
    diag = [x, F, D_h x, converged, iterations, extra]; extra = [a (nq), u (N), tau (N), tool (3)])."""
    n, nq, N = dae.n_x, L.nq, L.n_u
    motor = [int(i) for i in L.motor_of_input]
    return {"diag_x": 0, "diag_res": n, "diag_done": 3 * n, "diag_iter": 3 * n + 1,
            "diag_u": 3 * n + 2 + nq, "diag_tau": 3 * n + 2 + nq + N, "n_diag": 3 * n + 2 + nq + 2 * N + 3,
            "extra_u": nq, "qm_index": motor, "dqm_index": [nq + i for i in motor], "nq": nq,
            "n_link": L.n_link, "n_z": dae.n_z}
