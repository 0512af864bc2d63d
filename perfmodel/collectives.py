"""Alpha-beta costs of collectives, vectorized over rank counts.

Single-level forms take p ranks on one link (alpha seconds per message, beta seconds per byte) and n
bytes. Cluster forms place W ranks on nodes of g GPUs (rank-contiguous: ranks 0..g-1 on node 0, ...) and
charge each step on the link it crosses: the intra-node link, or the node's network link, shared by the
ranks of that node that send across it at the same time (``concurrency``).

Non-powers of two: the logarithmic algorithms take ceil(log2 p) steps.
"""

from __future__ import annotations

import numpy as np

from .specs import Cluster, Link, SpecError

ArrayLike = float | np.ndarray


def _log2c(p: ArrayLike) -> np.ndarray:
    """ceil(log2 p) for p >= 1, elementwise (0 for p == 1)."""
    p = np.asarray(p, dtype=float)
    return np.ceil(np.log2(np.maximum(p, 1.0)))


# ---------------------------------------------------------------- single level (p ranks, one link)

def ring_allreduce(n: ArrayLike, p: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """Ring allreduce: 2(p-1) alpha + 2(p-1)/p n beta seconds."""
    p = np.asarray(p, dtype=float)
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * np.asarray(n, dtype=float) * beta


def tree_allreduce(n: ArrayLike, p: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """Binomial-tree reduce then broadcast of the whole message: 2 ceil(log2 p) (alpha + n beta)."""
    return 2 * _log2c(p) * (alpha + np.asarray(n, dtype=float) * beta)


def recursive_doubling_allreduce(n: ArrayLike, p: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """Recursive doubling: ceil(log2 p) (alpha + n beta)."""
    return _log2c(p) * (alpha + np.asarray(n, dtype=float) * beta)


def rabenseifner_allreduce(n: ArrayLike, p: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """Rabenseifner (reduce-scatter by halving, allgather by doubling): 2 log2(p) alpha + 2(p-1)/p n beta."""
    p = np.asarray(p, dtype=float)
    return 2 * _log2c(p) * alpha + 2 * (p - 1) / p * np.asarray(n, dtype=float) * beta


def ring_allgather(n_each: ArrayLike, p: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """Ring allgather of n_each bytes from every rank: (p-1)(alpha + n_each beta)."""
    p = np.asarray(p, dtype=float)
    return (p - 1) * (alpha + np.asarray(n_each, dtype=float) * beta)


def tree_broadcast(n: ArrayLike, p: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """Binomial-tree broadcast: ceil(log2 p) (alpha + n beta)."""
    return _log2c(p) * (alpha + np.asarray(n, dtype=float) * beta)


def paper_log2(n: ArrayLike, p: ArrayLike, link: Link, *, latency: bool) -> np.ndarray:
    """TernGrad Appendix B's form: log2(p) (alpha + n/B), with or without the latency term."""
    p = np.asarray(p, dtype=float)
    a = link.alpha if latency else 0.0
    return (a + np.asarray(n, dtype=float) * link.beta) * np.log2(np.maximum(p, 1.0))


# ---------------------------------------------------------------- placement on a cluster

def placement(gpus: ArrayLike, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(nodes M, ranks per node g) for W GPUs packed onto full nodes: M = ceil(W/g), g = min(W, g_node)."""
    w = np.asarray(gpus, dtype=float)
    g = float(cluster.gpus_per_node)
    return np.ceil(w / g), np.minimum(w, g)


def paper_allreduce(n: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """TernGrad Appendix B, as reconstructed in ALGORITHMS.md section 2 (seconds per iteration).

    t_intra = n log2(N) / B_gpu_gpu + n / B_gpu_cpu ;  t_inter = (latency + n / B_network) log2(M).
    """
    m, g = placement(gpus, cluster)
    n = np.asarray(n, dtype=float)
    t_intra = n * np.log2(g) * cluster.intra.beta + n * cluster.host.beta
    t_inter = (cluster.network.alpha + n * cluster.network.beta) * np.log2(m)
    return t_intra + t_inter


def cluster_allreduce(algorithm: str, n: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """Seconds to allreduce n bytes over W GPUs of ``cluster`` with ``algorithm``.

    ring: one ring through all ranks; every step moves n/W bytes and waits for the slowest link on the
    ring (the network once there are two nodes). tree: binomial; steps across nodes have one sender per
    node. recursive-doubling and rabenseifner: the log2(M) steps across nodes have all g ranks of a node
    sending through its network link at once. hierarchical: intra-node ring reduce-scatter, an inter-node
    ring allreduce of n/g by each of the g ranks (sharing the node's network link), intra-node ring allgather.
    paper: TernGrad's form (see ``paper_allreduce``).
    """
    if algorithm == "paper":
        return paper_allreduce(n, gpus, cluster)
    if algorithm not in _CLUSTER_ALLREDUCE:
        raise SpecError(f"unknown allreduce {algorithm!r}; choose from paper, {', '.join(_CLUSTER_ALLREDUCE)}")
    w = np.asarray(gpus, dtype=float)
    m, g = placement(w, cluster)
    t = _CLUSTER_ALLREDUCE[algorithm](np.asarray(n, dtype=float), w, m, g, cluster.intra, cluster.network)
    return np.where(w > 1, t, 0.0)


def _ring(n, w, m, g, intra: Link, net: Link):
    step_intra = intra.alpha + n / w * intra.beta
    step_net = net.alpha + n / w * net.beta
    step = np.where(m > 1, np.maximum(step_intra, step_net), step_intra)
    return 2 * (w - 1) * step


def _tree(n, w, m, g, intra: Link, net: Link):
    return 2 * (_log2c(g) * (intra.alpha + n * intra.beta) + _log2c(m) * (net.alpha + n * net.beta))


def _recursive_doubling(n, w, m, g, intra: Link, net: Link):
    return _log2c(g) * (intra.alpha + n * intra.beta) + _log2c(m) * (net.alpha + g * n * net.beta)


def _rabenseifner(n, w, m, g, intra: Link, net: Link):
    # Halving: the first log2(M) steps cross nodes carrying n/2, n/4, ... (sum n(1 - 1/M)) per rank,
    # g ranks per node at once; the rest stay inside the node (sum n/M (1 - 1/g)). Allgather mirrors it.
    inter = _log2c(m) * net.alpha + g * n * (1 - 1 / m) * net.beta
    local = _log2c(g) * intra.alpha + n / m * (1 - 1 / g) * intra.beta
    return 2 * (inter + local)


def _hierarchical(n, w, m, g, intra: Link, net: Link):
    local = ring_allreduce(n, g, intra.alpha, intra.beta)  # reduce-scatter + allgather inside the node
    # each of the g ranks allreduces n/g over M nodes; together they push n(M-1)/M... through one link
    inter = 2 * (m - 1) * net.alpha + 2 * (m - 1) / m * n * net.beta
    return local + inter


_CLUSTER_ALLREDUCE = {
    "ring": _ring,
    "tree": _tree,
    "recursive-doubling": _recursive_doubling,
    "rabenseifner": _rabenseifner,
    "hierarchical": _hierarchical,
}


def cluster_allgather(n_each: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """Ring allgather of n_each bytes per rank over W GPUs: (W-1) steps on the slowest ring link."""
    w = np.asarray(gpus, dtype=float)
    m, _ = placement(w, cluster)
    n_each = np.asarray(n_each, dtype=float)
    step_intra = cluster.intra.alpha + n_each * cluster.intra.beta
    step_net = cluster.network.alpha + n_each * cluster.network.beta
    step = np.where(m > 1, np.maximum(step_intra, step_net), step_intra)
    return (w - 1) * step


def cluster_alltoall(n_each: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """Pairwise alltoall, n_each bytes from every rank to every other rank over W GPUs: the g-1 steps to
    peers in the node on the intra link, (g-1)(alpha_i + n_each beta_i); the W-g steps to other nodes
    with the node's g ranks sending through its network link at once, (W-g)(alpha_n + g n_each beta_n)."""
    w = np.asarray(gpus, dtype=float)
    _, g = placement(w, cluster)
    n_each = np.asarray(n_each, dtype=float)
    local = (g - 1) * (cluster.intra.alpha + n_each * cluster.intra.beta)
    remote = (w - g) * (cluster.network.alpha + g * n_each * cluster.network.beta)
    return local + remote


def ps_exchange(n: ArrayLike, gpus: ArrayLike, cluster: Cluster, servers: int) -> tuple[np.ndarray, np.ndarray]:
    """Parameter-server push of n gradient bytes and pull of n parameter bytes by one worker.

    Returns (seconds one worker spends in its own exchange, seconds of server link time per exchange).
    The worker side: GPU->CPU copy, push and pull over the node's network link shared by the node's g
    workers, CPU->GPU copy. The server side: S servers each with one network link (full duplex), so one
    exchange occupies n / (S B_network) seconds of the servers' aggregate link.
    """
    _, g = placement(gpus, cluster)
    n = np.asarray(n, dtype=float)
    worker = 2 * (cluster.network.alpha + g * n * cluster.network.beta) + 2 * n * cluster.host.beta
    server = n * cluster.network.beta / servers
    return worker, np.broadcast_to(server, np.shape(worker)).astype(float)
