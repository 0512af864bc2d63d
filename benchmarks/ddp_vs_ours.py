"""Our SSGD step against torch DistributedDataParallel (gloo), and our fused Allreduce against bare mpi4py.

Usage::

    python benchmarks/ddp_vs_ours.py [--ranks 2] [--model lenet] [--batch 64] [--steps 40] [--repeats 3]
        [--backend gloo|mpi] [--overlap on|off] [--bucket-mb 25] [--launcher "srun --mpi=pmix"]

It starts its ranks itself (on itself, with ``--worker``) with perfmodel.lab.launcher (``--launcher``,
``$DSGD_LAUNCHER``, else mpiexec). Under that one launch every rank:

1. trains with our real SSGD trainer (trainers.sync.Trainer + trainers.sync.ssgd.SSGD: backward into fused float32
   buckets, each reduced by ``--backend`` as backprop produces it, trainers.grad_buckets), on
   synthetic data, and reads rank 0's per-step ``t_step`` from the run log; with ``--backend gloo``
   both trainers reduce with the same gloo process group, so the comparison is of the trainers alone;
2. trains the same model, batch, data order and optimizer under ``torch.nn.parallel.
   DistributedDataParallel`` with the gloo backend (``torch.distributed`` initialised at the address
   trainers.collectives.torch_dist.rendezvous agrees on over MPI: loopback on one host, else
   ``--master-addr``/``MASTER_ADDR``, else rank 0's interface that routes to the other hosts), timing
   each step the same way (batch fetch to the end of ``optimizer.step``);
3. times our bucketed ``FlatBuckets.allreduce_mean`` of the model's gradient buffers against a bare
   ``comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)`` of one float32 buffer of the same size.

The two trainers alternate ``--repeats`` times (warm-up steps dropped each time) and the medians are
compared; rank 0 prints one table. Target: ours / DDP <= 1.05 (gloo backend). Waiting MPI ranks yield the CPU
(Open MPI ``mpi_yield_when_idle=1``, what ``trainers run`` sets by default) unless ``--mpi-busy-poll``:
on a machine whose cores the ranks share with other work, busy-polling takes CPU from computing ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2, help="MPI ranks (processes)")
    p.add_argument("--model", default="lenet", help="model name (trainers.models)")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--steps", type=int, default=40, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps at the start of each repeat")
    p.add_argument("--repeats", type=int, default=3, help="alternations ours / DDP")
    p.add_argument("--allreduce-iters", type=int, default=200, help="timed Allreduce calls per variant")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="cpu (DDP on gloo) or cuda (one GPU per rank, DDP on NCCL)")
    p.add_argument("--backend", default=None, choices=("gloo", "mpi", "nccl"),
                   help="our trainer's --backend (default: DDP's, gloo on cpu, nccl on cuda)")
    p.add_argument("--overlap", default="on", choices=("on", "off"), help="our trainer's --overlap")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="bucket size in MiB (ours; DDP's bucket_cap_mb)")
    p.add_argument("--launcher", default=None, help="launcher command (default $DSGD_LAUNCHER, then mpiexec)")
    p.add_argument("--hostfile", default=None, help="hostfile passed to the launcher")
    p.add_argument("--master-addr", default=None,
                   help="address of rank 0 for torch.distributed (default: found by the rendezvous)")
    p.add_argument("--mpi-busy-poll", action="store_true",
                   help="let waiting MPI ranks busy-poll (Open MPI default); by default they yield the CPU, "
                        "as `trainers run` does and as gloo's blocking waits do")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


# ---------------------------------------------------------------------------------------- worker


def _ours(args: argparse.Namespace, comm, n: int, log: Path) -> list[float]:
    from trainers.log import read_run_log
    from trainers.config import SyncConfig
    from trainers.sync.loop import Trainer
    from trainers.sync.ssgd import SSGD

    cfg = SyncConfig(algo="ssgd", model=args.model, dataset="synthetic", synthetic_n=n, batch=args.batch,
                    steps=args.warmup + args.steps, lr=0.01, momentum=0.9, seed=0, progress=False,
                    log=str(log), eval_batch=args.batch, mpi_yield=not args.mpi_busy_poll, device=args.device,
                    backend=args.backend, overlap=args.overlap == "on", bucket_mb=args.bucket_mb)
    Trainer(cfg, comm, SSGD).run()
    if comm.Get_rank() != 0:
        return []
    return [s["t_step"] for s in read_run_log(log).steps[args.warmup:]]


def _ddp_backend(device: str) -> str:
    return "nccl" if device == "cuda" else "gloo"


def _ddp(args: argparse.Namespace, comm, n: int, device) -> list[float]:
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    from trainers.synthetic_data import synthetic
    from trainers.models import build_model
    from trainers.sync.loop import batch_indices, epoch_permutation

    rank, world = comm.Get_rank(), comm.Get_size()
    ds = synthetic(args.model, n=n, seed=0, train=True)
    torch.manual_seed(0)
    cuda = device.type == "cuda"
    model = DistributedDataParallel(build_model(args.model, num_classes=ds.info.num_classes).to(device),
                                    device_ids=[device.index] if cuda else None, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    perm = epoch_permutation(n, 0, 0)
    times = []
    comm.Barrier()
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        x, y = ds[torch.from_numpy(batch_indices(perm, args.batch, rank, world, i))]
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize(device)  # the step ends when the GPU is done (as our StepTimer syncs)
        times.append(time.perf_counter() - t0)
    return times[args.warmup:]


def _allreduce(args: argparse.Namespace, comm) -> tuple[list[float], list[float], list[float], int]:
    """Seconds per call of our SSGD gradient exchange and of a bare Allreduce of the same bytes.

    Ours is what the SSGD step's comm phase runs: FlatBuckets of the model's gradients (plus the
    loss slot) and one in-place Allreduce(SUM) per bucket (``_allreduce_sum`` below; the 1/K of
    the mean is applied to the loss before backward). "mean" adds FlatBuckets.allreduce_mean, which
    divides after the sum (one more pass over the buffer), for reference.

    Each sample times a block of 10 back-to-back calls after a Barrier (so barrier skew is amortised);
    the variants alternate block by block, and which goes first rotates."""
    import torch
    from mpi4py import MPI

    from trainers.comm import FlatBuckets
    from trainers.models import build_model

    def _allreduce_sum(comm, buckets: FlatBuckets) -> None:
        """In-place Allreduce(SUM) of every bucket (no extra pass over the data afterwards)."""
        for flat in buckets.buckets:
            if flat.numel():
                comm.Allreduce(MPI.IN_PLACE, flat.numpy(), op=MPI.SUM)

    model = build_model(args.model)
    buckets = FlatBuckets([torch.zeros_like(p) for p in model.parameters()] + [torch.zeros(1)])
    bare = torch.zeros(sum(b.numel() for b in buckets.buckets), dtype=torch.float32).numpy()
    variants = {"ours": lambda: _allreduce_sum(comm, buckets),
                "bare": lambda: comm.Allreduce(MPI.IN_PLACE, bare, op=MPI.SUM),
                "mean": lambda: buckets.allreduce_mean(comm)}
    times: dict[str, list[float]] = {k: [] for k in variants}
    block = 10
    names = list(variants)
    for i in range(-1, max(args.allreduce_iters // block, 1)):
        for name in names[i % 3:] + names[:i % 3]:  # rotate which variant goes first
            call = variants[name]
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(block):
                call()
            if i >= 0:  # block -1 is the warm-up
                times[name].append((time.perf_counter() - t0) / block)
    return times["ours"], times["bare"], times["mean"], bare.nbytes


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from mpi4py import MPI

    from trainers.comm import abort_on_error
    from trainers.device import select_device

    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    torch.set_num_threads(1)
    with abort_on_error(comm):
        from urllib.parse import urlsplit

        from trainers.collectives.torch_dist import rendezvous

        url = urlsplit(rendezvous(comm, args.master_addr))  # every rank alike, or UsageError on all
        os.environ.update(MASTER_ADDR=str(url.hostname), MASTER_PORT=str(url.port), RANK=str(rank),
                          WORLD_SIZE=str(world))
        device = select_device(args.device, comm)
        extra = {"device_id": device} if device.type == "cuda" else {}
        dist.init_process_group(_ddp_backend(args.device), init_method="env://", rank=rank, world_size=world, **extra)
        n = world * args.batch * (args.warmup + args.steps)
        tmp = Path(tempfile.mkdtemp(prefix="ddp_vs_ours_")) if rank == 0 else None
        ours, ddp = [], []
        for rep in range(args.repeats):
            ours += _ours(args, comm, n, (tmp / f"ours{rep}.jsonl") if tmp else Path(os.devnull))
            ddp += _ddp(args, comm, n, device)
        ar_ours, ar_bare, ar_mean, nbytes = _allreduce(args, comm)
        dist.destroy_process_group()
        if rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
            _report(args, world, ours, ddp, ar_ours, ar_bare, ar_mean, nbytes)


def _report(args, world, ours, ddp, ar_ours, ar_bare, ar_mean, nbytes) -> None:
    from trainers.models import tensor_sizes

    med = statistics.median
    params = sum(n for _, n in tensor_sizes(args.model))
    t_ours, t_ddp = med(ours), med(ddp)
    a_ours, a_bare = med(ar_ours), med(ar_bare)
    print(f"model {args.model} ({params:,} parameters), batch {args.batch} per rank, {world} ranks, "
          f"{args.steps} timed steps x {args.repeats} repeats (medians); ours: --backend {args.backend} "
          f"--overlap {args.overlap} --bucket-mb {args.bucket_mb:g}")
    print(f"{'':34s}{f'ours ({args.backend} ssgd)':>18s}{f'torch DDP ({_ddp_backend(args.device)})':>18s}"
          f"{'ours/DDP':>10s}")
    print(f"{'step time [ms]':34s}{1e3 * t_ours:18.2f}{1e3 * t_ddp:18.2f}{t_ours / t_ddp:10.3f}")
    print(f"{'':34s}{'ours (fused)':>18s}{'bare mpi4py':>18s}{'ours/bare':>10s}")
    print(f"{f'allreduce of {nbytes / 2**20:.2f} MiB [ms]':34s}{1e3 * a_ours:18.3f}{1e3 * a_bare:18.3f}"
          f"{a_ours / a_bare:10.3f}")
    print(f"{'algorithm bandwidth [GB/s]':34s}{nbytes / a_ours / 1e9:18.3f}{nbytes / a_bare / 1e9:18.3f}"
          f"{a_bare / a_ours:10.3f}")
    verdict = "meets" if t_ours <= 1.05 * t_ddp else "MISSES"
    print(f"{'FlatBuckets.allreduce_mean [ms]':34s}{1e3 * med(ar_mean):18.3f}")
    print(f"target ours/DDP step time <= 1.05: {verdict} ({t_ours / t_ddp:.3f})")
    print("JSON " + json.dumps({"model": args.model, "batch": args.batch, "ranks": world, "backend": args.backend,
                                "device": args.device, "ddp_backend": _ddp_backend(args.device),
                                "overlap": args.overlap, "bucket_mb": args.bucket_mb,
                                "step_ours_s": t_ours, "step_ddp_s": t_ddp, "ratio": t_ours / t_ddp,
                                "allreduce_bytes": nbytes, "allreduce_ours_s": a_ours, "allreduce_bare_s": a_bare,
                                "allreduce_mean_s": med(ar_mean)}))


# ---------------------------------------------------------------------------------------- launcher


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.backend = args.backend or _ddp_backend(args.device)
    if args.backend not in ("mpi", _ddp_backend(args.device)):
        print(f"ddp_vs_ours: error: --backend {args.backend} with --device {args.device}: ours shares DDP's process "
              f"group, so use {_ddp_backend(args.device)} or mpi", file=sys.stderr)
        return 2
    if args.device == "cuda" and not args.worker:
        import torch

        if not torch.cuda.is_available():
            print("ddp_vs_ours: error: --device cuda, but torch sees no CUDA GPU", file=sys.stderr)
            return 2
    if args.worker:
        worker(args)
        return 0
    if min(args.ranks, args.batch, args.steps, args.repeats, args.allreduce_iters) < 1 or args.warmup < 0:
        print("ddp_vs_ours: error: --ranks, --batch, --steps, --repeats, --allreduce-iters must be >= 1, "
              "--warmup >= 0", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    from perfmodel.lab.launcher import resolve_launcher
    from perfmodel.specs import SpecError

    try:
        launcher = resolve_launcher(args.launcher, hostfile=args.hostfile)
    except SpecError as exc:
        print(f"ddp_vs_ours: error: {exc}", file=sys.stderr)
        return 2
    cmd = launcher.command(args.ranks, [
        sys.executable, str(Path(__file__).resolve()), "--worker", "--model", args.model, "--batch", str(args.batch),
        "--steps", str(args.steps), "--warmup", str(args.warmup), "--repeats", str(args.repeats),
        "--allreduce-iters", str(args.allreduce_iters), "--backend", args.backend, "--overlap", args.overlap,
        "--bucket-mb", str(args.bucket_mb), "--device", args.device]
        + (["--mpi-busy-poll"] if args.mpi_busy_poll else [])
        + (["--master-addr", args.master_addr] if args.master_addr else []))
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    if not args.mpi_busy_poll:
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    print(f"MPI waits: {'busy-poll' if env.get('OMPI_MCA_mpi_yield_when_idle', '0') == '0' else 'yield'}",
          flush=True)
    # the ranks' output streams through; their stderr is held back so that a failure shows the ranks'
    # own error line and not mpiexec's banner after it (perfmodel.lab.launcher)
    proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        from perfmodel.lab.launcher import error_line

        print(f"ddp_vs_ours: error: the MPI job failed (exit {proc.returncode}): {error_line(proc.stderr)}",
              file=sys.stderr)
    elif proc.stderr:
        sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
