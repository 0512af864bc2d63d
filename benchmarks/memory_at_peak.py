"""What is alive at a CUDA training step's memory peak that the estimate does not count.

For each MODEL:BATCH, one warm-up step, then a second step under torch.cuda.memory._record_memory_history
(C++ and Python stacks); from the allocator's trace, the step's peak and the blocks allocated during the step
that are alive at it, largest first, each with the operators on its stack (the first frames naming an ATen
operator, cuDNN, or a line of trainers/models.py). Blocks alive before the step (parameters, gradients,
optimizer state, the cuBLAS workspaces) are summed apart. Prints one JSON object per case, beside
perfmodel.memory's parts. Needs a CUDA GPU (prints one line and exits 0 without one).

    python benchmarks/memory_at_peak.py resnet20:256 cifarnet:256 [--top 12] [--precision mixed]
"""

from __future__ import annotations

import argparse
import json
import re

OPS = re.compile(r"at::native::\w+|at::_ops::\w+|cudnn\w*|torch::autograd::generated::\w+")


def _where(frames: list[dict]) -> list[str]:
    """The first few frames that say which operator (or which model line) allocated a block."""
    out = []
    for f in frames:
        name, file = f.get("name", ""), f.get("filename", "")
        m = OPS.search(name)
        if m and m.group(0) not in out:
            out.append(m.group(0))
        elif file.endswith("models.py"):
            out.append(f"{file.rsplit('/', 1)[-1]}:{f.get('line')}")
        if len(out) == 4:
            break
    return out


def case(name: str, batch: int, top: int, precision: str = "fp32") -> dict:
    import torch

    from perfmodel.lab.profile.memory_peak import device_capability, estimated_bytes, training_step
    from perfmodel.memory import load_activations

    step = training_step(name, batch, "momentum", "cuda", precision)
    step()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="all")
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][torch.cuda.current_device()]
    live: dict[int, dict] = {}
    cur, best, at_best = 0, 0, {}
    for ev in trace:
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
            cur += ev["size"]
            if cur > best:
                best, at_best = cur, dict(live)
        elif ev["action"] == "free_completed" and ev["addr"] in live:
            cur -= live.pop(ev["addr"])["size"]
    blocks = sorted(at_best.values(), key=lambda e: -e["size"])
    est = estimated_bytes(name, load_activations(name), batch, "momentum", device_capability("cuda"), precision)
    return {"model": name, "batch": batch, "precision": precision, "peak_bytes": peak, "alive_before_step_bytes": before,
            "step_allocations_at_peak_bytes": best, "estimate_bytes": est,
            "largest_at_peak": [{"MiB": round(b["size"] / 2**20, 2), "where": _where(b.get("frames", []))}
                                for b in blocks[:top]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", help="MODEL:BATCH")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--precision", default="fp32", choices=("fp32", "mixed"), help="mixed: torch.autocast, bf16")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("memory_at_peak: no CUDA GPU here; nothing to measure")
        return
    for spec in args.cases:
        name, _, b = spec.partition(":")
        print(json.dumps(case(name, int(b), args.top, args.precision)), flush=True)


if __name__ == "__main__":
    main()
