"""Per-batch execution times from the gamma CVB model (Ali et al., as used by the Gap-Aware paper).

A coefficient of variation V gives the gamma shape a = 1/V^2. Homogeneous workers: one mean
q ~ Gamma(a_task, mu/a_task) for all machines, every task ~ Gamma(a_mach, q/a_mach). Heterogeneous: each
machine j has its own mean p_j ~ Gamma(a_mach, mu/a_mach), each task on j ~ Gamma(a_task, p_j/a_task).
(docs/model.md section 6; V_task 0.1, V_mach 0.1 homogeneous or 0.6 heterogeneous.)

Synchronous SGD waits for the slowest of W workers every step; asynchronous workers never wait, so each
machine contributes at its own rate. Both expectations are computed here without sampling, and the
sampler the simulators use lives here too so that the model and the simulations share one definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .gamma_cdf import gammainc
from .specs import SpecError

# Spread of one GPU model's speed across the chips of a cluster, as a coefficient of variation. Sinha et
# al., "Not All GPUs Are Created Equal: Characterizing Variability in Large-Scale, Accelerator-Rich
# Systems", SC22 (arXiv 2208.11035): the same application on >90% of the GPUs of five clusters (V100
# on Summit, Vortex and Longhorn, Quadro RTX 5000 on Frontera, MI60 on Corona) varies by 8% on average
# (max 22%) between GPUs of one SKU, from manufacturing variability under power management, with
# outliers up to 1.5x slower than the median. The 8% is read as the spread between box-plot whiskers
# (outliers excluded), which for a normal spread spans 2 x 2.7 sigma: CV = 0.08 / 5.4 = 0.0148. A synchronous step waits for the
# slowest of its W GPUs: sync_slowdown(W, CVB(1, 0, GPU_VARIABILITY_CV)) (1.021 at W = 8, 1.046 at 512).
GPU_VARIABILITY_CV = 0.08 / 5.4

# The widest spread of batch times the model accepts, as the combined coefficient of variation of one
# task (combined_cv). A gamma time with CV > 1 has shape 1/CV^2 < 1: its density is infinite at 0 s, so
# the most likely batch would take no time at all, which no GPU does; CV = 1 is the exponential
# distribution, already far beyond the 0.015 measured between GPUs of one model (GPU_VARIABILITY_CV).
MAX_STRAGGLER_CV = 1.0

# The narrowest spread the model computes, other than none (0): at CV 1e-6 the slowest of 512 chips is
# 3e-6 slower than the mean, far below any timing's resolution, and a CV much smaller still leaves no
# finite gamma shape 1/CV^2 (1e-300 squared is 0).
MIN_STRAGGLER_CV = 1e-6


def combined_cv(v_task: float, v_mach: float = 0.0) -> float:
    """CV of one task's time when a machine mean (CV v_mach) scales a task spread (CV v_task), both of
    mean 1 and independent: sqrt((1 + v_task^2)(1 + v_mach^2) - 1)."""
    return float(np.sqrt((1.0 + v_task**2) * (1.0 + v_mach**2) - 1.0))

# `perfmodel predict` must start fast: the gamma CDF is numpy's (perfmodel.gamma_cdf), and scipy.special
# (0.35 s to import) only comes in for a spread of machine speeds or a CV below 0.01, where it is needed.
_trapezoid = getattr(np, "trapezoid", None) or np.trapz  # numpy >= 2.0 renamed trapz


def shape_of(cv: float) -> float:
    """Gamma shape for a coefficient of variation: a = 1 / cv^2 (cv > 0)."""
    if cv <= 0:
        raise SpecError(f"coefficient of variation must be > 0, got {cv!r}")
    if cv < MIN_STRAGGLER_CV:
        raise SpecError(f"coefficient of variation {cv:g} is below {MIN_STRAGGLER_CV:g}: give 0 for no spread")
    if cv > 1e150:  # cv**2 overflows past 1.3e154; a shape of 1e-300 is no time to integrate either
        raise SpecError(f"coefficient of variation {cv:g} is too large for a gamma time")
    return 1.0 / cv**2


CVB_KINDS = ("homogeneous", "heterogeneous")
"""The named settings of :meth:`CVB.named` (the Gap-Aware paper's)."""


@dataclass(frozen=True)
class CVB:
    """The CVB execution-time model. mean: mu (any time unit); v_task, v_mach: coefficients of variation."""

    mean: float = 1.0
    v_task: float = 0.1
    v_mach: float = 0.1
    heterogeneous: bool = False

    def __post_init__(self) -> None:
        if not self.mean > 0:
            raise SpecError(f"CVB mean must be > 0, got {self.mean!r}")
        if self.v_task < 0 or self.v_mach < 0:
            raise SpecError("CVB coefficients of variation must be >= 0")

    @classmethod
    def named(cls, kind: str, mean: float = 1.0) -> "CVB":
        """The Gap-Aware paper's settings: "homogeneous" (V_mach 0.1) or "heterogeneous" (V_mach 0.6)."""
        if kind == "homogeneous":
            return cls(mean, 0.1, 0.1, False)
        if kind == "heterogeneous":
            return cls(mean, 0.1, 0.6, True)
        raise SpecError(f"unknown CVB kind {kind!r}; choose {' or '.join(CVB_KINDS)}")

    def machine_means(self, workers: int, rng: np.random.Generator) -> np.ndarray:
        """Per-machine mean execution time, drawn once per run."""
        if self.heterogeneous:
            if self.v_mach == 0:
                return np.full(workers, self.mean)
            a = shape_of(self.v_mach)
            return rng.gamma(a, self.mean / a, size=workers)
        if self.v_task == 0:
            return np.full(workers, self.mean)
        a = shape_of(self.v_task)
        return np.full(workers, rng.gamma(a, self.mean / a))

    def task_times(self, means: np.ndarray, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """One execution time per machine (or ``size`` per machine) around the machine means."""
        v = self.v_task if self.heterogeneous else self.v_mach
        shape = means.shape if size is None else (size,) + means.shape
        if v == 0:
            return np.broadcast_to(means, shape).copy()
        a = shape_of(v)
        return rng.gamma(a, np.broadcast_to(means, shape) / a)


def _task_cdf(t: np.ndarray, model: CVB) -> np.ndarray:
    """CDF of one task's time relative to mean 1, marginalised over the machine mean where it varies.

    The gamma CDF G(t; a, scale s) is gammainc(a, t / s).
    """
    if model.heterogeneous and model.v_task > 0:
        a_t = shape_of(model.v_task)
        if model.v_mach == 0:
            return gammainc(a_t, t * a_t)
        # E_p[ G(t; a_t, p/a_t) ] with p ~ Gamma(a_m, 1/a_m): Gauss-Laguerre quadrature over p.
        p, prob = _gamma_nodes(shape_of(model.v_mach))
        # 6,001 x 64 CDF values per grid, and a command builds several grids: scipy's, 0.03-0.05 s each, not
        # perfmodel.gamma_cdf's 0.24-0.34 s (numpy's made `perfmodel predict --stragglers heterogeneous` 1.46 ->
        # 2.10 s, five grids, although one grid alone is faster than scipy's 0.35 s import)
        from scipy import special

        return special.gammainc(a_t, t[..., None] * a_t / p) @ prob
    # homogeneous: the task spread is v_mach; heterogeneous with steady tasks: the machine means' CDF
    a = shape_of(model.v_mach)
    return gammainc(a, t * a)


@lru_cache(maxsize=64)
def _gamma_nodes(shape: float, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, probabilities) of n-point Gauss quadrature for E[f(p)], p ~ Gamma(shape, scale 1/shape).

    Generalized Gauss-Laguerre for the weight x^(shape-1) e^-x (p = x / shape) by Golub-Welsch: the nodes
    are the eigenvalues of the Jacobi matrix with diagonal 2k + shape and off-diagonal sqrt(k (k+shape-1)),
    k = 0..n-1 (1..n-1 off the diagonal); each probability is the squared first component of its
    eigenvector. Normalized from the start, so no Gamma(shape) is formed: scipy's roots_genlaguerre
    weights overflow to inf beyond shape 171 (a machine CV below 0.077), which made the slowdown nan.
    """
    k = np.arange(n, dtype=float)
    off = np.sqrt(k[1:] * (k[1:] + shape - 1.0))
    x, vec = np.linalg.eigh(np.diag(2.0 * k + shape) + np.diag(off, 1) + np.diag(off, -1))
    nodes, prob = x / shape, vec[0] ** 2
    nodes.flags.writeable = prob.flags.writeable = False  # cached: shared by every caller
    return nodes, prob


def sync_slowdown(workers: np.ndarray | int, model: CVB) -> np.ndarray:
    """E[max of W task times] / mean: how much longer a synchronous step takes than a mean task.

    Exact in expectation for independent tasks: E[max] = integral of 1 - F(t)^W dt. For the homogeneous
    model the shared machine mean q scales every task alike and E[q] = mu, so only the task spread counts.
    """
    w = np.atleast_1d(np.asarray(workers, dtype=float))
    v = model.v_task if model.heterogeneous else model.v_mach
    if (v == 0 and not model.heterogeneous) or (model.heterogeneous and v == 0 and model.v_mach == 0):
        return np.ones_like(w) if np.ndim(workers) else np.float64(1.0)
    out = _slowdown_of_counts(tuple(w.tolist()), model).copy()
    return out if np.ndim(workers) else out[0]


NARROW_CV = 0.01
"""Below this CV the straggler integral's grid spans the spread rather than 0 to 12 means."""


@lru_cache(maxsize=1024)
def _slowdown_of_counts(workers: tuple[float, ...], model: CVB) -> np.ndarray:
    """sync_slowdown for a tuple of worker counts, cached: a plan asks for the same counts many times."""
    w = np.asarray(workers)
    # The grid reaches past the largest W's tail (W (1 - F(t)) < 1e-9): a grid that ends early drops the
    # slow tail and made wide spreads look faster than one worker. From CV NARROW_CV up it is 0 to 12 means
    # (or beyond), 0.002 apart, accurate to 1e-9 there and kept as it was: the predictions the project has
    # recorded come from it. Below, that grid is too coarse (at CV 1e-4 two workers came out 9x too slow
    # against the mean, 5.0e-4 for 5.6e-5), so the grid spans the spread instead: from 12 CVs below the
    # mean (every task has finished there too rarely to count; 1 - F^W = 1 is integrated exactly below it).
    cv = combined_cv(model.v_task, model.v_mach) if model.heterogeneous else model.v_mach
    if cv >= NARROW_CV:
        start, end, grow = 0.0, 12.0, lambda e: 2.0 * e
    else:
        start, end, grow = 1.0 - 12.0 * cv, 1.0 + 12.0 * cv, lambda e: 1.0 + 2.0 * (e - 1.0)
    while end < 4096.0 and w.max() * (1.0 - float(_task_cdf(np.array([end]), model)[0])) > 1e-9:
        end = grow(end)
    grid, cdf = _grid_cdf(model, start, end)
    # 1 - F^W on the grid for each W, integrated by the trapezoid rule; the slowest of W tasks is never
    # faster on average than one task (E[max] >= E[T] = 1), which bounds the quadrature's rounding
    return np.maximum(start + _trapezoid(1.0 - cdf[None, :] ** w[:, None], grid, axis=1), 1.0)


@lru_cache(maxsize=64)
def _grid_cdf(model: CVB, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(start, end, max(6001, int((end - start) * 500) + 1))
    return grid, np.clip(_task_cdf(grid, model), 0.0, 1.0)


def async_speedup_factor(model: CVB) -> float:
    """Aggregate rate of asynchronous workers relative to W / mu: E[mu / p] over machine means.

    Homogeneous (shared mean): 1. Heterogeneous: E[1/p] mu = a/(a-1) for p ~ Gamma(a, mu/a), a > 1.
    """
    if not model.heterogeneous or model.v_mach == 0:
        return 1.0
    a = shape_of(model.v_mach)
    if a <= 1:
        raise SpecError(f"v_mach {model.v_mach} gives gamma shape {a:.3g} <= 1: E[1/p] is infinite")
    return a / (a - 1)
