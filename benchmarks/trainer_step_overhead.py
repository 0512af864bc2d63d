"""A trainer's compute phase against the bare training step, side by side in one process, at 1 rank.

    mpiexec --oversubscribe --allow-run-as-root -n 1 python benchmarks/trainer_step_overhead.py [--algos ssgd,terngrad,daso]

For each algorithm, each round runs one step of the trainer (trainers.sync, its own gradient buckets,
hooks and timers; at 1 rank nothing is communicated) and then one bare step of the same network
(forward, cross-entropy, backward, SGD with momentum, zero_grad: what ``perfmodel profile`` times),
on the same batch. Prints the median of each (the trainer's ``t_compute``) and their ratio. A ratio
near 1 says the trainers add nothing to the step that the profile misses; a compute gap in a
multi-rank validation then comes with the ranks and links, not from the trainers' code.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="ssgd,terngrad,daso")
    parser.add_argument("--model", default="lenet")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from mpi4py import MPI

    from trainers.models import build_model
    from trainers.run import build_run_parser, config_from_args, make_parser
    from trainers.sync.runner import algorithm
    from trainers.sync.loop import Trainer

    torch.set_num_threads(1)
    for algo in args.algos.split(","):
        cfg = config_from_args(build_run_parser(make_parser("bench")).parse_args(
            ["--algo", algo, "--model", args.model, "--dataset", "synthetic", "--synthetic-n", "4000",
             "--batch", str(args.batch), "--steps", str(args.steps + args.warmup)]))
        tr = Trainer(cfg, MPI.COMM_WORLD, algorithm(cfg.algo))
        bare = build_model(args.model).train()
        opt = torch.optim.SGD(bare.parameters(), lr=0.01, momentum=0.9)
        x, y = tr.batch(0, 0)
        trainer_s, bare_s = [], []
        for i in range(args.steps + args.warmup):
            tr.timer.start()
            tr.algo.step(tr, x, y, tr._position(i))
            rec = tr.timer.end_step()
            t0 = time.perf_counter()
            F.cross_entropy(bare(x), y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            t1 = time.perf_counter()
            if i >= args.warmup:
                trainer_s.append(rec["t_compute"])
                bare_s.append(t1 - t0)
        t, b = statistics.median(trainer_s), statistics.median(bare_s)
        print(f"{algo:9s} {args.model} b={args.batch}: trainer compute {1e3 * t:.2f} ms, bare step {1e3 * b:.2f} ms, "
              f"ratio {t / b:.3f} ({1e3 * (t - b):+.2f} ms)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
