"""Study (d): what happens with zero damping (Moberg & Hanssen, inverse dynamics of flexible manipulators
(DAE methods), sec. 8: "the index increases one step").

    python results/studies/zero_damping.py     (about 1 min; writes results/zero_damping.md)

For E1 simplified (passive joint damping d = 0) and E12 (gear damping 0, passive damping 0, both):
- structural index (Pantelides), differential index, strangeness index (Hypothesis 1), and
  which variables are algebraic (ffopt.analysis.structural / strangeness);
- BDF-6 at h = 1 ms on the forms I3 / I2 / I1 and on the automatic dummy-derivative system DD:
  converged or not, and the torque error against BDF-6 DD at h = 1/8 ms of the same model;
- the unscaled Newton-matrix condition slope s (cond ~ h^-s, h = 1e-5..1e-3 s) of the I3 form at
  mid-motion (the full conditioning study is results/studies/conditioning.py).
"""

from __future__ import annotations

import datetime
from dataclasses import replace
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.analysis.strangeness import strangeness_analysis
from ffopt.analysis.structural import structural_analysis
from ffopt.dae.bdf import BDF_ALPHA, solve_bdf
from ffopt.models.equilibrium import static_equilibrium
from ffopt.dae.forms import build_inverse_dae
from ffopt.dae.inverse import BdfSettings, solve_inverse_bdf
from ffopt.errors import FfoptError
from ffopt.io.problem import load_problem
from ffopt.replication.moberg_hanssen import solve_inverse_variant

ROOT = Path(__file__).resolve().parents[2]
H, H_REF = 1e-3, 1.25e-4
CASES = [("E1 simplified", "e1_simplified.toml", [(), ("passive",)]),
         ("E12", "e12_line.toml", [(), ("elastic_gear",), ("passive",), ("elastic_gear", "passive")])]


def undamped(p, kinds):
    ch = p.chain
    joints = tuple(replace(j, damping=0.0) if j.kind in kinds else j for j in ch.joints)
    return p.model.variant(replace(ch, joints=joints))


STEPS = np.logspace(-5, -3, 5)


def i3_slope(model, p):
    """s in cond(alpha_0/h F_xdot + F_x) ~ h^-s, I3 form unscaled, on the BDF-6 solution at mid-motion."""
    spec = p.reference_spec
    q0 = static_equilibrium(model, p.reference.evaluate(np.array([0.0])).ravel(), spec.joint_guess)
    dae = build_inverse_dae(model, p.reference, "I3")
    n_steps = int(round((spec.rest_before + spec.duration / 2) / 1e-3))
    try:
        res = solve_bdf(dae.F, dae.initial_state(q0), 0.0, 1e-3, n_steps, 6, row_scale=dae.row_scale(1e-3))
    except FfoptError:
        return np.nan
    ts, xs, xds = ca.SX.sym("t"), ca.SX.sym("x", dae.n_x), ca.SX.sym("xd", dae.n_x)
    r = dae.F(ts, xs, xds)
    jac = ca.Function("newton_parts", [ts, xs, xds], [ca.jacobian(r, xs), ca.jacobian(r, xds)])
    Fx, Fxd = (np.array(m, dtype=float) for m in jac(res.t[-1], res.x[-1], res.xdot[-1]))
    cond = [np.linalg.cond(BDF_ALPHA[6][0] / h * Fxd + Fx) for h in STEPS]
    return -np.polyfit(np.log10(STEPS), np.log10(cond), 1)[0]


def solves(model, p) -> dict:
    """Relative torque error (float) of BDF-6 at h = 1 ms per form, or a string saying what failed."""
    g = p.reference_spec.joint_guess
    out = {}
    try:
        u_ref = solve_inverse_variant(model, p.reference, "DD", BdfSettings(6, H_REF), g).u
    except FfoptError as err:
        return {"reference": f"failed ({str(err)[:60]})"}
    for form in FORMS:
        try:
            tr = (solve_inverse_variant(model, p.reference, "DD", BdfSettings(6, H), g) if form == "DD"
                  else solve_inverse_bdf(model, p.reference, BdfSettings(order=6, step=H, form=form), qa_guess=g))
            out[form] = float(np.abs(tr.u - u_ref[::8]).max() / np.abs(u_ref).max())
        except FfoptError:
            out[form] = "no convergence"
    return out


FORMS = ("I3", "I2", "I1", "DD")


def case_row(label, p, kinds) -> dict:
    g = p.reference_spec.joint_guess
    model = undamped(p, kinds)
    r = structural_analysis(model, p.reference, "I3", g)
    mu = strangeness_analysis(model, p.reference, "I3", g)
    i1 = structural_analysis(model, p.reference, "I1", g)
    return {"label": label, "kinds": kinds, "nu_s": r.structural_index, "nu_d": r.differential_index,
            "mu": mu.mu, "a": mu.a, "d": mu.d, "algebraic": r.algebraic_x(), "nu_i1": i1.differential_index,
            "slope": i3_slope(model, p), "err": solves(model, p)}


def _e(v) -> str:
    return f"{v:.1e}" if isinstance(v, float) else str(v)


def table(rows) -> list[str]:
    lines = ["| model | damping set to 0 | structural index | differential index | strangeness mu (a, d) | "
             "algebraic (paper's names) | index of I1 | I3 cond slope | u err I3 | u err I2 | u err I1 | u err DD |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {', '.join(r['kinds']) or 'none (as given)'} | {r['nu_s']} | {r['nu_d']} | "
                     f"{r['mu']} ({r['a']}, {r['d']}) | {' '.join(r['algebraic'])} | {r['nu_i1']} | "
                     f"{r['slope']:.2f} | " + " | ".join(_e(r['err'].get(f, '-')) for f in FORMS) + " |")
    return lines


def findings(rows) -> str:
    def pick(label, kinds):
        return next(r for r in rows if r["label"] == label and r["kinds"] == kinds)

    base, gear = pick("E12", ()), pick("E12", ("elastic_gear",))
    passive, e1, e1p = pick("E12", ("passive",)), pick("E1 simplified", ()), pick("E1 simplified", ("passive",))
    err = lambda r, f: _e(r["err"].get(f, "-"))
    arrow = lambda f: f"{f} {err(base, f)} -> {err(gear, f)}"
    failed = [f for f in FORMS if not isinstance(gear["err"].get(f), float)]
    converged = f"Without gear damping {', '.join(failed)} did not solve" if failed else "Every form still converges"
    return f"""
## Findings

- Moberg & Hanssen's remark (sec. 8, "the index increases one step if the damping is zero") is about the
  gear damping. In E12 the motor velocities x9, x10 enter the (u-free) link rows only through the
  gear damper d_g (qm' - qg'). With d_g = 0 they drop out and are reached only through qm' = vm after
  one more differentiation of the link rows: structural index {base['nu_s']} -> {gear['nu_s']}, differential
  index {base['nu_d']} -> {gear['nu_d']}, strangeness index {base['mu']} -> {gear['mu']} (mu = nu - 1, Moberg & Hanssen sec. 5.1.1),
  and the algebraic set grows from {' '.join(base['algebraic'])} to {' '.join(gear['algebraic'])}
  (a = {base['a']} -> {gear['a']}, d = {base['d']} -> {gear['d']}).
- Passive-joint damping does not change the index: E12 with the passive damper removed keeps
  nu = {passive['nu_d']}, mu = {passive['mu']}; E1 (driven directly, no gear; its only damper is the passive joint)
  has nu = {e1['nu_d']}, mu = {e1['mu']} with it and nu = {e1p['nu_d']}, mu = {e1p['mu']} without it.
- Numerically the extra index shows as one more power of 1/h in the unscaled Newton-matrix
  condition of the I3 form (slope {base['slope']:.2f} -> {gear['slope']:.2f}). {converged} at BDF-6,
  h = 1 ms, and the hand-made forms lose accuracy, the more the higher their index: torque error
  {arrow('I3')}, {arrow('I2')}, {arrow('I1')} (the I1 form, eq. 34, now has index {gear['nu_i1']}: the motor
  velocities need one more differentiation than it provides). The automatic dummy-derivative system,
  built by Pantelides for the new structure, stays index 1 and keeps its accuracy ({arrow('DD')}):
  damping "improves the solvability" (Moberg & Hanssen sec. 8) of the fixed forms, not of an index-1 reduction.
"""


def main():
    rows = [case_row(label, load_problem(ROOT / "problems" / file), kinds)
            for label, file, variants in CASES for kinds in variants]
    lines = ["# Study (d): zero damping\n",
             f"Generated {datetime.date.today()} by `python results/studies/zero_damping.py`. Indices of the I3 "
             "form at rest at the start of the path ('index of I1': differential index of the twice "
             "differentiated form, eq. 34); torque errors of BDF-6, h = 1 ms, relative to the peak of BDF-6 DD "
             "at h = 1/8 ms of the same model; slope s of the unscaled I3 Newton-matrix condition cond ~ h^-s.\n",
             *table(rows), findings(rows)]
    text = "\n".join(lines) + "\n"
    (ROOT / "results" / "zero_damping.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
