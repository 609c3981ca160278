"""Study (c): condition number of the BDF Newton matrix vs. step size h (Moberg & Hanssen, inverse
dynamics of flexible manipulators (DAE methods), eq. 37, 41).

    python results/studies/conditioning.py            (about 5 s; writes results/conditioning.md)

At each BDF step the solver solves diag(s) F(t_i, x_i, D_h x_i) = 0 for x_i with the Newton matrix

    N(h) = diag(s) (alpha_0 / h F_xdot + F_x),    s = (1/h)^p on the constraint rows, 1 elsewhere.

1. For the forms I3 / I2 / I1 of ffopt.dae.forms (E1 simplified and E12), F_x and F_xdot on the
   solution halfway through the motion (states from a fine BDF-6 run on I1); 2-norm condition
   number of N(h) for h = 1e-6 .. 1e-1 s and p = 0..3, and the slope d log cond / d log(1/h).
2. Error floor: the torque error of BDF-6 at h = 1, 0.3, 0.1 ms, unscaled and scaled, plus two
   checks of where the E12 I3 floor comes from (Newton tolerance; sensitivity to a 1e-13 rad
   perturbation of the start state while the robot is at rest).
3. For E1 the paper's hand-made systems (40, 43, 44, 48, 49; ffopt.replication.moberg_hanssen), at rest
   and halfway through the motion: the paper's remark that "an analysis based on the Jacobian F_z ...
   does not show the numerical solvability. The Jacobian F_xi must be used" (sec. 7.2.5) is checked
   with both Jacobians.
The findings paragraph quotes the computed numbers (nothing in it is typed in by hand except the
quotations of the paper and the 3e-11 N m equilibrium residual).
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.dae.bdf import BDF_ALPHA
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import DEFAULT_SCALING_POWER, FORMS, build_inverse_dae, choose_dummy_set
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.io.problem import load_problem

ROOT = Path(__file__).resolve().parents[2]
STEPS = np.array([1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1])
ORDER = 6
POWERS = (0.0, 1.0, 2.0, 3.0)


def solution_point(problem, t_star: float, h_ref: float):
    """(q, v, a, jerk) at t_star from BDF-6 on the I1 form with a fine step."""
    p = problem
    tr = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=h_ref, form="I1"),
                           qa_guess=p.reference_spec.joint_guess)
    i = int(round(t_star / h_ref))
    jerk = (tr.a[i + 1] - tr.a[i - 1]) / (2 * h_ref)
    return tr.q[i], tr.v[i], tr.a[i], jerk


def jacobians(F: ca.Function, t: float, x: np.ndarray, xdot: np.ndarray):
    n = F.numel_in(1)
    ts, xs, xds = ca.SX.sym("t"), ca.SX.sym("x", n), ca.SX.sym("xd", n)
    r = F(ts, xs, xds)
    J = ca.Function("J", [ts, xs, xds], [ca.jacobian(r, xs), ca.jacobian(r, xds)])
    Fx, Fxd = (np.array(m, dtype=float) for m in J(t, x, xdot))
    return Fx, Fxd


def newton_condition(Fx, Fxd, constraint_rows, h, p, order=ORDER) -> float:
    s = np.where(constraint_rows, (1.0 / h) ** p, 1.0)
    N = s[:, None] * (BDF_ALPHA[order][0] / h * Fxd + Fx)
    return float(np.linalg.cond(N))


def slope(hs, conds) -> float:
    """d log cond / d log(1/h) over 1e-5 <= h <= 3 ms, where cond < 1e15 (not at roundoff)."""
    conds = np.asarray(conds)
    sel = (hs <= 3.0001e-3) & (hs >= 0.9999e-5) & np.isfinite(conds) & (conds < 1e15)
    if sel.sum() < 2:
        return float("nan")
    return float(-np.polyfit(np.log(hs[sel]), np.log(np.asarray(conds)[sel]), 1)[0])


def form_state(dae, q, v, a, jerk):
    x = np.concatenate([q, v, a[list(dae.dummy)][: dae.n_x - 2 * dae.nq]])
    xd = np.concatenate([v, a, jerk[list(dae.dummy)][: dae.n_x - 2 * dae.nq]])
    return x, xd


def form_rows(problem, t_star, h_ref):
    p = problem
    q, v, a, jerk = solution_point(p, t_star, h_ref)
    q0 = static_equilibrium(p.model, np.asarray(p.reference.evaluate(np.array([0.0]))).ravel(),
                            p.reference_spec.joint_guess)
    dummy = choose_dummy_set(p.model, q0[: p.model.layout.n_link])
    rows = {}
    for form in FORMS:
        dae = build_inverse_dae(p.model, p.reference, form, dummy)
        Fx, Fxd = jacobians(dae.F, t_star, *form_state(dae, q, v, a, jerk))
        rows[form] = {pw: np.array([newton_condition(Fx, Fxd, dae.constraint_rows, h, pw) for h in STEPS])
                      for pw in POWERS}
        rows[form]["rank_Fxdot"] = (int(np.linalg.matrix_rank(Fxd)), dae.n_x)
    return rows


def e1_variant_rows(problem, t_star, h_ref):
    """cond(F_xi) (eq. 41) and cond(F_z) (Jacobian w.r.t. the highest derivatives) of eq. 40-49."""
    try:
        from ffopt.replication.moberg_hanssen import DEFAULT_POWER, e1_variant
    except ImportError:
        return None
    p = problem
    q, v, a, _ = solution_point(p, t_star, h_ref)
    q0 = static_equilibrium(p.model, np.asarray(p.reference.evaluate(np.array([0.0]))).ravel(),
                            p.reference_spec.joint_guess)
    out = {}
    for eq in (40, 43, 44, 48, 49):
        var = e1_variant(p.model, p.reference, eq)
        for label, t, (qq, vv, aa) in (("rest", 0.0, (q0, np.zeros(2), np.zeros(2))), ("motion", t_star, (q, v, a))):
            x = np.concatenate([qq, vv, vv[:1]])[: var.n_x]
            xd = np.concatenate([vv, aa, aa[:1]])[: var.n_x]
            Fx, Fxd = jacobians(var.F, t, x, xd)
            row = {f"h{h * 1e3:g}": newton_condition(Fx, Fxd, var.constraint_rows, h, DEFAULT_POWER[eq])
                   for h in (5e-3, 1e-3)}
            for h in (5e-3, 1e-3):
                best = {pw: newton_condition(Fx, Fxd, var.constraint_rows, h, pw) for pw in (0.0, 1.0, 2.0)}
                row[f"best{h * 1e3:g}"] = min((c, pw) for pw, c in best.items())
            row["Fz"] = _highest_derivative_condition(Fx, Fxd)
            row["p"] = DEFAULT_POWER[eq]
            out[(eq, label)] = row
    return out


def _highest_derivative_condition(Fx, Fxd) -> float:
    """cond of F_z, z = xdot_j for variables whose derivative appears, else x_j (Moberg & Hanssen eq. 45-46)."""
    cols = [Fxd[:, j] if np.any(Fxd[:, j]) else Fx[:, j] for j in range(Fx.shape[1])]
    return float(np.linalg.cond(np.column_stack(cols)))


def error_floor_rows(problem, steps=(1e-3, 3e-4, 1e-4), h_ref=1e-4):
    """Relative torque error of BDF-6 per form, step and scaling power against BDF-6 (I1) at h_ref."""
    from ffopt.errors import SolverError

    p = problem
    g = p.reference_spec.joint_guess
    ref = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=6, step=h_ref, form="I1"), qa_guess=g)
    rows = {}
    for form in FORMS:
        for h in steps:
            stride = int(round(h / h_ref))
            for pw in (0.0, DEFAULT_SCALING_POWER[form]):
                try:
                    tr = solve_inverse_bdf(p.model, p.reference, BdfSettings(order=ORDER, step=h, form=form, scaling_power=pw),
                                           qa_guess=g)
                    n = min(len(tr.u), len(ref.u[::stride]))
                    rows[(form, h, pw)] = float(np.abs(tr.u[:n] - ref.u[::stride][:n]).max() / np.abs(ref.u).max())
                except SolverError:
                    rows[(form, h, pw)] = np.nan
    return rows


def newton_tolerance_check(problem, h=1e-4, tols=(1e-9, 1e-14)):
    """Max |u difference| / max |u| between E12 I3 runs with two Newton step tolerances."""
    from ffopt.dae.bdf import solve_bdf
    from ffopt.dae.inverse import trajectory_from_states

    p = problem
    g = p.reference_spec.joint_guess
    q0 = static_equilibrium(p.model, np.asarray(p.reference.evaluate(np.array([0.0]))).ravel(), g)
    dae = build_inverse_dae(p.model, p.reference, "I3", choose_dummy_set(p.model, q0[: p.model.layout.n_link]))
    us = []
    for tol in tols:
        r = solve_bdf(dae.F, dae.initial_state(q0), 0.0, h, int(round(p.reference.t_end / h)), ORDER,
                      row_scale=dae.row_scale(h), newton_tol=1e-14, step_tol=tol)
        a = np.array(dae.accel.map(len(r.t))(r.x.T, r.xdot.T)).T
        us.append(trajectory_from_states(p.model, p.reference, r.t, r.x, a, "check").u)
    return float(np.abs(us[0] - us[1]).max() / np.abs(us[0]).max())


def rest_sensitivity(problem, h=1e-4, perturbations=(0.0, 1e-13)):
    """Max |u(t) - u(0)| over the first 20 ms (robot at rest) of E12 I3, with q1(0) perturbed (rad)."""
    from ffopt.dae.bdf import solve_bdf
    from ffopt.dae.inverse import trajectory_from_states

    p = problem
    g = p.reference_spec.joint_guess
    q0 = static_equilibrium(p.model, np.asarray(p.reference.evaluate(np.array([0.0]))).ravel(), g)
    dae = build_inverse_dae(p.model, p.reference, "I3", choose_dummy_set(p.model, q0[: p.model.layout.n_link]))
    n = int(round(p.reference_spec.rest_before / h))
    out = []
    for dq in perturbations:
        x0 = dae.initial_state(q0)
        x0[0] += dq
        r = solve_bdf(dae.F, x0, 0.0, h, n, ORDER, row_scale=dae.row_scale(h))
        a = np.array(dae.accel.map(len(r.t))(r.x.T, r.xdot.T)).T
        u = trajectory_from_states(p.model, p.reference, r.t, r.x, a, "check").u
        out.append((dq, float(np.abs(u - u[0]).max())))
    return out


def fmt(c: float) -> str:
    return "singular" if not np.isfinite(c) or c > 1e16 else f"{c:.1e}"


def collect() -> dict:
    e1 = load_problem(ROOT / "problems" / "e1_simplified.toml")
    e12 = load_problem(ROOT / "problems" / "e12_line.toml")
    data = {"cases": {}}
    for name, p, h_ref in (("E1 simplified", e1, 1.25e-4), ("E12", e12, 2.5e-4)):
        t_star = p.reference_spec.rest_before + 0.5 * p.reference_spec.duration
        data["cases"][name] = {"t_star": t_star, "conds": form_rows(p, t_star, h_ref), "floor": error_floor_rows(p)}
    data["variants"] = e1_variant_rows(e1, data["cases"]["E1 simplified"]["t_star"], 1.25e-4)
    data["tol_check"] = newton_tolerance_check(e12)
    data["rest"] = rest_sensitivity(e12)
    data["u_peak_e12"] = float(np.abs(solve_inverse_bdf(e12.model, e12.reference, BdfSettings(order=6, step=1e-3, form="I1"),
                                                        qa_guess=e12.reference_spec.joint_guess).u).max())
    return data


def at(conds, h) -> float:
    return float(conds[int(np.argmin(abs(STEPS - h)))])


def report(data: dict | None = None) -> str:
    data = collect() if data is None else data
    lines = ["# Conditioning of the BDF Newton matrix vs. step size (study c)\n",
             f"Generated {datetime.date.today()} by `python results/studies/conditioning.py`. Newton matrix "
             f"N(h) = diag(s) (alpha_0/h F_xdot + F_x) (Moberg & Hanssen eq. 37/41), BDF-{ORDER} (alpha_0 = 2.45), "
             "s = (1/h)^p on the path-constraint rows, evaluated on the solution halfway through the motion. "
             "2-norm condition numbers ('singular' above 1e16 ~ 1/eps); slope = d log cond / d log(1/h) fitted for "
             "0.01 ms <= h <= 3 ms where cond < 1e15 (nan: fewer than two such points). "
             f"Default p of ffopt.dae.forms: {DEFAULT_SCALING_POWER}.\n"]
    summary = []
    for name, case in data["cases"].items():
        lines += [f"\n## {name} (t = {case['t_star']:g} s)\n",
                  "| form | p | " + " | ".join(f"h = {h:.0e}" for h in STEPS) + " | slope |",
                  "|---|---|" + "---|" * (len(STEPS) + 1)]
        for form, by_p in case["conds"].items():
            for pw, conds in ((pw, by_p[pw]) for pw in POWERS):
                tag = " (default)" if pw == DEFAULT_SCALING_POWER[form] else ""
                lines.append(f"| {form} | {pw:g}{tag} | " + " | ".join(fmt(c) for c in conds)
                             + f" | {slope(STEPS, conds):.2f} |")
            best = [min(POWERS, key=lambda pw: at(by_p[pw], h)) for h in (1e-3, 1e-5)]
            summary.append((name, form, by_p["rank_Fxdot"], [slope(STEPS, by_p[pw]) for pw in POWERS], best,
                            at(by_p[0.0], 1e-3), at(by_p[DEFAULT_SCALING_POWER[form]], 1e-3),
                            min(at(by_p[pw], 1e-3) for pw in POWERS)))
    lines += ["\n## Summary\n", "| model | form | rank F_xdot / n | slope p = 0 / 1 / 2 / 3 | best p at h = 1 ms / 0.01 ms "
              "| cond h = 1 ms: p = 0 | default p | best p |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {m} | {f} | {r[0]} / {r[1]} | {' / '.join(f'{v:.2f}' for v in sl)} | {b[0]:g} / {b[1]:g} | {fmt(c0)} | "
              f"{fmt(cd)} | {fmt(cb)} |" for m, f, r, sl, b, c0, cd, cb in summary]

    lines += ["\n## Error floor: relative torque error vs. h, unscaled and scaled\n",
              "max|u - u_ref| / max|u_ref|, u_ref from BDF-6 on I1 at h = 0.1 ms (so the 0.1 ms column of I1 is 0 "
              "by construction); BDF-6, whole path including the rests.\n",
              "| model | form | p | h = 1 ms | h = 0.3 ms | h = 0.1 ms |", "|---|---|---|---|---|---|"]
    for name, case in data["cases"].items():
        for form in FORMS:
            for pw in sorted({0.0, DEFAULT_SCALING_POWER[form]}):
                lines.append(f"| {name} | {form} | {pw:g} | " + " | ".join(
                    f"{case['floor'][(form, h, pw)]:.1e}" for h in (1e-3, 3e-4, 1e-4)) + " |")
    lines.append(f"\nE12, I3, h = 0.1 ms: Newton step tolerance 1e-9 vs. 1e-14 changes u by "
                 f"{data['tol_check']:.1e} (relative to max |u|).")

    variants = data["variants"]
    if variants is not None:
        lines += ["\n## E1: Moberg & Hanssen's hand-made systems (eq. 40-49), default scaling of "
                  "ffopt.replication.moberg_hanssen\n",
                  "cond F_xi = condition number of the Newton matrix (eq. 41) at h = 5 ms / 1 ms; cond F_z = of the "
                  "Jacobian w.r.t. the highest derivatives (xdot_j where x_j is differentiated, else x_j; eq. 46).\n",
                  "| eq. | point | p | cond F_xi, h = 5 ms | cond F_xi, h = 1 ms | best p in 0..2: cond (p), h = 5 ms "
                  "| h = 1 ms | cond F_z |", "|---|---|---|---|---|---|---|---|"]
        for (eq, label), row in variants.items():
            b5, b1 = row["best5"], row["best1"]
            lines.append(f"| {eq} | {label} | {row['p']:g} | {fmt(row['h5'])} | {fmt(row['h1'])} | "
                         f"{fmt(b5[0])} ({b5[1]:g}) | {fmt(b1[0])} ({b1[1]:g}) | {fmt(row['Fz'])} |")
    lines.append(findings(data))
    return "\n".join(lines) + "\n"


def findings(data: dict) -> str:
    e1, e12 = data["cases"]["E1 simplified"], data["cases"]["E12"]
    sl = {(m, f): slope(STEPS, c["conds"][f][0.0]) for m, c in data["cases"].items() for f in FORMS}
    sl1 = {(m, f): slope(STEPS, c["conds"][f][1.0]) for m, c in data["cases"].items() for f in FORMS}
    c12 = {f: at(e12["conds"][f][0.0], 1e-3) for f in FORMS}
    fl1, fl12 = e1["floor"], e12["floor"]
    text = f"""
## Findings

- Without scaling (p = 0) the Newton matrix degenerates like (1/h)^nu as h -> 0, nu the index of the
  form: fitted slopes {sl['E1 simplified', 'I3']:.1f} / {sl['E1 simplified', 'I2']:.1f} / \
{sl['E1 simplified', 'I1']:.1f} for E1 (I3 / I2 / I1; E1's I3 has index 2) and {sl['E12', 'I3']:.1f} / \
{sl['E12', 'I2']:.1f} / {sl['E12', 'I1']:.1f} for E12
  (index 3 / 2 / 1; index-1 forms keep slope 1 from alpha_0/h F_xdot of their differential rows). This is
  the paper's remark on eq. (37)/(41): F_xdot is singular (rank {e12['conds']['I3']['rank_Fxdot'][0]} of \
{e12['conds']['I3']['rank_Fxdot'][1]} for E12 I3), so alpha_0/h F_xdot + F_x is
  ill-conditioned for small h. Yet at the paper's settings the discretized matrices are all of full rank
  -- at h = 1 ms the unscaled E12 matrices have cond {c12['I3']:.1e} (I3), {c12['I2']:.1e} (I2), \
{c12['I1']:.1e} (I1), below
  1/eps = 4.5e15 -- which is the paper's sec. 7.4 observation: "All Jacobians were full-rank, which shows that the
  discretized system can be solvable, although the continuous system is not".
- Row scaling (1/h)^p of the constraint rows helps by orders of magnitude but is not a cure: p = 1 lowers
  the slope by one for I3 and I2 (E1: {sl1['E1 simplified', 'I3']:.1f} and {sl1['E1 simplified', 'I2']:.1f}; \
E12: {sl1['E12', 'I3']:.1f} and {sl1['E12', 'I2']:.1f}); larger p raises it again (p = 3 is worse than p = 0
  for small h). The best p depends on h (summary table: mostly 2 at h = 1 ms, 1 at h = 0.01 ms), which is
  why Moberg & Hanssen tuned p "empirically in the interval 1-3". Row scaling alone does not make the index-3
  matrix h-independent (E12 I3 keeps a slope of about 2 or more for every p).
- The condition number is not the whole story for accuracy (error-floor table). For E1 I3 at h = 0.1 ms
  scaling lowers the torque error from {fl1['I3', 1e-4, 0.0]:.1e} (p = 0) to {fl1['I3', 1e-4, 2.0]:.1e} (p = 2). \
For E12 I3 the error
  grows again below ~0.3 ms ({fl12['I3', 1e-3, 0.0]:.1e}, {fl12['I3', 3e-4, 0.0]:.1e}, {fl12['I3', 1e-4, 0.0]:.1e} \
at h = 1, 0.3, 0.1 ms), about equally for p = 0 and
  p = 2 and for Newton step tolerances 1e-9 and 1e-14 (u differs by {data['tol_check']:.0e}). Row scaling does
  not change the solution of the step equations; what grows is the amplification of the rounding errors
  of the residual itself (at the start equilibrium the E12 link rows are satisfied to ~3e-11 N m, 1e-15
  relative) through the index -- u needs the fourth derivative of the link angles. Check: during the
  first 20 ms, with the robot at rest, BDF-6 on I3 at h = 0.1 ms gives torques varying by
  {data['rest'][0][1]:.1e} N m (peak |u| of the motion {data['u_peak_e12']:.1e} N m); perturbing q1(0) by \
{data['rest'][1][0]:g} rad makes it
  {data['rest'][1][1]:.1e} N m. This is Moberg and
  Hanssen's second conclusion of their 2007 work, quoted in the paper's sec. 3 ("if the step size is to small, we loose numerical
  solvability"). Lower-index forms push the floor down: E12 I2 {fl12['I2', 1e-3, 1.0]:.1e}, \
{fl12['I2', 3e-4, 1.0]:.1e}, {fl12['I2', 1e-4, 1.0]:.1e}; I1
  {fl12['I1', 1e-3, 0.0]:.1e}, {fl12['I1', 3e-4, 0.0]:.1e} (vs. its own 0.1 ms run).
"""
    v = data["variants"]
    if v is not None:
        text += f"""- E1 hand-made systems (Moberg & Hanssen sec. 7.2.2): F_z, the Jacobian w.r.t. the highest derivatives, is singular
  for (40), (43) and (44) and nonsingular for (49) (cond {v[49, 'motion']['Fz']:.1e}) and, in motion, (48) \
(cond {v[48, 'motion']['Fz']:.1e}):
  it would recommend (48) and (49). The Newton matrix F_xi tells a different story: with their best
  row scaling, (44) and (49) are the best conditioned systems ({v[44, 'rest']['best5'][0]:.1e} and \
{v[49, 'rest']['best5'][0]:.1e} at rest, h = 5 ms), 50 to 200
  times below HI ({v[40, 'rest']['best5'][0]:.1e}) and (43) ({v[43, 'rest']['best5'][0]:.1e}), \
consistent with the paper's finding that (44) was the fastest
  DD variant, and (48) is singular at rest for every scaling (with v = a = 0 its
  acceleration-constraint row equals alpha_0/h times its velocity-constraint row: both reduce to J(q)
  times the velocity unknowns), so its first step off the rest has no unique solution: "(48) gave no
  solution at all". This confirms the paper's conclusion that "the Jacobian F_xi must be used to do a
  proper analysis".
"""
    return text


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__).parse_args()
    text = report()
    (ROOT / "results" / "conditioning.md").write_text(text)
    print(text)
