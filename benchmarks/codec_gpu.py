"""TernGrad's codec on a GPU: the memory-traffic rates perfmodel charges, against kernels that do each phase.

perfmodel.codec_memory charges each codec phase at eta x B / (bytes per element), eta = 0.81, B the GPU's
memory bandwidth, the bytes those of fused kernels. This script runs, on one GPU, kernels doing exactly the
work those byte counts describe, on a flat float32 gradient of N elements with one scaler:

    encode levels    scaler (clip x std: one reduction pass over g), then ternarize to int8 codes
    encode packed    the same scaler pass, then ternarize and pack four 2-bit codes per byte
    decode           one received copy: sum (int32) += its 2-bit codes (ps, allgather; levels has none)
    convert levels   int8 sum -> float32, then divide by p in place (two kernels, as the model counts)
    convert packed   int32 sum -> float32, then divide in place

each twice: ``compiled`` (torch.compile: Inductor fuses each phase's element-wise work into a kernel, the
random stream drawn in the kernel) and ``eager`` (one kernel per torch operation, as an unfused GPU codec
written in PyTorch runs). Per phase it prints the predicted and measured seconds, their ratio, and the
achieved share of B counted with the model's bytes (medians of CUDA-event timings after warm-up).

    python benchmarks/codec_gpu.py --freeze                       # the predictions only (no torch)
    python benchmarks/codec_gpu.py [--elements 25557032,100000000] [--memory-Bps 4.8e12] [--device cuda]

--device cpu runs the kernels on the CPU (a check that they run; the ratios mean nothing there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfmodel.codec_memory import CONVERT_BYTES, DECODE_BYTES, ENCODE_BYTES, MEMORY_EFFICIENCY  # noqa: E402
from perfmodel.specs import TERNGRAD_LEVELS, TERNGRAD_PS  # noqa: E402

RESNET50_ELEMENTS = 25_557_032  # data/presets/models: ResNet-50's parameters
H200_MEMORY_BPS = 4.8e12  # data/presets/gpus.toml [h200]
CLIP = 2.5
WORKERS = 8  # p: the sum divided in convert; decode adds one copy

#: phase -> the model's bytes per element
PHASES = {
    "encode levels": ENCODE_BYTES[TERNGRAD_LEVELS],
    "encode packed": ENCODE_BYTES[TERNGRAD_PS],
    "decode": DECODE_BYTES[TERNGRAD_PS],
    "convert levels": CONVERT_BYTES[TERNGRAD_LEVELS],
    "convert packed": CONVERT_BYTES[TERNGRAD_PS],
}

#: bytes per element each part of encode moves (ternarize's draws are made in the kernel; levels' int8 codes)
PART_BYTES = {"scaler": 4.0, "ternarize": 5.0, "draws": 4.0, "ternarize from draws": 9.0}


def predicted_seconds(phase: str, elements: int, memory_Bps: float) -> float:
    """perfmodel's charge for ``phase`` on ``elements`` elements: elements x bytes / (eta x B)."""
    return elements * PHASES[phase] / (MEMORY_EFFICIENCY * memory_Bps)


def kernels():
    """The phases as torch functions (each returns its output; inputs never change)."""
    import torch

    shifts = (0, 2, 4, 6)

    def scale(g):  # clip x population std: one pass of sums
        n = g.numel()
        mean = g.sum() / n
        return CLIP * torch.sqrt((g * g).sum() / n - mean * mean)

    def ternary(g, s):  # int8 codes in {-1, 0, 1}: sign(g) x Bernoulli(min(|g| / s, 1))
        keep = torch.rand_like(g) * s < g.abs()
        return (torch.sign(g) * keep).to(torch.int8)

    def encode_levels(g):
        return ternary(g, scale(g))

    def encode_packed(g):
        c = (ternary(g, scale(g)) + 1).to(torch.uint8).view(-1, 4)
        return c[:, 0] | (c[:, 1] << 2) | (c[:, 2] << 4) | (c[:, 3] << 6)

    def decode(packed, total):
        codes = torch.stack([(packed >> k) & 3 for k in shifts], dim=1).reshape(-1)
        return total.add_(codes.to(torch.int32) - 1)

    def to_float(total):
        return total.to(torch.float32)

    def divide(x):
        return x.div_(WORKERS)

    def draws(g):  # the uniforms alone (written out)
        return torch.rand_like(g)

    def ternary_from(g, u, s):  # ternarize with the uniforms read from memory
        return (torch.sign(g) * (u * s < g.abs())).to(torch.int8)

    return {"encode": (encode_levels, encode_packed), "decode": decode, "convert": (to_float, divide),
            "parts": {"scaler": scale, "ternarize": ternary, "draws": draws, "ternarize from draws": ternary_from}}


def breakdown(elements: int, device: str, repeats: int) -> dict[str, float]:
    """Median seconds of encode's parts, compiled: the scaler's pass, the ternarization with its draws,
    the draws alone, and the ternarization reading given draws (a diagnostic; not a model phase)."""
    import torch

    parts = {name: torch.compile(f, fullgraph=True) for name, f in kernels()["parts"].items()}
    g = torch.randn(elements, generator=torch.Generator(device=device).manual_seed(0), device=device)
    s = parts["scaler"](g)
    u = parts["draws"](g)
    return {"scaler": _time(lambda: parts["scaler"](g), device, repeats),
            "ternarize": _time(lambda: parts["ternarize"](g, s), device, repeats),
            "draws": _time(lambda: parts["draws"](g), device, repeats),
            "ternarize from draws": _time(lambda: parts["ternarize from draws"](g, u, s), device, repeats)}


def _time(fn, device: str, repeats: int) -> float:
    import time

    import torch

    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(elements: int, device: str, compiled: bool, repeats: int) -> dict[str, float]:
    """Median seconds per phase on ``elements`` elements (a multiple of 4)."""
    import torch

    k = kernels()
    wrap = (lambda f: torch.compile(f, fullgraph=True)) if compiled else (lambda f: f)
    enc_levels, enc_packed = (wrap(f) for f in k["encode"])
    dec, (to_float, divide) = wrap(k["decode"]), (wrap(f) for f in k["convert"])
    gen = torch.Generator(device=device).manual_seed(0)
    g = torch.randn(elements, generator=gen, device=device)
    packed = enc_packed(g)
    total = torch.zeros(elements, dtype=torch.int32, device=device)
    small = torch.zeros(elements, dtype=torch.int8, device=device)
    return {
        "encode levels": _time(lambda: enc_levels(g), device, repeats),
        "encode packed": _time(lambda: enc_packed(g), device, repeats),
        "decode": _time(lambda: dec(packed, total), device, repeats),
        "convert levels": _time(lambda: divide(to_float(small)), device, repeats),
        "convert packed": _time(lambda: divide(to_float(total)), device, repeats),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--elements", default=f"{RESNET50_ELEMENTS},100000000",
                   help="comma-separated gradient sizes (elements; rounded down to a multiple of 4)")
    p.add_argument("--memory-Bps", type=float, default=H200_MEMORY_BPS, help="the GPU's memory bandwidth, bytes/s")
    p.add_argument("--device", default="cuda")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--freeze", action="store_true", help="print the predictions only")
    p.add_argument("--breakdown", action="store_true", help="time encode's parts (compiled) instead of the phases")
    args = p.parse_args(argv)
    sizes = [int(x) // 4 * 4 for x in args.elements.split(",")]
    for n in sizes:
        pred = {ph: predicted_seconds(ph, n, args.memory_Bps) for ph in PHASES}
        if args.freeze:
            print(json.dumps({"elements": n, "memory_Bps": args.memory_Bps, "efficiency": MEMORY_EFFICIENCY,
                              "predicted_s": pred}))
            continue
        import torch

        if args.device == "cuda" and not torch.cuda.is_available():
            print("codec_gpu: no CUDA GPU here; nothing to measure")
            return 0
        if args.breakdown:
            for part, t in breakdown(n, args.device, args.repeats).items():
                print(json.dumps({"elements": n, "part": part, "measured_s": t,
                                  "share_of_B_at_its_bytes": n * PART_BYTES[part] / t / args.memory_Bps}))
            continue
        for compiled in (True, False):
            got = measure(n, args.device, compiled, args.repeats)
            for ph in PHASES:
                print(json.dumps({"elements": n, "phase": ph, "kernels": "compiled" if compiled else "eager",
                                  "predicted_s": pred[ph], "measured_s": got[ph],
                                  "measured_over_predicted": got[ph] / pred[ph],
                                  "achieved_share_of_B": n * PHASES[ph] / got[ph] / args.memory_Bps}))
    if not args.freeze and args.device == "cuda":
        print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
