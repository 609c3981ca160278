"""What the speed work must not change: compiled code keyed by the model (never reused for another
model), the path as data (the same torques as with the path compiled in), per-model caches that
notice a swapped chain, the default verification (the same numbers as the full table), and the
lazy imports of a plan without plots. Nothing here is timed (``ffopt bench`` measures time).
"""

import json
import re
import subprocess
import sys
import tomllib
import warnings
from dataclasses import replace
from pathlib import Path

import casadi as ca
import numpy as np
import pytest
from helpers import c_compiler_or_skip, toml_text

from ffopt import cache
from ffopt.cli.main import main
from ffopt.dae import bdf
from ffopt.dae.forms import build_inverse_dae
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.io.problem import load_problem, problem_from_dict
from ffopt.sim.plant import plant_integrator
from ffopt.sim.verify import DEFAULT_CASES, verify

ROOT = Path(__file__).resolve().parents[1]
E1 = ROOT / "problems" / "e1_simplified.toml"


def _e1(**reference):
    d = tomllib.loads(E1.read_text())
    d["reference"].update(reference)
    return problem_from_dict(d, source=str(E1))


def _solve(p, compile=True):
    return solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=5e-3, form="I1"),
                             qa_guess=p.reference_spec.joint_guess, compile=compile)


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty disk cache and no compiled functions in memory (as in a new process); one library per model
    (FFOPT_COMPILE=sync: no background -O2 build beside the -O0 one; tiered compilation: tests/test_bdf.py)."""
    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FFOPT_COMPILE", "sync")
    monkeypatch.setattr(bdf, "MEMORY_CACHE", type(bdf.MEMORY_CACHE)())
    return tmp_path


def _count_calls(monkeypatch, name) -> list:
    """Count the calls of bdf.<name> from now on (_compile_to: libraries compiled; build_bdf_functions:
    step functions built symbolically)."""
    calls, original = [], getattr(bdf, name)
    monkeypatch.setattr(bdf, name, lambda *a, **k: calls.append(a) or original(*a, **k))
    return calls


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a failed compile (VM fallback) fails the test
def test_compiled_step_serves_every_path_and_never_another_model(empty_cache, monkeypatch):
    c_compiler_or_skip()
    compiles, builds = _count_calls(monkeypatch, "_compile_to"), _count_calls(monkeypatch, "build_bdf_functions")
    base = _e1()
    first = _solve(base)
    assert first.stats["compiled"] and len(compiles) == 1
    (library,) = empty_cache.glob("bdf_*.so")
    # another path (20 mm further): the same library, other torques, those of the VM
    path = _e1(end_mm=[1534.0])
    moved = _solve(path)
    assert list(empty_cache.glob("bdf_*.so")) == [library] and len(compiles) == 1
    # 10 %: the move is 120 mm instead of 100 mm in the same time (the inertial torques scale with it, +20 %);
    # regression value measured on 2026-11-27: max |du| = 22 % of the peak
    assert np.abs(moved.u - first.u).max() > 0.1 * np.abs(first.u).max()
    np.testing.assert_array_equal(moved.u, _solve(path, compile=False).u)
    # another model (the passive joint 10 % stiffer): a new library, other torques, those of the VM
    j2 = replace(base.chain.joints[1], stiffness=1.1 * base.chain.joints[1].stiffness)
    stiffer = base.with_chain(replace(base.chain, joints=(base.chain.joints[0], j2)))
    changed = _solve(stiffer)
    assert len(list(empty_cache.glob("bdf_*.so"))) == 2 and len(compiles) == 2
    # 1e-6: far above the roundoff of the torques, far below what 10 % stiffness moves (regression
    # value measured on 2026-11-27: max |du| = 54 % of the peak)
    assert np.abs(changed.u - first.u).max() > 1e-6 * np.abs(first.u).max()
    np.testing.assert_array_equal(changed.u, _solve(stiffer, compile=False).u)
    # ... and the first model still gets its own torques (from memory, then from disk alone)
    np.testing.assert_array_equal(_solve(base).u, first.u)
    bdf.MEMORY_CACHE.clear()
    n_built = len(builds)
    again = _solve(_e1())  # a new model object: only the disk cache is left
    # loaded from disk: neither built symbolically nor compiled again
    assert again.stats["compiled"] and (len(builds), len(compiles)) == (n_built, 2)
    np.testing.assert_array_equal(again.u, first.u)


def test_path_as_data_is_the_path_compiled_in():
    # F_path(t, x, xdot, r(t)) = F(t, x, xdot) with the reference built in, every form, random points
    p = load_problem(ROOT / "problems" / "e12_line.toml")
    rng = np.random.default_rng(1)
    for form in ("I3", "I2", "I1"):
        dae = build_inverse_dae(p.model, p.reference, form)
        for t in (0.0, 0.1, 0.2345, 0.8):
            x, xd = rng.normal(size=dae.n_x), rng.normal(size=dae.n_x)
            r = dae.path_data(p.reference, np.array([t]))[0]
            np.testing.assert_array_equal(np.array(dae.F_path(t, x, xd, r)), np.array(dae.F(t, x, xd)))


def test_bdf_with_step_inputs_and_extra_outputs_matches_the_plain_solve(monkeypatch):
    # compiled before the first solve (tiered compilation would run it in the VM on an empty cache)
    monkeypatch.setenv("FFOPT_COMPILE", "quick")
    # x1' = x2, 0 = x1 - sin t (index 2) with sin t given as data instead of computed inside F
    t, x, xd, r = ca.SX.sym("t"), ca.SX.sym("x", 2), ca.SX.sym("xd", 2), ca.SX.sym("r")
    plain = ca.Function("F", [t, x, xd], [ca.vertcat(xd[0] - x[1], x[0] - ca.sin(t))])
    with_data = ca.Function("G", [t, x, xd, r], [ca.vertcat(xd[0] - x[1], x[0] - r)])
    extra = ca.Function("e", [x, xd], [ca.vertcat(x[0] * x[1], xd[1])])
    h, n = 0.01, 120
    ts = h * np.arange(n + 1)
    for compile in (False, True):
        if compile:
            c_compiler_or_skip()  # after the VM case has run
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a failed compile (VM fallback) fails the test
            a = bdf.solve_bdf(plain, [0.0, 1.0], 0.0, h, n, 3, compile=compile)
            b = bdf.solve_bdf(with_data, [0.0, 1.0], 0.0, h, n, 3, compile=compile, inputs=np.sin(ts)[:, None],
                              extra=extra)
        # 1e-14: sin t computed inside F or passed as data (the same libm value): the same x up to
        # roundoff of |x| <= 1 (a few ulps); extra: the same products evaluated in the same code, exact
        np.testing.assert_allclose(b.x, a.x, rtol=0, atol=1e-14)
        np.testing.assert_allclose(b.extra, np.column_stack([b.x[:, 0] * b.x[:, 1], b.xdot[:, 1]]), rtol=0, atol=0)
        assert a.compiled == b.compiled == compile
    with pytest.raises(ValueError, match="inputs"):
        bdf.solve_bdf(with_data, [0.0, 1.0], 0.0, h, n, 3, compile=False)
    with pytest.raises(ValueError, match="inputs"):
        bdf.solve_bdf(with_data, [0.0, 1.0], 0.0, h, n, 3, compile=False, inputs=np.zeros((n, 1)))
    with pytest.raises(ValueError, match="inputs"):
        bdf.solve_bdf(plain, [0.0, 1.0], 0.0, h, n, 3, compile=False, inputs=np.zeros((n + 1, 1)))
    with pytest.raises(ValueError, match="extra"):
        bdf.solve_bdf(plain, [0.0, 1.0], 0.0, h, n, 3, compile=False, extra=plain)


def test_per_model_cache_rebuilds_for_a_swapped_chain():
    class Model:
        def __init__(self, chain):
            self.chain, self.outputs = chain, ("x",)

    m, built = Model(object()), []
    assert cache.per_model(m, "k", lambda: built.append(1) or len(built)) == 1
    assert cache.per_model(m, "k", lambda: built.append(1) or len(built)) == 1  # cached
    assert cache.per_model(m, "other", lambda: built.append(1) or len(built)) == 2
    m.chain = object()  # a model whose chain was replaced: never the old entry
    assert cache.per_model(m, "k", lambda: built.append(1) or len(built)) == 3


def test_default_verification_is_the_full_tables_first_rows_on_one_integrator():
    p = load_problem(ROOT / "problems" / "e1_complete.toml")
    traj = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=5e-3, form="I1"),
                             qa_guess=p.reference_spec.joint_guess)
    g = p.reference_spec.joint_guess
    default = verify(p.model, p.reference, traj, p.verification, g)
    full = verify(p.model, p.reference, traj, replace(p.verification, cases="full"), g)
    assert tuple(default.cases) == DEFAULT_CASES and default.to_dict()["case_set"] == "default"
    assert set(full.cases) == {*DEFAULT_CASES, "feedforward_open_loop_cubic_u", "rigid_feedforward_pd", "pd_only",
                               "payload_x0.5", "payload_x2"}
    for name in DEFAULT_CASES:  # the same numbers, bit for bit
        assert default.cases[name].to_dict() == full.cases[name].to_dict()
        np.testing.assert_array_equal(default.simulations[name].q, full.simulations[name].q)
    # every nominal case ran on one integrator, built once for this model and grid
    F = plant_integrator(p.model, traj.t, p.verification.rtol, p.verification.rtol * 1e-2)
    assert F is plant_integrator(p.model, np.array(traj.t), p.verification.rtol, p.verification.rtol * 1e-2)
    assert F is not plant_integrator(p.model, traj.t[:-1], p.verification.rtol, p.verification.rtol * 1e-2)


def test_verify_option_and_problem_setting(tmp_path, capsys):
    d = tomllib.loads(E1.read_text())
    d["verification"] = {"cases": "full"}
    d["solver"]["step"] = 5e-3  # Moberg & Hanssen's step: the rest-to-rest plan misses during the move (test_cli)
    full_file = tmp_path / "full.toml"
    full_file.write_text(toml_text(d))
    # exit 3: E1 at 5 ms misses its tolerance during the move; the files are written
    assert main(["plan", str(full_file), "--out", str(tmp_path / "a"), "--quiet", "--no-plots"]) == 3
    s = json.loads((tmp_path / "a" / "summary.json").read_text())["verification"]
    assert s["case_set"] == "full" and "pd_only" in s["tool_error"] and "rigid_feedforward_pd" in s["tool_error"]
    assert main(["plan", str(full_file), "--out", str(tmp_path / "b"), "--quiet", "--no-plots",
                 "--verify", "default"]) == 3
    s = json.loads((tmp_path / "b" / "summary.json").read_text())["verification"]
    assert s["case_set"] == "default" and set(s["tool_error"]) == set(DEFAULT_CASES)
    assert "--verify full" in capsys.readouterr().out  # the table says how to get the rest
    capsys.readouterr()
    assert main(["plan", str(E1), "--out", str(tmp_path / "c"), "--verify", "full", "--no-verify"]) == 2
    assert "--no-verify" in capsys.readouterr().err and not (tmp_path / "c").exists()
    d["verification"] = {"cases": "all"}
    bad = tmp_path / "bad.toml"
    bad.write_text(toml_text(d))
    assert main(["plan", str(bad), "--out", str(tmp_path / "d")]) == 2
    assert "verification.cases" in capsys.readouterr().err


AT_REST_BDF = E1.parent / "arm3d_joint_ptp.toml"  # method bdf, ends at rest by itself (no shaping, which needs SciPy)


def test_plan_without_plots_and_help_do_not_import_heavy_modules(tmp_path):
    code = (
        "import sys, io, contextlib\n"
        "from ffopt.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "    help_mods = set(sys.modules)\n"
        f"    assert main(['plan', {str(AT_REST_BDF)!r}, '--out', {str(tmp_path / 'o')!r}, '--quiet', '--no-plots']) == 0\n"
        "heavy = ('matplotlib', 'scipy', 'pyomo', 'cyipopt', 'pandas')\n"
        "print(sorted({m.split('.')[0] for m in help_mods} & set(heavy)),"
        " sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == "[] []"


def test_bench_scaling_tables_print_every_row_and_a_finite_exponent():
    # a smoke test of `ffopt bench --table steps --quick` (no timing is asserted: the machine is shared)
    from ffopt.bench import fitted_exponent, run_bench

    assert fitted_exponent([1, 2, 4], [3.0, 6.0, 12.0]) == pytest.approx(1.0)
    assert fitted_exponent([2, 4, 8], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    text = run_bench(quick=True, repeats=1, tables=("steps",))
    lines = text.splitlines()
    assert lines[0].startswith("Time against the number of steps (E12)")
    rows = [line.split() for line in lines[2:4]]
    # h [ms] and the number of steps, computed here: the path time of problems/e12_line.toml over h
    t_end = load_problem(ROOT / "problems" / "e12_line.toml").reference.t_end  # 0.82 s
    assert [(r[0], r[1]) for r in rows] == [(f"{h * 1e3:g}", str(round(t_end / h))) for h in (2e-3, 1e-3)]
    exponents = [float(x) for x in lines[4].split()[-2:]]
    assert all(np.isfinite(exponents))
    # the "was" figures at 1 ms are those results/README.md quotes for the code before the speed work
    readme = " ".join((ROOT / "results" / "README.md").read_text().split())
    loop = re.search(r"stepping loop takes [\d.-]+ ms of CPU \(I3\.\.I1; before ([\d.]+) ms\)", readme).group(1)
    call = re.search(r"whole call with the same model and path ~[\d.]+ ms of CPU \(before ([\d.]+) ms\)", readme).group(1)
    assert f"(was {loop})" in lines[3] and f"(was {call})" in lines[3]


@pytest.mark.slow
def test_bench_bodies_and_plan_tables_run():
    from ffopt.bench import elastic_chain_problem, run_bench

    p = elastic_chain_problem(5)
    assert p.model.layout.n_u == 5 and p.outputs == ("x", "z", "q3", "q4", "q5")
    text = run_bench(quick=True, repeats=1, tables=("bodies", "plan"))
    assert "exponent (CPU)" in text and "plan, default verification" in text and "ffopt --help" in text
