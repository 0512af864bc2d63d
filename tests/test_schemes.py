"""Synchronous schemes by hand: reduce-broadcast, host staging, synchronous PS, BytePS, NCCL's choice."""

import dataclasses

import numpy as np
import pytest

from perfmodel import collectives as coll
from perfmodel.nccl import algorithm_times, nccl_allreduce, nccl_choice
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload

# 4 GPUs per node; intra 2 us, 20 GB/s; host (PCIe) 1 us, 10 GB/s; network 10 us, 1.25 GB/s
CL = Cluster("c", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9), gpu="gpu", host_memory_Bps=5e10)
N = 1e6  # bytes
RING4 = 2 * 3 * 2e-6 + 2 * 3 / 4 * 1e6 / 2e10  # ring allreduce of N inside a 4-GPU node = 8.7e-5
COPIES4 = 2 * (1e-6 + 2.5e5 / 1e10)  # each GPU copies its N/4 to host and back = 5.2e-5


def test_reduce_broadcast_by_hand():
    # 8 GPUs = 2 nodes: 3 GPUs send to the node root, 1 node root to the global root, and back
    t = 2 * (3 * (2e-6 + 1e6 / 2e10) + 1 * (1e-5 + 1e6 / 1.25e9))
    assert float(coll.cluster_allreduce("reduce-broadcast", N, 8, CL)) == pytest.approx(t)
    assert t == pytest.approx(1.932e-3)
    assert float(coll.cluster_allreduce("reduce-broadcast", N, 1, CL)) == 0.0


def test_host_staged_ring_by_hand():
    copies = 2 * (1e-6 + 1e6 / 1e10)  # device->host and back = 2.02e-4
    # 8 GPUs: ring steps of N/8; shared-memory step 2 us + N/8 * 2*4/B_mem, network step 10 us + N/8 / 1.25e9
    step = max(2e-6 + 125000 * 8 / 5e10, 1e-5 + 125000 / 1.25e9)
    reduce = 3 * 4 * 7 / 8 * 1e6 / 5e10  # 4 ranks of a node each sum 7/8 N, 3 bytes moved per byte
    t = copies + 14 * step + reduce
    assert t == pytest.approx(1.952e-3)
    assert float(coll.cluster_allreduce("ring", N, 8, CL, staging="host")) == pytest.approx(t)
    # one node: the ring runs through shared memory only
    t4 = copies + 2 * 3 * (2e-6 + 250000 * 8 / 5e10) + 3 * 4 * 3 / 4 * 1e6 / 5e10
    assert float(coll.cluster_allreduce("ring", N, 4, CL, staging="host")) == pytest.approx(t4)
    assert t4 == pytest.approx(6.34e-4)


def test_host_staged_reduce_broadcast_reduces_on_the_cpu():
    t = 2 * (1e-6 + 1e6 / 1e10) + 5 * 1e6 / 5e10 + 2 * (1e-5 + 1e6 / 1.25e9) + 3 * 1e6 / 5e10
    assert float(coll.cluster_allreduce("reduce-broadcast", N, 8, CL, staging="host")) == pytest.approx(t)
    assert t == pytest.approx(1.982e-3)


def test_host_memory_default_when_cluster_gives_none():
    bare = dataclasses.replace(CL, host_memory_Bps=None)
    assert coll.host_memory_Bps(bare) == (coll.DEFAULT_HOST_MEMORY_Bps, True)
    same = dataclasses.replace(CL, host_memory_Bps=coll.DEFAULT_HOST_MEMORY_Bps)
    assert float(coll.cluster_allreduce("ring", N, 8, bare, staging="host")) == pytest.approx(
        float(coll.cluster_allreduce("ring", N, 8, same, staging="host")))
    with pytest.raises(SpecError, match="staging host"):
        Strategy("ssgd", allreduce="nccl", staging="host")
    with pytest.raises(SpecError, match="staging"):
        Strategy("ssgd", staging="disk")


@pytest.mark.parametrize("servers,placement,local,gpus,phase_bytes", [
    # dedicated, 2 servers, nodes sum first: a node pushes N, a server receives 2 nodes x N/2
    (2, "dedicated", True, 8, 1e6),
    # dedicated, 1 server, every GPU pushes: the server receives 8 x N
    (1, "dedicated", False, 8, 8e6),
    # colocated, one server per node: a node sends N/2 out and receives N/2 in (the ring's (M-1)/M N)
    (2, "colocated", True, 8, 5e5),
    # colocated, 1 server on 4 nodes: its node receives 3 N
    (1, "colocated", True, 16, 3e6),
    # colocated, 3 servers on 2 nodes: the node with 2 servers receives 2 x N/3 from the other node
    (3, "colocated", True, 8, 2e6 / 3),
])
def test_sync_ps_by_hand(servers, placement, local, gpus, phase_bytes):
    phase = 1e-5 + phase_bytes / 1.25e9
    inside = RING4 + COPIES4 if local else 2 * (1e-6 + 1e6 / 1e10)
    t = coll.sync_ps_exchange(N, gpus, CL, servers, placement_kind=placement, local_reduce=local)
    assert float(t) == pytest.approx(2 * phase + inside)


def test_colocated_ps_with_a_server_per_node_moves_what_a_ring_moves():
    for nodes in (2, 4, 16):
        t = coll.sync_ps_exchange(N, 4 * nodes, CL, nodes, placement_kind="colocated")
        net = 2 * (1e-5 + (nodes - 1) / nodes * N / 1.25e9)
        assert float(t) == pytest.approx(net + RING4 + COPIES4)


@pytest.mark.parametrize("k,share", [(0, 1.5), (2, 1.2), (4, 1.0), (8, 1.0)])
def test_byteps_by_hand(k, share):
    # M = 4 GPU machines: NIC bytes per direction 2 M (M-1) / (M^2 + k M - 2k) N; k = 0 is allreduce's
    # 2 (M-1)/M N = 1.5 N, k = 2 gives 24/20 = 1.2 N, k >= M gives N
    assert 2 * 4 * 3 / (16 + k * 4 - 2 * k) == pytest.approx(share) or k >= 4
    t = 2 * 1e-5 + share * N / 1.25e9 + RING4 + COPIES4
    assert float(coll.byteps_exchange(N, 16, CL, k)) == pytest.approx(t)
    assert float(coll.byteps_exchange(N, 4, CL, k)) == pytest.approx(RING4)  # one machine: local only


def test_nccl_picks_by_hand_on_one_node():
    # intra 20 GB/s is PCIe class: no LL128. W = 2: ring algbw = busbw, ring LL busbw / 4
    keys = set(algorithm_times(N, 2, CL))
    assert keys == {("ring", "LL"), ("ring", "Simple"), ("tree", "LL"), ("tree", "Simple")}
    ring_simple = (8.4 + 2 * 5.7) * 1e-6 + 1e6 / 2e10  # 6.98e-5
    tree_simple = 2 * 28 * 1e-6 + 1e6 / (0.9 * 2e10 * 0.5 * 0.5)  # tree correction 0.5 at 2^13 x 64 B
    times = algorithm_times(N, 2, CL)
    assert float(times[("ring", "Simple")]) == pytest.approx(ring_simple)
    assert float(times[("tree", "Simple")]) == pytest.approx(tree_simple)
    assert float(nccl_allreduce(N, 2, CL)) == pytest.approx(ring_simple) and nccl_choice(N, 2, CL) == "ring/Simple"
    small = (3.6 + 2 * 1.0) * 1e-6 + 1000 / (0.25 * 2e10)  # 1 kB: ring LL, 5.8 us
    assert float(nccl_allreduce(1000, 2, CL)) == pytest.approx(small) and nccl_choice(1000, 2, CL) == "ring/LL"


def test_nccl_takes_the_tree_for_small_messages_on_many_nodes():
    # 512 GPUs = 128 nodes, 1 kB: ring LL pays 2071.8 us of hops; tree LL 4.4 + 2 (3 x 1.8 + 7 x 5) us
    tree_ll = (4.4 + 2 * (3 * 1.0 * 1.8 + 7 * 5.0)) * 1e-6 + 1000 / (0.9 * 1.25e9 / 3.8 * 0.5)
    assert nccl_choice(1000, 512, CL) == "tree/LL"
    assert float(nccl_allreduce(1000, 512, CL)) == pytest.approx(tree_ll)
    ring_ll_lat = (3.6 + (2 * 511 - 2 * 127) * 1.0 * 1.8 + 2 * 127 * 2.7) * 1e-6
    ring_ll = ring_ll_lat + 1000 / (0.25 * 1.25e9 * 512 / 1022)
    assert float(algorithm_times(1000, 512, CL)[("ring", "LL")]) == pytest.approx(ring_ll)
    # large messages on 2 nodes: ring Simple, with NCCL's plateau factor 1.9 on its latency
    big = 1e9
    ring = 1.9 * (8.4 + (14 - 2) * 5.7 + 2 * 9.6) * 1e-6 + big / (1.25e9 * 8 / 14)
    assert nccl_choice(big, 8, CL) == "ring/Simple"
    assert float(nccl_allreduce(big, 8, CL)) == pytest.approx(ring)


def test_nccl_uses_ll128_only_on_nvlink_and_vectorizes():
    nv = dataclasses.replace(CL, intra=Link(2e-6, 1.2e11))
    assert ("ring", "LL128") in algorithm_times(N, 8, nv) and ("ring", "LL128") not in algorithm_times(N, 8, CL)
    sizes = np.array([[1e3], [1e6], [1e9]])
    gpus = np.array([1, 2, 8, 64, 512])
    grid = nccl_allreduce(sizes, gpus, nv)
    assert grid.shape == (3, 5) and np.all(grid[:, 0] == 0)
    for i, n in enumerate(sizes[:, 0]):
        for j, w in enumerate(gpus):
            assert grid[i, j] == pytest.approx(float(nccl_allreduce(n, w, nv)), rel=1e-12)


def _workload(accumulate=1, flops=()):
    return Workload("w", (1_000_000, 1_000, 3_000_000, 500, 40_000, 10),
                    {"gpu": ComputeTime("linear", t0_s=0.002, t1_s=0.001)}, accumulate=accumulate,
                    tensor_flops=flops)


@pytest.mark.parametrize("st", [Strategy("sync-ps", ps_servers=3), Strategy("sync-ps", ps_placement="dedicated",
                                                                           ps_local_reduce=False),
                                Strategy("byteps", ps_servers=2, ps_placement="dedicated"), Strategy("byteps"),
                                Strategy("ssgd", allreduce="nccl"), Strategy("ssgd", allreduce="reduce-broadcast"),
                                Strategy("ssgd", staging="host", bucket_mb=1.0),
                                Strategy("daso", allreduce="nccl"), Strategy("terngrad", allreduce="nccl")])
@pytest.mark.parametrize("scaling", ["weak", "strong"])
def test_new_schemes_vectorized_equal_scalar(st, scaling):
    gpus = np.array([1, 2, 4, 8, 16, 64, 512])
    sweep = predict(_workload(), CL, st, gpus, scaling=scaling, batch=512)
    for i, w in enumerate(gpus):
        one = predict(_workload(), CL, st, [w], scaling=scaling, batch=512)
        for f in ("t_compute_s", "t_comm_s", "t_iter_s", "throughput", "speedup", "bytes_per_gpu"):
            assert getattr(sweep, f)[i] == pytest.approx(getattr(one, f)[0], rel=1e-12), (f, w)


def test_sync_ps_and_byteps_in_predict_match_the_collectives():
    wl = _workload()
    n = 4.0 * wl.parameters
    p = predict(wl, CL, Strategy("sync-ps", ps_servers=2, ps_placement="dedicated", overlap=0.0), [8], batch=32)
    t = coll.sync_ps_exchange(n, 8, CL, 2, placement_kind="dedicated")
    assert p.t_comm_s[0] == pytest.approx(float(t)) and p.t_iter_s[0] == pytest.approx(0.034 + float(t))
    p = predict(wl, CL, Strategy("byteps", ps_servers=2, ps_placement="dedicated", overlap=0.0), [16], batch=32)
    assert p.t_comm_s[0] == pytest.approx(float(coll.byteps_exchange(n, 16, CL, 2)))
    colocated = predict(wl, CL, Strategy("byteps", ps_servers=2, overlap=0.0), [16], batch=32)
    assert colocated.t_comm_s[0] == pytest.approx(float(coll.byteps_exchange(n, 16, CL, 0)))
    with pytest.raises(SpecError, match="ps_servers"):
        Strategy("sync-ps", ps_servers=0)
    with pytest.raises(SpecError, match="ps_placement"):
        Strategy("sync-ps", ps_placement="cloud")
