"""Run every trainers.collectives / trainers.grad_buckets check under mpiexec, once per backend.

Usage: mpiexec -n P python tests/mpi_scripts/collectives_checks.py OUT.json DEVICE BACKEND [BACKEND ...]
(PYTHONPATH = repo root). Rank 0 writes {backend: {check: result}}; the pytest side compares the
backends with each other and with values it computes itself from collectives_inputs.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import torch
from mpi4py import MPI

import collectives_inputs as inputs
from trainers.collectives import open_collectives
from trainers.comm import abort_on_error
from trainers.device import select_device
from trainers.grad_buckets import GradBuckets


def _t(a: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def _list(t: torch.Tensor) -> list:
    return t.detach().cpu().to(torch.float64 if t.is_floating_point() else torch.int64).reshape(-1).tolist()


def collectives(coll: Any, rank: int, device: torch.device) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in ("sum", "mean", "max"):
        t = _t(inputs.floats(rank), device)
        coll.allreduce(t, op)
        out[f"allreduce_{op}"] = _list(t)
    for name, dtype in (("int8", np.int8), ("int16", np.int16), ("int32", np.int32)):
        t = _t(inputs.levels(rank, dtype), device)
        coll.allreduce(t, "sum")
        out[f"allreduce_sum_{name}"] = _list(t)
        out[f"dtype_{name}"] = str(t.dtype)
    t = _t(inputs.floats(rank), device).to(torch.bfloat16)
    coll.allreduce(t, "sum")
    out["allreduce_sum_bf16"] = _list(t)
    t = _t(inputs.floats(rank), device)
    h = coll.allreduce_async(t, "mean")
    h.wait()
    out["async_mean"] = _list(t)
    out["async_completed"] = h.test() and h.completed_at is not None and h.completed_at >= h.started_at
    out["allgather"] = _list(coll.allgather(_t(inputs.floats(rank)[:7], device)))
    out["allgather_int8"] = _list(coll.allgather(_t(inputs.levels(rank, np.int8)[:5], device)))
    a2a = np.arange(3 * coll.size, dtype=np.int32) + 100 * rank
    out["alltoall"] = _list(coll.alltoall(_t(a2a, device)))
    if device.type == "cpu":  # mpi4py's buffer calls on the group (trainers.comm's exchanges use them)
        from mpi4py import MPI

        from trainers.collectives.buffers import BufferComm

        bc = BufferComm(coll)
        mx = np.empty(inputs.N, dtype=np.float32)
        bc.Allreduce(inputs.floats(rank), mx, op=MPI.MAX)
        lv = inputs.levels(rank, np.int8).copy()
        bc.Allreduce(MPI.IN_PLACE, lv, op=MPI.SUM)
        ga = np.empty((coll.size, 7), dtype=np.float32)
        bc.Allgather(inputs.floats(rank)[:7], ga)
        tt = np.empty_like(a2a)
        bc.Alltoall(a2a, tt)
        out["buffercomm"] = {"max": mx.astype(np.float64).tolist(), "levels": lv.astype(np.int64).tolist(),
                             "allgather": ga.reshape(-1).astype(np.float64).tolist(), "alltoall": tt.tolist(),
                             "size": bc.Get_size(), "rank": bc.Get_rank()}
    root = coll.size - 1
    t = _t(inputs.floats(rank), device)
    coll.broadcast(t, root)
    out["broadcast_last"] = _list(t)
    # sub-groups as DASO uses them: node = rank // 2 (local), position = rank % 2 (global)
    if coll.size % 2 == 0:
        for kind, color in (("local", rank // 2), ("global", rank % 2)):
            sub = coll.split(color)
            t = _t(inputs.floats(rank), device)
            sub.allreduce(t, "sum")
            b = _t(inputs.floats(rank), device)
            sub.broadcast(b, sub.size - 1)
            out[f"split_{kind}"] = {"rank": sub.rank, "size": sub.size, "sum": _list(t), "bcast": _list(b),
                                    "members": sub.comm.allgather(rank)}
            sub.close()
    return out


def buckets(coll: Any, rank: int, device: torch.device) -> dict[str, Any]:
    """GradBuckets (overlap on and off) against one allreduce of the whole flat gradient."""
    res: dict[str, Any] = {}
    model = inputs.model().to(device)
    params = list(model.parameters())
    x, y = (v.to(device) for v in inputs.batch(rank))
    # reference: plain per-rank gradient, flattened, one allreduce(mean) of the full vector
    model.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    full = torch.cat([p.grad.reshape(-1) for p in params] + [loss.detach().reshape(1)])
    coll.allreduce(full, "mean")
    for p in params:
        p.grad = None
    for overlap in (True, False):
        gb = GradBuckets(params, coll, bucket_bytes=inputs.BUCKET_BYTES, overlap=overlap, op="mean",
                         extra_numel=1)
        for step in range(2):  # the second step checks re-arming and zeroing
            gb.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            gb.extra.fill_(loss.item())
            gb.begin()
            loss.backward()
            times = gb.finish()
        mine = torch.cat([p.grad.reshape(-1) for p in params] + [gb.extra.reshape(1)])
        key = "on" if overlap else "off"
        res[f"max_abs_diff_{key}"] = float((mine - full).abs().max())
        res[f"equal_{key}"] = bool(torch.equal(mine, full))
        res[f"buckets_{key}"] = times.buckets
        res[f"launched_in_backward_{key}"] = times.launched_in_backward
        res[f"times_{key}"] = {"exposed_s": times.exposed_s, "comm_s": times.comm_s, "span_s": times.span_s,
                               "nbytes": times.nbytes}
        gb.remove()
        for p in params:
            p.grad = None
    res["full"] = _list(full)
    return res


def main() -> None:
    path, device_request, *backends = sys.argv[1:]
    comm = MPI.COMM_WORLD
    torch.set_num_threads(1)
    with abort_on_error(comm):
        device = select_device(device_request, comm)
        result: dict[str, Any] = {}
        for name in backends:
            coll = open_collectives(name, comm, device)
            mine = {"collectives": collectives(coll, comm.Get_rank(), device),
                    "buckets": buckets(coll, comm.Get_rank(), device), "library": coll.library}
            gathered = comm.gather(mine, root=0)
            if comm.Get_rank() == 0:
                result[name] = {"ranks": gathered}
            coll.close()
        if comm.Get_rank() == 0:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(result, fh)


if __name__ == "__main__":
    main()
