"""Kane, Ryan & Banerjee's spin-up: a cantilever beam on a hub turned from rest to 6 rad/s in 15 s.

Kane, Ryan & Banerjee, dynamics of a cantilever beam attached to a moving base (J. Guidance, Control and
Dynamics, 1987): a uniform beam (length 10 m, mass per length 1.2 kg/m, bending stiffness EI = 1.4e4 N m^2; first
clamped frequency 3.8 rad/s) clamped to a hub that turns along

    theta(t) = (Omega / T) (t^2 / 2 + (T / 2 pi)^2 (cos(2 pi t / T) - 1))   for t < T,
    theta(t) = Omega (t - T / 2)                                           after,

Omega = 6 rad/s, T = 15 s. The spin rate passes the beam's first frequency: a model linear in its modal
coordinates (``flexible.kinematics = "linear"``, Mohan & Saha's) has no geometric stiffening, its effective
stiffness turns negative, and its tip deflection diverges; the real beam, stiffened by the centrifugal tension,
stays bounded. Compared here: ffopt's assumed-mode link with linear and with second-order kinematics (the
foreshortening, ``ffopt.models.flexible_links``) against the geometrically exact beam of
``ffopt.models.beam_chain`` (rigid segments, converged in their count), all driven by the prescribed hub law
(``ffopt.sim.prescribed``). Tip deflection: transverse, in the hub's rotating frame.

    python results/spin_up.py            # writes results/spin_up.md
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import casadi as ca
import numpy as np

from ffopt.models.beam_chain import link_bending, segmented_beam_model
from ffopt.models.chain import Body, Chain, Joint
from ffopt.models.flexible_links import FlexibleLink, FlexibleLinkModel
from ffopt.sim.prescribed import simulate_prescribed

LENGTH, EI, MASS_PER_LENGTH = 10.0, 1.4e4, 1.2  # Kane, Ryan & Banerjee's beam
SPIN_RATE, SPIN_UP_TIME = 6.0, 15.0  # rad/s, s


def hub_law(t, rate: float = SPIN_RATE, duration: float = SPIN_UP_TIME):
    """Kane, Ryan & Banerjee's spin-up law theta(t) (a CasADi expression of t)."""
    ramp = rate / duration * (t**2 / 2 + (duration / (2 * np.pi)) ** 2 * (ca.cos(2 * np.pi * t / duration) - 1))
    return ca.if_else(t < duration, ramp, rate * (t - duration / 2))


def beam_on_hub(modes: int, kinematics: str, static_shapes: bool = True) -> FlexibleLinkModel:
    """The beam clamped to a hub turning about z (no gravity), as an assumed-mode link."""
    hub = Joint("hub", "direct", np.array([0.0, 0.0, 1.0]), np.zeros(3), Body(0.0, np.zeros(3), np.zeros((3, 3))))
    chain = Chain((hub,), tool_origin=np.array([LENGTH, 0.0, 0.0]))
    link = FlexibleLink(0, modes, EI, LENGTH, MASS_PER_LENGTH * LENGTH, static_correction=static_shapes,
                        kinematics=kinematics)
    return FlexibleLinkModel(chain, [link], ("hub",), "Kane beam")


def tip_deflection(model, t, segments: int | None = None) -> tuple[np.ndarray, float]:
    """(tip deflection in the rotating frame on the grid t, wall time): the assumed-mode model itself, or its
    exact beam of ``segments`` rigid segments."""
    tic = time.perf_counter()
    if segments is None:
        q = simulate_prescribed(model, {0: hub_law}, t)
        w = np.array(model.link_bending.map(len(t))(q.T)).T[:, 0]
    else:
        beam = segmented_beam_model(model, segments)
        q = simulate_prescribed(beam, {0: hub_law}, t)
        w = np.array(link_bending(beam, model, segments).map(len(t))(q.T)).T[:, 0]
    return w, time.perf_counter() - tic


def study(t_end: float = 20.0, modes: int = 4, segments=(8, 16, 32)) -> dict:
    t = np.linspace(0.0, t_end, int(round(t_end / 0.05)) + 1)
    runs = {}
    for kin in ("linear", "second_order"):
        runs[f"{modes} modes, {kin.replace('_', '-')} kinematics"] = tip_deflection(beam_on_hub(modes, kin), t)
    for K in segments:
        runs[f"exact beam, {K} rigid segments"] = tip_deflection(beam_on_hub(modes, "linear"), t, K)
    return {"t": t, "runs": runs, "reference": f"exact beam, {segments[-1]} rigid segments",
            "coarser": f"exact beam, {segments[-2]} rigid segments", "segments": segments}


def table(result: dict) -> list[str]:
    """Rows against the exact beam extrapolated from its two finest segment counts (Richardson, 1 / K^2)."""
    t, runs = result["t"], dict(result["runs"])
    ref = (4 * runs[result["reference"]][0] - runs[result["coarser"]][0]) / 3
    runs[f"exact beam extrapolated from {result['segments'][-2]} and {result['segments'][-1]} segments "
         "(the reference)"] = (ref, float("nan"))
    peak = np.abs(ref).max()
    rows = ["| model | peak tip deflection [m] | at t = 15 s [m] | at t = 20 s [m] | largest difference from "
            "the reference [% of its peak] | wall [s] |", "|---|---|---|---|---|---|"]
    k15 = int(np.argmin(np.abs(t - 15.0)))
    for name, (w, wall) in runs.items():
        finite = np.isfinite(w)
        if not finite.all():  # diverged: where, and how far it got
            k = int(np.argmin(finite))
            rows.append(f"| {name} | diverged: {np.abs(w[:k]).max():.3g} at t = {t[k - 1]:.3g} s, then unbounded | - | - "
                        f"| - | {wall:.1f} |")
            continue
        diff = 100 * np.abs(w - ref).max() / peak
        rows.append(f"| {name} | {np.abs(w).max():.4g} | {w[k15]:.4g} | {w[-1]:.4g} | {diff:.3g} | "
                    f"{'-' if np.isnan(wall) else format(wall, '.1f')} |")
    return rows


def main(out: Path = Path(__file__).with_name("spin_up.md")):
    result = study()
    text = ["# Kane, Ryan & Banerjee's spin-up: linear, second-order and exact beams", "",
            "`python results/spin_up.py`. A 10 m beam (1.2 kg/m, EI 1.4e4 N m^2, first clamped frequency 3.8 rad/s) on a "
            "hub spun up to 6 rad/s in 15 s (Kane, Ryan & Banerjee, dynamics of a cantilever beam attached to a moving "
            "base, 1987); tip deflection transverse to the hub's rotating frame. Assumed modes: 4 (2 clamped-free "
            "modes and the static shapes); prescribed hub motion, CVODES at rtol 1e-8.", "", *table(result), "",
            "The linear model diverges once the spin rate passes the beam's first frequency (no geometric "
            "stiffening: its effective stiffness turns negative); the second-order model follows the exact beam, "
            "which converges in its segment count like 1 / K^2 (the reference is its extrapolation). This is Kane, "
            "Ryan & Banerjee's finding: the conventional (linear) model's tip deflection grows without bound, a "
            "model with the geometric stiffening stays bounded and returns towards zero as the spin rate levels "
            "off. `tests/test_exact_beam.py` checks the 2 % target on a 0.1 s grid.", "",
            f"_Generated {time.strftime('%Y-%m-%d')} on {sys.platform}, Python {sys.version.split()[0]}, load "
            f"{os.getloadavg()[0]:.1f} (wall times on a shared 2-core machine)._"]
    out.write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
