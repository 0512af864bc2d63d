"""Each collective of a TernGrad step timed inside the step, against the same call after a barrier.

Run it under MPI, e.g. on 4 emulated nodes sharing this machine's cores::

    perfmodel emulate --nodes 4 --rate 250mbit -- sh -c \\
        'mpiexec --oversubscribe --allow-run-as-root $PERFMODEL_MPIEXEC_ARGS -n 4 python benchmarks/collectives_in_step.py'

Each round runs on every rank what a step of trainers.sync.terngrad's levels exchange runs: forward,
cross-entropy and backward (``perfmodel profile``'s model and batch), the scalers, their Allreduce
MAX, the encoding into codes (packed into 4-bit lanes at 2..7 ranks, the trainer's MPI default), the
codes' Allreduce, their decoding to the float mean, the Allreduce of the fp32 classifier layer and
the SGD step; every rank stamps the time around each call. Rank 0 prints, per collective:

- ``wait``: the mean over ranks of (the last rank's entry - the rank's entry), the straggler wait at
  that synchronization point (one clock: the ranks must share a machine, as emulated nodes do);
- ``in step``: the last rank to enter's own time in the call (median over rounds), the collective's
  time without that wait;
- ``after barrier``: the same call timed right after a barrier, as ``perfmodel profile`` times it
  (median over ranks and calls);
- ``ratio``: in step / after barrier. About 1 says the profile's timing is the one a step meets.

With one rank per core the ratios stay near 1; with ranks sharing cores, the small collectives
inside a step took several times their time after a barrier (docs/validation.md, "What is still off").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import add_model_options, mpi_training  # noqa: E402

NAMES = ("scalers' Allreduce MAX", "codes' Allreduce", "fp32 layer's Allreduce")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_options(parser, untimed=5)
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from perfmodel.compression import resolve_level_lanes
    from perfmodel.wire import levels_lane_bits
    from perfmodel.lab.profile.compute import grads_into
    from trainers import comm as tcomm
    from trainers.compress import TernGradCodec, encode_codes, level_dtype
    from trainers.exchanges.levels import allreduce_lanes4, allreduce_levels
    from trainers.level_lanes import lanes_nbytes, pack_lanes4, unpack_lanes4

    comm, model, opt, loss_fn, inputs, _ = mpi_training(args.model, args.batch)
    p = comm.Get_size()
    x, y = inputs[args.batch]
    named = [(k, q) for k, q in model.named_parameters() if q.requires_grad]
    codec = TernGradCodec()
    plan = codec.plan([(k, q.numel()) for k, q in named])
    tern = [q for (_, q), t in zip(named, plan) if t]
    fp32 = np.ones(sum(q.numel() for (_, q), t in zip(named, plan) if not t), dtype=np.float32)
    fp32_sum = np.empty_like(fp32)
    sizes = [q.numel() for q in tern]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(starts[-1])
    bucket = torch.zeros(n)  # backward writes the ternarized gradients into one buffer, as the trainer's buckets
    grads_into(bucket, tern)
    flat = bucket.numpy()
    codes = np.empty(n, dtype=level_dtype(p))
    # the trainer's lanes on MPI (its --terngrad-lanes auto): 4-bit where they hold the sum
    packed = levels_lane_bits(p, resolve_level_lanes("auto", "mpi") == "packed") == 4
    lanes = np.empty(lanes_nbytes(n), dtype=np.uint8) if packed else None
    mean = torch.empty(n)

    def codes_allreduce() -> None:
        if lanes is None:
            allreduce_levels(comm, codes)
        else:
            allreduce_lanes4(comm, lanes)

    def fp32_allreduce() -> None:
        comm.Allreduce(fp32, fp32_sum)

    rounds = 5 + args.rounds
    stamps = np.empty((rounds, 3, 2))  # round x collective x (entry, exit)
    for r in range(rounds):
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        local = codec.scalers([q.grad for q in tern], [True] * len(tern))
        stamps[r, 0, 0] = time.perf_counter()
        shared = tcomm.allreduce_max(comm, local)
        stamps[r, 0, 1] = time.perf_counter()
        encode_codes(flat, starts, shared, 0, r * n, codes)
        if lanes is not None:
            pack_lanes4(codes, lanes)
        stamps[r, 1, 0] = time.perf_counter()
        codes_allreduce()
        stamps[r, 1, 1] = time.perf_counter()
        if lanes is not None:
            unpack_lanes4(lanes, n, codes)
        for k, (a, b) in enumerate(zip(starts[:-1], starts[1:])):  # as trainers.sync.terngrad's _decode
            torch.mul(torch.from_numpy(codes[a:b]), float(shared[k]), out=mean[a:b])
            mean[a:b].div_(float(p))
        stamps[r, 2, 0] = time.perf_counter()
        fp32_allreduce()
        stamps[r, 2, 1] = time.perf_counter()
        opt.step()

    barrier = []
    for call in (lambda: tcomm.allreduce_max(comm, local), codes_allreduce, fp32_allreduce):
        times = []
        for r in range(rounds):
            comm.Barrier()
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        barrier.append(times[5:])
    every = comm.gather((stamps[5:], np.asarray(barrier)), root=0)
    if comm.Get_rank() != 0:
        return 0
    st = np.stack([s for s, _ in every])  # ranks x rounds x collective x (entry, exit)
    after = np.stack([b for _, b in every])  # ranks x collective x rounds
    print(f"{args.model} at batch {args.batch} on {p} ranks, {args.rounds} rounds"
          f"{', 4-bit lanes' if lanes is not None else ''}")
    print(f"{'collective':24s} {'wait ms':>8s} {'in step ms':>11s} {'after barrier ms':>17s} {'ratio':>6s}")
    for c, name in enumerate(NAMES):
        entry, leave = st[:, :, c, 0], st[:, :, c, 1]
        last = entry.argmax(axis=0)  # the last rank to enter, per round
        wait = float((entry.max(axis=0) - entry).mean())
        own = float(np.median((leave - entry)[last, np.arange(entry.shape[1])]))
        base = float(np.median(after[:, c, :]))
        print(f"{name:24s} {wait * 1e3:8.2f} {own * 1e3:11.2f} {base * 1e3:17.2f} {own / base:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
