"""TernGrad: scalers, stochastic ternarization, 2-bit packing, wire bytes (trainers.compress)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from trainers.compress import (
    TernGradCodec,
    dequantize,
    pack2bit,
    packed_nbytes,
    scaler,
    ternarize,
    ternary_counts,
    ternary_mean,
    unpack2bit,
)

M = 4000  # ternarizations per statistical test
ALPHA_ELEM = 1e-9  # per-element two-sided false-alarm probability (Bonferroni over a few hundred elements)
ALPHA_CHI2 = 1e-6


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _test_gradient(n: int = 300, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n) * 10.0 ** rng.uniform(-1, 0, n)
    g[:5] = 0.0
    return torch.from_numpy(g.astype(np.float32))


def _draw(g: torch.Tensor, s: float, seed: int) -> torch.Tensor:
    """M independent ternarizations of g, stacked on dimension 0 (one call on a repeated tensor)."""
    return ternarize(g.repeat(M, 1), s, _gen(seed))


def _bernoulli_stats(t: torch.Tensor, p: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Per-element 'kept' counts k_j ~ Binomial(M, p_j), and the chi-square sum of standardized counts.

    Each b_j is Bernoulli(p_j): E[k_j] = M p_j, Var[k_j] = M p_j (1 - p_j) (the Bernoulli variance),
    so sum_j (k_j - M p_j)^2 / (M p_j (1 - p_j)) over 0 < p_j < 1 is about chi-square with that many dof.
    """
    k = t.abs().sum(dim=0, dtype=torch.int64).numpy()
    inner = (p > 0) & (p < 1)
    z2 = (k[inner] - M * p[inner]) ** 2 / (M * p[inner] * (1 - p[inner]))
    return k, float(z2.sum()), int(inner.sum())


def _assert_binomial(k: np.ndarray, p: np.ndarray, chi2: float, dof: int) -> None:
    lo = stats.binom.ppf(ALPHA_ELEM / 2, M, p)
    hi = stats.binom.isf(ALPHA_ELEM / 2, M, p)
    assert np.all((k >= lo) & (k <= hi)), np.flatnonzero((k < lo) | (k > hi))
    assert stats.chi2.ppf(ALPHA_CHI2, dof) < chi2 < stats.chi2.isf(ALPHA_CHI2, dof)


# --------------------------------------------------------------------------------------------- scaler


def test_scaler_max_and_clipped_std_against_numpy() -> None:
    g = _test_gradient()
    assert scaler(g, None) == pytest.approx(float(np.max(np.abs(g.numpy()))), rel=1e-12)
    assert scaler(g, 2.5) == pytest.approx(2.5 * float(np.std(g.numpy().astype(np.float64), ddof=0)), rel=1e-12)
    assert scaler(g) == scaler(g, 2.5)  # the paper's c = 2.5 is the default
    # the std removes the mean: shifting changes max|g| but not the clipped scaler
    shifted = g + 100.0
    assert scaler(shifted, 2.5) == pytest.approx(scaler(g, 2.5), rel=1e-5)


def test_scaler_degenerate_tensors() -> None:
    assert scaler(torch.zeros(7), 2.5) == 0.0
    assert scaler(torch.zeros(0), 2.5) == 0.0
    assert scaler(torch.full((5,), -0.75), 2.5) == 0.75  # std 0: nothing to clip, s = max|g|
    assert scaler(torch.tensor([3.0]), 2.5) == 3.0
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="clip"):
            scaler(torch.ones(3), bad)
    # a finite clip whose c * std overflows float32 (the scaler's wire type) gives the largest float32
    s = scaler(torch.tensor([0.0, 2.0]), 1e300)  # std 1
    assert s == float(np.finfo(np.float32).max) and np.isfinite(np.float32(s))


# ----------------------------------------------------------------------------------------- ternarize


def test_ternarize_values_dtype_and_reproducibility() -> None:
    g = _test_gradient().view(20, 15)
    s = scaler(g, None)
    t = ternarize(g, s, _gen(3))
    assert t.dtype == torch.int8 and t.shape == g.shape
    assert set(t.unique().tolist()) <= {-1, 0, 1}
    nonzero = t != 0
    assert torch.equal(torch.sign(g)[nonzero], t[nonzero].float())  # sign is never flipped
    assert torch.all(t[g == 0] == 0)
    assert torch.equal(t, ternarize(g, s, _gen(3)))  # same seed, same draw
    assert not torch.equal(t, ternarize(g, s, _gen(4)))


def test_ternarize_zero_scaler() -> None:
    assert torch.equal(ternarize(torch.zeros(6), 0.0, _gen(0)), torch.zeros(6, dtype=torch.int8))
    with pytest.raises(ValueError, match="s == 0"):
        ternarize(torch.ones(3), 0.0, _gen(0))
    with pytest.raises(ValueError, match="s must be"):
        ternarize(torch.ones(3), -1.0, _gen(0))


def test_ternarize_is_unbiased_with_bernoulli_bound() -> None:
    """Mean of M draws of s*t converges to g: counts are Binomial(M, |g|/s), checked exactly and by chi2."""
    g = _test_gradient()
    s = scaler(g, None)  # no element is clipped
    t = _draw(g, s, seed=11)
    p = np.minimum(np.abs(g.numpy().astype(np.float64)) / s, 1.0)
    k, chi2, dof = _bernoulli_stats(t, p)
    _assert_binomial(k, p, chi2, dof)
    # the same statement on the dequantized mean: |mean - g| within 6 Bernoulli standard deviations
    mean = dequantize(t, s).mean(dim=0, dtype=torch.float64).numpy()
    sigma = np.sqrt(np.abs(g.numpy()) * (s - np.abs(g.numpy())) / M)
    assert np.all(np.abs(mean - g.numpy()) <= 6.5 * sigma + 1e-6)


def test_unbiasedness_check_rejects_a_biased_quantizer() -> None:
    """The statistics above have power: a 5% bias in the keep probability is rejected."""
    g = _test_gradient()
    s = scaler(g, None)
    t = _draw(g * 1.05, s, seed=12)  # keeps each element 5% too often
    p = np.minimum(np.abs(g.numpy().astype(np.float64)) / s, 1.0)
    _, chi2, dof = _bernoulli_stats(t, p)
    assert chi2 > stats.chi2.isf(ALPHA_CHI2, dof)


def test_clip_then_ternarize() -> None:
    """With s = 2.5 std, |g_k| >= s always gives sign(g_k) (dequantized sign*s); the rest stays unbiased."""
    g = _test_gradient()
    g[10], g[11], g[12] = 50.0, -80.0, 30.0  # far beyond 2.5 std
    s = scaler(g, 2.5)
    clipped = (g.abs() >= s).numpy()
    assert clipped[10:13].all() and clipped.sum() >= 3
    t = _draw(g, s, seed=13)
    assert torch.all(t[:, torch.from_numpy(clipped)] == torch.sign(g[torch.from_numpy(clipped)]).to(torch.int8))
    expected_clipped = np.sign(g.numpy()[clipped]) * np.float32(s)
    assert np.array_equal(dequantize(t[:, torch.from_numpy(clipped)], s)[0].numpy(), expected_clipped)
    p = np.abs(g.numpy().astype(np.float64))[~clipped] / s
    k, chi2, dof = _bernoulli_stats(t[:, torch.from_numpy(~clipped)], p)
    _assert_binomial(k, p, chi2, dof)


# ------------------------------------------------------------------------------ aggregation: 2N+1 levels


@pytest.mark.parametrize("n_workers", [1, 2, 5])
def test_shared_scaler_sum_has_at_most_2n_plus_1_levels(n_workers: int) -> None:
    rng = np.random.default_rng(n_workers)
    grads = [torch.from_numpy((rng.standard_normal(2000) * (w + 1)).astype(np.float32)) for w in range(n_workers)]
    s = max(scaler(g, 2.5) for g in grads)  # scaler sharing: the max over workers
    terns = [ternarize(g, s, _gen(100 + w)) for w, g in enumerate(grads)]
    counts = ternary_counts(terns)
    assert counts.dtype == torch.int32
    assert torch.equal(counts, torch.stack(terns).to(torch.int32).sum(0))
    assert int(counts.abs().max()) <= n_workers
    mean = ternary_mean(terns, s)
    levels = set(mean.unique().tolist())
    assert len(levels) <= 2 * n_workers + 1
    grid = {float(np.float32(np.float32(k) * np.float32(s)) / np.float32(n_workers))
            for k in range(-n_workers, n_workers + 1)}
    assert levels <= grid
    # the mean of dequantized tensors is the same thing computed the float way
    direct = torch.stack([dequantize(t, s) for t in terns]).double().mean(0)
    assert torch.allclose(mean.double(), direct, rtol=0, atol=1e-6 * s)
    assert torch.equal(ternary_mean(torch.stack(terns), s), mean)  # stacked input, same result


def test_unshared_scalers_need_more_levels() -> None:
    """Why sharing matters: with different scalers the sum of 3 ternary tensors has more than 7 levels."""
    rng = np.random.default_rng(7)
    grads = [torch.from_numpy(rng.standard_normal(5000).astype(np.float32) * (w + 1)) for w in range(3)]
    total = sum(dequantize(ternarize(g, scaler(g, 2.5), _gen(w)), scaler(g, 2.5)) for w, g in enumerate(grads))
    assert len(total.unique()) > 2 * 3 + 1


# --------------------------------------------------------------------------------------------- packing


def test_pack_hand_computed_byte() -> None:
    t = torch.tensor([-1, 0, 1, 1, 1], dtype=torch.int8)
    # codes 0,1,2,2 -> 0 | 1<<2 | 2<<4 | 2<<6 = 164; then code 2 plus padding codes 1,1,1 -> 2|4|16|64 = 86
    assert pack2bit(t).tolist() == [164, 86]


@pytest.mark.parametrize("n", list(range(10)) + [1000, 1001, 1002, 1003, 4097])
def test_pack_round_trip(n: int) -> None:
    t = torch.randint(-1, 2, (n,), dtype=torch.int8, generator=_gen(n))
    packed = pack2bit(t)
    assert packed.dtype == torch.uint8 and packed.numel() == packed_nbytes(n) == math.ceil(n / 4)
    assert torch.equal(unpack2bit(packed, n), t)


def test_pack_flattens_any_shape() -> None:
    t = ternarize(torch.randn(3, 5, 7, generator=_gen(1)), 1.0, _gen(2))
    assert torch.equal(unpack2bit(pack2bit(t), t.numel()).view(t.shape), t)


def test_pack_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="int8"):
        pack2bit(torch.zeros(4))
    with pytest.raises(ValueError, match="-1, 0, 1"):
        pack2bit(torch.tensor([0, 2], dtype=torch.int8))
    with pytest.raises(ValueError, match="needs 2"):
        unpack2bit(torch.zeros(3, dtype=torch.uint8), 5)
    with pytest.raises(ValueError, match="code 3"):
        unpack2bit(torch.tensor([3], dtype=torch.uint8), 1)


# ----------------------------------------------------------------------------------------------- codec

SIZES = {"conv1.weight": 216, "conv1.bias": 8, "fc1.weight": 561, "fc1.bias": 33, "fc2.weight": 330, "fc2.bias": 10}


def test_codec_plan_and_wire_bytes_by_hand() -> None:
    codec = TernGradCodec(min_tensor_elems=9)
    assert codec.plan(SIZES) == (True, False, True, True, False, False)
    # ternary: conv1.weight 54+4, fc1.weight 141+4, fc1.bias 9+4; float32: (8 + 330 + 10) * 4
    assert codec.wire_bytes(SIZES) == 58 + 145 + 13 + 4 * 348 == 1608
    everything = TernGradCodec(min_tensor_elems=1, keep_last_layer_fp32=False)
    assert everything.plan(SIZES) == (True,) * 6
    assert everything.wire_bytes(SIZES) == (54 + 2 + 141 + 9 + 83 + 3) + 6 * 4 == 316
    assert TernGradCodec().plan(list(SIZES.items())) == (True, True, True, True, False, False)
    assert TernGradCodec().wire_bytes({"w": 0, "fc.weight": 4}) == 0 + 16  # empty tensor: nothing travels


def test_codec_wire_bytes_matches_packed_payload() -> None:
    """wire_bytes = the bytes pack2bit really produces + 4 per scaler + float32 bytes."""
    codec = TernGradCodec(min_tensor_elems=9)
    grads = [torch.randn(n, generator=_gen(n)) for n in SIZES.values()]
    plan = codec.plan(dict(zip(SIZES, grads)))
    shared = codec.scalers(grads, plan)
    enc = codec.encode(grads, plan, shared, _gen(0))
    payload = sum(pack2bit(e).numel() + 4 if tern else e.numel() * 4 for e, tern in zip(enc, plan))
    assert payload == codec.wire_bytes(SIZES)


def test_codec_encode_decode() -> None:
    codec = TernGradCodec(min_tensor_elems=9)
    grads = [torch.randn(n, generator=_gen(n)) for n in SIZES.values()]
    plan = codec.plan(list(zip(SIZES, grads)))
    local = codec.scalers(grads, plan)
    assert local.dtype == np.float32
    assert [s > 0 for s in local] == list(plan)
    shared = local * 2  # a shared scaler can only be larger than the local one
    enc = codec.encode(grads, plan, shared, _gen(5))
    dec = codec.decode(enc, plan, shared)
    for g, e, d, tern, s in zip(grads, enc, dec, plan, shared):
        if tern:
            assert e.dtype == torch.int8 and torch.equal(d, e.float() * float(s))
        else:
            assert torch.equal(d, g)
    with pytest.raises(ValueError, match="same length"):
        codec.encode(grads[:2], plan, shared, _gen(5))


@pytest.mark.parametrize("kwargs, match", [
    ({"clip": 0.0}, "clip"), ({"clip": -2.5}, "clip"), ({"clip": math.nan}, "clip"), ({"clip": True}, "clip"),
    ({"min_tensor_elems": 0}, "min_tensor_elems"), ({"min_tensor_elems": 2.5}, "min_tensor_elems"),
    ({"keep_last_layer_fp32": "yes"}, "keep_last_layer_fp32"),
])
def test_codec_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TernGradCodec(**kwargs)
