"""Overhead of trainers.timers.StepTimer relative to one LeNet training step.

    python benchmarks/timer_overhead.py [--batch 64] [--steps 30] [--threads 1]

The timer's cost per step (4 phases + end_step) is measured directly against an empty loop, many
thousand times (a difference of two noisy LeNet loops would be dominated by noise); it is then divided
by the median LeNet step (SGD, CPU) measured in this process. Prints both and the ratio; exits 1 if
the ratio is 1% or more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainers.timers import overhead_per_step  # noqa: E402


def lenet_step_seconds(batch: int, steps: int, threads: int) -> float:
    """Median seconds of one LeNet SGD step on CPU (random MNIST-shaped data)."""
    import torch

    from trainers.models import build_model, input_shape

    torch.set_num_threads(threads)
    model = build_model("lenet")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, *input_shape("lenet"))
    y = torch.randint(0, 10, (batch,))
    times = []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= 3:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    cost = overhead_per_step()
    step = lenet_step_seconds(args.batch, args.steps, args.threads)
    ratio = cost / step
    print(f"timer overhead per step: {cost * 1e6:.2f} us")
    print(f"LeNet step (batch {args.batch}, {args.threads} thread(s)): {step * 1e3:.3f} ms")
    print(f"overhead ratio: {ratio:.5%} ({'below' if ratio < 0.01 else 'NOT below'} 1%)")
    return 0 if ratio < 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
