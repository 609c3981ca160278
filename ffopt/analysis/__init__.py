"""Analysis stage: strangeness index, zero dynamics (minimum phase?), eigenfrequencies along the path,
singularities of the inverse along a motion (decoupling matrix), BDF stability on the zeros.

The names below are loaded on first use (PEP 562): importing a light submodule such as
``ffopt.analysis.stability`` (method auto's order choice, on every plan) must not import SciPy's linear
algebra with ``ffopt.analysis.linear`` (0.14-0.27 s) when the zero analysis comes from the disk cache."""

from importlib import import_module

_EXPORTS = {
    "DecouplingReport": "decoupling", "decoupling_along": "decoupling",
    "FrequencyReport": "linear", "LinearModel": "linear", "ZeroDynamicsReport": "linear", "eigenfrequencies": "linear",
    "invariant_zeros": "linear", "linearize": "linear", "zero_dynamics": "linear",
    "AnalysisReport": "report", "analyze_problem": "report",
    "StrangenessReport": "strangeness", "strangeness_analysis": "strangeness", "strangeness_index": "strangeness",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"ffopt.analysis.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'ffopt.analysis' has no attribute {name!r}")
