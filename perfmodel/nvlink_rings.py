"""How many NVLinks per GPU the rings through a node's GPUs can use at once (``--gpu-topology``).

NCCL moves an allreduce around rings; a ring through GPUs g_0 .. g_{n-1} sends on one direction of one
link per hop, and a bond of k NVLinks (``NV#`` in ``nvidia-smi topo -m``) carries up to k rings each way.
With x_c >= 0 the share of ring c (a directed Hamiltonian cycle of the GPUs over bonded pairs), the
ring bandwidth in links per GPU is the linear program

    L = max sum_c x_c   subject to   sum over rings c through direction h of x_c <= links(h)   for every h

(each GPU sends sum_c x_c links' worth; docs/model.md section 10.3c). Two GPUs ring over their bond
both ways at once: L = links(0, 1). The ring bandwidth is L times one link's achievable figure.
Every cycle is enumerated: (n-1)! directed cycles, 5,040 at 8 GPUs (MAX_GPUS). GPUs whose every pair
is bonded by the same k links (what GPUs behind NVSwitches show, at any count) give L = k (n - 1), the
program's value there, without a search: every link carries rings (for odd n the complete graph splits
into edge-disjoint Hamiltonian cycles, Walecki's construction, each run both ways; for even n a fractional
mix of cycles does it; tests check both against the program).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from .specs import SpecError

MAX_GPUS = 8


def ring_links(bonds: Sequence[Sequence[int]]) -> float:
    """L (module docstring) for the GPUs of ``bonds`` (a symmetric matrix of NVLinks per pair, 0 where
    none); 0.0 when no ring runs over NVLink alone."""
    n = len(bonds)
    if n < 2:
        raise SpecError("a ring needs two GPUs")
    off = {bonds[i][j] for i in range(n) for j in range(n) if i != j}
    if len(off) == 1 and min(off) > 0:  # every pair bonded alike (GPUs behind NVSwitches show this)
        return float(min(off) * (n - 1))  # every link used (module docstring)
    if n > MAX_GPUS:
        raise SpecError(f"{n} GPUs: NVLink rings are searched for up to {MAX_GPUS}")
    cycles = []
    for rest in itertools.permutations(range(1, n)):
        order = (0, *rest)
        hops = [(order[i], order[(i + 1) % n]) for i in range(n)]
        if all(bonds[a][b] > 0 for a, b in hops):
            cycles.append(hops)
    if not cycles:
        return 0.0
    from scipy.optimize import linprog  # scipy at call time only: perfmodel imports stay light

    hops = sorted({h for c in cycles for h in c})
    index = {h: i for i, h in enumerate(hops)}
    a = np.zeros((len(hops), len(cycles)))
    for j, c in enumerate(cycles):
        for h in c:
            a[index[h], j] = 1.0
    res = linprog(-np.ones(len(cycles)), A_ub=a, b_ub=[float(bonds[x][y]) for x, y in hops], bounds=(0, None),
                  method="highs")
    if not res.success:  # a bounded, feasible program (x = 0 is feasible): never expected
        raise SpecError(f"NVLink ring packing failed: {res.message}")
    return float(round(-res.fun, 9))
