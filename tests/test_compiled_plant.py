"""The verification's plant as compiled C (ffopt.sim.plant.compiled_plant) against CasADi's virtual machine.

The compiled right-hand side and Jacobian are the same expressions, so CVODES takes the same steps and the
numbers agree to the last bit; a code-generation bug (or a compiler that fails) must not pass silently: with
a C compiler on PATH the compiled path is asserted, and a broken build falls back with a warning."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import c_compiler_or_skip

from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.io.problem import load_problem
from ffopt.sim import plant as plant_module
from ffopt.sim.plant import COMPILE_MIN_ROWS, MotorPD, SimulationOptions, pd_gains, simulate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def e12_case(tmp_path, monkeypatch):
    """E12's plan (BDF-6, 1 ms, 821 rows) and its motor-PD loop, with an empty compile cache."""
    monkeypatch.setenv("FFOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(plant_module, "_COMPILED", {})
    monkeypatch.setattr(plant_module, "_COMPILE_FAILED", set())
    problem = load_problem(ROOT / "problems" / "e12_line.toml")
    s = problem.solver
    traj = solve_inverse_bdf(problem.model, problem.reference, s, qa_guess=problem.reference_spec.joint_guess)
    kp, kd = pd_gains(problem.model, traj.q[0], 10.0, 1.0)
    return problem.model, traj, MotorPD(kp, kd, traj.qm, traj.dqm)


def _run(model, traj, pd, compile):
    return simulate(model, traj.t, traj.u, traj.q[0], pd=pd, options=SimulationOptions(compile=compile))


def test_compiled_plant_gives_the_virtual_machines_numbers(e12_case, tmp_path):
    c_compiler_or_skip()
    model, traj, pd = e12_case
    vm = _run(model, traj, pd, compile=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a failed build would fall back with a warning
        compiled = _run(model, traj, pd, compile=True)
    assert not vm.stats["compiled"]
    assert compiled.stats["compiled"]
    assert len(list(tmp_path.glob("plant_*.so"))) == 1
    # The same expressions evaluated in C: CVODES takes the same steps (E12: identical to the last bit
    # measured on 2026-11-27; 1e-12 leaves room for a compiler that contracts multiply-adds).
    assert compiled.stats["n_steps"] == vm.stats["n_steps"]
    assert np.abs(compiled.q - vm.q).max() <= 1e-12 * (1 + np.abs(vm.q).max())
    assert np.abs(compiled.tool - vm.tool).max() <= 1e-12


def test_a_second_model_object_loads_the_library_instead_of_compiling(e12_case, tmp_path, monkeypatch):
    c_compiler_or_skip()
    model, traj, pd = e12_case
    _run(model, traj, pd, compile=True)
    monkeypatch.setattr(plant_module, "_COMPILED", {})  # a new process: only the disk cache is left
    builds = []
    real = plant_module.compile_library
    monkeypatch.setattr(plant_module, "compile_library", lambda *a, **k: builds.append(a) or real(*a, **k))
    fresh = load_problem(ROOT / "problems" / "e12_line.toml").model
    again = _run(fresh, traj, pd, compile=True)
    assert again.stats["compiled"] and builds == []


def test_a_short_grid_is_not_worth_compiling(e12_case, tmp_path):
    model, traj, pd = e12_case
    n = COMPILE_MIN_ROWS - 1
    short = simulate(model, traj.t[:n], traj.u[:n], traj.q[0], pd=MotorPD(pd.kp, pd.kd, traj.qm[:n], traj.dqm[:n]))
    assert not short.stats["compiled"]
    assert list(tmp_path.glob("plant_*.so")) == []


def test_a_broken_build_falls_back_to_the_virtual_machine_with_a_warning(e12_case, monkeypatch):
    c_compiler_or_skip()
    model, traj, pd = e12_case
    real = plant_module.compile_library

    def with_syntax_error(functions, so_path, extra_source="", **kw):
        return real(functions, so_path, extra_source + "\nthis is not C;\n", **kw)

    monkeypatch.setattr(plant_module, "compile_library", with_syntax_error)
    with pytest.warns(RuntimeWarning, match="compiling the plant for the verification failed"):
        sim = _run(model, traj, pd, compile=True)
    assert not sim.stats["compiled"]
    vm = _run(model, traj, pd, compile=False)
    assert np.array_equal(sim.q, vm.q)


def test_simulations_side_by_side_give_each_ones_numbers(e12_case):
    """simulate_all runs the integrations on threads (two on one integrator get their own instance): every
    result and its step count are those of simulate alone, to the last bit; a failing case comes back as
    its error, the others unharmed."""
    model, traj, pd = e12_case
    args = dict(model=model, t=traj.t, u=traj.u, q0=traj.q[0])
    cubic = SimulationOptions(interpolation="cubic")
    requests = {"open_loop": args, "pd": dict(args, pd=pd), "pd_cubic": dict(args, pd=pd, options=cubic),
                "bad": dict(args, q0=traj.q[0][:2])}
    together = plant_module.simulate_all(requests, workers=3)
    assert isinstance(together["bad"], plant_module.VerificationError) and "q0 and v0 need" in str(together["bad"])
    for name in ("open_loop", "pd", "pd_cubic"):
        alone = simulate(**requests[name])
        assert together[name].stats["n_steps"] == alone.stats["n_steps"] > 0
        assert np.array_equal(together[name].q, alone.q) and np.array_equal(together[name].v, alone.v)


def test_simulations_side_by_side_are_not_silent(e12_case, monkeypatch):
    """While the integrations run, a line every HEARTBEAT_S says how many are done (here every 10 ms)."""
    model, traj, pd = e12_case
    monkeypatch.setattr(plant_module, "HEARTBEAT_S", 0.01)
    lines = []
    args = dict(model=model, t=traj.t, u=traj.u, q0=traj.q[0], pd=pd,
                options=SimulationOptions(compile=False))  # the VM: ~0.1 s each
    plant_module.simulate_all({"a": args, "b": args, "c": args}, workers=2, progress=lines.append)
    assert lines and all(line.startswith("simulating: ") and line.endswith(" s") for line in lines)
    assert {line.split(" of ")[1].split()[0] for line in lines} == {"3"}


def test_adams_where_the_table_keeps_steps_short_and_not_less_accurate_than_bdf(e12_case):
    """integration_method: E12's table (its slope changes at every row; rho h_row = 0.1) runs on Adams; a held input
    (it jumps), a constant input (the settle window) and a plant made stiff (gear damping x1e4: rho h_row = 38 >
    STIFF_RHO_H) on BDF.
    Adams at a tenth of the tolerances is at least as close to a BDF run at rtol 1e-12 as BDF at rtol 1e-9 (E12,
    measured 2026-11-27: open loop 0.12 um against 0.17 um, PD 0.001 against 0.008 um)."""
    model, traj, pd = e12_case
    t = traj.t

    def run(method, rtol, loop=pd, m=model, u=traj.u, interpolation="linear"):
        r = plant_module._prepare(m, t, u, traj.q[0], None, loop, None,
                                  SimulationOptions(rtol, rtol * 1e-2, interpolation))
        chosen = r.method
        r.method, r.F = method, plant_module.plant_integrator(m, t, rtol, rtol * 1e-2, "pd", True, method=method)
        return chosen, plant_module._finish(r, *plant_module._integrate(r))

    assert run("bdf", 1e-9)[0] == "adams"
    assert run("bdf", 1e-9, interpolation="zoh")[0] == "bdf"  # a held input jumps at every row
    assert run("bdf", 1e-9, u=np.tile(traj.u[-1], (len(t), 1)), loop=None)[0] == "bdf"
    stiff = load_problem(ROOT / "problems" / "e12_line.toml").with_values(
        {"model.joints.q1.damping": 5e5, "model.joints.q2.damping": 5e5}).model
    assert run("bdf", 1e-9, m=stiff)[0] == "bdf"
    for loop in (None, pd):
        ref = run("bdf", 1e-12, loop)[1].tool
        bdf, adams = (np.abs(run(m, 1e-9, loop)[1].tool - ref).max() for m in ("bdf", "adams"))
        assert adams <= bdf


def test_a_heartbeat_speaks_while_its_block_runs_and_not_after():
    """ffopt.progress.heartbeat: lines while a long call runs (here every 10 ms over 0.1 s), none once it ends, and
    none without a progress callback."""
    import time

    from ffopt.progress import heartbeat

    lines = []
    with heartbeat(lines.append, lambda elapsed: f"busy {elapsed:.2f} s", every_s=0.01):
        time.sleep(0.1)
    n = len(lines)
    time.sleep(0.05)
    assert n >= 3 and len(lines) == n and all(line.startswith("busy ") for line in lines)
    with heartbeat(None, lambda elapsed: "never", every_s=0.01):
        time.sleep(0.03)


def test_a_heartbeat_is_quiet_while_its_stage_speaks_and_nested_ones_do_not_double(capsys):
    """The command line's printer records when it last spoke: a heartbeat speaks only after every_s of silence,
    so an outer stage's heartbeat stays quiet while an inner one (or the stage itself) speaks, and no two lines
    are ever more than every_s plus a tick apart."""
    import time

    from ffopt.cli.common import progress_printer
    from ffopt.progress import TICK_S, heartbeat

    say = progress_printer(False)
    with heartbeat(say, lambda e: "outer", every_s=0.3):
        with heartbeat(say, lambda e: "inner", every_s=0.2):
            time.sleep(1.0)
        time.sleep(0.8)
    lines = capsys.readouterr().err.splitlines()
    stamps = [float(line[1:8]) for line in lines]
    assert all(line.endswith(("outer", "inner")) for line in lines)
    assert sum(line.endswith("outer") for line in lines[:3]) == 0  # the inner one spoke all the first second
    assert any(line.endswith("outer") for line in lines) and max(map(lambda a, b: b - a, [0.0] + stamps,
                                                                     stamps + [1.8])) <= 0.3 + 2 * TICK_S + 0.1
