"""NCCL's allreduce: its own choice of algorithm (ring, tree) and protocol (LL, LL128, Simple) by size.

NCCL predicts the time of every (algorithm, protocol) pair with its tuning model and runs the fastest
(src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, NVIDIA/nccl commit 01afd20a, the
2.8/2.9 series). This module evaluates that model on the cluster's links, vectorized over GPU counts
W (M nodes of g GPUs) and message sizes n (bytes); see docs/model.md, section "NCCL".

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


def algorithm_times(n, gpus, cluster: Cluster) -> dict[tuple[str, str], np.ndarray]:
    """Seconds of each enabled (algorithm, protocol) for n bytes on W GPUs, broadcast over n and W."""
    n = np.asarray(n, dtype=float)
    w = np.asarray(gpus, dtype=float)
    g_node = float(cluster.gpus_per_node)
    m = np.ceil(w / g_node)
    ppn = w / m
    hw = intra_class(cluster)
    multi = m > 1
    bus = np.where(multi, min(cluster.intra.bandwidth_Bps, cluster.network.bandwidth_Bps),
                   cluster.intra.bandwidth_Bps)
    log_size = np.clip(_log2i(np.maximum(n, 1.0) / 64.0), 0, None).astype(int)
    out: dict[tuple[str, str], np.ndarray] = {}
    for a in ALGORITHMS:
        for i, p in enumerate(PROTOCOLS):
            if p == "LL128" and hw != "nvlink":
                continue
            if a == "ring":
                bw = bus * {"LL": 0.25, "LL128": np.where(ppn < 2, 0.7, 0.92), "Simple": 1.0}[p]
                algbw = bw * w / (2 * np.maximum(w - 1, 1))
            else:
                bw = np.minimum(bus * 0.9, np.where(m > 2, TREE_MAX_BW_Bps[1], TREE_MAX_BW_Bps[0]))
                if p == "LL":
                    bw = bw / 3.8
                elif p == "LL128":
                    bw = bw * np.where(multi, 0.915, 7.0 / 9.0)
                algbw = bw * 0.5
                table = np.asarray(TREE_CORRECTION[p])
                algbw = algbw * np.where(log_size < len(table), table[np.minimum(log_size, len(table) - 1)], 1.0)
            intra_lat = HW_LAT_US[hw][a][i] * np.where(multi & (p == "LL"), 1.8, 1.0)
            inter_lat = HW_LAT_US["net"][a][i]
            if a == "ring":
                steps, inter_steps = 2 * (w - 1), 2 * (m - 1)
                lat = BASE_LAT_US[a][i] + (steps - inter_steps) * intra_lat + inter_steps * inter_lat
                if p == "Simple":
                    lat = lat * np.where(multi & (n >= w / 16.0 * 65536), 1.9, 1.0)
            else:
                lat = BASE_LAT_US[a][i] + 2 * ((np.floor(ppn) - 1) * intra_lat + _log2i(m) * inter_lat)
            out[(a, p)] = np.where(w > 1, lat * 1e-6 + n / algbw, 0.0)
    return out


def nccl_allreduce(n, gpus, cluster: Cluster) -> np.ndarray:
    """Seconds NCCL takes to allreduce n bytes on W GPUs: the fastest enabled (algorithm, protocol)."""
    times = algorithm_times(n, gpus, cluster)
    return np.minimum.reduce(list(times.values()))


def nccl_choice(n, gpus, cluster: Cluster) -> np.ndarray:
    """The (algorithm/protocol) NCCL picks for each (n, W), as strings like "ring/Simple"."""
    times = algorithm_times(n, gpus, cluster)
    keys = list(times)
    best = np.argmin(np.stack([times[k] for k in keys]), axis=0)
    return np.asarray([f"{a}/{p}" for a, p in keys])[best]
