"""Peer benchmark: E12 feedforward by a general optimal-control toolkit (rockit) vs ffopt, side by side.

Run:  PYTHONPATH=. python results/rockit_e12.py [--weight W]
Needs the optional extra ``bench`` (pip install rockit-meco); without it the script prints why and exits 0.

The peer formulation is what a user of rockit (Gillis, Vandewal, Pipeleers, Swevers et al.,
"rockit: rapid optimal control kit", KU Leuven MECO) would write for Moberg & Hanssen's E12
("Inverse dynamics of flexible manipulators"): the FORWARD model (ffopt's own
``FlexibleModel.forward_dynamics``, so both sides share the physics) with states q, v and the
motor torque u as a continuous piecewise-linear state (its rate du as the piecewise-constant
control), Radau IIA degree-3 collocation on the same 2 ms grid as ffopt's plan, the tool path
Gamma(q(t_k)) = theta(t_k) as an equality constraint at every grid point, a small smoothness term
on du, start at rest in the static equilibrium, IPOPT (MUMPS, scaling off as in ffopt). Start point
of the peer's IPOPT: ffopt's BDF solution (the same warm start ffopt uses; --guess rest: constant). ffopt: ``solve_inverse_nlp`` on
problems/e12_line.toml (collocation of the index-reduced inverse DAE, BDF warm start, backend auto).

Both torque tables are re-simulated by ffopt's verifier (CVODES, the torques linear between the
grid points): open loop and with the motor PD of the problem file. Times: the whole solve call
(rockit: ``ocp.solve()``, IPOPT incl. its set-up; ffopt: ``solve_inverse_nlp`` incl. transcription)
and, for rockit, the transcription before it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.models.equilibrium import static_equilibrium
from ffopt.io.problem import load_problem
from ffopt.nlp.solve import solve_inverse_nlp, warm_start_trajectory
from ffopt.sim.plant import MotorPD, pd_gains, simulate
from nlp_bench import max_tool_error_mm  # results/nlp_bench.py, beside this script (sys.path[0])

ROOT = Path(__file__).resolve().parents[1]
STEP = 2e-3
REFINE = 6  # samples per interval of the peer's solution


def verified(problem, t, u, qm, dqm, q0):
    """Max tool error (mm, the tool point's distance from the path as ffopt verifies): open loop, and with the
    motor PD tracking (qm, dqm)."""
    m, r = problem.model, problem.reference
    y_ref = r.evaluate(t)
    ol = simulate(m, t, u, q0)
    kp, kd = pd_gains(m, q0, problem.verification.pd_bandwidth_hz, problem.verification.pd_damping_ratio)
    cl = simulate(m, t, u, q0, pd=MotorPD(kp, kd, qm, dqm))
    return max_tool_error_mm(m, ol, y_ref), max_tool_error_mm(m, cl, y_ref)


def rockit_plan(problem, q0, weight: float, guess=None, print_level: int = 0, max_iter: int = 1000):
    from rockit import DirectCollocation, Ocp

    m, r = problem.model, problem.reference
    L = m.layout
    nq, N = L.nq, L.n_u
    u0, _ = m.rest_input(q0)
    tic = time.perf_counter()
    ocp = Ocp(T=float(r.t_end))
    q = ocp.state(nq)
    v = ocp.state(nq, scale=10.0)
    u = ocp.state(N, scale=1e5)
    du = ocp.control(N, scale=1e7)
    ocp.set_der(q, v)
    ocp.set_der(v, m.forward_dynamics(q, v, u))
    ocp.set_der(u, du)
    ts = ca.SX.sym("t")
    theta = ca.Function("theta", [ts], [r.expression(ts, 0)])
    qa = ca.SX.sym("qa", L.n_link)
    gamma = ca.Function("gamma", [qa], [m.output(qa)])
    ocp.subject_to(ocp.at_t0(q) == q0)
    ocp.subject_to(ocp.at_t0(v) == 0)
    ocp.subject_to(ocp.at_t0(u) == u0)
    ocp.subject_to(gamma(q[: L.n_link]) - theta(ocp.t) == 0, include_first=False)  # tool path at the grid points
    ocp.add_objective(weight * ocp.integral(ca.sumsqr(du / 1e7)))
    if guess is None:  # rest
        ocp.set_initial(q, q0)
        ocp.set_initial(u, u0)
    else:  # a trajectory (t, q, v, u), linear in time
        for var, table in zip((q, v, u), guess[1:]):
            table = np.asarray(table, float)
            interp = ca.interpolant("guess", "linear", [np.asarray(guess[0], float)], table.T.ravel(order="F"))
            ocp.set_initial(var, interp(ocp.t))
    K = int(round(r.t_end / STEP))
    ocp.method(DirectCollocation(N=K, M=1, degree=3, scheme="radau"))
    ocp.solver("ipopt", {"print_time": False, "ipopt.print_level": print_level, "ipopt.sb": "yes",
                         "ipopt.tol": 1e-8, "ipopt.max_iter": max_iter,
                         "ipopt.mumps_scaling": 0})  # IPOPT's default MUMPS scaling (77) stalls on these KKT systems
    ocp._transcribe()
    t_build = time.perf_counter() - tic
    tic = time.perf_counter()
    sol = ocp.solve()
    t_solve = time.perf_counter() - tic
    # sampled on a refined grid (the collocation polynomials inside each interval): the PD then
    # tracks the peer's motor angles and speeds as planned, not their chords between grid points
    t, uu = sol.sample(u, grid="integrator", refine=REFINE)
    _, qq = sol.sample(q, grid="integrator", refine=REFINE)
    _, vv = sol.sample(v, grid="integrator", refine=REFINE)
    stats = sol.stats
    return {"t": np.asarray(t), "u": np.asarray(uu).reshape(len(t), N), "q": np.asarray(qq).reshape(len(t), nq),
            "v": np.asarray(vv).reshape(len(t), nq), "build": t_build, "solve": t_solve,
            "iterations": int(stats.get("iter_count", -1)), "status": stats.get("return_status", "?"), "K": K}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weight", type=float, default=1e-6, help="weight of the du smoothness term (peer)")
    ap.add_argument("--guess", choices=["bdf", "rest"], default="bdf",
                    help="peer start point: ffopt's BDF solution (the same warm start as ffopt) or rest")
    a = ap.parse_args()
    try:
        import rockit  # noqa: F401
    except ImportError:
        print("rockit is not installed (pip install rockit-meco, or the optional extra 'bench'): peer benchmark "
              "skipped.")
        return 0
    p = load_problem(ROOT / "problems/e12_line.toml")
    m, r, g = p.model, p.reference, p.reference_spec.joint_guess
    q0 = static_equilibrium(m, np.asarray(r.evaluate(np.array([0.0]))).ravel(), g)
    motors = m.layout.motor_of_input

    s = dataclasses.replace(p.nlp, step=STEP, strategy="causal", backend="auto")
    tic = time.perf_counter()
    warm, _ = warm_start_trajectory(m, r, g, p.solver.step)
    traj = solve_inverse_nlp(m, r, s, g, warm)
    t_ffopt = time.perf_counter() - tic
    ff = verified(p, traj.t, traj.u, traj.qm, traj.dqm, q0)

    guess = (warm.t, warm.q, warm.v, warm.u) if a.guess == "bdf" else None
    peer = rockit_plan(p, q0, a.weight, guess)
    pe = verified(p, peer["t"], peer["u"], peer["q"][:, motors], peer["v"][:, motors], q0)

    print(f"\n### E12 (Moberg & Hanssen), h = {STEP * 1e3:g} ms: rockit (forward model, Radau-3, IPOPT) vs ffopt\n")
    print("| planner | formulation | iter | status | transcription [s] | solve call [s] | peak abs(u) [N m] | "
          "verified open loop [mm] | with PD [mm] |")
    print("|---|---|---|---|---|---|---|---|---|")
    st = traj.stats
    print(f"| ffopt (BDF warm start + NLP, backend auto) | inverse DAE I1, Radau IIA 3, {st['n_intervals']} intervals | "
          f"{st['iterations']} ({st['nlp_method']}) | {st['status']} | {st['time_transcription_s']:.2f} | {t_ffopt:.2f} | "
          f"{np.abs(traj.u).max():.4g} | {ff[0]:.4g} | {ff[1]:.4g} |")
    print(f"| rockit (IPOPT) | forward model, u a PL state, du control, Radau IIA 3, {peer['K']} intervals, "
          f"du weight {a.weight:g}, start: {a.guess} | {peer['iterations']} | {peer['status']} | {peer['build']:.2f} | {peer['solve']:.2f} | "
          f"{np.abs(peer['u']).max():.4g} | {pe[0]:.4g} | {pe[1]:.4g} |")
    print(f"\nratio of the solve calls rockit / ffopt: {peer['solve'] / t_ffopt:.0f}x "
          f"(ffopt's call includes its BDF warm start and transcription)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
