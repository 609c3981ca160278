"""Analysis stage: strangeness index, zero dynamics (minimum phase?), eigenfrequencies along the path,
singularities of the inverse along a motion (decoupling matrix)."""

from ffopt.analysis.decoupling import DecouplingReport, decoupling_along
from ffopt.analysis.linear import (FrequencyReport, LinearModel, ZeroDynamicsReport, eigenfrequencies,
                                   invariant_zeros, linearize, zero_dynamics)
from ffopt.analysis.report import AnalysisReport, analyze_problem
from ffopt.analysis.strangeness import StrangenessReport, strangeness_analysis, strangeness_index

__all__ = ["AnalysisReport", "DecouplingReport", "FrequencyReport", "LinearModel", "StrangenessReport",
           "ZeroDynamicsReport", "analyze_problem", "decoupling_along", "eigenfrequencies", "invariant_zeros",
           "linearize", "strangeness_analysis", "strangeness_index", "zero_dynamics"]
