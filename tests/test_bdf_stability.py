"""Stability of BDF-k on the zero dynamics (ffopt.analysis.stability) against known facts.

BDF-1 and -2 are A-stable; BDF-3..6 are A(alpha)-stable with alpha = 86.03, 73.35, 51.84, 17.84
degrees (Hairer & Wanner, Solving ODEs II, sec. V.2); a lightly damped zero at h z = -0.18 + 1.9j
(a stiff passive joint, z = -182 + 1900j rad/s at h = 1 ms) is stable for BDF-1..3 only, BDF-6's
largest root being 1.45.
"""

from __future__ import annotations

import numpy as np
import pytest

from ffopt.analysis.stability import (A_ALPHA_DEG, OrderChoice, bdf_root_modulus, bdf_stable, choose_order,
                                      growth_margin, highest_stable_order, stable_orders)

RADII = np.logspace(-4, 4, 3000)
# BDF-k's coefficients alpha_0..alpha_k (sum_l alpha_l y_(i-l) = h f_i), written out (Hairer & Wanner, sec. III.1)
BDF_ALPHAS = {4: [25 / 12, -4, 3, -4 / 3, 1 / 4], 6: [147 / 60, -6, 15 / 2, -20 / 3, 15 / 4, -6 / 5, 1 / 6]}


def _largest_root(order: int, hz: complex) -> float:
    """Independent of ffopt: the largest root of (alpha_0 - h z) r^k + alpha_1 r^(k-1) + ... + alpha_k."""
    alphas = BDF_ALPHAS[order]
    return float(max(abs(np.roots([alphas[0] - hz, *alphas[1:]]))))


def _ray(angle_deg: float) -> np.ndarray:
    """Points h lambda on the ray at angle_deg from the negative real axis (upper half plane)."""
    return -RADII * np.exp(-1j * np.deg2rad(angle_deg))


def test_the_issue_numbers():
    hz = -0.182 + 1.9j
    assert _largest_root(6, hz) == pytest.approx(1.45, abs=0.005)  # the number of the module docstring
    assert bdf_root_modulus(6, hz) == pytest.approx(_largest_root(6, hz), rel=1e-12)  # the same roots, rounding
    # |arg(-h z)| = 84.5 deg: inside BDF-3's sector (86.03 deg), outside BDF-4's (73.35; Hairer & Wanner)
    assert [bdf_stable(k, hz) for k in range(1, 7)] == [True, True, True, False, False, False]
    assert highest_stable_order([-182 + 1900j, -182 - 1900j], 1e-3, 6) == 3
    assert highest_stable_order([-182 + 1900j], 1e-3, 2) == 2  # never above the requested order


def test_bdf1_and_bdf2_are_a_stable():
    rng = np.random.default_rng(0)
    hz = -10 ** rng.uniform(-6, 6, 5000) * np.exp(1j * rng.uniform(-np.pi / 2 + 1e-9, np.pi / 2 - 1e-9, 5000))
    for k in (1, 2):
        assert np.all(bdf_stable(k, hz))
        assert not bdf_stable(k, 0.5)  # inside the instability region right of the origin


@pytest.mark.parametrize("order", [3, 4, 5, 6])
def test_a_alpha_angles(order):
    """Every point of a ray 0.05 degrees inside the published sector is stable; a ray 0.05 degrees
    outside has unstable points (the instability region is bounded: far out the ray is stable again)."""
    alpha = A_ALPHA_DEG[order]
    assert np.all(bdf_stable(order, _ray(alpha - 0.05)))
    outside = bdf_stable(order, _ray(alpha + 0.05))
    assert not np.all(outside) and outside[-1] and outside[0] is not False


@pytest.mark.parametrize("order", [3, 4, 5, 6])
def test_bdf3_to_6_are_not_a_stable_and_damp_fast_modes(order):
    assert not bdf_stable(order, -1e-3 + 1.0j)  # next to the imaginary axis
    assert bdf_stable(order, -1e3 + 1e3j)  # far out in the left half plane
    assert bdf_stable(order, 300.0)  # an unstable zero BDF cannot resolve is damped (root -> 0)


def test_the_margin_tolerates_a_bounded_growth_over_the_path():
    assert growth_margin(1000, 10.0) == pytest.approx(10 ** (1 / 1000) - 1)  # (1 + m)^1000 = 10: 10x over 1000 steps
    undamped = 1j * 0.05  # BDF-3 on an undamped zero at h |z| = 0.05: |root| = 1 + 2e-6
    assert not bdf_stable(3, undamped) and bdf_stable(3, undamped, growth_margin(1000))
    assert not bdf_stable(6, -0.182 + 1.9j, growth_margin(1000))


def test_stable_orders_and_the_choice_along_a_path():
    zeros = [np.array([-300.0, -20 + 5j, -20 - 5j]), np.array([-182 + 1900j, -182 - 1900j, -300.0])]
    assert stable_orders(zeros[0], 1e-3) == [1, 2, 3, 4, 5, 6]  # |arg(-z)| <= 14 deg < 17.84 deg (BDF-6's alpha)
    assert stable_orders(np.concatenate(zeros), 1e-3) == [1, 2, 3]
    choice = choose_order([0.0, 0.4], zeros, 6, 1e-3)
    assert (choice.order, choice.step, choice.limiting_time) == (3, 1e-3, 0.4)
    assert choice.limiting_zero == pytest.approx(-182 + 1900j)
    assert choice.root_modulus == pytest.approx(_largest_root(4, -0.182 + 1.9j), rel=1e-12)  # 1.12, as in the reason
    assert choice.reason().startswith("BDF-4..6 unstable on the zero -182+1900j rad/s at t = 0.4 s: h z = "
                                      "-0.182+1.9j at h = 1 ms (largest root of BDF-4: 1.12), so BDF-3")
    assert choose_order([0.0], [np.array([-300.0])], 6, 1e-3) == OrderChoice(6, 1e-3, 6, 1e-3, None, None, None, 0.0)


@pytest.mark.parametrize("hz", [0.5, 1.5, 0.3 + 0.5j, 1e-3 + 0.04j])
def test_where_no_order_is_stable_no_smaller_step_is_either(hz):
    """No order stable at h z means BDF-1 unstable: h z inside the disk |1 - h z| < 1, which holds the
    segment from 0 to h z; so h/2, h/4, ... do not help (why method auto goes to the NLP instead)."""
    z = hz / 1e-3
    assert highest_stable_order([z], 1e-3) is None
    for divisor in (2, 4, 8, 100):
        assert highest_stable_order([z], 1e-3 / divisor) is None
    choice = choose_order([0.1], [np.array([z])], 6, 1e-3)
    assert choice.order is None and choice.reason().startswith(f"no BDF order is stable on the zero {z.real:.4g}")
