"""The gear stiffnesses of problems/jankowski_2link.toml, fitted to the paper's frequencies.

Jankowski & Van Brussel (discrete-time inverse dynamics control of flexible joint robots) quote
"natural frequencies of the robotic system calculated along the desired trajectory approximately
equal to 11.1 Hz and 22.5 Hz" and no parameters. Every other parameter of the problem file is
chosen for a lab-size arm (see its comments); this script fits the two arm-side gear stiffnesses
K1, K2 so that the two natural frequencies of the arm linearised at static equilibria along the path
with the motors clamped (ffopt.analysis.linear.eigenfrequencies, condition "clamped", 21 points),
averaged over the path, are 11.1 and 22.5 Hz: a least-squares fit in log K (SciPy).

    python results/jankowski/parameters.py          # prints the fit; paste K1, K2 into the problem file
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

import ffopt
from ffopt.analysis.linear import eigenfrequencies

TARGET_HZ = np.array([11.1, 22.5])
PROBLEM = Path(__file__).resolve().parents[2] / "problems" / "jankowski_2link.toml"


def clamped_modes(problem, k1: float, k2: float) -> np.ndarray:
    """(21, 2) clamped-motor frequencies (Hz) along the path for gear stiffnesses k1, k2."""
    p = problem.with_values({"model.joints.q1.stiffness": float(k1), "model.joints.q2.stiffness": float(k2)})
    fr = eigenfrequencies(p.model, p.reference, p.reference_spec.joint_guess, 21, conditions=("clamped",))
    return np.array([f[:2] for f in fr.all_undamped_hz["clamped"]])


def fit(problem) -> tuple[float, float, np.ndarray]:
    res = least_squares(lambda lk: clamped_modes(problem, *np.exp(lk)).mean(axis=0) / TARGET_HZ - 1.0,
                        np.log([1.0e4, 3.0e3]), xtol=1e-12, ftol=1e-12)
    k1, k2 = np.exp(res.x)
    return float(k1), float(k2), clamped_modes(problem, k1, k2)


if __name__ == "__main__":
    problem = ffopt.load_problem(PROBLEM)
    k1, k2, modes = fit(problem)
    print(f"K1 = {k1:.6g} N m/rad, K2 = {k2:.6g} N m/rad (arm side)")
    for j, name in enumerate(("first", "second")):
        f = modes[:, j]
        print(f"{name} clamped-motor mode along the path: {f.min():.3f} .. {f.max():.3f} Hz, mean {f.mean():.3f} Hz")
