"""Moberg & Hanssen's solver variants for E1 and one entry point for all of them.

Replication of Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec. 7.2.
Hand-made E1 systems in x = [x1, x2, x3, x4] = [q1, q2, dq1, dq2] (q1 the driven joint, q2 the
passive elastic joint, output z), built from the model's own functions so they hold for the
simplified (eq. 16) and the complete (eq. 27) E1 alike:

- HI (eq. 40): the original DAE [link row; x1' - x3; x2' - x4; Gamma - theta] (= form I3).
- 43: dummy derivative x^1 = x1' added: [link; x^1 - x3; x2' - x4; Gamma - theta; Gamma' - theta'].
- 44: (43) without x^1 and its row: [link; x2' - x4; Gamma - theta; Gamma' - theta'] (= form I2).
- 48: both kinematic rows removed (dummies x1', x2'): [link; Gamma; Gamma'; Gamma''], x1, x2
  algebraic. At rest Gamma' does not depend on (x1, x2) and Gamma'' ~ (alpha0/h) Gamma', so the
  BDF Newton matrix is singular at the start: the paper found "no solution at all".
- 49: the velocity constraint removed instead: [link; x2' - x4; Gamma; Gamma''].

Here Gamma' = J(q) v and Gamma'' = J(q) a + (dJ/dt) v, i.e. the constraint differentiated with
the kinematic rows substituted, as in the paper.

``solve_inverse_variant`` selects HI / DD / KM / DC like the other methods; DD is the automatic
dummy-derivative reduction (any model), DD43..DD49 the hand-made E1 systems. Three engines: the
compiled CasADi stepping of ffopt.dae.bdf (KM: its own CasADi mapaccum loop,
ffopt.replication.kunkel_mehrmann); and the Python steppers of ffopt.replication.python_bdf, the
same for every variant: "python" (Gauss-Newton with minimum-norm steps and exact Jacobians) and
"scipy" (scipy.optimize.least_squares per step with finite-difference Jacobians, the analogue of
the paper's Matlab fsolve / lsqnonlin solver, sec. 7.2.5), for like-for-like cost comparisons with
the paper's timings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.dae.bdf import solve_bdf
from ffopt.models.equilibrium import static_equilibrium
from ffopt.errors import ProblemError, SolverError
from ffopt.models.flexible import FlexibleModel
from ffopt.replication.python_bdf import python_bdf
from ffopt.settings.bdf import BdfSettings
from ffopt.trajectory import Trajectory

E1_EQUATIONS = (40, 43, 44, 48, 49)
# "DD" = automatic dummy derivatives (any model); "DD43".."DD49" = the paper's hand-made E1 systems
VARIANTS = ("HI", "DD", "DD43", "DD44", "DD48", "DD49", "KM", "DC")
ENGINES = ("compiled", "python", "scipy")
# (1/h)^p scaling of the constraint rows: Moberg & Hanssen sec. 7.2.1 scale the index-2 constraint by 1/h.
DEFAULT_POWER = {40: 1.0, 43: 1.0, 44: 1.0, 48: 0.0, 49: 0.0}


@dataclass
class E1Variant:
    equation: int
    F: ca.Function  # (t, X, Xdot) -> residual
    n_x: int
    constraint_rows: np.ndarray
    accel: ca.Function  # (X, Xdot) -> a (2)

    def row_scale(self, h: float, p: float | None = None) -> np.ndarray:
        p = DEFAULT_POWER[self.equation] if p is None else p
        return np.where(self.constraint_rows, (1.0 / h) ** p, 1.0)

    def initial_state(self, q0: np.ndarray) -> np.ndarray:
        return np.concatenate([q0, np.zeros(self.n_x - 2)])


def check_e1(model: FlexibleModel) -> None:
    L = model.layout
    if not (L.n_link == 2 and L.n_motor == 0 and L.direct == (0,) and L.passive == (1,) and len(model.outputs) == 1):
        raise ProblemError(f"Moberg & Hanssen's hand-made variants DD43..DD49 need an E1-type model (E1 simplified or "
                           f"complete: driven joint 1, passive joint 2, one output, no motors); model {model.name!r} "
                           f"has direct {L.direct}, passive {L.passive}, {L.n_motor} motors, outputs "
                           f"{list(model.outputs)}. Use variant HI, DD (automatic), KM or DC")


def e1_variant(model: FlexibleModel, reference, equation: int) -> E1Variant:
    """The hand-made E1 system of Moberg & Hanssen eq. (40), (43), (44), (48) or (49)."""
    check_e1(model)
    if equation not in E1_EQUATIONS:
        raise ProblemError(f"E1 variant equation must be one of {E1_EQUATIONS}, got {equation}")
    n_x = 5 if equation == 43 else 4
    t, X, Xd = ca.SX.sym("t"), ca.SX.sym("x", n_x), ca.SX.sym("xdot", n_x)
    q, v, a = X[0:2], X[2:4], Xd[2:4]
    link = model.unactuated_link_rows(q, v, a)
    y = model.output(q)
    J = ca.jacobian(y, q)
    con = [y - reference.expression(t, 0), J @ v - reference.expression(t, 1),
           ca.jacobian(J @ v, q) @ v + J @ a - reference.expression(t, 2)]
    kin1, kin2 = Xd[0] - v[0], Xd[1] - v[1]
    rows = {40: lambda: [link, kin1, kin2, con[0]],
            43: lambda: [link, X[4] - v[0], kin2, con[0], con[1]],
            44: lambda: [link, kin2, con[0], con[1]],
            48: lambda: [link, con[0], con[1], con[2]],
            49: lambda: [link, kin2, con[0], con[2]]}[equation]()
    n_con = {40: 1, 43: 2, 44: 2, 48: 3, 49: 2}[equation]
    res = ca.vertcat(*rows)
    F = ca.Function(f"e1_eq{equation}", [t, X, Xd], [res], ["t", "x", "xdot"], ["res"])
    constraint = np.arange(n_x) >= n_x - n_con
    accel = ca.Function("accel", [X, Xd], [a], ["x", "xdot"], ["a"])
    return E1Variant(equation, F, n_x, constraint, accel)


# --- solving ---------------------------------------------------------------------------------


def _run(F, x0, h, n_steps, order, row_scale, engine, counts=None):
    """(t, x, xdot, solve s, compiled) through the chosen engine (counts: Python engines only)."""
    if engine in ("python", "scipy"):
        t, x, xdot, wall = python_bdf(F, x0, h, n_steps, order, row_scale, engine, counts)
        return t, x, xdot, wall, False
    try:
        res = solve_bdf(F, x0, 0.0, h, n_steps, order, row_scale=row_scale, compile=engine == "compiled")
    except RuntimeError as err:  # CasADi's virtual machine stops on a singular Newton matrix
        raise SolverError(f"BDF-{order} (h = {h:g}) failed: {str(err).splitlines()[-1]}; the step equations are "
                          "singular (try another variant, step or order)") from None
    return res.t, res.x, res.xdot, res.wall_time_solve, res.compiled


def solve_e1_variant(model: FlexibleModel, reference, equation: int, order: int = 6, step: float = 5e-3,
                     qa_guess=None, scaling_power: float | None = None, engine: str = "compiled") -> Trajectory:
    """k-step BDF on one hand-made E1 system; raises SolverError where Newton fails (eq. 48)."""
    from ffopt.dae.inverse import trajectory_from_states

    var = e1_variant(model, reference, equation)
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    n_steps = int(round(reference.t_end / step))
    counts = {}
    t, x, xdot, wall, compiled = _run(var.F, var.initial_state(q0), step, n_steps, order,
                                      var.row_scale(step, scaling_power), engine, counts)
    a = np.array(var.accel.map(len(t))(x.T, xdot.T)).T
    name = "HI" if equation == 40 else f"DD{equation}"
    traj = trajectory_from_states(model, reference, t, x, a, method=f"{name}-bdf{order}")
    traj.stats.update({"order": order, "step": step, "form": f"eq{equation}", "n_steps": n_steps,
                       "scaling_power": DEFAULT_POWER[equation] if scaling_power is None else scaling_power,
                       "engine": engine, "compiled": compiled, "time_solve_s": wall, "n_unknowns": var.n_x,
                       **counts})
    return traj


VARIANT_BDF = BdfSettings(order=6, step=5e-3)  # the paper's BDF-6 at 5 ms


def solve_inverse_variant(model: FlexibleModel, reference, variant: str, bdf: BdfSettings = VARIANT_BDF,
                          qa_guess=None, engine: str = "compiled", prefer=None) -> Trajectory:
    """Inverse dynamics by one of Moberg & Hanssen's solver variants (sec. 7.2.5), by name.

    variant: HI (BDF on the original DAE), DD (automatic dummy derivatives, any model), DD43 /
    DD44 / DD48 / DD49 (the paper's hand-made E1 systems), KM (Kunkel-Mehrmann underdetermined
    system, eq. 38), DC (decoupled system, eq. 20-21); case-insensitive.
    bdf: the BDF's order, step and scaling power (``BdfSettings``, or a problem's ``SolverSettings``; its form
    is unused: each variant has its own system).
    engine: "compiled" (C code via ffopt.dae.bdf; KM: CasADi mapaccum), "vm" (CasADi virtual
    machine), "python" (the same Python Gauss-Newton stepper for all, like-for-like timings) or
    "scipy" (scipy least_squares with finite-difference Jacobians per step: the paper's lsqnonlin set-up).
    prefer: which coordinates become algebraic for DD / DC ("actuated", "passive", names).
    Method name of the trajectory: f"{VARIANT}-bdf{order}".
    """
    name = variant.upper()
    if name not in VARIANTS:
        raise ProblemError(f"solver.method: Moberg & Hanssen variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if engine not in ENGINES + ("vm",):
        raise ProblemError(f"engine must be 'compiled', 'vm', 'python' or 'scipy', got {engine!r}")
    if name == "HI" or name.startswith("DD") and name != "DD":
        eq = 40 if name == "HI" else int(name[2:])
        if name == "HI" and not _is_e1(model):
            traj = _solve_generic(model, reference, "HI", bdf, qa_guess, engine, prefer)
        else:
            traj = solve_e1_variant(model, reference, eq, bdf.order, bdf.step, qa_guess, bdf.scaling_power, engine)
    else:
        traj = _solve_generic(model, reference, name, bdf, qa_guess, engine, prefer)
    traj.method = f"{name}-bdf{bdf.order}"
    traj.stats["variant"] = name
    traj.stats.setdefault("engine", engine)  # KM may report the engine it fell back to
    return traj


def _is_e1(model) -> bool:
    try:
        check_e1(model)
    except ProblemError:
        return False
    return True


def _solve_generic(model, reference, name, bdf: BdfSettings, qa_guess, engine, prefer) -> Trajectory:
    """HI (I3 form), DD (automatic), KM and DC for any model."""
    from ffopt.dae.inverse import trajectory_from_states

    order, step, scaling_power = bdf.order, bdf.step, bdf.scaling_power
    if name == "KM":
        from ffopt.replication.kunkel_mehrmann import solve_inverse_km

        return solve_inverse_km(model, reference, order, step, qa_guess, engine=engine)
    tic = time.perf_counter()
    y0 = np.asarray(reference.evaluate(np.array([0.0]))).ravel()
    q0 = static_equilibrium(model, y0, qa_guess)
    n_steps = int(round(reference.t_end / step))
    build = {"HI": _original_system, "DD": _dummy_derivative_system, "DC": _decoupled_system}[name]
    F, x0, scale, states, extra = build(model, reference, q0, step, scaling_power, prefer)
    t_setup = time.perf_counter() - tic
    counts = {}
    t, x, xdot, wall, compiled = _run(F, x0, step, n_steps, order, scale, engine, counts)
    q, v, a = states(t, x, xdot)
    traj = trajectory_from_states(model, reference, t, np.hstack([q, v]), a, method=f"{name}-bdf{order}")
    traj.stats.update({"order": order, "step": step, "form": name, "n_steps": n_steps,
                       "n_unknowns": int(F.numel_in(1)), "compiled": compiled,
                       "time_setup_s": t_setup, "time_solve_s": wall, **extra, **counts})
    return traj


def _original_system(model, reference, q0, step, scaling_power, prefer):
    """HI: the I3 form (Moberg & Hanssen eq. 32 / 40) with (1/h)^p scaled constraint rows."""
    from ffopt.dae.forms import DEFAULT_SCALING_POWER, build_inverse_dae

    dae = build_inverse_dae(model, reference, "I3")
    p = DEFAULT_SCALING_POWER["I3"] if scaling_power is None else scaling_power
    nq = dae.nq

    def states(t, x, xdot):
        return x[:, :nq], x[:, nq:2 * nq], xdot[:, nq:2 * nq]

    return dae.F, dae.initial_state(q0), dae.row_scale(step, p), states, {"scaling_power": p}


def _dummy_derivative_system(model, reference, q0, step, scaling_power, prefer):
    """DD: automatic dummy-derivative reduction (ffopt.dae.dummy_derivatives), index 1."""
    from ffopt.dae.dummy_derivatives import reduce_index

    dae = reduce_index(model, reference, q0, prefer or "actuated")
    nq = dae.nq

    def states(t, x, xdot):
        return x[:, :nq], x[:, nq:2 * nq], np.array(dae.accel.map(len(t))(x.T, xdot.T)).T

    extra = {"dummy_derivatives": dae.variable_names[2 * nq:], "algebraic": dae.algebraic,
             "differential": dae.differential}
    return dae.F, dae.initial_state(q0), dae.row_scale(step, scaling_power), states, extra


def _decoupled_system(model, reference, q0, step, scaling_power, prefer):
    """DC: the decoupled system (ffopt.replication.decoupled, Moberg & Hanssen eq. 20-21)."""
    from ffopt.replication.decoupled import decoupled_dae, default_algebraic_set

    S = default_algebraic_set(model, prefer)
    F, dc_states, other = decoupled_dae(model, reference, S)
    x0 = np.concatenate([q0[other], np.zeros(len(other)), q0[S]])

    def states(t, x, xdot):
        return tuple(np.array(m).T for m in dc_states.map(len(t))(t[None, :], x.T, xdot.T))

    names = model.coordinate_names()
    return F, x0, None, states, {"algebraic": [names[i] for i in S] + [f"d{names[i]}" for i in S]}
