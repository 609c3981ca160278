"""The static equilibrium lives in ``ffopt.models.equilibrium``; this name is kept for the modules of ffopt/nlp."""

from ffopt.models.equilibrium import static_equilibrium

__all__ = ["static_equilibrium"]
