"""The analysis stage in one call: model summary, indices, eigenfrequencies, zero dynamics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ffopt.analysis.linear import (FrequencyReport, ZeroDynamicsReport, eigenfrequencies, equilibrium_path,
                                   zero_dynamics)
from ffopt.analysis.strangeness import StrangenessReport, strangeness_analysis


@dataclass
class AnalysisReport:
    problem: str
    model: dict
    strangeness: StrangenessReport
    structural: object | None  # ffopt.analysis.structural.StructuralReport when that module exists
    frequencies: FrequencyReport
    zero_dynamics: ZeroDynamicsReport

    def to_dict(self) -> dict:
        return {
            "problem": self.problem,
            "model": self.model,
            "strangeness": self.strangeness.to_dict(),
            "structural": self.structural.to_dict() if self.structural is not None else None,
            "eigenfrequencies": self.frequencies.to_dict(),
            "zero_dynamics": self.zero_dynamics.to_dict(),
        }

    def text(self) -> str:
        m = self.model
        lines = [
            f"{self.problem}",
            f"  model: {m['nq']} coordinates {m['coordinates']}; actuated {m['actuated']} "
            f"(elastic gear {m['elastic_gear']}, direct {m['direct']}), passive {m['passive']}; "
            f"outputs {m['outputs']}",
            f"  input: {m['input']}",
            f"  inverse DAE (I3, {m['dae_rows']}): {self.strangeness.summary()}",
        ]
        if self.structural is not None:
            lines.append("  structural analysis:")
            lines.extend("    " + row for row in str(self.structural.table()).splitlines())
        else:
            lines.append("  structural analysis: not available (ffopt.analysis.structural missing)")
        fr = self.frequencies
        lines.append(f"  eigenfrequencies along the path ({len(fr.times)} points, {fr.operating_point}):")
        for c in fr.conditions:
            low = fr.lowest_undamped_hz[c]
            extra = f"; {int(np.max(fr.n_unstable[c]))} unstable (negative-stiffness) mode(s)" \
                if np.max(fr.n_unstable[c]) else ""
            lines.append(f"    {_CONDITION_TEXT[c]:<30s} lowest {np.nanmin(low):.3f} .. {np.nanmax(low):.3f} Hz "
                         f"(damped {fr.minimum(c, damped=True):.3f} Hz){extra}")
            lines.append(f"    {'':30s} modes along the path: {mode_ranges(fr.all_undamped_hz[c])}")
        lines.append(f"  zero dynamics: {self.zero_dynamics.summary()}")
        return "\n".join(lines)


def mode_ranges(per_point: list, n_modes: int = 4) -> str:
    """'11.0 .. 11.2 (mean 11.1), ...' Hz: each undamped mode's range and mean over the path points."""
    n = min(n_modes, min((len(f) for f in per_point), default=0))
    if n == 0:
        return "none"
    f = np.array([np.asarray(p)[:n] for p in per_point])
    return ", ".join(f"{lo:.2f} .. {hi:.2f} (mean {m:.2f})" for lo, hi, m in zip(f.min(0), f.max(0), f.mean(0))) + \
        " Hz"


_CONDITION_TEXT = {"clamped": "motors clamped:", "free": "motors free (u = 0):", "pd": "motor PD loop:"}


def model_summary(model, reference=None, guess=None, time_law=None) -> dict:
    L = model.layout
    names = model.coordinate_names()
    joint = lambda idx: [names[i] for i in idx]  # noqa: E731
    out = {"name": model.name, "nq": L.nq, "coordinates": names, "actuated": joint(L.actuated),
           "elastic_gear": joint(L.gear), "direct": joint(L.direct), "passive": joint(L.passive),
           "motors": names[L.n_link:], "outputs": list(model.outputs), "input_unit": model.input_unit,
           "drive_states": model.drive_state_names(),
           "dae_rows": "motor equations removed" if model.drives is None else
           "motor equations as drive rows in the currents, armature circuits removed"}
    text = f"{model.input_kind} [{model.input_unit}]" + (" (DC-motor electrics: armature currents "
                                                          f"{out['drive_states']} are states)" if model.drives else "")
    if reference is not None:
        from ffopt.analysis.linear import input_derivative_order

        r = input_derivative_order(model, reference, guess)
        out["input_derivative_order"] = r
        if r is not None:
            text += f"; needs derivative {r} of the path (relative degree)"
            if time_law is not None:
                from ffopt.reference.time_laws import get_time_law

                law = get_time_law(time_law)
                n = law.n_zero_derivs
                effect = "continuous" if n >= r else "jumps there" if n == r - 1 else "holds impulses there"
                text += f"; time law {law.name} is C^{n} at the rests: the input {effect}"
    out["input"] = text
    return out


def _structural(model, reference, guess):
    try:
        from ffopt.analysis.structural import structural_analysis
    except ImportError:
        return None
    return structural_analysis(model, reference, form="I3", qa_guess=guess)


def analyze_problem(problem, n_points: int = 41, frequency_points: int = 21) -> AnalysisReport:
    """Run every analysis on a Problem. Eigenfrequencies: clamped, free, and under the problem's
    verification PD loop (gains from ffopt.sim.plant.pd_gains at the start of the path)."""
    from ffopt.sim.plant import pd_gains

    model, ref = problem.model, problem.reference
    guess = problem.reference_spec.joint_guess
    q0 = equilibrium_path(model, ref, np.array([0.0]), guess)[0]
    ver = problem.verification
    gains = pd_gains(model, q0, ver.pd_bandwidth_hz, ver.pd_damping_ratio)
    return AnalysisReport(
        problem=problem.name,
        model=model_summary(model, ref, guess, problem.reference_spec.law),
        strangeness=strangeness_analysis(model, ref, "I3", guess),
        structural=_structural(model, ref, guess),
        frequencies=eigenfrequencies(model, ref, guess, frequency_points, pd_gains=gains),
        zero_dynamics=zero_dynamics(model, ref, guess, n_points),
    )
