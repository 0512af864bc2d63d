"""Alpha-beta collective costs against hand-derived numbers and limits."""

import dataclasses

import numpy as np
import pytest

from perfmodel import collectives as c
from perfmodel.specs import Cluster, Link, SpecError

A, B = 1e-5, 1e-9  # 10 us, 1 GB/s


def cluster(g=4, intra=(2e-6, 1e10), host=(1e-6, 5e9), net=(1e-5, 1e9)):
    return Cluster("t", g, Link(*intra), Link(*host), Link(*net))


def test_single_level_formulas_by_hand():
    n = 1e6
    # ring p=4: 2*3*1e-5 + 2*3/4*1e6*1e-9 = 6e-5 + 1.5e-3
    assert c.ring_allreduce(n, 4, A, B) == pytest.approx(6e-5 + 1.5e-3)
    # tree p=4: 2*2*(1e-5 + 1e-3)
    assert c.tree_allreduce(n, 4, A, B) == pytest.approx(4 * 1.01e-3)
    # recursive doubling p=8: 3*(1e-5 + 1e-3)
    assert c.recursive_doubling_allreduce(n, 8, A, B) == pytest.approx(3 * 1.01e-3)
    # rabenseifner p=8: 2*3*1e-5 + 2*7/8*1e-3
    assert c.rabenseifner_allreduce(n, 8, A, B) == pytest.approx(6e-5 + 1.75e-3)
    # non power of two takes ceil(log2 p) steps: p=5 -> 3
    assert c.recursive_doubling_allreduce(n, 5, A, B) == pytest.approx(3 * 1.01e-3)
    assert c.ring_allgather(1000, 4, A, B) == pytest.approx(3 * (1e-5 + 1e-6))
    assert c.tree_broadcast(n, 4, A, B) == pytest.approx(2 * 1.01e-3)


def test_one_rank_costs_nothing():
    for f in (c.ring_allreduce, c.tree_allreduce, c.recursive_doubling_allreduce, c.rabenseifner_allreduce):
        assert f(1e6, 1, A, B) == 0.0
    cl = cluster()
    for alg in ("paper", "ring", "tree", "recursive-doubling", "rabenseifner", "hierarchical"):
        if alg == "paper":
            continue  # the paper's form keeps the GPU->CPU copy; predict() drops all comm at W=1
        assert c.cluster_allreduce(alg, 1e6, 1, cl) == 0.0


def test_ring_tends_to_2n_over_bandwidth():
    p = np.array([2, 16, 1024, 2**20], dtype=float)
    t = c.ring_allreduce(1e8, p, 0.0, B)
    assert t[-1] == pytest.approx(2 * 1e8 * B, rel=1e-5)
    assert np.all(np.diff(t) > 0) and np.all(t < 2 * 1e8 * B)


def test_cluster_forms_on_one_node_equal_single_level_on_intra_link():
    cl = cluster(g=8)
    n, p = 3e6, np.array([2, 4, 8])
    ia, ib = cl.intra.alpha, cl.intra.beta
    np.testing.assert_allclose(c.cluster_allreduce("ring", n, p, cl), c.ring_allreduce(n, p, ia, ib))
    np.testing.assert_allclose(c.cluster_allreduce("tree", n, p, cl), c.tree_allreduce(n, p, ia, ib))
    np.testing.assert_allclose(c.cluster_allreduce("recursive-doubling", n, p, cl),
                               c.recursive_doubling_allreduce(n, p, ia, ib))
    np.testing.assert_allclose(c.cluster_allreduce("rabenseifner", n, p, cl), c.rabenseifner_allreduce(n, p, ia, ib))
    np.testing.assert_allclose(c.cluster_allreduce("hierarchical", n, p, cl), c.ring_allreduce(n, p, ia, ib))


def test_cluster_forms_by_hand_two_nodes():
    cl = cluster(g=4)  # intra 2us, 1e10 B/s; network 10us, 1e9 B/s
    n, w = 8e6, 8
    # ring over 8 ranks: 14 steps of max(intra step, network step) = 1e-5 + 1e6*1e-9
    assert c.cluster_allreduce("ring", n, w, cl) == pytest.approx(14 * (1e-5 + 1e-3))
    # tree: 2*(2*(2e-6 + 8e6*1e-10) + 1*(1e-5 + 8e-3))
    assert c.cluster_allreduce("tree", n, w, cl) == pytest.approx(2 * (2 * (2e-6 + 8e-4) + (1e-5 + 8e-3)))
    # recursive doubling: 2 intra steps + 1 network step with 4 ranks sharing the link
    assert c.cluster_allreduce("recursive-doubling", n, w, cl) == pytest.approx(2 * (2e-6 + 8e-4) + 1e-5 + 4 * 8e-3)
    # rabenseifner: 2*[1*1e-5 + 4*8e6*(1/2)*1e-9 + 2*2e-6 + 8e6/2*(3/4)*1e-10]
    assert c.cluster_allreduce("rabenseifner", n, w, cl) == pytest.approx(
        2 * (1e-5 + 4 * 4e6 * 1e-9 + 4e-6 + 3e6 * 1e-10))
    # hierarchical: ring in node (4) + 2*(M-1)*a + 2(M-1)/M n b_net
    expect = (6 * 2e-6 + 1.5 * 8e6 * 1e-10) + (2 * 1e-5 + 8e6 * 1e-9)
    assert c.cluster_allreduce("hierarchical", n, w, cl) == pytest.approx(expect)


def test_paper_form_by_hand():
    cl = cluster(g=4)
    n, w = 1e6, 512  # M = 128 nodes, N = 4
    intra = n * 2 * 1e-10 + n / 5e9
    inter = (1e-5 + n * 1e-9) * 7
    assert c.paper_allreduce(n, w, cl) == pytest.approx(intra + inter)


def test_infinite_bandwidth_zero_latency_costs_nothing():
    cl = cluster(intra=(0, float("inf")), host=(0, float("inf")), net=(0, float("inf")))
    for alg in ("paper", "ring", "tree", "recursive-doubling", "rabenseifner", "hierarchical"):
        assert np.all(c.cluster_allreduce(alg, 1e9, np.array([1, 4, 64, 512]), cl) == 0.0)


def test_ps_exchange_by_hand():
    cl = cluster(g=4)
    worker, server = c.ps_exchange(1e6, 8, cl, servers=2)
    # push + pull on the node link shared by 4 workers, plus two host copies
    assert worker == pytest.approx(2 * (1e-5 + 4 * 1e6 * 1e-9) + 2 * 1e6 / 5e9)
    assert server == pytest.approx(1e6 * 1e-9 / 2)
    # a measured parameter-server exchange (Cluster.network_ops "ps"): alpha + n beta of its own link
    ps = dataclasses.replace(cl, network_ops=(("ps", Link(latency_s=2e-5, bandwidth_Bps=5e8)),))
    worker_ps, server_ps = c.ps_exchange(1e6, 8, ps, servers=2)
    assert worker_ps == pytest.approx(worker) and server_ps == pytest.approx((2e-5 + 1e6 / 5e8) / 2)


def test_allgather_and_alltoall_take_their_own_measured_links_between_nodes():
    # 2 nodes x 2 GPUs; blocks of n bytes. Without own links: the network link
    n, ag, a2a = 1e6, Link(3e-5, 5e8), Link(4e-5, 2.5e8)
    plain = cluster(g=2)
    own = Cluster("t", 2, plain.intra, plain.host, plain.network, network_ops={"allgather": ag, "alltoall": a2a})
    assert own.network_for("allgather") == ag and own.network_for("alltoall") == a2a
    assert plain.network_for("allgather") == plain.network
    # ring allgather over 4 GPUs on 2 nodes: 3 steps, each on the slower of the ring's links
    assert float(c.cluster_allgather(n, 4, plain)) == pytest.approx(3 * (1e-5 + n * 1e-9))
    assert float(c.cluster_allgather(n, 4, own)) == pytest.approx(3 * (3e-5 + n / 5e8))
    # pairwise alltoall: 1 step to the node's peer on intra, 2 steps off-node with the node's 2 GPUs at once
    assert float(c.cluster_alltoall(n, 4, own)) == pytest.approx((2e-6 + n * 1e-10) + 2 * (4e-5 + 2 * n / 2.5e8))
    # on one node neither own link is crossed
    assert float(c.cluster_allgather(n, 2, own)) == pytest.approx(float(c.cluster_allgather(n, 2, plain)))
    for bad, match in [({"allreduce": ag}, "unknown operation 'allreduce'"), ({"allgather": 5}, "must be a Link"),
                       ((("allgather", ag), ("allgather", ag)), "twice"), (7, "pairs")]:
        with pytest.raises(SpecError, match=match):
            Cluster("t", 2, plain.intra, plain.host, plain.network, network_ops=bad)


def test_unknown_algorithm():
    with pytest.raises(SpecError, match="unknown allreduce"):
        c.cluster_allreduce("butterfly", 1.0, 2, cluster())
