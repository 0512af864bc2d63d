"""4-bit lanes of TernGrad's levels sum (trainers.level_lanes) against integer arithmetic."""

import numpy as np
import pytest

from trainers.level_lanes import lanes_nbytes, pack_lanes4, swar_add4, unpack_lanes4


def test_pack_layout_by_hand():
    # element 2i in the low nibble, 2i+1 in the high nibble, two's complement; odd count: high nibble 0
    codes = np.array([1, -1, 0, 1, -1], dtype=np.int8)
    lanes = pack_lanes4(codes)
    assert lanes.tolist() == [0xF1, 0x10, 0x0F]
    assert [lanes_nbytes(n) for n in (0, 1, 2, 3, 3045)] == [0, 1, 1, 2, 1523]


@pytest.mark.parametrize("n", [0, 1, 2, 7, 16, 1001])
def test_pack_unpack_round_trip_of_every_lane_value(n):
    codes = np.resize(np.arange(-8, 8, dtype=np.int8), n)  # -8..7, every 4-bit value
    out = np.full(n, 99, dtype=np.int8)
    assert unpack_lanes4(pack_lanes4(codes), n, out) is out
    np.testing.assert_array_equal(out, codes)
    # buffers at odd addresses (the 16-bit pair words are then unaligned)
    shifted = np.concatenate([[5], codes]).astype(np.int8)[1:]
    dest = np.zeros(n + 1, dtype=np.int8)[1:]
    np.testing.assert_array_equal(unpack_lanes4(pack_lanes4(shifted), n, dest), codes)


def test_swar_add_is_lane_wise_addition_mod_16_for_all_byte_pairs():
    a, b = (x.ravel().astype(np.uint8) for x in np.meshgrid(np.arange(256), np.arange(256)))
    low = ((a & 0xF).astype(int) + (b & 0xF)) % 16
    high = ((a >> 4).astype(int) + (b >> 4)) % 16
    expect = (low | high << 4).astype(np.uint8)
    np.testing.assert_array_equal(swar_add4(a, b), expect)  # 65_536 bytes: the uint64 path
    for k in range(1, 8):  # the byte-by-byte tail (lengths not a multiple of 8)
        np.testing.assert_array_equal(swar_add4(a[:k], b[:k]), expect[:k])
    np.testing.assert_array_equal(swar_add4(a[3:1000], b[3:1000]), expect[3:1000])  # unaligned words
    c = a.copy()
    swar_add4(c, b, out=c)  # in place, as the MPI op writes inout
    np.testing.assert_array_equal(c, expect)


@pytest.mark.parametrize("workers", range(2, 8))
def test_lane_sum_of_w_ternary_vectors_is_the_integer_sum(workers):
    rng = np.random.default_rng(workers)
    n = 1001  # odd: a half-used last byte
    codes = rng.integers(-1, 2, size=(workers, n)).astype(np.int8)
    codes[:, :2] = [1, -1]  # the extremes -W and W appear
    total = codes.sum(axis=0, dtype=np.int64)
    # any reduction order (the MPI library chooses): sequential and pairwise trees
    acc = pack_lanes4(codes[0])
    for row in codes[1:]:
        swar_add4(acc, pack_lanes4(row), out=acc)
    np.testing.assert_array_equal(unpack_lanes4(acc, n), total)
    parts = [pack_lanes4(row) for row in codes]
    while len(parts) > 1:
        parts = [swar_add4(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    np.testing.assert_array_equal(unpack_lanes4(parts[0], n), total)
    assert unpack_lanes4(acc, n)[:2].tolist() == [workers, -workers]


def test_partial_sums_that_wrap_still_give_the_exact_total():
    # 7 + 7 wraps to -2 in a 4-bit lane; adding -7 -7 brings it back to the exact 0
    seven, minus = pack_lanes4(np.array([7, 7], dtype=np.int8)), pack_lanes4(np.array([-7, -7], dtype=np.int8))
    wrapped = swar_add4(seven, seven)
    assert unpack_lanes4(wrapped, 2).tolist() == [-2, -2]
    assert unpack_lanes4(swar_add4(swar_add4(wrapped, minus), minus), 2).tolist() == [0, 0]


def test_bad_buffers_are_refused():
    with pytest.raises(ValueError):
        pack_lanes4(np.zeros(4, dtype=np.int16))
    with pytest.raises(ValueError):
        pack_lanes4(np.zeros(4, dtype=np.int8), np.zeros(3, dtype=np.uint8))
    with pytest.raises(ValueError):
        unpack_lanes4(np.zeros(2, dtype=np.uint8), 5)
    with pytest.raises(ValueError):
        swar_add4(np.zeros(4, dtype=np.uint8), np.zeros(5, dtype=np.uint8))
