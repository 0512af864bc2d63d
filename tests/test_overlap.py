"""The bucket schedule by hand, and what predict does with it, accumulation and per-step overhead."""

import numpy as np
import pytest

from perfmodel.overlap import BACKWARD_SHARE, MIB, exposed_time, make_buckets, workload_buckets
from perfmodel.scaling import predict, unrunnable
from perfmodel.specs import OVERLAP_EFFICIENCY, Cluster, ComputeTime, Link, SpecError, Strategy, Workload

CL = Cluster("c", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9), gpu="gpu")
SIZES = (1_000_000, 1_000, 3_000_000, 500, 40_000, 10)


def _workload(accumulate=1, flops=()):
    return Workload("w", SIZES, {"gpu": ComputeTime("linear", t0_s=0.002, t1_s=0.001)}, accumulate=accumulate,
                    tensor_flops=flops)


def test_buckets_fill_in_reverse_order_and_are_ready_with_their_last_tensor():
    # reverse order 400, 300 | 200, 100 bytes with 500-byte buckets; weights = sizes
    b = make_buckets([100, 200, 300, 400], [100, 200, 300, 400], 500)
    np.testing.assert_allclose(b.nbytes, [700, 300])
    np.testing.assert_allclose(b.ready_fraction, [0.7, 1.0])
    # FLOPs move the ready times: the last tensor holds 7 of 10 units of backward work
    b = make_buckets([100, 200, 300, 400], [1, 1, 1, 7], 500)
    np.testing.assert_allclose(b.ready_fraction, [0.8, 1.0])
    # a bucket larger than the model: one bucket at the end; a tiny one: one bucket per tensor
    np.testing.assert_allclose(make_buckets([1, 2, 3], [1, 1, 1], 100).nbytes, [6])
    np.testing.assert_allclose(make_buckets([1, 2, 3], [1, 1, 1], 1).ready_fraction, [1 / 3, 2 / 3, 1.0])
    with pytest.raises(SpecError):
        make_buckets([1], [1], 0)


def test_schedule_by_hand_one_stream():
    b = make_buckets([100, 200, 300, 400], [100, 200, 300, 400], 500)

    def cost(nb):
        return nb * 1e-3  # 0.7 s and 0.3 s

    # backward 1 s: bucket 0 ready at 0.7, done 1.4; bucket 1 ready at 1.0, waits, done 1.7
    total, exposed = exposed_time(b, np.array([1.0, 10.0]), cost)
    np.testing.assert_allclose(total, [1.0, 1.0])
    # backward 10 s: bucket 0 done at 7.7, bucket 1 starts at 10 and ends at 10.3: only it shows
    np.testing.assert_allclose(exposed, [0.7, 0.3])


def test_launch_delay_by_hand():
    b = make_buckets([100, 200, 300, 400], [100, 200, 300, 400], 500)

    def cost(nb):
        return nb * 1e-3  # 0.7 s and 0.3 s

    # backward 1 s, launch 0.05 s after ready: bucket 0 starts 0.75, done 1.45; bucket 1 ready at 1.0 but
    # the stream is busy until 1.45 (the wait is hidden behind bucket 0): done 1.75
    total, exposed = exposed_time(b, np.array([1.0, 10.0]), cost, start_delay=0.05)
    np.testing.assert_allclose(total, [1.0, 1.0])
    # backward 10 s: bucket 1 starts at 10.05 and ends at 10.35
    np.testing.assert_allclose(exposed, [0.75, 0.35])


def test_cycle_time_waits_half_a_cycle_before_each_launch():
    wl = _workload()
    t_comp = 0.002 + 0.001 * 32
    base = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0), [1, 8], batch=32)
    cyc = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0, cycle_time_s=0.004), [1, 8], batch=32)
    # one GPU: nothing is launched; 8 GPUs: the last bucket's 2 ms wait shows (the schedule above ends
    # with the last bucket launched at t_b, so its wait adds to the step one for one)
    assert cyc.t_iter_s[0] == pytest.approx(base.t_iter_s[0])
    assert cyc.t_iter_s[1] == pytest.approx(base.t_iter_s[1] + 0.002)
    assert cyc.t_comm_s[1] - cyc.extra["t_hidden_s"][1] == pytest.approx(cyc.t_iter_s[1] - t_comp)
    # no overlap: the wait is added to the exchange
    flat = predict(wl, CL, Strategy("ssgd", overlap=0.0), [8], batch=32)
    flat_c = predict(wl, CL, Strategy("ssgd", overlap=0.0, cycle_time_s=0.004), [8], batch=32)
    assert flat_c.t_iter_s[0] == pytest.approx(flat.t_iter_s[0] + 0.002)
    with pytest.raises(SpecError):
        Strategy("ssgd", cycle_time_s=-0.001)


def test_overlap_efficiency_hides_its_share_of_the_schedule():
    wl = _workload()
    full = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0, overlap_efficiency=1.0), [1, 8], batch=32)
    part = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0, overlap_efficiency=0.25), [1, 8], batch=32)
    hidden = full.extra["t_hidden_s"][1]
    assert hidden > 0  # the first bucket overlaps backprop on this cluster
    assert part.extra["t_hidden_s"][1] == pytest.approx(0.25 * hidden)
    np.testing.assert_allclose(part.t_iter_s - full.t_iter_s, [0.0, 0.75 * hidden])
    none = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0, overlap_efficiency=0.0), [8], batch=32)
    assert none.t_iter_s[0] == pytest.approx(full.t_compute_s[1] + full.t_comm_s[1])
    # a constant overlap is the user's own figure: the efficiency leaves it alone
    a = predict(wl, CL, Strategy("ssgd", overlap=0.5), [8], batch=32)
    b = predict(wl, CL, Strategy("ssgd", overlap=0.5, overlap_efficiency=0.25), [8], batch=32)
    assert a.t_iter_s[0] == pytest.approx(b.t_iter_s[0])
    for bad in (-0.1, 1.5):
        with pytest.raises(SpecError):
            Strategy("ssgd", overlap_efficiency=bad)
    # the default derives the overlap from its causes (tests/test_overlap_causes.py); CPU ranks (a
    # cluster without a GPU peak, as CL) keep the old constant on the ideal schedule
    assert Strategy("ssgd").overlap_efficiency is None and OVERLAP_EFFICIENCY == 0.21
    default = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0), [1, 8], batch=32)
    old = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0, overlap_efficiency=0.21), [1, 8], batch=32)
    np.testing.assert_allclose(default.t_iter_s, old.t_iter_s)


def test_predict_uses_the_schedule_by_hand():
    wl = _workload()
    w = 8  # two nodes: ring steps wait for the network

    def ring(nb):
        return 14 * (1e-5 + nb / 8 / 1.25e9)

    # 1 MiB buckets, reverse order: 40 B + 160 kB + 2 kB + 12 MB closes the first bucket; 4 kB + 4 MB the second
    first = 4.0 * (10 + 40_000 + 500 + 3_000_000)
    second = 4.0 * (1_000 + 1_000_000)
    ready_first = (10 + 40_000 + 500 + 3_000_000) / sum(SIZES)
    t_comp = 0.002 + 0.001 * 32
    t_b = 2 / 3 * t_comp
    f0 = ready_first * t_b + ring(first)
    f1 = max(t_b, f0) + ring(second)
    p = predict(wl, CL, Strategy("ssgd", bucket_mb=1.0, overlap_efficiency=1.0), [w], batch=32)
    assert p.t_comm_s[0] == pytest.approx(ring(first) + ring(second))
    assert p.t_iter_s[0] == pytest.approx(t_comp + f1 - t_b)
    assert p.extra["t_hidden_s"][0] == pytest.approx(ring(first) + ring(second) - (f1 - t_b))
    # a constant overlap overrides the schedule (whole-gradient allreduce), and the cap min(comm, t_comp)
    whole = ring(4.0 * sum(SIZES))
    p = predict(wl, CL, Strategy("ssgd", overlap=0.5), [w], batch=32)
    assert p.t_iter_s[0] == pytest.approx(t_comp + whole - 0.5 * min(whole, t_comp))
    slow = _slow_network()
    p = predict(wl, slow, Strategy("ssgd", overlap=1.0), [w], batch=32)
    assert p.t_comm_s[0] > t_comp  # the cap is reached: only t_comp of it is hidden
    assert p.t_iter_s[0] == pytest.approx(p.t_comm_s[0])


def _slow_network():
    return Cluster("slow", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1e7), gpu="gpu")


def test_paper_allreduce_and_other_strategies_keep_no_overlap_by_default():
    wl = _workload()
    for st in (Strategy("ssgd", allreduce="paper"), Strategy("terngrad"), Strategy("asgd")):
        p = predict(wl, CL, st, [8], batch=32)
        assert p.extra["t_hidden_s"][0] == 0.0


def test_tensor_flops_change_the_ready_times():
    wl_params = _workload()
    # all the backward work in the first tensor (model order): the later tensors' buckets are ready at once
    wl_flops = _workload(flops=(1e9, 1.0, 1.0, 1.0, 1.0, 1.0))
    b = workload_buckets(wl_flops, 4.0, 1.0)
    np.testing.assert_allclose(b.ready_fraction, [4 / (1e9 + 5), 1.0])
    st = Strategy("ssgd", bucket_mb=1.0)
    early = predict(wl_flops, CL, st, [8], batch=32)
    late = predict(wl_params, CL, st, [8], batch=32)
    assert early.t_iter_s[0] <= late.t_iter_s[0]
    assert MIB == 1048576 and BACKWARD_SHARE == pytest.approx(2 / 3)


def test_accumulation_computes_k_micro_batches_per_exchange():
    one, four = _workload(), _workload(accumulate=4)
    st = Strategy("ssgd", overlap=0.0)
    a = predict(one, CL, st, [1, 8], batch=32)
    b = predict(four, CL, st, [1, 8], batch=32)
    np.testing.assert_allclose(b.t_compute_s, 4 * a.t_compute_s)
    np.testing.assert_allclose(b.t_comm_s, a.t_comm_s)
    np.testing.assert_allclose(b.throughput, 4 * 32 * np.array([1, 8]) / (4 * 0.034 + a.t_comm_s))
    assert b.speedup[0] == pytest.approx(1.0)
    # strong scaling: a total batch of 256 on 8 GPUs in 4 micro-batches is 8 samples per GPU each
    s = predict(four, CL, st, [8], scaling="strong", batch=256)
    assert s.batch_per_gpu[0] == 8 and s.t_compute_s[0] == pytest.approx(4 * (0.002 + 0.008))
    assert s.throughput[0] == pytest.approx(256 / s.t_iter_s[0])
    # only the last micro-batch's backward hides communication
    sched = predict(four, CL, Strategy("ssgd", bucket_mb=1.0), [8], batch=32)
    plain = predict(one, CL, Strategy("ssgd", bucket_mb=1.0), [8], batch=32)
    assert sched.extra["t_hidden_s"][0] == pytest.approx(plain.extra["t_hidden_s"][0])


def test_step_overhead_is_added_to_multi_gpu_steps_only():
    wl = _workload()
    a = predict(wl, CL, Strategy("ssgd"), [1, 8], batch=32)
    b = predict(wl, CL, Strategy("ssgd", step_overhead_s=0.005), [1, 8], batch=32)
    np.testing.assert_allclose(b.t_iter_s - a.t_iter_s, [0.0, 0.005])
    with pytest.raises(SpecError):
        Strategy("ssgd", step_overhead_s=-1.0)


def test_unrunnable_counts_and_refusals():
    st = Strategy("daso")
    bad = unrunnable(np.arange(1, 10), CL, st)
    (why, counts), = bad.items()
    assert "whole nodes" in why and counts.tolist() == [5, 6, 7, 9]
    strong = unrunnable([1, 256, 512], CL, Strategy("ssgd"), scaling="strong", batch=256)
    assert list(strong.values())[0].tolist() == [512]
    assert unrunnable([1, 256, 512], CL, Strategy("ssgd"), scaling="strong", batch=512) == {}
    with pytest.raises(SpecError, match="fewer than one sample"):
        predict(_workload(), CL, Strategy("ssgd"), [512], scaling="strong", batch=1)
    small = Cluster("small", 4, CL.intra, CL.host, CL.network, gpu="gpu", max_nodes=2)
    with pytest.raises(SpecError, match="16 GPUs need 4 nodes of 4; cluster small has 2 nodes"):
        predict(_workload(), small, Strategy("ssgd"), [4, 16], batch=32)


def test_daso_local_allreduce_follows_the_schedule():
    """DASO's node-local allreduce is bucketed like ssgd's: on one node DASO is ssgd, buckets and all."""
    wl = _workload()
    for bucket in (1.0, 25.0):
        daso = predict(wl, CL, Strategy("daso", bucket_mb=bucket), [4], batch=32)
        ssgd = predict(wl, CL, Strategy("ssgd", bucket_mb=bucket), [4], batch=32)
        assert daso.t_iter_s[0] == pytest.approx(ssgd.t_iter_s[0])
        assert daso.extra["t_hidden_s"][0] == pytest.approx(ssgd.extra["t_hidden_s"][0])
    assert predict(wl, CL, Strategy("daso", bucket_mb=1.0), [4], batch=32).extra["t_hidden_s"][0] > 0
