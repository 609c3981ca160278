"""ffopt: feedforward planning for flexible robot arms.

    import ffopt
    problem = ffopt.load_problem("problems/e12_line.toml")
    result = ffopt.plan(problem, order=6, step=1e-3)
    result.trajectory.u          # motor torques (n, N), N m
    result.verification.to_dict()
    result.save("out/e12")

Scripts and notebooks: ``problem.with_values({...})`` (fields by dotted name), ``ffopt.problem_from_dict``,
``result.to_dataframe()``, ``result.verification_dataframe()``, ``result.plot_torques()``,
``result.simulation_dataframe(case)``, ``ffopt.load_plan(folder)``, ``ffopt.analyze(problem)``; sweeps: ``ffopt.sweep``;
a saved plan on another plant or controller:
``ffopt.simulate(problem, "out/e12", values={"model.joints.q3.stiffness": 8e4}, controller="pd+state")``.
"""

from ffopt._version import __version__
from ffopt.errors import FfoptError, PathError, ProblemError, SolverError, VerificationError
from ffopt.io.problem import Problem, load_problem, problem_from_dict
from ffopt.io.saved import SavedPlan, load_plan
from ffopt.plan import PlanResult, plan
from ffopt.closed_loop import SimulationResult, simulate


def analyze(problem, n_points: int = 41, frequency_points: int = 21):
    """``ffopt analyze`` from Python: strangeness and structural index, eigenfrequencies along the path
    and the zero dynamics (minimum phase or not) of a Problem or problem file. Returns an
    ``AnalysisReport`` (``.to_dict()``: the JSON of ``ffopt analyze --json``; ``.text()``: its report)."""
    from ffopt.analysis.report import analyze_problem

    return analyze_problem(problem if isinstance(problem, Problem) else load_problem(problem), n_points,
                           frequency_points)


__all__ = ["load_problem", "problem_from_dict", "plan", "load_plan", "analyze", "simulate", "Problem", "PlanResult",
           "SavedPlan", "SimulationResult",
           "FfoptError", "ProblemError", "PathError", "SolverError", "VerificationError", "__version__"]
