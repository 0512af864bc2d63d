"""ZeRO 1-3 and FSDP (perfmodel.sharded): hand-derived bytes and seconds, and their identities with allreduce."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import collectives as coll
from perfmodel.scaling import predict
from perfmodel.sharded import collective_counts, sharded_bytes
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload

PSI = 1_000_000  # parameters: 4 MB of fp32 gradient


def _cluster(g=8):
    return Cluster("one-node", g, Link(1e-6, 1e10), Link(1e-5, 1e10), Link(1e-6, 1e9), gpu="x")


def _wl(t1=1e-9, k=1):
    return Workload("toy", (PSI // 2, PSI // 2), {"x": ComputeTime("linear", t1_s=t1)}, accumulate=k)


def test_bytes_per_gpu_hand_counts():
    n = 4000.0
    assert sharded_bytes("zero1", n, 4) == pytest.approx(2 * 3 / 4 * 4000)  # 6000: RS + AG
    assert sharded_bytes("zero2", n, 4, k=2) == pytest.approx(3 * 3 / 4 * 4000)  # 2 RS + 1 AG
    assert sharded_bytes("zero3", n, 4) == pytest.approx(9000)  # 2 AG + RS: 1.5x data parallelism
    assert sharded_bytes("fsdp", n, 4, k=3) == pytest.approx(3 * 9000)
    assert collective_counts("zero3", 2) == (4, 2)


def test_zero1_moves_what_a_ring_allreduce_moves():
    w = np.array([2, 4, 8])
    wl = _wl()
    z1 = predict(wl, _cluster(), Strategy("zero1", overlap_efficiency=0.0), w)
    ring = coll.cluster_allreduce("ring", 4.0 * PSI, w, _cluster())
    # RS + AG = 2 (W-1) (alpha + n/W beta): 4 GPUs: 2 x 3 x (1e-6 + 1e6 / 1e10) = 6.06e-4 s
    assert z1.t_comm_s[1] == pytest.approx(2 * 3 * (1e-6 + 4.0 * PSI / 4 / 1e10))
    np.testing.assert_allclose(z1.t_comm_s, ring)
    ssgd = predict(wl, _cluster(), Strategy("ssgd", allreduce="ring"), w)
    np.testing.assert_allclose(z1.bytes_per_gpu, ssgd.bytes_per_gpu)
    z3 = predict(wl, _cluster(), Strategy("zero3"), w)
    np.testing.assert_allclose(z3.bytes_per_gpu, 1.5 * ssgd.bytes_per_gpu)
    np.testing.assert_allclose(z3.t_comm_s, 1.5 * ring)


def test_prefetch_hides_zero3_behind_long_compute():
    w = np.array([4])
    slow = _wl(t1=1.0)  # seconds of compute per sample: everything can hide
    full = predict(slow, _cluster(), Strategy("zero3", overlap_efficiency=1.0), w, batch=32)
    assert full.extra["t_hidden_s"][0] == pytest.approx(full.t_comm_s[0])
    assert full.t_iter_s[0] == pytest.approx(full.t_compute_s[0])
    none = predict(slow, _cluster(), Strategy("zero3", overlap_efficiency=1.0, zero_prefetch=False), w, batch=32)
    ag = coll.cluster_allgather(4.0 * PSI / 4, w, _cluster())[0]
    assert none.t_iter_s[0] == pytest.approx(none.t_compute_s[0] + 2 * ag)  # both gathers exposed
    half = predict(slow, _cluster(), Strategy("zero3", overlap_efficiency=0.5), w, batch=32)
    assert half.extra["t_hidden_s"][0] == pytest.approx(0.5 * half.t_comm_s[0])


def test_one_gpu_communicates_nothing_and_bad_names_are_refused():
    p = predict(_wl(), _cluster(), Strategy("fsdp"), [1])
    assert p.t_comm_s[0] == 0 and p.bytes_per_gpu[0] == 0
    with pytest.raises(SpecError):
        Strategy("zero4")
    with pytest.raises(SpecError):
        Strategy("zero3", zero_prefetch="yes")
