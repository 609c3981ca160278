"""ffopt's MAT-file writer against SciPy's reader (an independent implementation of the format)."""

import numpy as np
import pytest
import scipy.io

from ffopt.io.matfile import write_mat


def test_matrices_vectors_strings_and_cells_read_back_with_scipy(tmp_path):
    rng = np.random.default_rng(0)
    u = rng.normal(size=(7, 3))
    t = np.linspace(0.0, 1.0, 7)
    path = tmp_path / "x.mat"
    write_mat(path, {"t": t, "u": u, "empty": np.zeros((0, 2)), "units": ["s", "N m", "µm", "rad/s"],
                     "none": [], "label": "E12 straight line", "odd_name_1": np.array([1.5])})
    d = scipy.io.loadmat(path)
    assert np.array_equal(d["t"], t.reshape(-1, 1)) and np.array_equal(d["u"], u)  # bit for bit, vectors as columns
    assert d["empty"].shape == (0, 2)
    assert [c[0] for c in d["units"][:, 0]] == ["s", "N m", "µm", "rad/s"]
    assert d["none"].shape == (0, 1) and d["label"][0] == "E12 straight line"
    assert d["odd_name_1"].shape == (1, 1) and d["odd_name_1"][0, 0] == 1.5
    assert open(path, "rb").read(10) == b"MATLAB 5.0"


def test_three_dimensional_arrays_and_lists_of_numbers_are_refused(tmp_path):
    with pytest.raises(ValueError, match="vectors or matrices"):
        write_mat(tmp_path / "x.mat", {"a": np.zeros((2, 2, 2))})
    with pytest.raises(ValueError, match="cell array of strings"):
        write_mat(tmp_path / "x.mat", {"a": [1.0, 2.0]})
