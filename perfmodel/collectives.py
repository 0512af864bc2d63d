"""Alpha-beta costs of collectives, vectorized over rank counts.

Single-level forms take p ranks on one link (alpha seconds per message, beta seconds per byte) and n
bytes. Cluster forms place W ranks on nodes of g GPUs (rank-contiguous: ranks 0..g-1 on node 0, ...) and
charge each step on the link it crosses: the intra-node link, or the node's network link, shared by the
ranks of that node that send across it at the same time (``concurrency``).

Non-powers of two: the logarithmic algorithms take ceil(log2 p) steps.

Beyond allreduce (docs/model.md sections 3.5, 5.5 and 5.6; M nodes of g GPUs, W = M g, n bytes):
    reduce-broadcast (reduce to one root, then broadcast it back; MXNet kvstore=device, TensorFlow
    replicated without NCCL): every GPU of a node sends to the node's root and every node root to the
    global root over the root's link, then the same back:
        2 [(g-1)(alpha_i + n beta_i) + (M-1)(alpha_net + n beta_net)]
    basic-linear (Open MPI's basic linear allreduce: rank 0 receives and sums every rank's n bytes one
    at a time, then sends n to every rank): its g-1 node peers over the intra link, the W-g ranks of
    other nodes over rank 0's network link, each way:
        2 [(g-1)(alpha_i + n beta_i) + (W-g)(alpha_net + n beta_net)]
    host staging (MPI without CUDA awareness: Horovod over a non-CUDA-aware MPI): copy n to host memory,
    run the algorithm there (ranks of a node copy through shared memory: a copy of x bytes reads and
    writes x, the node's g ranks share its memory bandwidth B_mem, so the intra link is 2g/B_mem seconds
    per byte), sum in host memory (3 bytes moved per byte reduced, g ranks at once), copy back:
        2 (alpha_host + n beta_host) + A(n; intra = (alpha_i, 2g/B_mem), network) + 3 g R / B_mem
    with R the bytes one rank reduces: (W-1)/W n for ring, rabenseifner and hierarchical, ceil(log2 W) n
    for tree and recursive doubling, (W-1) n / g for basic-linear (rank 0 alone reduces (W-1) n).
    reduce-broadcast staged on the host reduces to the CPU:
        2 (alpha_host + n beta_host) + (g+1) n / B_mem + 2 (M-1)(alpha_net + n beta_net) + (M+1) n / B_mem [M>1]
    synchronous parameter server (K servers, parameters sharded n/K per server; P pushers, p per node:
    p = 1 with local reduction, else g; u = p n bytes a node pushes): push phase and pull phase each
        dedicated servers:  alpha_net + max(u, P n / K) beta_net
        colocated servers (s = floor(K/M) or ceil(K/M) servers on a node): alpha_net +
                            max over both kinds of node of max(u (1 - s/K), s n (P - p) / K) beta_net
    plus the device-host copies (n/g per GPU with local reduction, which first runs a ring allreduce of
    n inside the node; n per GPU without): t = 2 phase + intra.
    BytePS (Jiang et al., OSDI 2020, section 3.1): M GPU machines and k CPU summation machines, each with
    the node's network link; the optimal split of summation gives every GPU machine's NIC
        2 M (M-1) n / ((M^2 + k M - 2k)) bytes per direction for k < M, n for k >= M
    (k = 0 is allreduce's 2(M-1)/M n), plus the push and pull latencies; inside a machine a ring reduce
    (reduce-scatter + allgather) of n and the copy of each GPU's n/g to and from host memory.
"""

from __future__ import annotations

import numpy as np

from .ompi_tuned import per_model_algorithm
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


# ---------------------------------------------------------------- placement on a cluster

def placement(gpus: ArrayLike, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(nodes M, ranks per node g) for W GPUs packed onto full nodes: M = ceil(W/g), g = min(W, g_node)."""
    w = np.asarray(gpus, dtype=float)
    g = float(cluster.gpus_per_node)
    return np.ceil(w / g), np.minimum(w, g)


def paper_allreduce(n: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """TernGrad Appendix B, as reconstructed in docs/model.md section 3.3 (seconds per iteration).

    t_intra = n log2(N) / B_gpu_gpu + n / B_gpu_cpu ;  t_inter = (latency + n / B_network) log2(M).
    """
    m, g = placement(gpus, cluster)
    n = np.asarray(n, dtype=float)
    t_intra = n * np.log2(g) * cluster.intra.beta + n * cluster.host.beta
    t_inter = (cluster.network.alpha + n * cluster.network.beta) * np.log2(m)
    return t_intra + t_inter


def cluster_allreduce(algorithm: str, n: ArrayLike, gpus: ArrayLike, cluster: Cluster, *,
                      staging: str = "device") -> np.ndarray:
    """Seconds to allreduce n bytes over W GPUs of ``cluster`` with ``algorithm``.

    ring: one ring through all ranks; every step moves n/W bytes and waits for the slowest link on the
    ring (the network once there are two nodes). tree: binomial; steps across nodes have one sender per
    node. recursive-doubling and rabenseifner: the log2(M) steps across nodes have all g ranks of a node
    sending through its network link at once. hierarchical: intra-node ring reduce-scatter, an inter-node
    ring allreduce of n/g by each of the g ranks (sharing the node's network link), intra-node ring allgather.
    paper: TernGrad's form (see ``paper_allreduce``). nccl: NCCL's own choice (perfmodel.nccl). ompi:
    for each (n, W) the form of the algorithm Open MPI 5.0's tuned rules run (perfmodel.ompi_tuned).
    reduce-broadcast: to one root and back; basic-linear: Open MPI's, every rank to rank 0 and back
    (module docstring). staging "host": the module docstring's host-staged form (not for paper and nccl).
    """
    if algorithm == "paper":
        return paper_allreduce(n, gpus, cluster)
    if algorithm == "nccl":
        if staging == "host":
            raise SpecError("allreduce nccl runs on device buffers; staging host needs an MPI algorithm")
        from .nccl import nccl_allreduce

        return nccl_allreduce(n, gpus, cluster)
    if algorithm == "ompi":  # for every (n, W) the cluster form of the algorithm Open MPI runs
        return per_model_algorithm(lambda name, nb, wb: cluster_allreduce(name, nb, wb, cluster, staging=staging),
                                   n, gpus)
    if algorithm not in _CLUSTER_ALLREDUCE:
        raise SpecError(f"unknown allreduce {algorithm!r}; choose from paper, nccl, ompi, "
                        f"{', '.join(_CLUSTER_ALLREDUCE)}")
    if staging not in ("device", "host"):
        raise SpecError(f"staging must be device or host, got {staging!r}")
    w = np.asarray(gpus, dtype=float)
    m, g = placement(w, cluster)
    n = np.asarray(n, dtype=float)
    if staging == "host":
        t = host_staged_allreduce(algorithm, n, w, cluster)
    else:
        t = _CLUSTER_ALLREDUCE[algorithm](n, w, m, g, cluster.intra, cluster.network)
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


def _reduce_broadcast(n, w, m, g, intra: Link, net: Link):
    return 2 * ((g - 1) * (intra.alpha + n * intra.beta) + (m - 1) * (net.alpha + n * net.beta))


def _basic_linear(n, w, m, g, intra: Link, net: Link):
    return 2 * ((g - 1) * (intra.alpha + n * intra.beta) + (w - g) * (net.alpha + n * net.beta))


_CLUSTER_ALLREDUCE = {
    "reduce-broadcast": _reduce_broadcast,
    "basic-linear": _basic_linear,
    "ring": _ring,
    "tree": _tree,
    "recursive-doubling": _recursive_doubling,
    "rabenseifner": _rabenseifner,
    "hierarchical": _hierarchical,
}


def cluster_allgather(n_each: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """Ring allgather of n_each bytes per rank over W GPUs: (W-1) steps on the slowest ring link (between
    nodes the cluster's Allgather link, ``Cluster.network_for``)."""
    w = np.asarray(gpus, dtype=float)
    m, _ = placement(w, cluster)
    n_each = np.asarray(n_each, dtype=float)
    net = cluster.network_for("allgather")
    step_intra = cluster.intra.alpha + n_each * cluster.intra.beta
    step_net = net.alpha + n_each * net.beta
    step = np.where(m > 1, np.maximum(step_intra, step_net), step_intra)
    return (w - 1) * step


def cluster_alltoall(n_each: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """Pairwise alltoall, n_each bytes from every rank to every other rank over W GPUs: the g-1 steps to
    peers in the node on the intra link, (g-1)(alpha_i + n_each beta_i); the W-g steps to other nodes
    with the node's g ranks sending through its network link at once, (W-g)(alpha_n + g n_each beta_n)
    (between nodes the cluster's Alltoall link, ``Cluster.network_for``)."""
    w = np.asarray(gpus, dtype=float)
    _, g = placement(w, cluster)
    n_each = np.asarray(n_each, dtype=float)
    net = cluster.network_for("alltoall")
    local = (g - 1) * (cluster.intra.alpha + n_each * cluster.intra.beta)
    remote = (w - g) * (net.alpha + g * n_each * net.beta)
    return local + remote


def ps_exchange(n: ArrayLike, gpus: ArrayLike, cluster: Cluster, servers: int) -> tuple[np.ndarray, np.ndarray]:
    """Parameter-server push of n gradient bytes and pull of n parameter bytes by one worker.

    Returns (seconds one worker spends in its own exchange, seconds of server time per exchange).
    The worker side: GPU->CPU copy, push and pull over the node's network link shared by the node's g
    workers, CPU->GPU copy. The server side: S servers, each receiving one push while it sends the
    previous pull (full duplex), so one exchange occupies (alpha_ps + n beta_ps) / S seconds of them,
    on the cluster's own "ps" link (``Cluster.network_ops``: the parameter-server exchange a profile
    timed, perfmodel.lab.profile.schema.op_blocks), else n / (S B_network) on the network link (no alpha:
    the pushes queue behind each other, their latencies overlap).
    """
    _, g = placement(gpus, cluster)
    n = np.asarray(n, dtype=float)
    worker = 2 * (cluster.network.alpha + g * n * cluster.network.beta) + 2 * n * cluster.host.beta
    ps = dict(cluster.network_ops).get("ps")
    server = (ps.alpha + n * ps.beta if ps is not None else n * cluster.network.beta) / servers
    return worker, np.broadcast_to(server, np.shape(worker)).astype(float)


# ---------------------------------------------------------------- host staging, parameter servers, BytePS

# Default host memory bandwidth per node when the cluster gives none (bytes/s): two sockets x 4 channels
# of DDR4-2133 = 136.5 GB/s nominal, times the 72% that STREAM copy reached on such a server (73.9 GB/s
# of 102.4 GB/s nominal at 1600 MT/s, 2x Xeon E5-2637 v3, microway.com/hpc-tech-tips/
# 3-dimms-per-channel-on-xeon-e5-2600v3) = 98 GB/s, rounded to 1e11.
DEFAULT_HOST_MEMORY_Bps = 1.0e11


def host_memory_Bps(cluster: Cluster) -> tuple[float, bool]:
    """(host memory bandwidth per node in bytes/s, True if it is DEFAULT_HOST_MEMORY_Bps)."""
    value = getattr(cluster, "host_memory_Bps", None)
    return (float(value), False) if value else (DEFAULT_HOST_MEMORY_Bps, True)


class _Hop:
    """A link in the alpha-beta model whose beta may vary with the GPU count (an array)."""

    def __init__(self, alpha: float, beta: ArrayLike):
        self.alpha, self.beta = alpha, beta


def host_staged_allreduce(algorithm: str, n: ArrayLike, gpus: ArrayLike, cluster: Cluster) -> np.ndarray:
    """Seconds of an allreduce of n bytes staged through host memory (module docstring's formula)."""
    w = np.asarray(gpus, dtype=float)
    m, g = placement(w, cluster)
    n = np.asarray(n, dtype=float)
    b_mem, _ = host_memory_Bps(cluster)
    copies = 2 * (cluster.host.alpha + n * cluster.host.beta)
    net = cluster.network
    if algorithm == "reduce-broadcast":
        t = copies + (g + 1) * n / b_mem + np.where(
            m > 1, 2 * (m - 1) * (net.alpha + n * net.beta) + (m + 1) * n / b_mem, 0.0)
        return np.where(w > 1, t, 0.0)
    if algorithm not in _CLUSTER_ALLREDUCE:
        raise SpecError(f"allreduce {algorithm!r} cannot be staged on the host")
    shm = _Hop(cluster.intra.alpha, 2 * g / b_mem)
    if algorithm == "basic-linear":
        reduced = (w - 1) * n / g  # rank 0 alone sums (W-1) n: 3 (W-1) n / B_mem
    elif algorithm in ("ring", "rabenseifner", "hierarchical"):
        reduced = (w - 1) / w * n
    else:
        reduced = _log2c(w) * n
    t = copies + _CLUSTER_ALLREDUCE[algorithm](n, w, m, g, shm, net) + 3 * g * reduced / b_mem
    return np.where(w > 1, t, 0.0)


def sync_ps_exchange(n: ArrayLike, gpus: ArrayLike, cluster: Cluster, servers: int, *,
                     placement_kind: str = "colocated", local_reduce: bool = True) -> np.ndarray:
    """Seconds of one synchronous parameter-server step (push gradients, pull parameters) of n bytes.

    K = ``servers`` shards of n/K bytes; see the module docstring for the formula.
    """
    w = np.asarray(gpus, dtype=float)
    m, g = placement(w, cluster)
    n = np.asarray(n, dtype=float)
    k = float(servers)
    net, host = cluster.network, cluster.host
    p = np.ones_like(w) if local_reduce else g
    u = p * n
    total = m * p
    if placement_kind == "dedicated":
        phase = net.alpha + np.maximum(u, total * n / k) * net.beta
    elif placement_kind == "colocated":
        s_lo, s_hi = np.floor(k / m), np.ceil(k / m)
        busiest = np.maximum(np.maximum(u * (1 - s_lo / k), s_lo * n * (total - p) / k),
                             np.maximum(u * (1 - s_hi / k), s_hi * n * (total - p) / k))
        phase = np.where(busiest > 0, net.alpha + busiest * net.beta, 0.0)
    else:
        raise SpecError(f"ps placement must be colocated or dedicated, got {placement_kind!r}")
    if local_reduce:
        intra = ring_allreduce(n, g, cluster.intra.alpha, cluster.intra.beta) + 2 * (host.alpha + n / g * host.beta)
    else:
        intra = 2 * (host.alpha + n * host.beta)
    return 2 * phase + intra


def byteps_exchange(n: ArrayLike, gpus: ArrayLike, cluster: Cluster, cpu_machines: int) -> np.ndarray:
    """Seconds of one BytePS push-pull of n bytes with k = ``cpu_machines`` CPU summation machines."""
    w = np.asarray(gpus, dtype=float)
    m, g = placement(w, cluster)
    n = np.asarray(n, dtype=float)
    k = float(cpu_machines)
    net, host = cluster.network, cluster.host
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(k < m, 2 * m * (m - 1) / (m * m + k * m - 2 * k), 1.0)
    inter = np.where(m > 1, 2 * net.alpha + share * n * net.beta, 0.0)
    intra = ring_allreduce(n, g, cluster.intra.alpha, cluster.intra.beta)
    copies = np.where(m > 1, 2 * (host.alpha + n / g * host.beta), 0.0)
    return np.where(w > 1, inter + intra + copies, 0.0)
