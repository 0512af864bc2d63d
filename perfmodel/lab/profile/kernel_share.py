"""The kernel's share of the cores: network work that runs on the cores the CPU ranks compute on.

A byte sent between two hosts costs kernel CPU outside any rank (kappa seconds per byte, measured by
`perfmodel profile --link`: perfmodel.lab.profile.kernel_load). A machine whose h nodes send S bytes
over their links per step of T seconds carries a load of

    lambda = kappa x S / T                               (cores)

besides its k computing ranks of t threads each, so the ranks get C - lambda of its C cores. The step
timed on k ranks at once (or the one-process step stretched by max(1, k t / C)) becomes

    f = max(1, k t / (C - lambda)) / max(1, k t / C)      (the compute stretch; 1 when lambda = 0)

The bytes: a ring over the job's W ranks, placed node by node (g per node, M nodes), crosses between
nodes on M of its W hops, so each node sends ``sent`` bytes (one rank's bytes per step) over its link
per step, and the h nodes of one machine send S = h x sent (h = M where every node shares the machine,
as emulated nodes do). The link profile's step after an exchange (perfmodel.lab.profile.predictor)
already holds what its own two nodes' exchange of ``sent`` bytes each left on the cores, so where it
is applied only S - 2 x sent is charged. lambda depends on T, which depends on f: the predictor solves
f = stretch(lambda(T(f))) (one root: the right side falls as f grows).

The cause is real on any cluster whose CPUs run the network stack (TCP over Ethernet); it is largest
where emulated nodes share one machine's cores, since every node's traffic lands on the same cores.
"""

from __future__ import annotations

import math

__all__ = ["MAX_LOAD_SHARE", "host_link_bytes", "core_stretch"]

#: The most of a machine's cores the kernel's load may take in the formula (a load that would take them
#: all leaves no time to compute; the predictor notes where it caps).
MAX_LOAD_SHARE = 0.9


def host_link_bytes(sent_per_rank: float, nodes: int, nodes_per_host: int, *, link_after: bool) -> float:
    """Bytes per step that cross the links of the nodes sharing one machine, beyond what the link
    profile's step after an exchange already holds (``link_after``: that slowdown was applied, and it
    holds its two nodes' exchange of ``sent_per_rank`` each). nodes_per_host 0: every node."""
    if sent_per_rank < 0 or nodes < 1 or nodes_per_host < 0:
        raise ValueError(f"need sent >= 0, nodes >= 1, nodes_per_host >= 0; got {sent_per_rank}, {nodes}, "
                         f"{nodes_per_host}")
    if nodes < 2:
        return 0.0
    h = nodes if nodes_per_host == 0 else min(nodes_per_host, nodes)
    return max(0.0, (h - (2 if link_after else 0)) * sent_per_rank)


def core_stretch(ranks: int, threads: int, cores: float, load_cores: float) -> tuple[float, float]:
    """(f, lambda used): the compute stretch of ``ranks`` ranks of ``threads`` threads on ``cores``
    cores when ``load_cores`` of them run the kernel's network work; the load is capped at
    MAX_LOAD_SHARE of the cores."""
    if ranks < 1 or threads < 1 or not cores > 0 or not (math.isfinite(load_cores) and load_cores >= 0):
        raise ValueError(f"need ranks, threads >= 1, cores > 0, load >= 0; got {ranks}, {threads}, {cores}, "
                         f"{load_cores}")
    lam = min(load_cores, MAX_LOAD_SHARE * cores)
    demand = ranks * threads
    return max(1.0, demand / (cores - lam)) / max(1.0, demand / cores), lam
