"""perfmodel.gamma_cdf: the gamma CDF in numpy, against closed forms and against scipy.special.gammainc."""

import math

import numpy as np
import pytest
from scipy import special

import perfmodel.stragglers as stragglers
from perfmodel.gamma_cdf import NUMPY_MAX_SHAPE, gammainc
from perfmodel.specs import SpecError


def test_closed_forms():
    """P(1, x) = 1 - e^-x (the exponential); P(2, x) = 1 - e^-x (1 + x); P(1/2, x) = erf(sqrt(x))."""
    x = np.array([0.0, 1e-8, 0.3, 1.0, 1.5, 2.0, 3.0, 7.5, 40.0])
    assert gammainc(1.0, x) == pytest.approx(1 - np.exp(-x), abs=1e-15)
    assert gammainc(2.0, x) == pytest.approx(1 - np.exp(-x) * (1 + x), abs=1e-15)
    assert gammainc(0.5, x) == pytest.approx([math.erf(math.sqrt(v)) for v in x], abs=1e-15)


@pytest.mark.parametrize("a", [1.0, 2.7, 25.0, 100.0, 1 / 0.05**2, 1 / stragglers.GPU_VARIABILITY_CV**2, 9000.0])
def test_agrees_with_scipy_on_both_sides_of_the_switch(a):
    """The series (x < a + 1) and the continued fraction (x >= a + 1) both, on the straggler grid's span
    (0 to 12 means) and close around the mean, where each needs the most terms."""
    x = np.concatenate([np.linspace(0.0, 12.0 * a, 6001), a * (1 + np.linspace(-0.05, 0.05, 101)), [a + 1.0]])
    got = gammainc(a, x)
    assert np.max(np.abs(got - special.gammainc(a, x))) < 1e-11
    assert np.all(np.diff(gammainc(a, np.sort(x))) >= -1e-11)  # a CDF never falls, but for rounding


def test_edges_and_scalars():
    assert gammainc(3.0, np.inf) == 1.0 and gammainc(3.0, 0.0) == 0.0
    assert gammainc(3.0, 2.0).shape == () and gammainc(3.0, [[1.0, 2.0]]).shape == (1, 2)
    assert float(gammainc(3.0, 2.0)) == pytest.approx(1 - math.exp(-2) * (1 + 2 + 2), abs=1e-15)  # P(3, 2)


def test_large_shapes_go_to_scipy():
    """Beyond NUMPY_MAX_SHAPE (a coefficient of variation below 0.01) the series would need thousands of
    terms; scipy computes those, to its own digits."""
    a = 4 * NUMPY_MAX_SHAPE
    x = a * np.array([0.98, 1.0, 1.02])
    assert np.array_equal(gammainc(a, x), special.gammainc(a, x))


@pytest.mark.parametrize("a,x", [(0.0, 1.0), (-1.0, 1.0), (math.inf, 1.0), (math.nan, 1.0), (2.0, -0.1),
                                 (2.0, math.nan)])
def test_bad_values_raise_the_package_error(a, x):
    with pytest.raises(SpecError):
        gammainc(a, x)


def test_the_straggler_slowdown_is_unchanged_by_the_numpy_cdf(monkeypatch):
    """sync_slowdown through perfmodel.gamma_cdf equals sync_slowdown through scipy.special.gammainc."""
    w = np.array([1, 2, 3, 8, 64, 512, 4096])
    models = [stragglers.CVB(1.0, 0.0, cv) for cv in (stragglers.GPU_VARIABILITY_CV, 0.03, 0.1, 0.5, 1.0)]
    models.append(stragglers.CVB(1.0, 0.2, 0.0, heterogeneous=True))

    def fresh() -> list[np.ndarray]:
        stragglers._slowdown_of_counts.cache_clear()
        stragglers._grid_cdf.cache_clear()
        return [stragglers.sync_slowdown(w, m) for m in models]

    ours = fresh()
    monkeypatch.setattr(stragglers, "gammainc", lambda a, x: special.gammainc(a, np.asarray(x, dtype=float)))
    theirs = fresh()
    stragglers._slowdown_of_counts.cache_clear()
    stragglers._grid_cdf.cache_clear()
    for a, b in zip(ours, theirs):
        assert np.max(np.abs(a - b)) < 1e-12
    assert ours[0][-2] == pytest.approx(1.0457, abs=1e-4)  # the GPU variability term at 512 GPUs (stragglers.py)
