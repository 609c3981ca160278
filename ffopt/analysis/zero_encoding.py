"""The one JSON form of the zeros along a path (``ffopt.analysis.linear.zero_dynamics``), as the disk cache
keeps them (``ffopt.cache.on_disk``): per path time a list of [real, imaginary] pairs. Light: no SciPy, so a plan
that reads its zeros from the cache does not import the linear analysis."""

from __future__ import annotations

import numpy as np


def encode_zeros(times, zeros) -> dict:
    """{"times": [...], "zeros": [[[re, im], ...] per time]} of the zeros ``zeros`` (one array per time)."""
    return {"times": [float(t) for t in times],
            "zeros": [[[float(z.real), float(z.imag)] for z in np.asarray(zs, complex)] for zs in zeros]}


def decode_zeros(saved: dict) -> tuple[list, list[np.ndarray]]:
    """(times, zeros per time as complex arrays) of ``encode_zeros``'s form."""
    return saved["times"], [np.array([complex(re, im) for re, im in zs], complex) for zs in saved["zeros"]]
