"""The regularized lower incomplete gamma function P(a, x), the gamma distribution's CDF, in numpy.

    P(a, x) = gamma(a, x) / Gamma(a) = (1 / Gamma(a)) * integral_0^x t^(a-1) e^(-t) dt

The CDF of a gamma time of shape a and scale s at t is P(a, t / s). Two expansions (Press et al.,
Numerical Recipes, 3rd ed., section 6.2), each used where it converges fast:

    x < a + 1:   P = e^(-x) x^a / Gamma(a) * sum_{n>=0} x^n / (a (a+1) ... (a+n))                 (series)
    x >= a + 1:  Q = 1 - P = e^(-x) x^a / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...)))
                                                                 (continued fraction, modified Lentz)

Both need about sqrt(a) terms near x = a and fewer elsewhere, so shapes above NUMPY_MAX_SHAPE (a
coefficient of variation below 0.01) go to ``scipy.special.gammainc`` instead, imported then. The
prefactor is formed in logarithms: against scipy the absolute difference is below 4e-14 for shapes up
to 100 and 5e-12 at 4,556, the shape of the GPU variability term (tests/test_gamma_cdf.py). It exists
because importing scipy.special costs `perfmodel predict` about 0.35 s of its start
(benchmarks/cli_start.py).
"""

from __future__ import annotations

import math

import numpy as np

from .specs import SpecError

_EPS = float(np.finfo(float).eps)  # stop when a term changes the result by less than this, relatively
_TINY = 1e-300  # Lentz's guard against a zero denominator
_MAX_TERMS = 10_000  # about 9 sqrt(a) terms suffice: 900 at NUMPY_MAX_SHAPE
NUMPY_MAX_SHAPE = 1e4
"""The largest shape computed here (about 25 ms for 6,001 points at 4,556); beyond it, scipy.special."""


def gammainc(a: float, x: np.ndarray | float) -> np.ndarray:
    """P(a, x) for one shape a > 0 and any array of x >= 0 (x = inf gives 1); dimensionless."""
    if not (a > 0 and math.isfinite(a)):
        raise SpecError(f"gamma shape must be a finite number > 0, got {a!r}")
    x = np.asarray(x, dtype=float)
    if np.any(np.isnan(x)) or np.any(x < 0):
        raise SpecError("the gamma CDF needs x >= 0")
    if a > NUMPY_MAX_SHAPE:
        from scipy import special

        return special.gammainc(a, x)
    out = np.zeros(x.shape)
    low = (x > 0) & (x < a + 1.0)
    high = (x >= a + 1.0) & np.isfinite(x)
    out[np.isinf(x)] = 1.0
    if low.any():
        out[low] = _series(a, x[low])
    if high.any():
        out[high] = 1.0 - _continued_fraction(a, x[high])
    return out


def _log_prefactor(a: float, x: np.ndarray) -> np.ndarray:
    """log(e^(-x) x^a / Gamma(a))."""
    return a * np.log(x) - x - math.lgamma(a)


def _series(a: float, x: np.ndarray) -> np.ndarray:
    """P(a, x) by its series, for 0 < x < a + 1."""
    term = np.full(x.shape, 1.0 / a)
    total = term.copy()
    denom = a
    for _ in range(_MAX_TERMS):
        denom += 1.0
        term *= x / denom
        total += term
        if np.all(np.abs(term) < np.abs(total) * _EPS):
            break
    return np.minimum(total * np.exp(_log_prefactor(a, x)), 1.0)


def _continued_fraction(a: float, x: np.ndarray) -> np.ndarray:
    """Q(a, x) = 1 - P(a, x) by its continued fraction, for x >= a + 1."""
    b = x + 1.0 - a
    c = np.full(x.shape, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    done = np.zeros(x.shape, dtype=bool)  # sticky: rounding makes a converged factor jitter by an ulp or two
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        done |= np.abs(delta - 1.0) <= _EPS
        if done.all():
            break
    return np.clip(np.exp(_log_prefactor(a, x)) * h, 0.0, 1.0)
