"""perfmodel.memory's estimate against torch's measured peak memory of one training step, per model and batch.

CPU: torch's memory profiler (perfmodel.lab.profile.memory_peak); CUDA: torch.cuda.max_memory_allocated.
Models: the papers' networks of trainers.models, and torchvision's where it imports (its constructors
only; put a torchvision wheel's directory on PYTHONPATH). Prints one row per model x batch x optimizer
and, last, the largest |error|.
--precision mixed runs forward under torch.autocast (bfloat16) against perfmodel.memory's "mixed" estimate;
--estimates-only prints the estimates without torch (for freezing them before a run; --capability 9.0
counts the cuBLAS workspaces of such a GPU).
Usage: python benchmarks/memory_check.py [--device cpu|cuda] [--precision fp32|mixed] [--models lenet:32,128 ...]
"""

from __future__ import annotations

import argparse
import json
import time

from perfmodel.memory import PRECISIONS, load_activations
from perfmodel.lab.profile.memory_peak import check, estimated_bytes

DEFAULT = ["lenet:32,128", "cifarnet:32,128", "resnet20:16,64", "wrn-16-4:16,64", "alexnet:4,16", "googlenet:2,8",
           "vgg-a:2,8"]


def cases(models: list[str], optimizers: str):
    """(name, activation inventory, batch, optimizer) for each NAME:B1,B2 of ``models`` and each optimizer;
    a model's inventory read once."""
    for spec in models:
        name, _, batches = spec.partition(":")
        acts = load_activations(name)
        for b in (int(x) for x in batches.split(",")):
            for opt in optimizers.split(","):
                yield name, acts, b, opt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--models", nargs="*", default=DEFAULT, help="NAME:B1,B2 ...")
    ap.add_argument("--optimizers", default="momentum,adam")
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS)
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--estimates-only", action="store_true", help="print perfmodel.memory's estimates only")
    ap.add_argument("--capability", default=None, help="with --estimates-only: the GPU's compute capability")
    args = ap.parse_args()
    if args.estimates_only:
        print(f"{'model':14s} {'batch':>5s} {'optimizer':9s} {'precision':9s} {'estimate MiB':>12s}")
        for name, acts, b, opt in cases(args.models, args.optimizers):
            est = estimated_bytes(name, acts, b, opt, args.capability, args.precision)
            print(f"{name:14s} {b:5d} {opt:9s} {args.precision:9s} {est / 2**20:12.1f}")
        return
    t0 = time.perf_counter()
    rows = []
    print(f"{'model':20s} {'batch':>5s} {'optimizer':9s} {'measured MiB':>12s} {'estimate MiB':>12s} {'error':>7s}")
    for name, acts, b, opt in cases(args.models, args.optimizers):
        try:
            c = check(name, acts, b, opt, args.device, args.precision)
        except (ImportError, AttributeError, RuntimeError) as e:
            print(f"{name:20s} {b:5d} {opt:9s} not measured: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        rows.append({"model": name, "batch": b, "optimizer": opt, "precision": args.precision,
                     "device": args.device,
                     "measured_bytes": c.measured_bytes, "estimated_bytes": c.estimated_bytes,
                     "error": c.error})
        print(f"{name:20s} {b:5d} {opt:9s} {c.measured_bytes / 2**20:12.1f} {c.estimated_bytes / 2**20:12.1f} "
              f"{c.error:+7.1%}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    worst = max((abs(r["error"]) for r in rows), default=float("nan"))
    print(f"{len(rows)} checks on {args.device}, largest |error| {worst:.1%}, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
