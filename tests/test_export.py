"""`ffopt export`: the BDF inverse as C for a controller, compiled with the system C compiler under
-Wall -Wextra -Werror -std=c99, against the offline BDF plan (ffopt.plan, method bdf, same order,
step and form, solver.end_at_rest = false: the exported inverse tracks whatever reference it gets)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ffopt
from ffopt.cli.main import EXIT_INPUT, main
from ffopt.errors import ProblemError
from ffopt.export import check_exportable, export_problem, reference_samples
from ffopt.export.generate import CFLAGS, FILES
from ffopt.export.runtime import ExportedInverse, compile_folder, compiler, run_harness

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler found ($CC, gcc, cc)")


def offline_plan(problem, step=None):
    """The offline table the export must reproduce: BDF, the problem's order/form, no rest-to-rest shaping."""
    problem = problem.with_values({"solver.end_at_rest": False})
    return ffopt.plan(problem, method="bdf", step=step, verify=False).trajectory


def relative_errors(rows, traj, n_u):
    """max |exported - offline| / max |offline| per column, for u, qm, dqm."""
    out = {}
    for k, name in enumerate(("u", "qm", "dqm")):
        ref = getattr(traj, name)
        got = rows[:, k * n_u:(k + 1) * n_u]
        assert got.shape == ref.shape
        out[name] = float((np.abs(got - ref).max(axis=0) / np.maximum(np.abs(ref).max(axis=0), 1e-300)).max())
    return out


@pytest.fixture(scope="module")
def e12(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C compiler found ($CC, gcc, cc)")
    problem = ffopt.load_problem(PROBLEMS / "e12_line.toml")
    folder = tmp_path_factory.mktemp("export") / "e12"
    info = export_problem(problem, folder)
    build = compile_folder(folder)  # raises OSError on any warning (-Werror)
    return problem, folder, info, build


@needs_cc
def test_e12_folder_contents_and_clean_compile(e12):
    problem, folder, info, build = e12
    assert sorted(p.name for p in folder.iterdir() if p.name != "build") == sorted([*FILES, ".ffopt-result.json"])
    assert build.warnings == ""
    # the generated code alone, without -fPIC (as a controller's static build compiles it): no warning either
    proc = subprocess.run([compiler(), *CFLAGS, "-c", "-o", str(build.library.parent / "plain.o"),
                           str(folder / "ffopt_generated.c")], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    text = (folder / "ffopt_generated.c").read_text() + (folder / "ffopt_inverse.c").read_text()
    for call in ("malloc(", "calloc(", "free(", "printf("):
        assert call not in text
    header = (folder / "ffopt_inverse.h").read_text()
    assert f"#define FFOPT_SZ_W {info.work['sz_w']}" in header and "#define FFOPT_N_REF" in header
    assert "[m/s^2]" in header and "[N m]" in header  # units of the reference and of u
    meta = json.loads((folder / "meta.json").read_text())
    assert (meta["n_u"], meta["n_out"], meta["n_derivs"], meta["order"]) == (2, 2, 3, 6)
    # the README says how many derivatives in words (it said "their first 3 - 1 derivatives")
    assert "(x [m], z [m]) and their first 2 derivatives at each sample" in (folder / "README.md").read_text()


@needs_cc
def test_e12_harness_reproduces_the_offline_plan(e12):
    problem, folder, info, build = e12
    timing, rows = run_harness(build, folder, runs=5)
    traj = offline_plan(problem)
    err = relative_errors(rows, traj, info.n_u)
    # the same arithmetic in C as in the offline plan: measured bitwise equal on 2026-11-27; 1e-9 leaves room for
    # a compiler that contracts multiply-adds, amplified through the steps' Newton solves
    assert max(err.values()) <= 1e-9, err
    # real-time by construction, not by the clock of a shared machine: every sample ran, Newton's iterations
    # stay within the generated cap (no allocation or printing in the code: test above); times only printed
    assert timing["steps"] == len(traj.t) - 1 and timing["runs"] == 5 and timing["newton_max"] <= 20
    assert timing["budget_us"] == pytest.approx(1e6 * info.sample_time)  # the harness's budget is the sample
    print(f"harness: median {timing['median_us']:.1f} us, worst {timing['worst_us']:.1f} us per step")


@needs_cc
def test_e12_ctypes_runtime_init_step_reset(e12):
    problem, folder, info, build = e12
    inv = ExportedInverse(folder, build.library)
    _, r = reference_samples(problem, info.sample_time)
    first = inv.run(r[:60])
    traj = offline_plan(problem)
    # the same arithmetic in C as in the offline plan: measured bitwise equal on 2026-11-27; 1e-9 (of the peak) leaves room for
    # a compiler that contracts multiply-adds, amplified through the steps' Newton solves
    np.testing.assert_allclose(first["u"], traj.u[:60], rtol=0, atol=1e-9 * np.abs(traj.u).max())
    assert first["newton_iterations"][0] == 0 and first["newton_iterations"][1:].min() >= 1
    # reset: the same start, the same steps
    again = inv.reset()
    np.testing.assert_array_equal(again["u"], first["u"][0])
    np.testing.assert_array_equal(inv.step(r[1])["u"], first["u"][1])
    # ffopt_init at a given start pose: the generated static equilibrium equals the one computed in Python
    at_pose = inv.init(r[0, :info.n_out])
    # an equilibrium Newton solve in C from the pose alone: measured 6.7e-15 (u, relative) and 6.4e-14 rad (qm) on
    # 2026-11-27, rounding; bounds: the solve's own tolerances
    np.testing.assert_allclose(at_pose["u"], first["u"][0], rtol=1e-9)
    np.testing.assert_allclose(at_pose["qm"], first["qm"][0], rtol=0, atol=1e-10)
    # a pose outside the workspace has no equilibrium: refused, not a wrong start
    with pytest.raises(ffopt.errors.SolverError, match="ffopt_init"):
        inv.init([10.0, 10.0])


@needs_cc
def test_sample_time_option_matches_the_plan_at_that_step(tmp_path):
    problem = ffopt.load_problem(PROBLEMS / "e12_line.toml")
    assert main(["export", str(PROBLEMS / "e12_line.toml"), "--out", str(tmp_path / "e12"), "--sample-time",
                 "2e-3", "--quiet"]) == 0
    build = compile_folder(tmp_path / "e12")
    _, rows = run_harness(build, tmp_path / "e12", runs=1)
    err = relative_errors(rows, offline_plan(problem, step=2e-3), 2)
    assert max(err.values()) <= 1e-9, err  # bitwise equal at 1 ms (test above); the same slack


def test_refuses_a_non_minimum_phase_arm_naming_the_zero_and_the_preview(tmp_path, capsys):
    problem = ffopt.load_problem(PROBLEMS / "e1_nmp.toml")
    with pytest.raises(ProblemError, match=r"non-minimum phase.*unstable zero 55\.8.*preview of ~10 time constants"):
        check_exportable(problem)
    assert main(["export", str(PROBLEMS / "e1_nmp.toml"), "--out", str(tmp_path / "x"), "--quiet"]) == EXIT_INPUT
    assert "non-causal" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("name, match", [("e12_torque_bounded", "nlp.torque_max given: a plan under bounds needs "
                                                               "the NLP"),
                                         ("e12_held", "output.hold = \"zoh\"")])
def test_refuses_what_needs_the_nlp_or_the_samples_ahead(name, match, tmp_path):
    with pytest.raises(ProblemError, match=match):
        check_exportable(ffopt.load_problem(PROBLEMS / f"{name}.toml"))
    assert main(["export", str(PROBLEMS / f"{name}.toml"), "--out", str(tmp_path / "x"), "--quiet"]) == EXIT_INPUT


def test_refuses_other_methods_and_bad_sample_times():
    problem = ffopt.load_problem(PROBLEMS / "e12_line.toml")
    with pytest.raises(ProblemError, match="solver.method = 'dd'"):
        check_exportable(problem.with_solver(method="dd"))
    with pytest.raises(ProblemError, match="--sample-time"):
        check_exportable(problem, sample_time=1.0)


@pytest.mark.slow
@needs_cc
def test_manutec_r3_benchmark_reproduces_the_offline_plan(tmp_path):
    problem = ffopt.load_problem(PROBLEMS / "manutec_r3_benchmark.toml")
    info = export_problem(problem, tmp_path / "r3")
    build = compile_folder(tmp_path / "r3")
    assert build.warnings == ""
    timing, rows = run_harness(build, tmp_path / "r3", runs=3)
    err = relative_errors(rows, offline_plan(problem), info.n_u)
    assert max(err.values()) <= 1e-9, err  # as for E12: the same arithmetic in C, room for contraction


def test_output_folder_rules(tmp_path):
    """A second export replaces ffopt's files (a build folder of the user's stays); a foreign folder is refused."""
    e12 = str(PROBLEMS / "e12_line.toml")
    out = tmp_path / "e12"
    assert main(["export", e12, "--out", str(out), "--quiet"]) == 0
    (out / "build").mkdir()
    (out / "build" / "mine.o").write_text("x")
    assert main(["export", e12, "--out", str(out), "--quiet"]) == 0
    assert (out / "build" / "mine.o").read_text() == "x"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["export", e12, "--out", str(foreign), "--quiet"]) == EXIT_INPUT
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


# ------------------------------------------------------------------ the exported model in the closed loop
def tool_error_table(summary):
    """name -> the tool-error numbers of ffopt simulate's summary.json (during the move and after the table)."""
    out = {}
    for name, case in summary["tool_error"].items():
        numbers = {k: v for k, v in case.items() if isinstance(v, float)}
        numbers.update({f"settle_{k}": v for k, v in (case.get("settle") or {}).items() if isinstance(v, float)})
        out[name] = numbers
    return out


@needs_cc
def test_simulate_exported_gives_the_offline_plans_tool_errors(e12, tmp_path):
    """ffopt simulate --exported (the exported step run sample by sample, its output in place of the table)
    against ffopt simulate --plan of the offline BDF plan of the same (exact-tracking) problem."""
    problem, folder, info, build = e12
    plan = ffopt.plan(problem.with_values({"solver.end_at_rest": False}), method="bdf", verify=False)
    plan.save(tmp_path / "plan")
    e12_toml = str(PROBLEMS / "e12_line.toml")
    codes = [main(["simulate", e12_toml, *source, "--out", str(tmp_path / name), "--no-plots", "--quiet"])
             for name, source in (("by_plan", ["--plan", str(tmp_path / "plan")]),
                                  ("by_export", ["--exported", str(folder)]))]
    assert codes[0] == codes[1]
    by_plan, by_export = (json.loads((tmp_path / n / "summary.json").read_text()) for n in ("by_plan", "by_export"))
    assert by_plan["status"] == by_export["status"] and by_export["main_case"] == "feedforward_pd"
    assert "exported C" in by_export["plan"]
    a, b = tool_error_table(by_plan), tool_error_table(by_export)
    assert a.keys() == b.keys() and a["feedforward_pd"].keys() == b["feedforward_pd"].keys()
    assert "settle_residual_mm" in a["feedforward_pd"]
    # the same torques (bitwise equal, test above) through the same simulation: only rounding may differ
    for name in a:
        for key, value in a[name].items():
            assert b[name][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (name, key)
    # the Python API, with link-side state feedback (the reference state from ffopt_solution)
    x = ffopt.simulate(problem, plan, controller="pd+state")
    y = ffopt.simulate(problem, exported=folder, controller="pd+state")
    np.testing.assert_allclose(y.plan.q, plan.trajectory.q, rtol=0, atol=1e-9 * np.abs(plan.trajectory.q).max())
    for name in x.cases:
        assert y.cases[name].max_mm == pytest.approx(x.cases[name].max_mm, rel=1e-9)
        assert y.cases[name].settle.residual_mm == pytest.approx(x.cases[name].settle.residual_mm, rel=1e-9)


def test_simulate_plan_and_exported_exclude_each_other(tmp_path, capsys):
    e12_toml = str(PROBLEMS / "e12_line.toml")
    assert main(["simulate", e12_toml, "--plan", str(tmp_path), "--exported", str(tmp_path)]) == EXIT_INPUT
    assert "not allowed with argument" in capsys.readouterr().err
    assert main(["simulate", e12_toml]) == EXIT_INPUT
    assert "one of the arguments --plan --exported is required" in capsys.readouterr().err
    with pytest.raises(ProblemError, match="not both"):
        ffopt.simulate(e12_toml, tmp_path, exported=tmp_path)
    with pytest.raises(ProblemError, match="give a plan"):
        ffopt.simulate(e12_toml)
    assert main(["simulate", e12_toml, "--exported", str(tmp_path), "--quiet"]) == EXIT_INPUT
    assert "not a folder written by ffopt export" in capsys.readouterr().err


@needs_cc
def test_simulate_exported_refuses_another_robot(e12):
    problem, folder, info, build = e12
    other = problem.with_values({"model.joints.q2.stiffness": 0.5e5})  # the same start pose, another deflection
    with pytest.raises(ProblemError, match="start state .* differs"):
        ffopt.simulate(other, exported=folder)


# ------------------------------------------------------------------ instruction tables, plan folders, the budget
@needs_cc
def test_instruction_tables_give_the_straight_line_results_bit_for_bit(e12, tmp_path, monkeypatch):
    """E12's step with every straight-line function as an instruction table (budget 0): the harness's outputs
    equal those of the straight-line build bit for bit (the same C expression per operation, in order)."""
    import ffopt.export.generate as generate

    problem, folder, info, build = e12
    assert info.code["tabled_instructions"] == 0  # E12 is small: straight-line C (3105 statements)
    monkeypatch.setattr(generate, "DEFAULT_BUDGET", 0)
    tabled = export_problem(problem, tmp_path / "tables")
    assert tabled.code["straight_line_statements"] == 0 and len(tabled.code["tabled_functions"]) >= 2
    text = (tmp_path / "tables" / "ffopt_generated.c").read_text()
    assert "switch (s[i].op)" in text and "instruction table" in (tmp_path / "tables" / "README.md").read_text()
    _, straight = run_harness(build, folder, runs=1)
    _, rows = run_harness(compile_folder(tmp_path / "tables"), tmp_path / "tables", runs=1)
    np.testing.assert_array_equal(rows, straight)


def test_tabulate_leaves_a_function_with_another_statement_alone():
    from ffopt.export.tables import tabulate

    head = ("static int casadi_f{n}(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, "
            "int mem) {{\n  (void) arg; (void) res; (void) iw; (void) w; (void) mem;\n")
    simple = ("  w[0]=arg[0]? arg[0][2] : 0;\n  w[1]=-2.5000000000000000e+00;\n  w[2]=(w[0]*w[1]);\n"
              "  w[2]=casadi_fmax(w[2],w[0]);\n  w[3]=(2.*w[2]);\n  if (res[0]!=0) res[0][1]=w[3];\n")
    other = simple + "  for (i=0; i<3; ++i) w[i] = 0;\n"
    text = head.format(n=0) + simple + "  return 0;\n}\n" + head.format(n=1) + other + "  return 0;\n}\n"
    out, report = tabulate(text, budget=0)
    assert report.tabled == {"casadi_f0": 6} and report.straight_line_statements == 0
    assert "{0,0,0,2}" in out and "k[1] = {-2.5000000000000000e+00}" in out  # the input's arg, nonzero; the literal
    assert out.endswith(head.format(n=1) + other + "  return 0;\n}\n")  # the loop: not a table shape
    assert tabulate(text, budget=6)[0] == text  # within the budget: unchanged


@needs_cc
def test_a_plan_folder_exports_the_problem_as_planned(tmp_path):
    """`ffopt export PLAN_DIR`: the plan's problem.toml (E12's rest-to-rest time law) is exported, and the
    exported model run over its reference reproduces the plan's torque table."""
    plan_dir = tmp_path / "plan"
    assert main(["plan", str(PROBLEMS / "e12_line.toml"), "--out", str(plan_dir), "--quiet", "--no-plots"]) == 0
    out = tmp_path / "c"
    assert main(["export", str(plan_dir), "--out", str(out), "--quiet"]) == 0
    planned = ffopt.load_problem(plan_dir / "problem.toml")
    assert planned.reference_spec.time_law_shape  # the plan's own time law ...
    t, r = reference_samples(planned, 1e-3)
    exported = np.fromfile(out / "reference.bin", dtype="<f8").reshape(len(t), -1)
    np.testing.assert_array_equal(exported, r)
    _, unshaped = reference_samples(ffopt.load_problem(PROBLEMS / "e12_line.toml"), 1e-3)
    assert np.abs(unshaped - r).max() > 0.1  # ... not the file's poly11
    _, rows = run_harness(compile_folder(out), out, runs=1)
    u = np.load(plan_dir / "trajectory.npz")
    table = np.column_stack([u["u_q1"], u["u_q2"]])
    np.testing.assert_allclose(rows[:, :2], table, rtol=0, atol=1e-9 * np.abs(table).max())


@needs_cc
def test_the_harness_flags_calls_over_its_budget(e12):
    problem, folder, info, build = e12
    timing, _ = run_harness(build, folder, runs=2, budget_us=1e-3)  # 1 ns: every call is over
    assert timing["over_budget_calls"] == 2 * timing["steps"] and timing["over_budget_steps"] == timing["steps"]
    assert timing["over_budget_line"].startswith("harness: OVER BUDGET: ")
    assert "the code needs more than the budget there" in timing["over_budget_line"]
    assert 1 <= timing["worst_call_step"] <= timing["steps"] and 1 <= timing["worst_call_run"] <= 2
    timing, _ = run_harness(build, folder, runs=2, budget_us=1e9)
    assert timing["over_budget_calls"] == 0 and timing["over_budget_line"] == ""
    proc = subprocess.run([str(build.harness), str(folder / "reference.bin"), str(folder / "build" / "o.bin"), "1",
                           "0.001"], capture_output=True, text=True)
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1
