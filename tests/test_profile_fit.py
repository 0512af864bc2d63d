"""The least-squares fits of perfmodel.lab.profile.fit and the comm planning helpers (no MPI, no torch)."""

import math

import numpy as np
import pytest

from perfmodel.lab.profile.comm import CommConfig, default_sizes, parse_extra_sizes, parse_size, plan_iterations
from perfmodel.lab.profile.fit import AlphaBetaFit, Segment, fit_affine, fit_alpha_beta

SIZES = np.array(default_sizes(8, 64 * 2**20), dtype=float)  # 8 B .. 64 MiB


def test_default_sizes_span_8_bytes_to_64_mib_in_powers_of_two():
    assert SIZES[0] == 8 and SIZES[-1] == 64 * 2**20
    assert len(SIZES) == 24
    assert np.all(SIZES[1:] / SIZES[:-1] == 2)


@pytest.mark.parametrize("text,expected", [("8", 8), ("4Ki", 4096), ("64Mi", 64 * 2**20), ("1MiB", 2**20),
                                           ("2k", 2000), ("1Gi", 2**30)])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "-8", "1.5Mi", "8 parsecs"])
def test_parse_size_rejects_garbage(text):
    with pytest.raises(ValueError, match="bad size"):
        parse_size(text)


def test_alpha_beta_recovered_exactly_from_noiseless_data():
    alpha, beta = 3.5e-6, 1 / 2.5e9
    fit = fit_alpha_beta(SIZES, alpha + beta * SIZES)
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-9)
    assert fit.beta_s_per_byte == pytest.approx(beta, rel=1e-9)
    assert fit.max_rel_err < 1e-9
    assert len(fit.segments) == 1
    assert fit.bandwidth_Bps == pytest.approx(2.5e9, rel=1e-9)


def test_alpha_beta_recovered_from_noisy_data():
    rng = np.random.default_rng(7)
    alpha, beta = 2e-6, 1 / 4e9
    times = (alpha + beta * SIZES) * rng.lognormal(0.0, 0.03, SIZES.size)  # 3% multiplicative noise
    fit = fit_alpha_beta(SIZES, times)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.05)
    assert fit.beta_s_per_byte == pytest.approx(beta, rel=0.05)
    assert fit.max_rel_err < 0.15


def test_relative_weighting_keeps_latency_that_plain_least_squares_loses():
    rng = np.random.default_rng(3)
    alpha, beta = 2e-6, 1 / 4e9
    times = (alpha + beta * SIZES) * rng.lognormal(0.0, 0.03, SIZES.size)
    plain_beta, plain_alpha = np.polyfit(SIZES, times, 1)  # unweighted: decided by the 64 MiB points
    ours = fit_alpha_beta(SIZES, times)
    assert abs(ours.alpha_s - alpha) / alpha < 0.05
    assert abs(plain_alpha - alpha) / alpha > 1.0  # off by more than the latency itself


def test_fit_agrees_with_closed_form_weighted_least_squares():
    rng = np.random.default_rng(11)
    x = np.array([16, 32, 64, 128, 256], dtype=float)
    y = (1e-3 + 2e-5 * x) * rng.lognormal(0, 0.05, x.size)
    # independent path: solve the same weighted problem with numpy's lstsq (unconstrained; positive here)
    a_mat = np.column_stack([1 / y, x / y])
    (a, b), *_ = np.linalg.lstsq(a_mat, np.ones_like(y), rcond=None)
    assert a > 0 and b > 0
    fit = fit_affine(x, y)
    assert fit.intercept == pytest.approx(a, rel=1e-6)
    assert fit.slope == pytest.approx(b, rel=1e-6)
    err = (a + b * x - y) / y
    assert fit.max_rel_err == pytest.approx(np.max(np.abs(err)), rel=1e-6)
    assert fit.rms_rel_err == pytest.approx(np.sqrt(np.mean(err ** 2)), rel=1e-6)
    assert float(fit(100.0)) == pytest.approx(a + 100 * b, rel=1e-6)


def test_compute_fit_recovers_t0_t1():
    b = np.array([16, 32, 64, 128])
    fit = fit_affine(b, 0.004 + 0.0007 * b)
    assert fit.intercept == pytest.approx(0.004, rel=1e-9)
    assert fit.slope == pytest.approx(0.0007, rel=1e-9)
    assert (fit.x_min, fit.x_max, fit.points) == (16, 128, 4)


def test_coefficients_are_never_negative():
    x = np.array([1, 2, 4, 8.0])
    fit = fit_affine(x, 1.0 - 0.1 * x)  # a falling line: the best non-negative slope is 0
    assert fit.slope == 0.0 and fit.intercept > 0
    fit = fit_alpha_beta(SIZES, 1e-10 * SIZES)  # no latency at all
    assert fit.alpha_s >= 0 and fit.alpha_s < 1e-12


def test_piecewise_fit_finds_a_protocol_switch():
    alpha1, beta1 = 1.5e-6, 1 / 6e9  # small messages: eager, in cache
    alpha2, beta2 = 40e-6, 1 / 2e9  # from 1 MiB: out of cache
    times = np.where(SIZES < 2**20, alpha1 + beta1 * SIZES, alpha2 + beta2 * SIZES)
    fit = fit_alpha_beta(SIZES, times, tol=0.15)
    assert fit.max_rel_err > 0.15  # one line cannot do it
    assert len(fit.segments) == 2
    lo, hi = fit.segments
    assert hi.lo_bytes == 2**20 and lo.hi_bytes == 2**19
    assert (lo.alpha_s, lo.beta_s_per_byte) == pytest.approx((alpha1, beta1), rel=1e-6)
    assert (hi.alpha_s, hi.beta_s_per_byte) == pytest.approx((alpha2, beta2), rel=1e-6)
    assert fit.piecewise_max_rel_err < 1e-6
    np.testing.assert_allclose(fit.time(SIZES), times, rtol=1e-6)
    # between measured sizes and outside the measured range the nearest segment below applies
    assert float(fit.time(3 * 2**19)) == pytest.approx(alpha2 + beta2 * 3 * 2**19)
    assert float(fit.time(2**30)) == pytest.approx(alpha2 + beta2 * 2**30)
    assert float(fit.time(1)) == pytest.approx(alpha1 + beta1)
    assert fit.segment_for(2**20) is hi and fit.segment_for(100) is lo


def test_segments_after_the_first_may_bend_across_a_cache_cliff():
    """Above a cache cliff time grows faster than linearly: later segments get negative intercepts,
    the first (which also serves tiny messages) never does; effective() keeps the physical latency."""
    times = np.where(SIZES < 2**22, 2e-6 + SIZES / 5e9, 2e-6 + SIZES / 5e9 * (SIZES / 2**22) ** 0.5)
    fit = fit_alpha_beta(SIZES, times)
    assert fit.piecewise_max_rel_err <= 0.15
    assert fit.segments[0].alpha_s >= 0 and min(s.alpha_s for s in fit.segments[1:]) < 0
    assert np.all(fit.time(SIZES) > 0)
    alpha, beta = fit.effective(64 * 2**20)
    assert alpha == fit.latency_s == fit.segments[0].alpha_s
    assert alpha + beta * 64 * 2**20 == pytest.approx(float(fit.time(64 * 2**20)))


def test_piecewise_fit_uses_fewest_segments_and_respects_the_cap():
    times = np.where(SIZES < 2**10, 2e-6, 0.0) + np.where(SIZES < 2**20, 1e-6 + SIZES / 5e9, 3e-5 + SIZES / 1e9)
    three = fit_alpha_beta(SIZES, times, max_segments=3)
    assert len(three.segments) == 3
    assert three.piecewise_max_rel_err < 1e-6
    one = fit_alpha_beta(SIZES, times, max_segments=1)
    assert len(one.segments) == 1 and one.segments[0].max_rel_err == one.max_rel_err


@pytest.mark.parametrize("x,y,match", [([1, 2], [1.0], "same length"), ([1], [1.0], "at least 2"),
                                       ([1, 2], [1.0, 0.0], "> 0"), ([2, 2], [1.0, 2.0], "distinct"),
                                       ([1, 2], [1.0, math.nan], "finite")])
def test_bad_fit_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        fit_affine(x, y)


def test_fit_records_validate():
    with pytest.raises(ValueError, match="alpha_s and beta_s_per_byte"):
        AlphaBetaFit(-1.0, 0.0, 0.0, (Segment(1, 2, 0.0, 0.0, 0.0),))
    with pytest.raises(ValueError, match="first segment"):
        AlphaBetaFit(0.0, 0.0, 0.0, (Segment(1000, 2000, -1.0, 0.01, 0.0),))
    with pytest.raises(ValueError, match="time >= 0 at lo_bytes"):
        Segment(1000, 2000, -1.0, 1e-4, 0.0)
    with pytest.raises(ValueError, match="beta_s_per_byte >= 0"):
        Segment(1, 2, 0.0, -1e-9, 0.0)
    with pytest.raises(ValueError, match="at least one segment"):
        AlphaBetaFit(0.0, 0.0, 0.0, ())
    with pytest.raises(ValueError, match="lo_bytes"):
        Segment(4, 2, 0.0, 0.0, 0.0)


def test_plan_iterations_adapts_to_the_message_cost():
    cfg = CommConfig(sizes=(8,), target_s=0.001, repeats=15, min_repeats=5, size_budget_s=1.5)
    assert plan_iterations(1e-6, cfg) == (1000, 15)  # 1 us calls: 1000 per run
    assert plan_iterations(0.04, cfg) == (1, 15)  # 40 ms: one per run, 15 runs = 0.6 s
    assert plan_iterations(0.5, cfg) == (1, 5)  # 0.5 s: budget allows 3, floor is 5
    assert plan_iterations(1e-12, cfg)[0] == cfg.max_iters


@pytest.mark.parametrize("kwargs,match", [({"sizes": (6,)}, "multiples of 4"), ({"sizes": ()}, "empty"),
                                          ({"sizes": (8, 8)}, "increasing"), ({"ops": ("gather",)}, "unknown op"),
                                          ({"backend": "tcp"}, "unknown backend"), ({"min_repeats": 2}, "min_repeats"),
                                          ({"fit_stat": "mean"}, "fit_stat"),
                                          ({"extra_sizes": (("bcast", (8,)),), "ops": ("allreduce",)}, "not among"),
                                          ({"extra_sizes": (("allreduce", (10,)),)}, "multiples of 4")])
def test_comm_config_validates(kwargs, match):
    base = {"sizes": (8, 16)}
    with pytest.raises(ValueError, match=match):
        CommConfig(**(base | kwargs))


def test_extra_sizes_add_to_one_operation_only():
    # "233099" is rounded up to whole float32 elements; repeated items for one op merge
    extra = parse_extra_sizes(["iallreduce=233099,1Ki", "allgather=100", "iallreduce=8"])
    assert extra == (("iallreduce", (8, 1024, 233100)), ("allgather", (100,)))
    cfg = CommConfig(sizes=(8, 16, 262144), extra_sizes=extra)
    assert cfg.sizes_for("iallreduce") == (8, 16, 1024, 233100, 262144)
    assert cfg.sizes_for("allgather") == (8, 16, 100, 262144)
    assert cfg.sizes_for("allreduce") == (8, 16, 262144)


@pytest.mark.parametrize("item,match", [("allreduce", "OP=SIZE"), ("=8", "OP=SIZE"), ("allreduce=", "OP=SIZE"),
                                        ("gather=8", "unknown op"), ("allreduce=8x", "bad size")])
def test_extra_sizes_reject_garbage(item, match):
    with pytest.raises(ValueError, match=match):
        parse_extra_sizes([item])
