"""The scaling model: paper formulas by hand, limits, and vectorized == scalar at every point."""

import math
from dataclasses import replace

import numpy as np
import pytest

from perfmodel.compression import terngrad_bytes, ternary_split
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload

SIZES = (1_000_000, 1_000, 3_000_000, 500, 40_000, 10)


def make_cluster(inf=False, g=4):
    if inf:
        link = Link(0.0, float("inf"))
        return Cluster("inf", g, link, link, link, gpu="gpu")
    return Cluster("c", g, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9), gpu="gpu")


def make_workload(t0=0.002, t1=0.001, copy=0.0):
    return Workload("w", SIZES, {"gpu": ComputeTime("linear", t0_s=t0, t1_s=t1, copy_s=copy)},
                    tensor_names=tuple(f"l{i // 2}.{'weight' if i % 2 == 0 else 'bias'}" for i in range(len(SIZES))))


GPUS = np.array([1, 2, 4, 8, 16, 64, 512])


@pytest.mark.parametrize("name", ["ssgd", "terngrad", "daso", "asgd"])
@pytest.mark.parametrize("scaling", ["weak", "strong"])
def test_one_gpu_has_no_communication(name, scaling):
    p = predict(make_workload(copy=0.0005), make_cluster(), Strategy(name), [1], scaling=scaling, batch=64)
    assert p.t_comm_s[0] == 0.0 and p.bytes_per_gpu[0] == 0.0
    assert p.speedup[0] == pytest.approx(1.0) and p.efficiency[0] == pytest.approx(1.0)
    assert p.t_iter_s[0] == pytest.approx(0.002 + 0.001 * 64 - 0.0005)


@pytest.mark.parametrize("name,alg", [(n, a) for n in ("ssgd", "terngrad", "daso") for a in
                                      ("paper", "ring", "tree", "recursive-doubling", "rabenseifner",
                                       "hierarchical")] + [("asgd", "ring")])
def test_infinite_bandwidth_zero_latency_scales_linearly(name, alg):
    wl = make_workload(t0=0.0)
    p = predict(wl, make_cluster(inf=True), Strategy(name, allreduce=alg), GPUS, scaling="weak", batch=32)
    np.testing.assert_allclose(p.efficiency, 1.0)
    np.testing.assert_allclose(p.throughput, GPUS * 32 / (0.001 * 32))
    # strong scaling is linear too when compute is linear in the batch with no fixed cost
    p = predict(wl, make_cluster(inf=True), Strategy(name, allreduce=alg), GPUS, scaling="strong", batch=512)
    np.testing.assert_allclose(p.speedup, GPUS)


def test_paper_weak_and_strong_exactly_as_appendix_b():
    wl, cl = make_workload(copy=0.0004), make_cluster()
    n = 4.0 * wl.parameters
    for w in GPUS[1:]:
        m, g = math.ceil(w / 4), min(w, 4)
        t_comm = n * math.log2(g) / 2e10 + n / 1e10 + (1e-5 + n / 1.25e9) * math.log2(m)
        weak = predict(wl, cl, Strategy("ssgd", allreduce="paper"), [w], scaling="weak", batch=32)
        t = (0.002 + 0.032 - 0.0004) + t_comm
        assert weak.t_iter_s[0] == pytest.approx(t)
        assert weak.throughput[0] == pytest.approx(w * 32 / t)
        strong = predict(wl, cl, Strategy("ssgd", allreduce="paper"), [w], scaling="strong", batch=1024)
        t = (0.002 + 1.024 - 0.0004) / w + t_comm
        assert strong.throughput[0] == pytest.approx(1024 / t)


def test_terngrad_paper_form_charges_the_pull_at_log2_levels():
    # the trainers' defaults: the classifier layer (l2.weight, l2.bias: 40_010 elements) in fp32
    wl, cl = make_workload(), make_cluster()
    split = ternary_split(wl)
    assert (split.ternary_elems, split.ternary_tensors, split.fp32_elems) == (4_001_500, 4, 40_010)
    w = 64  # 16 nodes x 4 GPUs; the pull carries sums of 64 ternary values: log2(129) bits each
    n = split.ternary_elems * math.log2(129) / 8 + 4 * 4 + 4 * 40_010
    assert float(terngrad_bytes(split, math.log2(129))) == pytest.approx(n)
    t_comm = n * 2 / 2e10 + n / 1e10 + (1e-5 + n / 1.25e9) * 4
    p = predict(wl, cl, Strategy("terngrad", allreduce="paper"), [w], batch=32)
    assert p.t_comm_s[0] == pytest.approx(t_comm)
    with pytest.raises(SpecError, match="allgather cannot run on allreduce paper"):
        Strategy("terngrad", allreduce="paper", terngrad_exchange="allgather")


def _ring_by_hand(n, w, cl):
    step = max(cl.intra.alpha + n / w * cl.intra.beta, cl.network.alpha + n / w * cl.network.beta)
    return 2 * (w - 1) * step


def test_terngrad_exchanges_bytes_and_times_by_hand():
    wl, cl = make_workload(), make_cluster()  # 8 GPUs = 2 nodes x 4
    w, e, fp32, scalers = 8, 4_001_500, 4 * 40_010, 4 * 4
    dense = _ring_by_hand(scalers, w, cl) + _ring_by_hand(fp32, w, cl)
    dense_sent = 2 * 7 / 8 * (scalers + fp32)
    levels = predict(wl, cl, Strategy("terngrad", terngrad_exchange="levels"), [w], batch=32)
    assert levels.bytes_per_gpu[0] == pytest.approx(dense_sent + 2 * 7 / 8 * e * 1)  # int8 sums
    assert levels.t_comm_s[0] == pytest.approx(dense + _ring_by_hand(e, w, cl))
    ps = predict(wl, cl, Strategy("terngrad", terngrad_exchange="ps"), [w], batch=32)
    shard = 500_192  # ceil(4_001_500 / 8) = 500_188, rounded up to a multiple of 8
    push, pull = shard / 4, shard * 5 / 8  # sums of 8 workers: 17 levels, 5 bits
    assert ps.bytes_per_gpu[0] == pytest.approx(dense_sent + 7 * (push + pull))
    alltoall = 3 * (2e-6 + push / 2e10) + 4 * (1e-5 + 4 * push / 1.25e9)  # 3 peers in the node, 4 outside
    allgather = 7 * max(2e-6 + pull / 2e10, 1e-5 + pull / 1.25e9)
    assert ps.t_comm_s[0] == pytest.approx(dense + alltoall + allgather)
    gather = predict(wl, cl, Strategy("terngrad", terngrad_exchange="allgather"), [w], batch=32)
    packed = 250_000 + 250 + 750_000 + 125  # ceil(n/4) per ternary tensor
    assert gather.bytes_per_gpu[0] == pytest.approx(dense_sent + 7 * packed)
    assert gather.t_comm_s[0] == pytest.approx(dense + 7 * max(2e-6 + packed / 2e10, 1e-5 + packed / 1.25e9))


def test_terngrad_sync_wait_at_each_collective_after_the_codecs_work():
    # the codes' exchange follows the encoding (ps: its Alltoall, and its Allgather after the shard's
    # sum) and the fp32 tensors' Allreduce follows the decoding: sync_wait_s at each, as communication
    wl, cl = make_workload(), make_cluster()
    for exchange, points in (("levels", 2), ("allgather", 2), ("ps", 3)):
        free = predict(wl, cl, Strategy("terngrad", terngrad_exchange=exchange), [1, 8], batch=32)
        paid = predict(wl, cl, Strategy("terngrad", terngrad_exchange=exchange, sync_wait_s=1e-3), [1, 8], batch=32)
        np.testing.assert_allclose(paid.t_comm_s - free.t_comm_s, [0.0, points * 1e-3], atol=1e-15)
        np.testing.assert_allclose(paid.extra["t_sync_wait_s"], [0.0, points * 1e-3])
        np.testing.assert_allclose(paid.t_iter_s - free.t_iter_s, [0.0, points * 1e-3], atol=1e-15)
    # every tensor ternary: no fp32 Allreduce after the decoding, one point fewer
    allt = predict(wl, cl, Strategy("terngrad", terngrad_fp32_last=False, sync_wait_s=1e-3), [8], batch=32)
    base = predict(wl, cl, Strategy("terngrad", terngrad_fp32_last=False), [8], batch=32)
    assert allt.t_comm_s[0] - base.t_comm_s[0] == pytest.approx(1e-3)
    # the paper's form has no codec phases between collectives; other strategies never read it
    for strategy in (Strategy("terngrad", allreduce="paper"), Strategy("ssgd"), Strategy("daso")):
        assert predict(wl, cl, replace(strategy, sync_wait_s=1e-3), [8], batch=32).t_iter_s[0] == \
            predict(wl, cl, strategy, [8], batch=32).t_iter_s[0]
    with pytest.raises(SpecError, match="sync_wait_s"):
        Strategy("terngrad", sync_wait_s=-1e-3)


def test_terngrad_levels_packed_lanes_half_a_byte_up_to_7_workers():
    wl, cl = make_workload(), make_cluster(g=1)
    dense = 4 * 4 + 4 * 40_010
    packed = predict(wl, cl, Strategy("terngrad", terngrad_lanes="packed"), [2, 7, 8], batch=32)
    # 4-bit lanes at 2 and 7 workers (2W+1 <= 16), int8 at 8
    np.testing.assert_allclose(packed.bytes_per_gpu, [2 * 1 / 2 * (4_001_500 / 2 + dense),
                                                      2 * 6 / 7 * (4_001_500 / 2 + dense),
                                                      2 * 7 / 8 * (4_001_500 * 1 + dense)])
    native = predict(wl, cl, Strategy("terngrad"), [7], batch=32)  # default: int8 lanes (NCCL, gloo)
    assert native.bytes_per_gpu[0] == pytest.approx(2 * 6 / 7 * (4_001_500 + dense))
    assert packed.t_comm_s[1] < native.t_comm_s[0]


def test_terngrad_levels_switch_to_int16_above_127_workers():
    wl, cl = make_workload(), make_cluster(g=1)
    strategy = Strategy("terngrad", terngrad_exchange="levels")
    p = predict(wl, cl, strategy, [127, 128], batch=32)
    dense = 4 * 4 + 4 * 40_010
    np.testing.assert_allclose(p.bytes_per_gpu, [2 * 126 / 127 * (4_001_500 * 1 + dense),
                                                 2 * 127 / 128 * (4_001_500 * 2 + dense)])


def test_terngrad_encode_and_decode_costs_by_hand():
    wl, cl = make_workload(), make_cluster()
    elems = ternary_split(wl).ternary_elems
    free = predict(wl, cl, Strategy("terngrad", terngrad_exchange="allgather"), [8], batch=32)
    paid = predict(wl, cl, Strategy("terngrad", terngrad_exchange="allgather", terngrad_encode_elems_per_s=1e8,
                                    terngrad_decode_elems_per_s=2e8), [8], batch=32)
    # one encode, and the decode of all 8 workers' packed copies: computation, not communication
    assert paid.t_comm_s[0] == free.t_comm_s[0]
    assert paid.extra["t_compress_s"][0] == pytest.approx(elems / 1e8 + 8 * elems / 2e8)
    assert paid.t_iter_s[0] - free.t_iter_s[0] == pytest.approx(elems / 1e8 + 8 * elems / 2e8)
    levels = predict(wl, cl, Strategy("terngrad", terngrad_encode_elems_per_s=1e8, terngrad_decode_elems_per_s=2e8),
                     [1, 8], batch=32)
    levels_free = predict(wl, cl, Strategy("terngrad"), [1, 8], batch=32)
    np.testing.assert_allclose(levels.t_iter_s - levels_free.t_iter_s, elems / 1e8 + elems / 2e8)
    # one GPU: no communication, but a TernGrad run still ternarizes, so it is slower than fp32 training
    assert levels.t_comm_s[0] == 0 and levels.speedup[0] < 1
    # the sum's conversion to the float mean: once per step, whatever the copies
    conv = predict(wl, cl, Strategy("terngrad", terngrad_exchange="allgather", terngrad_encode_elems_per_s=1e8,
                                    terngrad_decode_elems_per_s=2e8, terngrad_convert_elems_per_s=4e8), [1, 8], batch=32)
    np.testing.assert_allclose(conv.extra["t_compress_s"], elems / 1e8 + np.array([1, 8]) * elems / 2e8 + elems / 4e8)
    # the ps exchange decodes twice, or, where its own work was measured, charges W x shard elements at
    # that rate in their place (shard = ceil(elems / W) rounded up to a multiple of 8)
    rates = dict(terngrad_encode_elems_per_s=1e8, terngrad_decode_elems_per_s=2e8, terngrad_convert_elems_per_s=4e8)
    ps = predict(wl, cl, Strategy("terngrad", terngrad_exchange="ps", **rates), [8], batch=32)
    assert ps.extra["t_compress_s"][0] == pytest.approx(elems / 1e8 + 2 * elems / 2e8 + elems / 4e8)
    agg = predict(wl, cl, Strategy("terngrad", terngrad_exchange="ps", terngrad_ps_aggregate_elems_per_s=5e7,
                                   **rates), [3, 8], batch=32)
    shards = np.array([math.ceil(math.ceil(elems / w) / 8) * 8 for w in (3, 8)])
    np.testing.assert_allclose(agg.extra["t_compress_s"], elems / 1e8 + np.array([3, 8]) * shards / 5e7 + elems / 4e8)
    # the other exchanges do not do it
    lv = predict(wl, cl, Strategy("terngrad", terngrad_ps_aggregate_elems_per_s=5e7, **rates), [8], batch=32)
    assert lv.extra["t_compress_s"][0] == pytest.approx(elems / 1e8 + elems / 2e8 + elems / 4e8)


@pytest.mark.parametrize("name", ["ssgd", "terngrad", "daso", "asgd"])
@pytest.mark.parametrize("alg", ["paper", "ring", "rabenseifner", "hierarchical"])
@pytest.mark.parametrize("scaling", ["weak", "strong"])
def test_vectorized_sweep_equals_scalar_at_every_point(name, alg, scaling):
    wl, cl = make_workload(copy=0.0001), make_cluster()
    st = Strategy(name, allreduce=alg, overlap=0.3, straggler_cv=0.1)
    gpus = np.array([1, 4, 8, 12, 16, 100, 256, 512]) if alg in ("ring", "rabenseifner") or name == "asgd" \
        else np.array([1, 4, 8, 16, 256, 512])
    if name == "daso":
        gpus = gpus[(gpus % 4 == 0) | (gpus < 4)]
    sweep = predict(wl, cl, st, gpus, scaling=scaling, batch=512)
    for i, w in enumerate(gpus):
        one = predict(wl, cl, st, [w], scaling=scaling, batch=512)
        for field in ("t_compute_s", "t_comm_s", "t_iter_s", "throughput", "speedup", "bytes_per_gpu"):
            assert getattr(sweep, field)[i] == pytest.approx(getattr(one, field)[0], rel=1e-12), (field, w)


def test_ssgd_ring_by_hand_and_overlap():
    wl, cl = make_workload(), make_cluster()
    n = 4.0 * wl.parameters
    w = 8  # two nodes: every ring step waits for the network
    t_comm = 14 * (1e-5 + n / 8 / 1.25e9)
    t_comp = 0.002 + 0.032
    p = predict(wl, cl, Strategy("ssgd"), [w], batch=32)
    assert p.t_comm_s[0] == pytest.approx(t_comm)
    assert p.t_iter_s[0] == pytest.approx(t_comp + t_comm)
    assert p.bytes_per_gpu[0] == pytest.approx(2 * 7 / 8 * n)
    p = predict(wl, cl, Strategy("ssgd", overlap=0.5), [w], batch=32)
    assert p.t_iter_s[0] == pytest.approx(t_comp + t_comm - 0.5 * min(t_comm, t_comp))
    half = predict(wl, cl, Strategy("ssgd", wire="bf16"), [w], batch=32)
    assert half.t_comm_s[0] == pytest.approx(14 * (1e-5 + n / 2 / 8 / 1.25e9))


def test_daso_reduces_to_ssgd_cost_on_one_node_and_by_hand_on_many():
    wl, cl = make_workload(), make_cluster()
    one_node = predict(wl, cl, Strategy("daso", daso_B=1, daso_W=0), [4], batch=32)
    ssgd = predict(wl, cl, Strategy("ssgd"), [4], batch=32)
    assert one_node.t_iter_s[0] == pytest.approx(ssgd.t_iter_s[0])
    # 16 GPUs = 4 nodes; blocking, bf16 global allreduce over 4 nodes every 2 batches
    n32 = 4.0 * wl.parameters
    local = 2 * 3 * (2e-6 + n32 / 4 / 2e10)
    glob = 2 * 3 * 1e-5 + 2 * 3 / 4 * (n32 / 2) / 1.25e9
    bcast = 2 * (2e-6 + n32 / 2e10)
    p = predict(wl, cl, Strategy("daso", daso_B=2, daso_W=0), [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (glob + bcast) / 2)
    # non-blocking: fp32 global sync hidden behind W batches of compute where it fits
    t_comp = 0.034
    glob32 = 2 * 3 * 1e-5 + 2 * 3 / 4 * n32 / 1.25e9
    p = predict(wl, cl, Strategy("daso", daso_B=4, daso_W=1), [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (max(glob32 - t_comp, 0) + bcast) / 4)
    # a slower non-blocking allreduce (factor 3) is hidden only in part; without asynchronous progress
    # (MPI on CPU ranks) none of it is hidden
    p = predict(wl, cl, Strategy("daso", daso_B=4, daso_W=1, daso_nonblocking_factor=3.0), [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (max(3 * glob32 - t_comp, 0) + bcast) / 4)
    p = predict(wl, cl, Strategy("daso", daso_B=4, daso_W=1, daso_progress="wait"), [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (glob32 + bcast) / 4)
    p = predict(wl, cl, Strategy("daso", daso_B=4, daso_W=1, daso_progress="wait", daso_nonblocking_factor=3.0),
                [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (3 * glob32 + bcast) / 4)
    # the blocking phase (W=0) is a blocking bf16 allreduce: neither option applies
    p = predict(wl, cl, Strategy("daso", daso_B=2, daso_W=0, daso_progress="wait", daso_nonblocking_factor=3.0),
                [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (glob + bcast) / 2)
    for bad in (dict(daso_progress="sometimes"), dict(daso_nonblocking_factor=0.0),
                dict(daso_nonblocking_factor=float("nan"))):
        with pytest.raises(SpecError):
            Strategy("daso", **bad)
    # the cluster carries the link measured on DASO's global group itself (one GPU per node): the
    # non-blocking fp32 sync is the ring over the 4 nodes on it, and the factor does not apply again;
    # the blocking bf16 sync (W=0) keeps the network link
    own = Link(3e-5, 4e8)
    cg = replace(cl, network_ops=(("global_iallreduce", own),))
    glob_own = 2 * 3 * 3e-5 + 2 * 3 / 4 * n32 / 4e8
    p = predict(wl, cg, Strategy("daso", daso_B=4, daso_W=1, daso_progress="wait", daso_nonblocking_factor=3.0),
                [16], batch=32)
    assert p.extra["t_global_sync_s"][0] == pytest.approx(glob_own)
    assert p.t_comm_s[0] == pytest.approx(local + (glob_own + bcast) / 4)
    p = predict(wl, cg, Strategy("daso", daso_B=2, daso_W=0, daso_progress="wait", daso_nonblocking_factor=3.0),
                [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(local + (glob + bcast) / 2)


def test_asgd_server_bandwidth_caps_throughput():
    wl, cl = make_workload(t0=0.0, t1=1e-5), make_cluster()  # fast compute: the server is the limit
    n = 4.0 * wl.parameters
    p = predict(wl, cl, Strategy("asgd", ps_servers=1), [64, 512], batch=32)
    cap = 1.25e9 / n  # exchanges per second through one server link
    np.testing.assert_allclose(p.throughput, cap * 32)
    np.testing.assert_allclose(p.extra["server_utilization"], 1.0)
    np.testing.assert_allclose(p.extra["server_bandwidth_Bps"], 1.25e9)
    np.testing.assert_allclose(p.extra["mean_staleness"], [63, 511])
    more = predict(wl, cl, Strategy("asgd", ps_servers=4), [512], batch=32)
    assert more.throughput[0] == pytest.approx(4 * cap * 32)
    # a server that spends 1 ms applying each push: 1 / (n / 1.25e9 + 1 ms) exchanges per second; four
    # servers apply a quarter each
    upd = predict(wl, cl, Strategy("asgd", ps_servers=1, ps_update_s=1e-3), [512], batch=32)
    assert upd.throughput[0] == pytest.approx(32 / (n / 1.25e9 + 1e-3))
    upd4 = predict(wl, cl, Strategy("asgd", ps_servers=4, ps_update_s=1e-3), [512], batch=32)
    assert upd4.throughput[0] == pytest.approx(4 * 32 / (n / 1.25e9 + 1e-3))
    with pytest.raises(SpecError, match="ps_update_s"):
        Strategy("asgd", ps_update_s=-1.0)


def test_stragglers_slow_sync_and_not_async():
    wl, cl = make_workload(), make_cluster(inf=True)
    base = predict(wl, cl, Strategy("ssgd"), GPUS, batch=32)
    slow = predict(wl, cl, Strategy("ssgd", straggler_cv=0.1, straggler_machine_cv=0.6), GPUS, batch=32)
    assert np.all(np.diff(slow.t_iter_s / base.t_iter_s) > 0)  # the slowest of more workers is slower
    # the wait for the slowest is reported on its own, and it is all of the difference in compute
    np.testing.assert_allclose(slow.extra["t_straggler_s"], slow.t_compute_s - base.t_compute_s, rtol=1e-12)
    np.testing.assert_array_equal(base.extra["t_straggler_s"], 0.0)
    asgd = predict(wl, cl, Strategy("asgd", straggler_cv=0.1, straggler_machine_cv=0.6), GPUS, batch=32)
    even = predict(wl, cl, Strategy("asgd"), GPUS, batch=32)
    # asynchronous workers of spread speeds each run at E[1/t]: a/(a-1) the rate of a mean-time worker, a = 1/0.36
    np.testing.assert_allclose(asgd.throughput / even.throughput, 2.7778 / 1.7778, rtol=1e-3)
    # ... and so does one of them alone, the speedup's one GPU: no efficiency above 1 on free links
    np.testing.assert_allclose(asgd.efficiency, 1.0, rtol=1e-12)


@pytest.mark.parametrize("cv,machine_cv,kind", [(0.1, 0.0, "homogeneous"), (0.1, 0.6, "heterogeneous")])
def test_straggler_options_are_the_cvb_settings(cv, machine_cv, kind):
    from perfmodel.stragglers import CVB, sync_slowdown

    wl, cl = make_workload(), make_cluster(inf=True)
    base = predict(wl, cl, Strategy("ssgd"), GPUS, batch=32)
    slow = predict(wl, cl, Strategy("ssgd", straggler_cv=cv, straggler_machine_cv=machine_cv), GPUS, batch=32)
    np.testing.assert_allclose(slow.t_iter_s / base.t_iter_s, sync_slowdown(GPUS, CVB.named(kind)), rtol=1e-9)
    # DASO's non-blocking phase waits only for the GPUs of a node
    daso = predict(wl, cl, Strategy("daso", daso_B=4, daso_W=1, straggler_cv=cv, straggler_machine_cv=machine_cv),
                   [64], batch=32)
    assert daso.t_compute_s[0] / base.t_compute_s[-1] == pytest.approx(float(sync_slowdown(4, CVB.named(kind))))


def test_gpus_must_fill_nodes_where_needed():
    wl, cl = make_workload(), make_cluster()
    with pytest.raises(SpecError, match="not a multiple of 4"):
        predict(wl, cl, Strategy("daso"), [1, 6], batch=32)
    with pytest.raises(SpecError, match="not a multiple"):
        predict(wl, cl, Strategy("ssgd", allreduce="paper"), [10], batch=32)
    predict(wl, cl, Strategy("ssgd"), [10], batch=32)  # a ring does not need whole nodes
    with pytest.raises(SpecError, match="positive integers"):
        predict(wl, cl, Strategy("ssgd"), [0, 2], batch=32)
    with pytest.raises(SpecError, match="batch"):
        predict(wl, cl, Strategy("ssgd"), [2], batch=0)


@pytest.mark.parametrize("scaling,batch", [("weak", 10), ("strong", 60)])
def test_accumulation_pays_the_optimizer_step_once(scaling, batch):
    """t(b) = 0.01 + 0.001 b includes an optimizer step of 4 ms: A = 3 micro-batches of 10 samples take
    3 x 0.02 - 2 x 0.004 = 0.052 s (one update); without update_s every micro-batch pays its 0.02 s.
    Strong scaling with 60 samples: 20 per micro-batch on 1 GPU (3 x 0.03 - 0.008), 10 on 2."""
    ct = ComputeTime("linear", t0_s=0.01, t1_s=0.001, update_s=0.004)
    wl = Workload("w", SIZES, {"gpu": ct}, accumulate=3)
    p = predict(wl, make_cluster(), Strategy("ssgd"), [1, 2], scaling=scaling, batch=batch)
    first = 0.052 if scaling == "weak" else 0.082
    assert p.t_compute_s.tolist() == pytest.approx([first, 0.052], rel=1e-12)
    assert p.throughput[0] == pytest.approx((30 if scaling == "weak" else 60) / first, rel=1e-12)
    plain = predict(replace(wl, compute={"gpu": replace(ct, update_s=0.0)}), make_cluster(), Strategy("ssgd"), [2],
                    scaling=scaling, batch=batch)
    assert plain.t_compute_s[0] == pytest.approx(0.06, rel=1e-12)
    one = predict(replace(wl, accumulate=1), make_cluster(), Strategy("ssgd"), [2], scaling=scaling,
                  batch=batch // 3 if scaling == "strong" else batch)
    assert one.t_compute_s[0] == pytest.approx(0.02, rel=1e-12)  # A = 1: the whole t, optimizer included
    with pytest.raises(SpecError, match="update_s"):
        ComputeTime("linear", t0_s=0.01, t1_s=0.001, update_s=-1e-3)
