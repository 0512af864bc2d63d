"""Wire sizes per format against hand counts."""

import numpy as np
import pytest

from perfmodel.compression import (codec_sync_points, compression_ratio, dense_bytes, encode_seconds,
                                   resolve_level_lanes, terngrad_bytes, ternary_split)
from perfmodel.specs import ComputeTime, SpecError, Workload
from perfmodel.wire import aggregate_bits, level_bytes, levels_lane_bits, ps_shard_elems

WL = Workload("w", (1000, 10, 4000, 20, 500, 5), {"g": ComputeTime("linear", t1_s=1e-3)}, classifier_tensors=2)


def test_dense_bytes():
    assert dense_bytes(WL) == 4 * 5535
    assert dense_bytes(WL, "fp16") == dense_bytes(WL, "bf16") == 2 * 5535
    with pytest.raises(SpecError):
        dense_bytes(WL, "int3")


def test_codec_sync_points_by_exchange():
    # after the scalers' Allreduce: the codes' exchange (ps: Alltoall, then Allgather), then the fp32
    # tensors' Allreduce where the classifier layer stays fp32
    with_fp32, all_ternary = ternary_split(WL), ternary_split(WL, fp32_last=False)
    assert [codec_sync_points(with_fp32, e) for e in ("levels", "allgather", "ps")] == [2, 2, 3]
    assert [codec_sync_points(all_ternary, e) for e in ("levels", "allgather", "ps")] == [1, 1, 2]
    with pytest.raises(SpecError, match="exchange"):
        codec_sync_points(with_fp32, "paper")


def test_terngrad_split_and_bytes_by_hand():
    # the trainers' defaults: every tensor ternary except the classifier layer (500 + 5 elements)
    s = ternary_split(WL)
    assert (s.ternary_elems, s.ternary_tensors, s.fp32_elems) == (5030, 4, 505)
    assert s.packed_bytes == 250 + 3 + 1000 + 5  # ceil(n/4) per ternary tensor
    assert float(terngrad_bytes(s)) == pytest.approx(5030 / 4 + 4 * 4 + 4 * 505)
    s = ternary_split(WL, min_elems=1, fp32_last=False)
    assert (s.ternary_elems, s.ternary_tensors, s.fp32_elems) == (5535, 6, 0)
    assert float(terngrad_bytes(s)) == pytest.approx(5535 / 4 + 4 * 6)
    s = ternary_split(WL, min_elems=100, fp32_last=True)  # small biases and the classifier stay fp32
    assert (s.ternary_elems, s.ternary_tensors, s.fp32_elems) == (5000, 2, 535)
    assert float(terngrad_bytes(s)) == pytest.approx(5000 / 4 + 8 + 4 * 535)
    assert compression_ratio(WL, fp32_last=False) == pytest.approx(4 * 5535 / (5535 / 4 + 24))


def test_aggregate_levels():
    # p workers with shared scalers sum to integers in [-p, p]: 2p+1 levels
    np.testing.assert_array_equal(aggregate_bits(np.array([1, 2, 3, 4, 127, 128, 512])), [2, 3, 3, 4, 8, 9, 11])


def test_level_bytes_switch_int8_int16_int32():
    # the smallest signed integer holding -p..p: int8 max 127, int16 max 32767
    np.testing.assert_array_equal(level_bytes(np.array([1, 2, 127, 128, 512, 32767, 32768])),
                                  [1, 1, 1, 2, 2, 2, 4])


def test_levels_lane_bits_4_bit_lanes_up_to_7_workers_with_user_ops():
    # a 4-bit lane holds -W..W while 2W+1 <= 16 (W <= 7); W = 1 sends nothing and is not packed
    assert [levels_lane_bits(w, True) for w in (1, 2, 7, 8, 127, 128)] == [8, 4, 4, 8, 8, 16]
    assert [levels_lane_bits(w, False) for w in (1, 2, 7, 8, 127, 128)] == [8, 8, 8, 8, 8, 16]
    assert levels_lane_bits(32768, True) == 32 and isinstance(levels_lane_bits(3, True), int)
    np.testing.assert_array_equal(levels_lane_bits(np.array([1.0, 4.0, 7.0, 8.0, 200.0]), True), [8, 4, 4, 8, 16])
    with pytest.raises(SpecError):
        levels_lane_bits(0, True)


def test_resolve_level_lanes_by_backend():
    assert [resolve_level_lanes("auto", b) for b in ("mpi", "gloo", "nccl")] == ["packed", "int8", "int8"]
    assert resolve_level_lanes("int8", "mpi") == "int8" and resolve_level_lanes("packed", "mpi") == "packed"
    with pytest.raises(SpecError, match="gloo"):
        resolve_level_lanes("packed", "gloo")
    with pytest.raises(SpecError):
        resolve_level_lanes("int4", "mpi")


def test_ps_shard_elems_by_hand():
    # ceil(n/p) rounded up to a multiple of 8, at least 8
    np.testing.assert_array_equal(ps_shard_elems(100, np.array([1, 2, 3, 4, 64, 512])), [104, 56, 40, 32, 8, 8])


def test_encode_seconds():
    assert encode_seconds(1e6, 0) == 0.0
    assert encode_seconds(1e6, 1e9) == pytest.approx(1e-3)
