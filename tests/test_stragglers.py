"""Gamma CVB model: the paper's tail probabilities, and the closed forms against Monte Carlo."""

import numpy as np
import pytest

import perfmodel.stragglers as stragglers
from perfmodel.specs import SpecError
from perfmodel.stragglers import CVB, MIN_STRAGGLER_CV, async_speedup_factor, shape_of, sync_slowdown


def sample(model: CVB, workers: int, steps: int, seed: int, runs: int = 2000) -> np.ndarray:
    """(runs, steps, workers) task times, a fresh machine draw per run."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(runs):
        means = model.machine_means(workers, rng)
        out.append(model.task_times(means, rng, size=steps))
    return np.stack(out)


def test_tail_probability_matches_gap_aware_paper():
    # Gap-Aware appendix C.3, Fig. 3: P(t >= 1.25 x mean) is 1% homogeneous, 27.9% heterogeneous.
    # Homogeneous machines share one mean q for the whole run; the figure shows tasks around it.
    rng = np.random.default_rng(1)
    hom = CVB.named("homogeneous", mean=128.0)
    fracs = []
    for _ in range(500):
        q = hom.machine_means(8, rng)
        fracs.append(np.mean(hom.task_times(q, rng, size=100) > 1.25 * q))
    assert np.mean(fracs) == pytest.approx(0.01, abs=0.002)
    het = sample(CVB.named("heterogeneous", mean=128.0), workers=8, steps=25, seed=2)
    assert np.mean(het > 1.25 * 128) == pytest.approx(0.279, abs=0.01)


@pytest.mark.parametrize("kind", ["homogeneous", "heterogeneous"])
def test_sync_slowdown_matches_monte_carlo(kind):
    model = CVB.named(kind)
    workers = np.array([1, 2, 8, 32])
    exact = sync_slowdown(workers, model)
    for w, e in zip(workers, exact):
        t = sample(model, int(w), 10, seed=int(w))
        # per run, SSGD waits for the slowest each step; normalise by the run's shared mean where it has one
        per_run = t.max(axis=2).mean(axis=1)
        stderr = per_run.std() / np.sqrt(len(per_run))
        assert abs(per_run.mean() - e) < 4 * stderr + 1e-3, (kind, w)
    assert exact[0] == pytest.approx(1.0, abs=1e-3)  # one worker: mean task time
    assert np.all(np.diff(exact) > 0)


def test_sync_slowdown_gaussian_limit_by_hand():
    # small CV: max of W ~ mean + sigma * E[max of W std normals]; E[max of 2 normals] = 1/sqrt(pi)
    model = CVB(1.0, 0.0, 0.01, heterogeneous=False)
    assert sync_slowdown(2, model) == pytest.approx(1 + 0.01 / np.sqrt(np.pi), rel=1e-4)


@pytest.mark.parametrize("cv", [1e-3, 1e-4, 1e-6])
def test_narrow_spreads_resolve_the_gaussian_limit(cv):
    """E[max of 2 std normals] = 1/sqrt(pi), of 3: 3/(2 sqrt(pi)). A grid of fixed width (0..12 means,
    0.002 apart) gave 9x the first at CV 1e-4; the grid now spans the spread."""
    model = CVB(1.0, 0.0, cv, heterogeneous=False)
    excess = sync_slowdown(np.array([2, 3]), model) - 1.0
    assert excess == pytest.approx([cv / np.sqrt(np.pi), 1.5 * cv / np.sqrt(np.pi)], rel=1e-3)


def test_async_factor_closed_form():
    assert async_speedup_factor(CVB.named("homogeneous")) == 1.0
    a = shape_of(0.6)
    assert async_speedup_factor(CVB.named("heterogeneous")) == pytest.approx(a / (a - 1))
    rng = np.random.default_rng(0)
    p = CVB.named("heterogeneous").machine_means(400_000, rng)
    assert np.mean(1 / p) == pytest.approx(a / (a - 1), rel=0.01)


def test_machines_of_spread_speeds_each_steady():
    """Heterogeneous with no task spread: each machine always takes its own mean, so a step waits for the
    slowest of W machine means, drawn like the homogeneous model's per-step task times: the same E[max]."""
    w = np.array([2, 8, 512])
    steady = sync_slowdown(w, CVB(1.0, 0.0, 0.5, heterogeneous=True))
    assert steady == pytest.approx(sync_slowdown(w, CVB(1.0, 0.0, 0.5, heterogeneous=False)), rel=1e-12)
    t = sample(CVB(1.0, 0.0, 0.5, heterogeneous=True), workers=8, steps=1, seed=3, runs=20000)
    assert t.max(axis=2).mean() == pytest.approx(steady[1], rel=0.01)


def test_machines_of_narrow_spread_with_noisy_tasks():
    """A machine CV of 0.05 is a gamma shape of 400, whose Gamma(400) overflows: the quadrature over the
    machine means used to come out nan here. Against Monte Carlo, a fresh machine draw per run."""
    model = CVB(1.0, 0.1, 0.05, heterogeneous=True)
    exact = sync_slowdown(np.array([8, 32]), model)
    assert np.all(np.isfinite(exact)) and np.all(exact > 1.0)
    for w, e in zip((8, 32), exact):
        per_run = sample(model, w, 10, seed=w).max(axis=2).mean(axis=1)
        assert abs(per_run.mean() - e) < 4 * per_run.std() / np.sqrt(len(per_run)) + 1e-3


def test_gamma_nodes_integrate_the_moments():
    """E[p] = 1 and E[p^2] = 1 + 1/shape for p ~ Gamma(shape, 1/shape), at shapes from 2.8 to 10,000."""
    for shape in (1 / 0.6**2, 100.0, 400.0, 1e4):
        p, prob = stragglers._gamma_nodes(shape)
        assert prob.sum() == pytest.approx(1.0, abs=1e-13)
        assert prob @ p == pytest.approx(1.0, abs=1e-12)
        assert prob @ p**2 == pytest.approx(1.0 + 1.0 / shape, abs=1e-12)


def test_the_quadrature_nodes_are_computed_once_per_shape():
    """A command asks for the mixture's nodes at every grid point batch; the eigen-solve runs once per shape
    (64 x 64; 55 ms with two busy BLAS threads) and its cached arrays cannot be changed by a caller."""
    stragglers._gamma_nodes.cache_clear()
    model = CVB(1.0, 0.1, 0.6, True)
    for t in (np.array([1.0]), np.array([2.0, 3.0]), np.linspace(0.0, 6.0, 61)):
        stragglers._task_cdf(t, model)
    info = stragglers._gamma_nodes.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    p, prob = stragglers._gamma_nodes(shape_of(0.6))
    with pytest.raises(ValueError):
        p[0] = 0.0


def test_a_spread_too_narrow_for_a_gamma_shape_is_refused():
    """1e-300 squared is 0: no finite shape 1/CV^2; the package error, not a ZeroDivisionError."""
    assert shape_of(MIN_STRAGGLER_CV) == pytest.approx(1e12)
    with pytest.raises(SpecError, match="give 0 for no spread"):
        sync_slowdown(8, CVB(1.0, 0.0, 1e-300))
