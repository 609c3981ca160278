"""ffopt.dae.bdf.solve_bdf on DAEs with known solutions: order, index 1-3, compiled code, failures."""

import os

import casadi as ca
import numpy as np
import pytest

from ffopt.dae import bdf
from ffopt.dae.bdf import solve_bdf
from ffopt.errors import SolverError


def _F(residual, n):
    t, x, xd = ca.SX.sym("t"), ca.SX.sym("x", n), ca.SX.sym("xd", n)
    return ca.Function("F", [t, x, xd], [residual(t, x, xd)])


# name -> (F, exact solution x(t) as an (n,) array, which components to measure)
PROBLEMS = {
    # ODE: x' = -x + cos t + sin t, x = sin t
    "ode": (_F(lambda t, x, xd: xd + x - ca.cos(t) - ca.sin(t), 1), lambda t: np.array([np.sin(t)])),
    # index 1: x' = -x + z, 0 = z - cos t - sin t
    "index1": (_F(lambda t, x, xd: ca.vertcat(xd[0] + x[0] - x[1], x[1] - ca.cos(t) - ca.sin(t)), 2),
               lambda t: np.array([np.sin(t), np.cos(t) + np.sin(t)])),
    # index 2: x1' = x2, 0 = x1 - sin t  (x2 = cos t algebraic)
    "index2": (_F(lambda t, x, xd: ca.vertcat(xd[0] - x[1], x[0] - ca.sin(t)), 2),
               lambda t: np.array([np.sin(t), np.cos(t)])),
    # index 3: x1' = x2, x2' = x3, 0 = x1 - sin t  (the structure of the I3 inverse dynamics)
    "index3": (_F(lambda t, x, xd: ca.vertcat(xd[0] - x[1], xd[1] - x[2], x[0] - ca.sin(t)), 3),
               lambda t: np.array([np.sin(t), np.cos(t), -np.sin(t)])),
}


def _max_error(name, order, h, t_end=2.0, compile=False):
    F, exact = PROBLEMS[name]
    n_steps = int(round(t_end / h))
    history = np.array([exact(-(j + 1) * h) for j in range(order)])  # exact start: no initial layer
    res = solve_bdf(F, exact(0.0), 0.0, h, n_steps, order, history0=history, compile=compile)
    ref = np.array([exact(t) for t in res.t])
    # BCP Thm 3.2.3: for index 3 the order is k only after the first k+1 steps
    return np.abs(res.x - ref)[order + 1:].max()


@pytest.mark.parametrize("name", list(PROBLEMS))
@pytest.mark.parametrize("order", [1, 2, 3, 4, 5, 6])
def test_observed_order_is_k(name, order):
    # Constant-step BDF-k converges with order k for ODEs and for index-1, -2 and -3 Hessenberg
    # DAEs with consistent starting values (Brenan, Campbell & Petzold, Thm 3.2.1 / 3.2.3).
    # Steps are chosen so the errors stay well above the Newton tolerance (1e-9).
    h = 0.1 if order >= 5 else 0.05
    e1, e2 = _max_error(name, order, h), _max_error(name, order, h / 2)
    assert np.log2(e1 / e2) == pytest.approx(order, abs=0.3), (e1, e2)


def test_compiled_code_matches_the_virtual_machine_and_is_cached(tmp_path, monkeypatch):
    F, exact = PROBLEMS["index3"]
    monkeypatch.setattr(bdf, "_MEMORY_CACHE", type(bdf._MEMORY_CACHE)())
    vm = solve_bdf(F, exact(0.0), 0.0, 0.01, 100, 6, compile=False)
    first = solve_bdf(F, exact(0.0), 0.0, 0.01, 100, 6, compile=True, cache_dir=tmp_path)
    if not first.compiled:
        pytest.skip("no working C compiler")
    assert np.abs(first.x - vm.x).max() < 1e-12
    (so,) = tmp_path.glob("bdf_*.so")
    stamp = os.stat(so).st_mtime_ns
    bdf._MEMORY_CACHE.clear()  # a new process: only the disk cache is left
    again = solve_bdf(F, exact(0.0), 0.0, 0.01, 100, 6, compile=True, cache_dir=tmp_path)
    assert again.compiled and os.stat(so).st_mtime_ns == stamp and len(list(tmp_path.glob("*.so"))) == 1
    assert np.array_equal(again.x, first.x)


def test_newton_failure_names_the_time_instant():
    # x' = x^2, x(0) = 1 blows up at t = 1; implicit Euler x_i - h x_i^2 = x_{i-1} has no real
    # root once 4 h x_{i-1} > 1, which happens before t = 1 for h = 0.05.
    F = _F(lambda t, x, xd: xd - x**2, 1)
    with pytest.raises(SolverError, match=r"did not converge at t = 0\.[5-9]\d* \(step \d+ of 30"):
        solve_bdf(F, [1.0], 0.0, 0.05, 30, 1, compile=False)


def test_converged_solution_reports_residuals():
    F, exact = PROBLEMS["index2"]
    res = solve_bdf(F, exact(0.0), 0.0, 0.01, 50, 3, compile=False)
    assert res.newton_converged.all() and res.residual_norm[1:].max() < 1e-9  # row 0: given data
    assert res.x.shape == (51, 2) and res.t[-1] == pytest.approx(0.5)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(order=7), "order"), (dict(h=-0.1), "h > 0"), (dict(n_steps=0), "n_steps"),
    (dict(x0=[0.0, 1.0, 2.0]), "x0"), (dict(row_scale=[1.0, 0.0]), "row_scale"),
])
def test_bad_arguments(kwargs, msg):
    F, exact = PROBLEMS["index2"]
    args = dict(F=F, x0=exact(0.0), t0=0.0, h=0.01, n_steps=10, order=2, compile=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        solve_bdf(**args)
