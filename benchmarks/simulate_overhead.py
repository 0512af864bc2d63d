"""Cost of simulating N asynchronous workers against plain single-process SGD, same gradient steps.

    python benchmarks/simulate_overhead.py [--model gem-cnn] [--workers 32] [--steps 300] [--batch 64]
                                           [--rules asgd,ga,dana-ga,gem] [--repeats 3]

Both sides train the same model on the same synthetic data with one thread. The baseline is a plain
loop: next batch, forward, backward, torch.optim.SGD (momentum 0.9, Nesterov) step. The simulator
(trainers.asynchronous.simulate.simulate) runs ``steps`` gradients of ``workers`` simulated workers with each
rule: heap events, loading a worker's stale flat parameters, the master rule, the bookkeeping
(GEM with the authors' clamp: the paper's unclamped pi diverges with 32 workers and would stop early).
Each side is timed ``repeats`` times, interleaved, and the best time counts (the machine is shared).
Prints seconds per step for both and the ratio per rule; exits 1 if a ratio exceeds --target
(default 1.3).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from trainers.asynchronous.simulate import simulate  # noqa: E402
from trainers.config import AsyncConfig  # noqa: E402
from trainers.asynchronous.data_streams import BatchStream, load_data  # noqa: E402
from trainers.asynchronous.flat_model import FlatModel  # noqa: E402


def plain_sgd_seconds(cfg: AsyncConfig) -> float:
    """Seconds for cfg.steps plain SGD steps (one process, one model, the same batches' shape)."""
    torch.set_num_threads(1)
    one = AsyncConfig(**{**cfg.to_dict(), "workers": 1, "algo": "nag-asgd"})
    train, _ = load_data(one, test=False)
    stream = BatchStream(train, one, 0)
    model = FlatModel.build(one).model
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True)
    model.train()
    t0 = time.perf_counter()
    for _ in range(cfg.steps):
        x, y = stream.next()
        opt.zero_grad(set_to_none=False)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return time.perf_counter() - t0


def simulated_seconds(cfg: AsyncConfig) -> float:
    """Seconds of the simulator's event loop for cfg.steps gradients (its own wall_s); a run that
    diverged (and so stopped early) is an error, not a fast run."""
    s = simulate(cfg).summary
    if s["diverged"] or s["gradients"] != cfg.steps:
        raise SystemExit(f"{cfg.algo} diverged after {s['gradients']} gradients; lower the rate")
    return float(s["wall_s"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="gem-cnn")
    p.add_argument("--workers", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--rules", default="asgd,ga,dana-ga,gem")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--target", type=float, default=1.3)
    args = p.parse_args(argv)
    rules = [r for r in args.rules.split(",") if r]
    cfgs = {r: AsyncConfig(algo=r, workers=args.workers, model=args.model, dataset="synthetic",
                           synthetic_n=max(args.batch * args.workers * 2, 2048), batch=args.batch, lr=0.01,
                           steps=args.steps, eval_every=0.0, eval_limit=args.batch, delays="homogeneous",
                           gem_code="authors")
            for r in rules}
    base = float("inf")
    sim = {r: float("inf") for r in rules}
    for _ in range(args.repeats):
        base = min(base, plain_sgd_seconds(cfgs[rules[0]]))
        for r in rules:
            sim[r] = min(sim[r], simulated_seconds(cfgs[r]))
    params = FlatModel.build(cfgs[rules[0]]).numel
    print(f"model {args.model} ({params} parameters), batch {args.batch}, {args.steps} gradient steps, "
          f"{args.workers} simulated workers, best of {args.repeats}")
    print(f"plain SGD: {base / args.steps * 1e3:.2f} ms/step")
    worst = 0.0
    for r in rules:
        ratio = sim[r] / base
        worst = max(worst, ratio)
        print(f"simulate {r:<10} {sim[r] / args.steps * 1e3:.2f} ms/step  ratio {ratio:.3f}")
    print(f"worst ratio {worst:.3f} (target <= {args.target})")
    return 0 if worst <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
