"""Wire sizes per format against hand counts."""

import numpy as np
import pytest

from perfmodel.compression import (aggregate_bits, compression_ratio, dense_bytes, encode_seconds,
                                   terngrad_bytes, ternary_split)
from perfmodel.specs import ComputeTime, SpecError, Workload

WL = Workload("w", (1000, 10, 4000, 20, 500, 5), {"g": ComputeTime("linear", t1_s=1e-3)}, classifier_tensors=2)


def test_dense_bytes():
    assert dense_bytes(WL) == 4 * 5535
    assert dense_bytes(WL, "fp16") == dense_bytes(WL, "bf16") == 2 * 5535
    with pytest.raises(SpecError):
        dense_bytes(WL, "int3")


def test_terngrad_split_and_bytes_by_hand():
    s = ternary_split(WL)
    assert (s.ternary_elems, s.ternary_tensors, s.fp32_elems) == (5535, 6, 0)
    assert float(terngrad_bytes(s)) == pytest.approx(5535 / 4 + 4 * 6)
    s = ternary_split(WL, min_elems=100, fp32_last=True)  # small biases and the classifier stay fp32
    assert (s.ternary_elems, s.ternary_tensors, s.fp32_elems) == (5000, 2, 535)
    assert float(terngrad_bytes(s)) == pytest.approx(5000 / 4 + 8 + 4 * 535)
    assert compression_ratio(WL) == pytest.approx(4 * 5535 / (5535 / 4 + 24))


def test_aggregate_levels():
    # p workers with shared scalers sum to integers in [-p, p]: 2p+1 levels
    np.testing.assert_array_equal(aggregate_bits(np.array([1, 2, 3, 4, 127, 128, 512])), [2, 3, 3, 4, 8, 9, 11])


def test_encode_seconds():
    assert encode_seconds(1e6, 0) == 0.0
    assert encode_seconds(1e6, 1e9) == pytest.approx(1e-3)
