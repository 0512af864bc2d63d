"""One FSDP2 (torch.distributed.fsdp.fully_shard) training step on W CPU processes over gloo, profiled.

Prints one JSON line from rank 0: the parameters, this rank's sharded parameter elements, and every
collective of the profiled step as torch's profiler records it (gloo:all_gather with the shard's shape,
c10d::_reduce_scatter_base_ with the output and input shapes). Usage: python fsdp_step.py [W]
"""

import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(1000, 1000), torch.nn.ReLU(), torch.nn.Linear(1000, 10))


def run(rank: int, world: int, port: int) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        from torch.distributed.fsdp import fully_shard

        m = model()
        params = sum(p.numel() for p in m.parameters())
        for layer in m:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(m)
        local = sum(p.to_local().numel() for p in m.parameters())
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        x = torch.randn(8, 1000)
        m(x).sum().backward()
        opt.step()
        opt.zero_grad()
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            m(x).sum().backward()
            opt.step()
        calls = [[e.name, e.input_shapes] for e in prof.events()
                 if e.name in ("gloo:all_gather", "c10d::_reduce_scatter_base_", "gloo:all_reduce")]
        if rank == 0:
            print(json.dumps({"world": world, "parameters": params, "local_parameters": local, "calls": calls}))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    w = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(w, port), nprocs=w)
