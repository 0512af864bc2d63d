"""Run every trainers.comm check under mpiexec; rank 0 writes one JSON object to the path in argv[1].

Usage: mpiexec -n P python tests/mpi_scripts/comm_checks.py OUT.json   (PYTHONPATH = repo root)
Each check returns what rank 0 gathered; the pytest side compares it with values it computes itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from mpi4py import MPI

import mpi_inputs as inputs
from trainers import comm as tc
from trainers.compress import TernGradCodec
from trainers.exchanges import exchange_class


def _spread(comm: MPI.Comm, arrays: list[np.ndarray]) -> float:
    """Largest |difference| between this rank's arrays and rank 0's, maximised over ranks."""
    flat = np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays])
    ref = comm.bcast(flat, root=0)
    return comm.allreduce(float(np.max(np.abs(flat - ref))) if flat.size else 0.0, op=MPI.MAX)


def check_buckets(comm: MPI.Comm) -> dict[str, Any]:
    tensors = [torch.from_numpy(a) for a in inputs.bucket_tensors(comm.Get_rank())]
    buckets = tc.FlatBuckets(tensors, bucket_bytes=inputs.BUCKET_BYTES)
    buckets.allreduce_mean(comm)
    out = [torch.zeros_like(t) for t in tensors]
    buckets.copy_out(out)
    return {"bucket_sizes": [b.numel() for b in buckets.buckets],
            "mean": [o.numpy().reshape(-1).tolist() for o in out],
            "rank_spread": _spread(comm, [o.numpy() for o in out])}


def check_node_groups(comm: MPI.Comm) -> dict[str, Any]:
    res: dict[str, Any] = {}
    size, rank = comm.Get_size(), comm.Get_rank()
    for rpn in (1, 2):
        local, glob = tc.node_groups(comm, rpn)
        mine = {"local": local.allgather(rank), "global": glob.allgather(rank),
                "local_rank": local.Get_rank(), "global_rank": glob.Get_rank()}
        local.Free()
        glob.Free()
        res[str(rpn)] = comm.gather(mine, root=0)
    bad = size + 1
    try:
        tc.node_groups(comm, bad)
        res["error"] = None
    except ValueError as e:
        res["error"] = str(e)
    res["bad_rpn"] = bad
    return res


def check_bf16(comm: MPI.Comm) -> dict[str, Any]:
    rank = comm.Get_rank()
    res: dict[str, Any] = {}
    for method in ("op", "allgather"):
        got = tc.allreduce_bf16_mean(comm, torch.from_numpy(inputs.vector(rank)), method=method)
        ints = tc.allreduce_bf16_mean(comm, torch.from_numpy(inputs.small_integers(rank)), method=method)
        res[method] = {"dtype": str(got.dtype), "mean": got.numpy().tolist(), "ints": ints.numpy().tolist(),
                       "rank_spread": _spread(comm, [got.numpy(), ints.numpy()])}
    return res


def check_iallreduce(comm: MPI.Comm) -> dict[str, Any]:
    x = torch.from_numpy(inputs.vector(comm.Get_rank()).reshape(25, 40).copy())
    handle = tc.iallreduce_start(comm, x)
    x.mul_(-7.0)  # the reduction must use the values at the start
    other = comm.allreduce(1, op=MPI.SUM)  # another collective while the Iallreduce is in flight
    total = handle.wait()
    return {"sum": total.numpy().reshape(-1).tolist(), "shape": list(total.shape), "other": other,
            "test_after_wait": handle.test(), "rank_spread": _spread(comm, [total.numpy()])}


def check_terngrad(comm: MPI.Comm) -> dict[str, Any]:
    """The allgather exchange object (trainers.exchanges) on the codec's plan and shared scalers."""
    rank = comm.Get_rank()
    named = [(n, torch.from_numpy(g)) for n, g in inputs.terngrad_grads(rank)]
    codec = TernGradCodec(min_tensor_elems=inputs.TERNGRAD_MIN_ELEMS)
    grads = [g for _, g in named]
    plan = codec.plan(named)
    shared = tc.allreduce_max(comm, codec.scalers(grads, plan))
    tern = [g for g, t in zip(grads, plan) if t]
    scal = np.array([s for s, t in zip(shared, plan) if t])
    ex = exchange_class("allgather")(comm, [g.shape for g in tern], key=inputs.terngrad_seed(rank),
                                     bucket_bytes=tc.DEFAULT_BUCKET_BYTES, lane_bits=8)
    for v, g in zip(ex.views, tern):
        v.copy_(g)
    ex.encode(0, scal, 0)
    sent = ex.exchange(0)
    ex.decode(0, scal)
    return {"plan": list(plan), "shared": shared.tolist(), "bytes_sent": sent, "wire_bytes": ex.wire_bytes(),
            "shapes": [list(m.shape) for m in ex.views],
            "means": [m.numpy().reshape(-1).tolist() for m in ex.views],
            "rank_spread": _spread(comm, [m.numpy() for m in ex.views])}


CHECKS: dict[str, Callable[[MPI.Comm], dict[str, Any]]] = {
    "buckets": check_buckets,
    "node_groups": check_node_groups,
    "bf16": check_bf16,
    "iallreduce": check_iallreduce,
    "terngrad": check_terngrad,
}


def main() -> None:
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    with tc.abort_on_error(world):
        results: dict[str, Any] = {"size": world.Get_size()}
        for name, check in CHECKS.items():
            results[name] = check(world)
        if world.Get_rank() == 0:
            with open(sys.argv[1], "w", encoding="utf-8") as f:
                json.dump(results, f)


if __name__ == "__main__":
    main()
