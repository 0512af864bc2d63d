"""NCCL's allreduce: its own choice of algorithm (ring, tree) and protocol (LL, LL128, Simple) by size.

NCCL predicts the time of every (algorithm, protocol) pair with its tuning model and runs the fastest
(src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, NVIDIA/nccl commit 01afd20a, the
2.8/2.9 series). This module evaluates that model on the cluster's links, vectorized over GPU counts
W (M nodes of g GPUs) and message sizes n (bytes); see docs/model.md section 3.6.

    time(a, p) = lat(a, p) + n / algbw(a, p)                              (latency in us in NCCL)

Bandwidth. NCCL's bus bandwidth is its channels times the path speed; here it is the cluster's
achievable collective (bus) bandwidth: B = B_intra on one node, min(B_intra, B_network) across nodes
(the node's NIC carries the ring's traffic, as in collectives' ring). NCCL's refinements:
    ring LL x 1/4;  ring LL128 x 0.92 (x 0.7 with one GPU per node);  tree: min(0.9 B, cap) with
    cap 80 GB/s above two nodes, 110 GB/s otherwise;  tree LL x 1/3.8;  tree LL128 x 7/9 on one node,
    x 0.915 across nodes.  LL128 only where the intra-node link is NVLink (NCCL enables it by default
    only on NVLink, Volta/Ampere).
    algbw: ring B W / (2(W-1));  tree B / 2.
    Tree bandwidth at medium sizes is multiplied by NCCL's treeCorrectionFactor[p][log2(n/64)].
Latency (microseconds): base[a][p] plus per hop
    ring: (2(W-1) - 2(M-1)) hw_intra + 2(M-1) hw_net;  x 1.9 for ring Simple across nodes once
          n >= W/16 x 64 KiB (NCCL's ring plateau)
    tree: 2 ((W/M - 1) hw_intra + floor(log2 M) hw_net)
    with hw_intra x 1.8 for LL across nodes. The intra-node hop class is NVLink when the intra link is
    faster than PCIe 4.0 x16 (nominal 31.5 GB/s) and PCI otherwise (the cluster spec names no link kind;
    a documented heuristic).
Not modelled: NCCL's per-channel caps on LL/LL128 (they need the channel count) and CollNet/NVLS.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .specs import Cluster

ALGORITHMS = ("tree", "ring")
PROTOCOLS = ("LL", "LL128", "Simple")

# tuning.cc: baseLat[algorithm][protocol], microseconds
BASE_LAT_US = {"tree": (4.4, 4.4, 0.0), "ring": (3.6, 10.0, 8.4)}
# tuning.cc: hwLat[hardware][algorithm][protocol], microseconds per hop
HW_LAT_US = {
    "nvlink": {"tree": (0.52, 1.2, 28.0), "ring": (0.47, 1.9, 3.4)},
    "pci": {"tree": (1.0, 1.9, 28.0), "ring": (1.0, 2.5, 5.7)},
    "net": {"tree": (5.0, 8.5, 50.0), "ring": (2.7, 4.0, 9.6)},
}
# tuning.cc: treeCorrectionFactor[protocol][log2(nBytes / 64)], powers of two from 64 B to 128 MiB
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9),
}
TREE_MAX_BW_Bps = (110e9, 80e9)  # tuning.cc maxTreeBw (GB/s): up to two nodes, more than two
PCIE4_X16_Bps = 31.5e9  # nominal PCIe 4.0 x16 per direction: above it the intra link is taken as NVLink


def intra_class(cluster: Cluster) -> str:
    """NCCL's hardware class of the intra-node link: "nvlink" or "pci" (heuristic on its bandwidth)."""
    return "nvlink" if cluster.intra.bandwidth_Bps > PCIE4_X16_Bps else "pci"


def _log2i(x: np.ndarray) -> np.ndarray:
    """floor(log2 x) for x >= 1 (0 below), elementwise."""
    return np.floor(np.log2(np.maximum(x, 1.0)))


@lru_cache(maxsize=16)
def _cached_model(w_bytes: bytes, cluster: Cluster):
    return _model(np.frombuffer(w_bytes), cluster)


def _model(w: np.ndarray, cluster: Cluster):
    """NCCL's per-(algorithm, protocol) latency (seconds) and bandwidth (bytes/s) before the size-dependent
    corrections, as arrays (pairs, W), with the pairs' names and which are trees / ring Simple."""
    m = np.ceil(w / float(cluster.gpus_per_node))
    multi = m > 1
    ppn = w / m
    hw = intra_class(cluster)
    bus = np.where(multi, min(cluster.intra.bandwidth_Bps, cluster.network.bandwidth_Bps),
                   cluster.intra.bandwidth_Bps)
    ring_ratio = w / (2 * np.maximum(w - 1, 1))  # algbw / busbw of the ring
    ring_steps, ring_inter = 2 * (w - 1), 2 * (m - 1)
    tree_intra_hops, tree_inter_hops = 2 * (np.floor(ppn) - 1), 2 * _log2i(m)
    tree_bus = np.minimum(bus * 0.9, np.where(m > 2, TREE_MAX_BW_Bps[1], TREE_MAX_BW_Bps[0]))
    keys, lats, bws = [], [], []
    for i, p in enumerate(PROTOCOLS):
        if p == "LL128" and hw != "nvlink":
            continue
        ll_intra = np.where(multi, 1.8, 1.0) if p == "LL" else 1.0
        factor = {"LL": 0.25, "LL128": np.where(ppn < 2, 0.7, 0.92), "Simple": 1.0}[p]
        keys.append(("ring", p))
        bws.append(bus * factor * ring_ratio)
        lats.append(BASE_LAT_US["ring"][i] + (ring_steps - ring_inter) * HW_LAT_US[hw]["ring"][i] * ll_intra
                    + ring_inter * HW_LAT_US["net"]["ring"][i])
        factor = {"LL": 1 / 3.8, "LL128": np.where(multi, 0.915, 7.0 / 9.0), "Simple": 1.0}[p]
        keys.append(("tree", p))
        bws.append(tree_bus * factor * 0.5)
        lats.append(BASE_LAT_US["tree"][i] + tree_intra_hops * HW_LAT_US[hw]["tree"][i] * ll_intra
                    + tree_inter_hops * HW_LAT_US["net"]["tree"][i])
    lat = np.empty((len(keys), len(w)))
    bw = np.empty((len(keys), len(w)))
    for j in range(len(keys)):
        lat[j] = lats[j]
        bw[j] = bws[j]
    lat *= 1e-6
    corr = np.ones((len(keys), 23))
    for j, (a, p) in enumerate(keys):
        if a == "tree":
            corr[j, :22] = TREE_CORRECTION[p]
    ring_simple = np.asarray([k == ("ring", "Simple") for k in keys])
    return keys, lat, bw, corr, ring_simple, multi


def _times(n, gpus, cluster: Cluster) -> tuple[list[tuple[str, str]], np.ndarray]:
    """(pairs, seconds of each pair) with the seconds shaped (pairs,) + broadcast(n, W).shape; 1 GPU costs 0."""
    w = np.atleast_1d(np.asarray(gpus, dtype=float)).ravel()
    out_shape = np.broadcast_shapes(np.shape(n), np.shape(gpus))
    n = np.asarray(n, dtype=float)
    # sizes as (sizes, 1) when they do not vary with W, else (sizes, W)
    n2 = n.reshape(-1, 1) if n.ndim == 0 or n.shape[-1] == 1 or len(w) == 1 else \
        np.broadcast_to(n, out_shape).reshape(-1, len(w))
    keys, lat, bw, corr, ring_simple, multi = _cached_model(w.tobytes(), cluster)  # read only
    log_size = np.minimum(np.clip(_log2i(np.maximum(n2, 1.0) / 64.0), 0, None).astype(int), 22)
    t = lat[:, None, :] + n2[None] / (bw[:, None, :] * corr[:, log_size])
    rs = ring_simple.argmax()  # NCCL's ring plateau: ring Simple's latency x 1.9 across nodes for large n
    t[rs] += lat[rs] * 0.9 * (multi & (n2 >= w / 16.0 * 65536))
    t *= w > 1
    return keys, t.reshape((len(keys),) + out_shape)


def algorithm_times(n, gpus, cluster: Cluster) -> dict[tuple[str, str], np.ndarray]:
    """Seconds of each enabled (algorithm, protocol) for n bytes on W GPUs, broadcast over n and W."""
    keys, t = _times(n, gpus, cluster)
    return dict(zip(keys, t))


def nccl_allreduce(n, gpus, cluster: Cluster) -> np.ndarray:
    """Seconds NCCL takes to allreduce n bytes on W GPUs: the fastest enabled (algorithm, protocol)."""
    return _times(n, gpus, cluster)[1].min(axis=0)


def nccl_choice(n, gpus, cluster: Cluster) -> np.ndarray:
    """The (algorithm/protocol) NCCL picks for each (n, W), as strings like "ring/Simple"."""
    keys, t = _times(n, gpus, cluster)
    return np.asarray([f"{a}/{p}" for a, p in keys])[t.argmin(axis=0)]
