"""Least-squares fits of profiled times: t_c(b) = t0 + t1 b and alpha-beta message costs.

Both fits minimise the sum of squared *relative* residuals ((model - measured) / measured), which is
ordinary least squares on the rows divided by the measured time. Message sizes span 8 B to 64 MiB,
seven orders of magnitude: an unweighted fit would be decided by the largest messages alone and leave
the latency term to noise. Coefficients are constrained to be non-negative (``scipy.optimize.lsq_linear``).

An MPI library switches protocol and algorithm with the message size (eager to rendezvous, tree to
ring, in cache to out of cache), so one line rarely matches every size within a few percent.
``fit_alpha_beta`` therefore also returns a piecewise fit: contiguous size ranges, each with its own
(alpha, beta), breakpoints chosen by dynamic programming to minimise the total squared relative error,
with the fewest segments that bring every point within ``tol``.

Imports numpy and scipy only (no torch, no mpi4py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["AffineFit", "AlphaBetaFit", "Segment", "fit_affine", "fit_alpha_beta"]


def _as_xy(x, y) -> tuple[np.ndarray, np.ndarray]:
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if xa.size < 2:
        raise ValueError(f"a fit needs at least 2 points, got {xa.size}")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya))):
        raise ValueError("x and y must be finite")
    if np.any(ya <= 0):
        raise ValueError("measured times y must be > 0 for a relative-error fit")
    if np.unique(xa).size < 2:
        raise ValueError("x must take at least 2 distinct values")
    return xa, ya


def _solve(xa: np.ndarray, ya: np.ndarray, *, free_intercept: bool = False) -> tuple[float, float]:
    """(intercept, slope) minimising sum(((a + b x) / y - 1)^2); slope >= 0, intercept >= 0 unless
    ``free_intercept`` (then the line must stay positive on the data, else the constrained fit is used)."""
    scale = max(float(np.max(np.abs(xa))), 1.0)  # condition the slope column
    a_mat = np.column_stack([1.0 / ya, (xa / scale) / ya])
    lower = [-np.inf if free_intercept else 0.0, 0.0]
    from scipy.optimize import lsq_linear  # lazily: `perfmodel predict` must start fast

    res = lsq_linear(a_mat, np.ones_like(ya), bounds=(lower, np.inf), method="bvls")
    a, b = float(res.x[0]), float(res.x[1] / scale)
    if free_intercept and a + b * float(np.min(xa)) <= 0:
        return _solve(xa, ya)
    return a, b


def _rel_err(intercept: float, slope: float, xa: np.ndarray, ya: np.ndarray) -> np.ndarray:
    return (intercept + slope * xa - ya) / ya


@dataclass(frozen=True)
class AffineFit:
    """y = intercept + slope * x, fitted in relative error over x in [x_min, x_max]."""

    intercept: float
    slope: float
    max_rel_err: float
    rms_rel_err: float
    x_min: float
    x_max: float
    points: int

    def __call__(self, x: float | np.ndarray) -> np.ndarray:
        """Fitted y at ``x`` (vectorized)."""
        return self.intercept + self.slope * np.asarray(x, dtype=float)


def fit_affine(x, y) -> AffineFit:
    """Fit y = intercept + slope x (both >= 0) minimising squared relative error.

    Used for t_c(b) = t0 + t1 b with x the batch size and y seconds per step.
    """
    xa, ya = _as_xy(x, y)
    a, b = _solve(xa, ya)
    err = _rel_err(a, b, xa, ya)
    return AffineFit(intercept=a, slope=b, max_rel_err=float(np.max(np.abs(err))),
                     rms_rel_err=float(np.sqrt(np.mean(err ** 2))), x_min=float(xa.min()),
                     x_max=float(xa.max()), points=int(xa.size))


@dataclass(frozen=True)
class Segment:
    """One size range of a piecewise alpha-beta fit: t(n) = alpha_s + beta_s_per_byte * n.

    A segment after the first is a local linearisation and may have a negative intercept (time that
    grows faster than linearly across a cache cliff); its time is positive from lo_bytes up.
    """

    lo_bytes: float
    hi_bytes: float
    alpha_s: float
    beta_s_per_byte: float
    max_rel_err: float

    def __post_init__(self) -> None:
        if not 0 <= self.lo_bytes <= self.hi_bytes:
            raise ValueError(f"segment needs 0 <= lo_bytes <= hi_bytes, got {self.lo_bytes}, {self.hi_bytes}")
        if self.beta_s_per_byte < 0 or self.alpha_s + self.beta_s_per_byte * self.lo_bytes < 0:
            raise ValueError(f"segment needs beta_s_per_byte >= 0 and a time >= 0 at lo_bytes, got "
                             f"alpha_s={self.alpha_s}, beta_s_per_byte={self.beta_s_per_byte}")


@dataclass(frozen=True)
class AlphaBetaFit:
    """t(n) = alpha_s + beta_s_per_byte * n over all sizes, plus a piecewise refinement.

    ``alpha_s``/``beta_s_per_byte``/``max_rel_err`` describe the single line over every measured size;
    ``segments`` the piecewise fit (one segment when the line is already within tolerance).
    """

    alpha_s: float
    beta_s_per_byte: float
    max_rel_err: float
    segments: tuple[Segment, ...]

    def __post_init__(self) -> None:
        if self.alpha_s < 0 or self.beta_s_per_byte < 0:
            raise ValueError(f"alpha_s and beta_s_per_byte must be >= 0, got {self.alpha_s}, {self.beta_s_per_byte}")
        if not self.segments:
            raise ValueError("an alpha-beta fit needs at least one segment")
        los = [s.lo_bytes for s in self.segments]
        if los != sorted(los):
            raise ValueError("segments must be ordered by size")
        if self.segments[0].alpha_s < 0:
            raise ValueError("the first segment (it covers the smallest messages) needs alpha_s >= 0")

    @property
    def latency_s(self) -> float:
        """Small-message latency: the first segment's intercept."""
        return self.segments[0].alpha_s

    def effective(self, nbytes: float) -> tuple[float, float]:
        """(alpha, beta) of one line through (0, latency_s) and the piecewise time at ``nbytes``:
        the physical latency, and the bandwidth a message of that size actually gets."""
        if nbytes <= 0:
            raise ValueError(f"nbytes must be > 0, got {nbytes!r}")
        alpha = self.latency_s
        t = float(self.time(nbytes))
        return alpha, max(t - alpha, 0.0) / nbytes

    @property
    def bandwidth_Bps(self) -> float:
        """1 / beta of the single line (inf when beta is 0)."""
        return 1.0 / self.beta_s_per_byte if self.beta_s_per_byte > 0 else float("inf")

    @property
    def piecewise_max_rel_err(self) -> float:
        """Largest relative error of the piecewise fit over the measured sizes."""
        return max(s.max_rel_err for s in self.segments)

    def segment_for(self, nbytes: float) -> Segment:
        """The segment that applies to a message of ``nbytes`` (the last one starting at or below it)."""
        chosen = self.segments[0]
        for s in self.segments[1:]:
            if nbytes >= s.lo_bytes:
                chosen = s
        return chosen

    def time(self, nbytes: float | np.ndarray, *, piecewise: bool = True) -> np.ndarray:
        """Predicted seconds for messages of ``nbytes`` (vectorized)."""
        n = np.asarray(nbytes, dtype=float)
        if not piecewise:
            return self.alpha_s + self.beta_s_per_byte * n
        los = np.array([s.lo_bytes for s in self.segments])
        idx = np.clip(np.searchsorted(los, n, side="right") - 1, 0, len(self.segments) - 1)
        alphas = np.array([s.alpha_s for s in self.segments])
        betas = np.array([s.beta_s_per_byte for s in self.segments])
        return alphas[idx] + betas[idx] * n


def _segment_costs(xa: np.ndarray, ya: np.ndarray, min_points: int):
    """sse[i][j], fit[i][j] for points i..j-1 (j - i >= min_points); only the first segment (which
    also covers messages below the measured range) keeps a non-negative intercept."""
    n = xa.size
    sse: dict[tuple[int, int], float] = {}
    fits: dict[tuple[int, int], tuple[float, float, float]] = {}
    for i in range(n):
        for j in range(i + min_points, n + 1):
            xs, ys = xa[i:j], ya[i:j]
            if np.unique(xs).size < 2:
                continue
            a, b = _solve(xs, ys, free_intercept=i > 0)
            err = _rel_err(a, b, xs, ys)
            sse[i, j] = float(np.sum(err ** 2))
            fits[i, j] = (a, b, float(np.max(np.abs(err))))
    return sse, fits


def _best_partition(n: int, k: int, sse: dict, min_points: int) -> tuple[float, list[tuple[int, int]]] | None:
    """Dynamic programme: split points 0..n-1 into k contiguous segments minimising total sse."""
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(k + 1)]
    back = [[-1] * (n + 1) for _ in range(k + 1)]
    best[0][0] = 0.0
    for m in range(1, k + 1):
        for j in range(1, n + 1):
            for i in range(0, j - min_points + 1):
                if best[m - 1][i] == inf or (i, j) not in sse:
                    continue
                c = best[m - 1][i] + sse[i, j]
                if c < best[m][j]:
                    best[m][j], back[m][j] = c, i
    if best[k][n] == inf:
        return None
    cuts, j = [], n
    for m in range(k, 0, -1):
        i = back[m][j]
        cuts.append((i, j))
        j = i
    return best[k][n], cuts[::-1]


def fit_alpha_beta(nbytes, seconds, *, tol: float = 0.15, max_segments: int = 8,
                   min_points: int = 2) -> AlphaBetaFit:
    """Fit t(n) = alpha + beta n to measured (bytes, seconds), single line and piecewise.

    The piecewise fit uses the fewest segments (1..max_segments, each with >= min_points sizes) whose
    least-squares optimum has every point within ``tol`` relative error; if none does, the
    ``max_segments`` optimum. A two-point segment is an exact line through its points: it is allowed
    (min_points=2) because a cache cliff near the top of the measured range (e.g. 16 -> 32 MiB on a
    32 MiB L3) leaves only two sizes above it, and that last segment is the one that extrapolates to
    larger gradients. Units: bytes in, seconds and seconds per byte out.
    """
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments!r}")
    if min_points < 2:
        raise ValueError(f"min_points must be >= 2, got {min_points!r}")
    xa, ya = _as_xy(nbytes, seconds)
    order = np.argsort(xa, kind="stable")
    xa, ya = xa[order], ya[order]
    a, b = _solve(xa, ya)
    single_err = float(np.max(np.abs(_rel_err(a, b, xa, ya))))

    segments = (Segment(float(xa[0]), float(xa[-1]), a, b, single_err),)
    if single_err > tol and max_segments > 1 and xa.size >= 2 * min_points:
        sse, fits = _segment_costs(xa, ya, min_points)
        for k in range(2, min(max_segments, xa.size // min_points) + 1):
            found = _best_partition(xa.size, k, sse, min_points)
            if found is None:
                continue
            _, cuts = found
            segments = tuple(Segment(float(xa[i]), float(xa[j - 1]), *fits[i, j]) for i, j in cuts)
            if max(s.max_rel_err for s in segments) <= tol:
                break
    return AlphaBetaFit(alpha_s=a, beta_s_per_byte=b, max_rel_err=single_err, segments=segments)
