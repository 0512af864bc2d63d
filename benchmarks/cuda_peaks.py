"""torch.cuda.max_memory_allocated of one training step (after a warm-up step) of the papers' networks
(trainers.models), standalone: needs only torch and trainers/, so it runs on a machine that has a CUDA torch
but not this project's perfmodel. Writes {"capability": "9.0", "peaks": [[model, batch, optimizer, peak bytes],
...]} to the JSON path given. The same step as perfmodel.lab.profile.memory_peak (SGD momentum 0.9 or Adam,
zero_grad(set_to_none=False)). Compare with the estimate, which counts the cuBLAS workspaces of the file's compute
capability (or --capability's, for a file without one):
    python benchmarks/cuda_peaks.py --compare results/plan/memory_peaks_h200.json --capability 9.0
Usage: python benchmarks/cuda_peaks.py OUT.json | --compare IN.json [--capability X.Y]
"""

from __future__ import annotations

import json
import sys

CASES = [("resnet50", (32, 128)), ("vgg-a", (16, 64)), ("alexnet", (64, 256)), ("googlenet", (32, 128)),
         ("resnet20", (128, 512)), ("wrn-16-4", (64, 256)), ("lenet", (128, 1024))]


def measure(path: str) -> None:
    import torch

    from trainers import models as tm

    res = []
    for name, batches in CASES:
        for b in batches:
            for opt in ("momentum", "adam"):
                torch.manual_seed(0)
                m = tm.build_model(name).cuda().train()
                p = list(m.parameters())
                o = torch.optim.Adam(p, lr=1e-3) if opt == "adam" else torch.optim.SGD(p, lr=.01, momentum=.9)
                x = torch.randn(b, *tm.input_shape(name), device="cuda")
                y = torch.randint(0, tm.MODELS[name].num_classes, (b,), device="cuda")

                def step():
                    o.zero_grad(set_to_none=False)
                    out = m(x)
                    out = out[0] if isinstance(out, tuple) else out
                    torch.nn.functional.cross_entropy(out, y).backward()
                    o.step()

                step()
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                step()
                torch.cuda.synchronize()
                res.append([name, b, opt, torch.cuda.max_memory_allocated()])
                print(res[-1], flush=True)
                del step, m, o, x, y, p
                torch.cuda.empty_cache()
    major, minor = torch.cuda.get_device_capability()
    with open(path, "w") as f:
        json.dump({"capability": f"{major}.{minor}", "torch": torch.__version__,
                   "gpu": torch.cuda.get_device_name(), "peaks": res}, f)


def compare(path: str, capability: str | None = None) -> None:
    from perfmodel.memory import load_activations
    from perfmodel.lab.profile.memory_peak import estimated_bytes

    with open(path) as f:
        data = json.load(f)
    rows = data["peaks"] if isinstance(data, dict) else data
    capability = capability or (data.get("capability") if isinstance(data, dict) else None)
    print(f"estimates with the cuBLAS workspaces of compute capability {capability}")
    for name, b, opt, meas in rows:
        est = estimated_bytes(name, load_activations(name), b, opt, capability)
        print(f"| {name} | {b} | {opt} | {meas / 2**20:.1f} | {est / 2**20:.1f} | {est / meas - 1:+.1%} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        compare(sys.argv[2], sys.argv[4] if sys.argv[3:4] == ["--capability"] else None)
    else:
        measure(sys.argv[1])
