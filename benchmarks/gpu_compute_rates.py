"""Measured single-GPU training rates of ResNet-50 to set against the compute the model assumes.

Two ways, one process, printed as one JSON object per line (and written to --json):
1. ``profile``: perfmodel.lab.profile.compute.profile_compute on trainers.models' resnet50, the step
   `perfmodel profile --device cuda` times (SGD with momentum, fp32 with the trainers' numerics: TF32 off,
   cuDNN deterministic without autotuning), at each --batch; images/s = batch / median step.
2. ``torchvision``: torchvision's resnet50 as the published PyTorch benchmarks run it (channels_last,
   cuDNN autotuning on, synthetic data, SGD with momentum) at the largest --batch, in fp32 (TF32 off),
   TF32, and mixed precision (autocast fp16 with a gradient scaler); CUDA events around --steps steps
   after --warmup, images/s = batch x steps / elapsed.

    python benchmarks/gpu_compute_rates.py [--device cuda] [--batch 64,128,256] [--json FILE]

On a machine without a GPU it runs the same on the CPU with tiny batches when given --device cpu (a
check of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import time


def profile_rates(batches: list[int], device: str, warmup: int, repeats: int) -> list[dict]:
    """The profile's step (perfmodel profile's compute) of trainers.models' resnet50 at each batch."""
    from perfmodel.lab.profile.compute import load_workload_model, profile_compute

    model, info = load_workload_model("resnet50")
    prof = profile_compute(model, info.input_shape, info.num_classes, batches, warmup=warmup, repeats=repeats,
                           device=device)
    return [{"way": "profile", "model": "trainers.models resnet50", "precision": "fp32 (TF32 off, deterministic)",
             "batch": r.batch, "step_s": r.total.median_s, "images_per_s": r.batch / r.total.median_s,
             "device": prof.device_name} for r in prof.rows]


def torchvision_rate(batch: int, precision: str, device: str, warmup: int, steps: int) -> dict:
    """torchvision resnet50, channels_last, cuDNN autotuning, at ``precision`` fp32|tf32|amp."""
    import torch
    import torchvision

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=device)
    amp = precision == "amp" and device == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)

    def step():
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end) / 1e3
        name = torch.cuda.get_device_name()
    else:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        elapsed, name = time.perf_counter() - t0, "cpu"
    return {"way": "torchvision", "model": "torchvision resnet50 (channels_last, cudnn.benchmark)",
            "precision": precision, "batch": batch, "step_s": elapsed / steps, "images_per_s": batch * steps / elapsed,
            "device": name, "torch": torch.__version__, "torchvision": torchvision.__version__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", default="64,128,256")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    batches = [int(b) for b in args.batch.split(",")]
    rows = profile_rates(batches, args.device, warmup=3, repeats=max(3, args.steps // 3))
    for r in rows:
        print(json.dumps(r), flush=True)
    for precision in ("fp32", "tf32", "amp"):
        try:
            r = torchvision_rate(max(batches), precision, args.device, args.warmup, args.steps)
        except (ImportError, RuntimeError) as e:  # no torchvision, or one built for another torch
            r = {"way": "torchvision", "precision": precision, "error": f"{type(e).__name__}: {e}"[:300]}
        rows.append(r)
        print(json.dumps(r), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            f.write("\n".join(json.dumps(r) for r in rows) + "\n")


if __name__ == "__main__":
    main()
