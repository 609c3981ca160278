"""Settings of the inverse dynamics by BDF (``ffopt.dae.inverse.solve_inverse_bdf``). A problem's
``SolverSettings`` (its [solver] table) has the same four fields and serves as well."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BdfSettings:
    """order k of the BDF (1..6), step h (s), the DAE form ("I3", "I2", "I1": ``ffopt.dae.forms``) and the power p of
    the Newton rows' scaling h^p (None: the form's default)."""
    order: int = 6
    step: float = 1e-3
    form: str = "I3"
    scaling_power: float | None = None
