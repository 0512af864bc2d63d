"""The profile's training step against the trainer's, side by side in one process on one device.

Usage::

    python benchmarks/gpu_step_parity.py [--model resnet20] [--batch 64,256] [--steps 40] [--rounds 3]
        [--device cuda|cpu]

`perfmodel profile` times a model's step (forward, backward, optimizer) in its own loop; the SSGD
trainer's step adds its batch cut, the loss slot, bucket-view gradients and its timer. When the two
are run as separate processes (benchmarks/gpu_checklist.sh, check "profile"), a launch-bound GPU step
also differs by run (clocks, the host's other work). Here both run in one process, round after round,
on one device, so their ratio is the code paths' alone:

- ``profile``: perfmodel.lab.profile.compute's step on its own copy of the model, each step timed
  with CUDA events from before the forward to after zero_grad (the profile's clock);
- ``trainer``: the SSGD trainer built as `trainers run --algo ssgd` builds it on one rank (its
  dataset on the device), each step its run loop's own ``Trainer.train_step``: the batch, the learning
  rate (its schedule's, 0.1 for ResNet-20), ``algo.step``, ``timer.end_step`` (the t_step the run log records);
- ``trainer, lr 1e-3``: the same at the profile's learning rate (the weights' values are the only
  difference);
- ``trainer, no batch``: the same at lr 1e-3 on one batch cut before the round (what the batch costs).

Prints per batch size the medians over every round's steps (warm-up steps dropped) and the ratios;
a final JSON line holds them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet20")
    p.add_argument("--batch", default="64,256", help="comma list of batch sizes")
    p.add_argument("--steps", type=int, default=40, help="timed steps per variant and round")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps per variant and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    return p


def _trainer(model: str, batch: int, device: str):
    from mpi4py import MPI

    from trainers.run import build_run_parser, config_from_args, make_parser
    from trainers.sync.loop import Trainer
    from trainers.sync.runner import algorithm

    argv = ["--algo", "ssgd", "--model", model, "--dataset", "synthetic", "--synthetic-n", "4096", "--batch",
            str(batch), "--steps", "100000", "--device", device, "--no-progress", "--threads", "1"]
    cfg = config_from_args(build_run_parser(make_parser("parity")).parse_args(argv))
    return Trainer(cfg, MPI.COMM_WORLD, algorithm("ssgd"))


def main(argv: list[str] | None = None) -> int:
    import torch

    from perfmodel.lab.profile.compute import _CpuClock, _CudaClock, _training
    from trainers.models import build_model, input_shape

    args = _parser().parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_step_parity: no GPU here (torch.cuda.is_available() is False)")
        return 0
    batches = [int(b) for b in args.batch.split(",")]
    clock = (_CudaClock if args.device == "cuda" else _CpuClock)(2)
    out = {}
    for b in batches:
        tr = _trainer(args.model, b, args.device)
        prof_model = build_model(args.model, num_classes=tr.train_set.info.num_classes)
        _, opt, loss_fn, inputs, _ = _training(prof_model, input_shape(args.model), tr.train_set.info.num_classes,
                                               [b], args.device, 1e-3)
        x0, y0 = tr.batch(0, 0)
        times: dict[str, list[float]] = {"profile": [], "trainer": [], "trainer, lr 1e-3": [],
                                         "trainer, no batch": []}
        step = 0
        for _ in range(args.rounds):
            for name in times:
                for i in range(args.warmup + args.steps):
                    if name == "profile":
                        x, y = inputs[b]
                        clock.mark(0)
                        loss_fn(prof_model(x), y).backward()
                        opt.step()
                        opt.zero_grad(set_to_none=False)
                        clock.mark(1)
                        t = clock.elapsed()[0]
                    else:  # the trainer's own step (Trainer.train_step), as its run loop calls it
                        t = tr.train_step(step % tr.total_steps,
                                          batch=(x0, y0) if name == "trainer, no batch" else None,
                                          lr=None if name == "trainer" else 1e-3)[3]["t_step"]
                        step += 1
                    if i >= args.warmup:
                        times[name].append(t)
        med = {k: statistics.median(v) for k, v in times.items()}
        out[b] = med
        print(f"batch {b}: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in med.items())
              + f"; profile / trainer {med['profile'] / med['trainer']:.3f}, "
              f"profile / trainer without its batch {med['profile'] / med['trainer, no batch']:.3f}")
    print("JSON " + json.dumps({"model": args.model, "device": args.device, "rounds": args.rounds,
                                "steps": args.steps, "median_s": out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
