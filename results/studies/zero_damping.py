"""Study (d): what happens with zero damping (seed 000 sec. 8: "the index increases one step").

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
from ffopt.dae.equilibrium import static_equilibrium
from ffopt.dae.forms import build_inverse_dae
from ffopt.dae.inverse import solve_inverse_bdf
from ffopt.dae.seed_variants import solve_inverse_variant
from ffopt.errors import FfoptError
from ffopt.io.problem import load_problem

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


def solves(model, p):
    g = p.reference_spec.joint_guess
    out = {}
    try:
        u_ref = solve_inverse_variant(model, p.reference, "DD", 6, H_REF, g).u
    except FfoptError as err:
        return {"reference": f"failed ({str(err)[:60]})"}
    for form in ("I3", "I2", "I1", "DD"):
        try:
            tr = (solve_inverse_variant(model, p.reference, "DD", 6, H, g) if form == "DD"
                  else solve_inverse_bdf(model, p.reference, 6, H, form, qa_guess=g))
            out[form] = f"{np.abs(tr.u - u_ref[::8]).max() / np.abs(u_ref).max():.1e}"
        except FfoptError:
            out[form] = "no convergence"
    return out


def main():
    lines = ["# Study (d): zero damping\n",
             f"Generated {datetime.date.today()} by `python results/studies/zero_damping.py`. Indices at rest at "
             "the start of the path; torque errors of BDF-6, h = 1 ms, relative to the peak of BDF-6 DD at "
             "h = 1/8 ms of the same model; slope s of the unscaled I3 Newton-matrix condition cond ~ h^-s.\n",
             "| model | damping set to 0 | structural index | differential index | strangeness mu (a, d) | "
             "algebraic (seed names) | I3 cond slope | u err I3 | u err I2 | u err I1 | u err DD |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, file, variants in CASES:
        p = load_problem(ROOT / "problems" / file)
        g = p.reference_spec.joint_guess
        for kinds in variants:
            model = undamped(p, kinds)
            r = structural_analysis(model, p.reference, "I3", g)
            mu = strangeness_analysis(model, p.reference, "I3", g)
            s = solves(model, p)
            lines.append(f"| {label} | {', '.join(kinds) or 'none (as given)'} | {r.structural_index} | "
                         f"{r.differential_index} | {mu.mu} ({mu.a}, {mu.d}) | {' '.join(r.algebraic_seed())} | "
                         f"{i3_slope(model, p):.2f} | " + " | ".join(s.get(f, "-") for f in ("I3", "I2", "I1", "DD"))
                         + " |")
    lines.append(NOTES)
    text = "\n".join(lines) + "\n"
    (ROOT / "results" / "zero_damping.md").write_text(text)
    print(text)


NOTES = """
## Findings

- The seed's remark is about the gear damping. In E12 the motor velocities x9, x10 enter the
  (u-free) link rows only through the gear damper d_g (qm' - qg'). With d_g = 0 they drop out,
  the motor velocities can only be reached through qm' = vm after one more differentiation of the
  link rows: structural and differential index 3 -> 4, strangeness index 2 -> 3, and the motor
  positions x4, x5 become algebraic too (a = 8, d = 2).
- Passive-joint damping does not change the index (E12 passive d = 0, and E1 whose only damper is
  the passive joint: E1 is driven directly, it has no gear).
- Numerically the extra index shows as one more power of 1/h in the unscaled Newton-matrix
  condition of the I3 form (slope 3.1 -> 4.0). Every form still converges at BDF-6, h = 1 ms, but
  the hand-made forms lose accuracy, the more the higher their index: torque error I3 2.8e-2 ->
  3.3e-1, I2 5.9e-3 -> 5.2e-2, I1 1.1e-3 -> 4.0e-3 (I1 is now index 2: the motor velocities need
  one more differentiation than eq. 34 provides). The automatic dummy-derivative system, built
  for the new structure, stays index 1 and keeps its accuracy (1.1e-3 -> 1.2e-3): damping
  "improves the solvability" (seed sec. 8) of the fixed forms, not of an index-1 reduction.
"""

if __name__ == "__main__":
    main()
