"""The NLP's kernels as compiled C (ffopt.nlp.compiled): the same numbers as CasADi's virtual machine, and a
build that fails warns and falls back to the virtual machine."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

from helpers import c_compiler_or_skip
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import choose_dummy_set
from ffopt.io.problem import load_problem
from ffopt.nlp import compiled
from ffopt.nlp.transcription import Transcription

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def _e12_nlp(compile: bool, step: float = 1e-2):
    """The bounded E12 NLP (penalty tracking) and the exact one, built from rest on a coarse grid."""
    p = load_problem(PROBLEMS / "e12_torque_bounded.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    q_rest = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    dummy = choose_dummy_set(m, q_rest[: m.layout.n_link])
    out = []
    for changes in ({}, {"tracking": "exact", "torque_max": None, "objective": "smoothness"}):
        s = dataclasses.replace(p.nlp, step=step, strategy="causal", compile=compile, **changes)
        tr = Transcription(m, r, s, q_rest, False, dummy)
        out.append((tr, tr.build(tr.rest_guess())))
    return out


def _all_values(tr, nlp, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    w = nlp.w0 + 0.1 * rng.standard_normal(nlp.w0.size)
    lam = rng.standard_normal(nlp.n_constraints)
    der = nlp.info["derivatives"]()
    values = {"f": np.array([der.objective(w)]), "grad": der.gradient(w), "g": der.constraints(w),
              "jac": der.jacobian_values(w), "hess": der.hessian_values(w, lam, 0.7)}
    if "jac_g" in nlp.info:  # the square NLP's Newton path
        values["newton_g"] = nlp.info["g"](w)
        values["newton_jac"] = nlp.info["jac_g"](w).toarray().ravel()
    return values


def test_compiled_kernels_equal_the_virtual_machine_on_e12(tmp_path, monkeypatch):
    """f, its gradient, g, the Jacobian and the Lagrangian Hessian (and the square NLP's g and Jacobian) of
    the E12 NLPs: compiled C (gcc -O0) against CasADi's virtual machine, at a random point and multipliers,
    to 1e-12 relative (the same expressions, evaluated in a different order at most)."""
    c_compiler_or_skip()
    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a failed build (the fallback warns) fails the test
        fast = _e12_nlp(compile=True)
    slow = _e12_nlp(compile=False)
    assert any(p.name.startswith("nlp_") for p in tmp_path.iterdir())  # the libraries were built
    for (tr_c, nlp_c), (tr_v, nlp_v) in zip(fast, slow):
        got, ref = _all_values(tr_c, nlp_c, 3), _all_values(tr_v, nlp_v, 3)
        assert all(k._batch is not None for ks in (tr_c.kernels.jacobian(), tr_c.kernels.hessian()) for k in ks.functions.values())
        assert all(k._batch is None for k in tr_v.kernels.jacobian().functions.values())
        for name, value in ref.items():
            scale = np.abs(value).max()
            assert np.abs(got[name] - value).max() <= 1e-12 * scale, name


def test_kernels_split_over_threads_give_the_one_thread_numbers(tmp_path, monkeypatch):
    """The intervals split over threads (here over 3, from any evaluation time on, so E12's kernels split):
    every value the same as in one thread, to the last bit (each interval is evaluated alone)."""
    c_compiler_or_skip()
    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    (tr, nlp), _ = _e12_nlp(compile=True, step=1e-2)
    monkeypatch.setattr(compiled, "THREAD_MIN_SECONDS", float("inf"))
    one = _all_values(tr, nlp, 4)
    monkeypatch.setattr(compiled, "THREAD_MIN_SECONDS", -1.0)
    monkeypatch.setattr(compiled, "available_cores", lambda: 3)
    split = _all_values(tr, nlp, 4)
    assert compiled._parts(41, 3) == [(0, 14), (14, 13), (27, 14)]
    for name, value in one.items():
        np.testing.assert_array_equal(split[name], value)


def test_a_failed_build_warns_and_falls_back_to_the_virtual_machine(tmp_path, monkeypatch):
    """A syntax error in the generated C: the build fails, a RuntimeWarning says so, the kernels run in the
    virtual machine and give the same derivatives as a plain virtual-machine build."""
    c_compiler_or_skip()
    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiled, "_FAILED", set())
    monkeypatch.setattr(compiled, "_BATCH", compiled._BATCH + "\nthis is not C;\n")
    with pytest.warns(RuntimeWarning, match="compiling the NLP's interval derivatives failed"):
        (tr, nlp), _ = _e12_nlp(compile=True, step=2e-2)
    assert all(k._batch is None for k in tr.kernels.jacobian().functions.values())
    assert not any(p.suffix == ".so" and p.name.startswith("nlp_") for p in tmp_path.iterdir())
    (tr_v, nlp_v), _ = _e12_nlp(compile=False, step=2e-2)
    got, ref = _all_values(tr, nlp, 5), _all_values(tr_v, nlp_v, 5)
    for name, value in ref.items():
        np.testing.assert_array_equal(got[name], value)


def test_stagewise_newton_step_equals_the_sparse_lu_step_on_e12():
    """The square (exact-tracking) NLP's Newton step by block forward substitution in stage order equals the
    step of a sparse LU (SuperLU) of the assembled Jacobian, at a perturbed point."""
    import scipy.sparse.linalg

    _, (tr, nlp) = _e12_nlp(compile=False, step=5e-3)
    w = nlp.w0 + 1e-3 * np.random.default_rng(7).standard_normal(nlp.w0.size)
    w[: tr.n_x] = nlp.lbx[: tr.n_x]  # the fixed start state
    r = nlp.info["g"](w)
    step = nlp.info["newton_step"](w, r)
    J = nlp.info["jac_g"](w)[:, tr.n_x:]
    reference = scipy.sparse.linalg.splu(J.tocsc(), permc_spec="COLAMD").solve(-r)
    # regression value measured on 2026-11-27: 4.1e-14 relative here (6e-11 at h = 1 ms, 820 stages)
    assert np.abs(step - reference).max() <= 1e-13 * np.abs(reference).max()


@pytest.mark.slow
def test_bench_nlp_table_runs_every_default_path():
    """A smoke test of `ffopt bench --table nlp --quick` (no timing is asserted: the machine is shared): the
    default path of each case, with its iterations and verified errors (tool distance, mm)."""
    from ffopt.bench import run_bench

    text = run_bench(quick=True, repeats=1, tables=("nlp",))
    rows = [line.split() for line in text.splitlines() if line.startswith(("bounded", "exact"))]
    assert [r[0] for r in rows] == ["bounded", "bounded", "exact"]
    errors = [float(x) for r in rows for x in r[-5:-3]]  # open loop, PD: before the "before / target" cells
    # results/nlp.md (2026-11-27): 0.151 / 0.062, 0.056 / 0.055, 0.011 / 0.0072 mm; 2x margin
    assert max(errors) < 0.3 and min(errors) > 0.003


def test_plan_without_compiling_keeps_the_nlp_in_the_virtual_machine(monkeypatch):
    """plan(compile=False) (the CLI's --no-compile) reaches the NLP's kernels too: nothing is compiled."""
    import ffopt
    from ffopt.nlp import kernels

    def refuse(*args, **kwargs):
        raise AssertionError("compile_kernels called with compile=False")

    monkeypatch.setattr(kernels, "compile_kernels", refuse)
    problem = Path(__file__).resolve().parents[1] / "problems" / "e12_line.toml"
    result = ffopt.plan(problem, method="nlp", compile=False, verify=False,
                        progress=False)
    assert result.trajectory.method.startswith("nlp")
