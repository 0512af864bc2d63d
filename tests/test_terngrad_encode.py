"""TernGrad's fused encode (trainers.compress.encode_codes / encode_packed): the numba kernels against
the numpy reference bit for bit, unbiasedness of the counter-based stream, the packings exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from trainers import compress
from trainers.compress import (encode_codes, encode_packed, level_bits, level_dtype, pack2bit, pack_bits, scaler,
                               unpack2bit, unpack_bits, unpack_sum)

M = 4000  # draws per statistical test
ALPHA_ELEM = 1e-9  # per-element two-sided false-alarm probability
ALPHA_CHI2 = 1e-6


def _gradient(n: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n) * 10.0 ** rng.uniform(-1, 0, n)
    g[:5] = 0.0
    return g.astype(np.float32)


def _draws(g: np.ndarray, s: float, key: int) -> np.ndarray:
    """M encodings of g from consecutive stretches of one stream (as M training steps draw them)."""
    reps = np.tile(g, M)
    return encode_codes(reps, np.array([0, reps.size]), np.array([s]), key, 0).reshape(M, g.size)


needs_numba = pytest.mark.skipif(compress._numba is None, reason="numba not installed")


@needs_numba
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_fused_codes_equal_the_numpy_reference(dtype) -> None:
    g = _gradient(1003)
    g[600:700] = 0.0  # an all-zero tensor with scaler 0
    starts, scalers = np.array([0, 500, 600, 700, 1003]), np.array([2.0, 0.0, 0.0, 0.3])
    fast = encode_codes(g, starts, scalers, 12345, 77, np.empty(g.size, dtype=dtype))
    ref = encode_codes(g, starts, scalers, 12345, 77, fused=False)
    np.testing.assert_array_equal(fast, ref)
    assert set(np.unique(fast)) == {-1, 0, 1}
    assert np.all(fast[600:700] == 0)
    assert np.all(fast[np.sign(g) * fast < 0] == 0)  # the sign is never flipped
    # tensors with |g| >= s always keep: the last segment's scaler 0.3 clips most of it
    clipped = np.flatnonzero(np.abs(g[700:]) >= 0.3) + 700
    np.testing.assert_array_equal(fast[clipped], np.sign(g[clipped]))


@needs_numba
def test_fused_packed_equals_pack2bit_of_the_codes_and_pads_with_zero_code() -> None:
    g = _gradient(1001)
    starts, scalers = np.array([0, 400, 1001]), np.array([1.5, 0.8])
    codes = encode_codes(g, starts, scalers, 9, 5)
    out = np.zeros(260, dtype=np.uint8)  # 251 bytes of data, then padding to 260
    packed = encode_packed(g, starts, scalers, 9, 5, out)
    np.testing.assert_array_equal(packed[:251], pack2bit(torch.from_numpy(codes)).numpy())
    np.testing.assert_array_equal(packed[251:], 0x55)  # code 1 (value 0) in all four lanes
    np.testing.assert_array_equal(packed, encode_packed(g, starts, scalers, 9, 5, np.zeros(260, np.uint8),
                                                        fused=False))
    np.testing.assert_array_equal(unpack2bit(torch.from_numpy(packed[:251]), 1001).numpy(), codes)


def test_stream_is_counter_based() -> None:
    # element i of a call at counter c draws word c + i + 1: a later call continues the stream exactly
    g = _gradient(200)
    whole = encode_codes(g, np.array([0, 200]), np.array([0.5]), 3, 10)
    tail = encode_codes(g[120:], np.array([0, 80]), np.array([0.5]), 3, 130)
    np.testing.assert_array_equal(whole[120:], tail)
    assert not np.array_equal(whole, encode_codes(g, np.array([0, 200]), np.array([0.5]), 4, 10))


def test_fused_encode_is_unbiased_with_bernoulli_bound() -> None:
    """Counts of kept elements over M draws are Binomial(M, |g|/s): per element and by chi-square; and
    the mean of s*t is within 6.5 Bernoulli standard deviations of g (Var[s t] = |g| (s - |g|))."""
    g = _gradient()
    s = float(np.max(np.abs(g)))  # no element is clipped
    t = _draws(g, s, key=11)
    p = np.minimum(np.abs(g.astype(np.float64)) / s, 1.0)
    k = np.abs(t).sum(axis=0)
    lo, hi = stats.binom.ppf(ALPHA_ELEM / 2, M, p), stats.binom.isf(ALPHA_ELEM / 2, M, p)
    assert np.all((k >= lo) & (k <= hi))
    inner = (p > 0) & (p < 1)
    chi2 = float(((k[inner] - M * p[inner]) ** 2 / (M * p[inner] * (1 - p[inner]))).sum())
    dof = int(inner.sum())
    assert stats.chi2.ppf(ALPHA_CHI2, dof) < chi2 < stats.chi2.isf(ALPHA_CHI2, dof)
    mean = (t.astype(np.float64) * s).mean(axis=0)
    sigma = np.sqrt(np.abs(g) * (s - np.abs(g)) / M)
    assert np.all(np.abs(mean - g) <= 6.5 * sigma + 1e-6)
    # power: the same statistic rejects a 5% bias in the keep probability
    t_biased = _draws(g * 1.05, s, key=12)
    kb = np.abs(t_biased).sum(axis=0)
    chi2_b = float(((kb[inner] - M * p[inner]) ** 2 / (M * p[inner] * (1 - p[inner]))).sum())
    assert chi2_b > stats.chi2.isf(ALPHA_CHI2, dof)


def test_fast_scaler_matches_float64_reference() -> None:
    g = torch.from_numpy(_gradient(10_001, seed=3)) + 0.25
    ref = g.to(torch.float64)
    assert scaler(g, None) == float(ref.abs().max())
    assert scaler(g, 2.5) == pytest.approx(2.5 * float(ref.std(correction=0)), rel=1e-12)
    assert scaler(torch.full((9,), -0.5), 2.5) == 0.5  # constant: std 0, s = max|g|


def test_pack_bits_hand_computed_and_round_trip() -> None:
    # little-endian bit order: value 0 in the low bits of byte 0
    np.testing.assert_array_equal(pack_bits(np.array([1, 2]), 4), [0x21])
    # 3 bits each: value j fills bits 3j..3j+2 of the stream; byte 0 = v0 | v1 << 3 | (v2 & 3) << 6,
    # byte 1 = v2 >> 2 | v3 << 1 | v4 << 4 | (v5 & 1) << 7, byte 2 = v5 >> 1 | v6 << 2 | v7 << 5
    v = [5, 0, 7, 1, 2, 3, 4, 6]
    for fused in (True, False):  # the one-pass kernel and the numpy bit-plane reference
        np.testing.assert_array_equal(pack_bits(np.array(v), 3, fused=fused),
                                      [5 | 0 | 3 << 6, 1 | 1 << 1 | 2 << 4 | 1 << 7, 1 | 4 << 2 | 6 << 5])
    rng = np.random.default_rng(0)
    for bits in range(1, 17):
        v = rng.integers(0, 1 << bits, 64)
        packed = pack_bits(v, bits)
        assert packed.size == 64 * bits // 8
        np.testing.assert_array_equal(packed, pack_bits(v, bits, fused=False))
        np.testing.assert_array_equal(unpack_bits(packed, bits, 64), v)
        np.testing.assert_array_equal(unpack_bits(packed, bits, 64, fused=False), v)
    with pytest.raises(ValueError):
        pack_bits(np.array([16]), 4)
    with pytest.raises(ValueError):
        pack_bits(np.array([1, 2, 3]), 3)  # 9 bits: not whole bytes


def test_unpack_sum_adds_rows_of_packed_codes() -> None:
    rows = [np.array([1, -1, 0, 1, 1], dtype=np.int8), np.array([1, 1, -1, 0, 1], dtype=np.int8),
            np.array([-1, 0, 0, 1, 1], dtype=np.int8)]
    packed = np.stack([pack2bit(torch.from_numpy(r)).numpy() for r in rows])
    out = np.zeros(5, dtype=np.int32)
    unpack_sum(packed, 5, out)
    np.testing.assert_array_equal(out, [1, 0, -1, 2, 3])


def test_ps_exchange_sum_and_unpack_by_hand() -> None:
    # 2 workers, shard of 8: worker rows of 2-bit codes; the sum offset by 2 (0..4) at level_bits(2) = 3
    # bits, then both ranks' packed sums unpacked, less the offset, into one array of 2 x 8
    from trainers.compress import ps_shard_sum, ps_unpack_sums

    a = np.array([1, -1, 0, 1, 1, 0, -1, -1], dtype=np.int8)
    b = np.array([1, 1, -1, 0, 1, 0, -1, 1], dtype=np.int8)
    recv = np.stack([pack2bit(torch.from_numpy(r)).numpy() for r in (a, b)])
    packed = ps_shard_sum(recv, 8, 2)
    sums = [2, 0, -1, 1, 2, 0, -2, 0]
    np.testing.assert_array_equal(packed, pack_bits(np.array(sums) + 2, 3))
    assert packed.size == 8 * 3 // 8
    other = pack_bits(np.array([0, 1, 2, 3, 4, 0, 1, 2]), 3)  # the other rank's shard: sums -2..2
    out = np.zeros(16, dtype=np.int32)
    ps_unpack_sums(np.stack([packed, other]), 8, 2, out)
    np.testing.assert_array_equal(out, sums + [-2, -1, 0, 1, 2, -2, -1, 0])


def test_level_bits_and_dtype_by_hand() -> None:
    # the sum of W ternary values lies in -W..W: 2W+1 levels
    assert [level_bits(w) for w in (1, 2, 3, 4, 7, 8, 127, 128, 512)] == [2, 3, 3, 4, 4, 5, 8, 9, 11]
    assert [level_dtype(w) for w in (1, 127, 128, 32767, 32768)] == [np.int8, np.int8, np.int16, np.int16, np.int32]
