"""A MATLAB level-5 MAT-file writer for what ffopt writes: double matrices and cell columns of strings.

``scipy.io.savemat`` writes the same files, but importing ``scipy.io`` costs 0.15-0.5 s, a third of
a whole ``ffopt plan`` of E12 (target: plan under a second), for ~40 lines of a documented format
(MathWorks, "MAT-File Format", level 5): a 128-byte header, then one miMATRIX element per variable
(array flags, dimensions, name, data), every element padded to 8 bytes. The tests read the files
back with ``scipy.io.loadmat``.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

_MI_INT8, _MI_INT32, _MI_UINT32, _MI_DOUBLE, _MI_MATRIX, _MI_UTF16 = 1, 5, 6, 9, 14, 17
_MX_CELL, _MX_CHAR, _MX_DOUBLE = 1, 4, 6


def _element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * (-len(payload) % 8)


def _matrix(name: str, mx_class: int, dims: tuple[int, ...], data: bytes) -> bytes:
    flags = _element(_MI_UINT32, struct.pack("<II", mx_class, 0))
    shape = _element(_MI_INT32, struct.pack(f"<{len(dims)}i", *dims))
    return _element(_MI_MATRIX, flags + shape + _element(_MI_INT8, name.encode("ascii")) + data)


def _variable(name: str, value) -> bytes:
    if isinstance(value, str):  # a char row vector (UTF-16 code units, as MATLAB stores char)
        data = value.encode("utf-16-le")
        return _matrix(name, _MX_CHAR, (1, len(data) // 2), _element(_MI_UTF16, data))
    if isinstance(value, (list, tuple)):  # a column cell array of strings
        if not all(isinstance(s, str) for s in value):
            raise ValueError(f"{name}: a list becomes a cell array of strings; give numbers as an array")
        return _matrix(name, _MX_CELL, (len(value), 1), b"".join(_variable("", s) for s in value))
    a = np.asarray(value, dtype="<f8")
    a = a.reshape(-1, 1) if a.ndim == 1 else a  # vectors as columns
    if a.ndim != 2:
        raise ValueError(f"{name}: MAT variables here are vectors or matrices, got shape {a.shape}")
    return _matrix(name, _MX_DOUBLE, a.shape, _element(_MI_DOUBLE, a.tobytes(order="F")))


def write_mat(path: str | Path, variables: dict) -> None:
    """Write ``variables`` {name: float array (vector -> column) | str | list of str (cell column)}."""
    header = b"MATLAB 5.0 MAT-file, written by ffopt".ljust(116, b" ") + b"\0" * 8 + struct.pack("<H", 0x0100) + b"IM"
    with open(path, "wb") as f:
        f.write(header)
        for name, value in variables.items():
            f.write(_variable(name, value))
