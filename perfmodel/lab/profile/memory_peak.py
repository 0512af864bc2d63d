"""Measure a training step's peak memory on the CPU with torch's memory profiler, to check perfmodel.memory.

One process, one model (trainers.models, or torchvision's where importable), one optimizer: a warm-up step
(so the optimizer state exists, as in every later step), then one profiled step under
torch.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True); the peak is the largest
sum over torch's memory categories (parameters, gradients, optimizer state, activations, temporaries,
autograd detail, inputs) of torch.profiler._memory_profiler.MemoryProfileTimeline on the CPU device.
On a CUDA device the peak is torch.cuda.max_memory_allocated over the second step (the caching
allocator's live tensors, not its reserved pool). zero_grad(set_to_none=False) keeps the gradients
allocated between steps, as DDP's buckets do. Precision "mixed" runs forward and the loss under
torch.autocast in bfloat16 (PyTorch's native mixed precision: fp32 parameters, gradients and optimizer state),
which perfmodel.memory's "mixed" (fp16 working copy and gradients, an fp32 master copy) is checked against.
torch is imported inside the functions: perfmodel never imports it at import time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...library import load_model
from ...memory import PRECISIONS, Activations, blas_workspace_bytes, check_choice, memory_per_gpu
from ...presets import presets_dir
from ...specs import ComputeTime, Strategy, Workload


@dataclass(frozen=True)
class PeakCheck:
    """One model at one batch: torch's measured peak and perfmodel's estimate, bytes."""

    model: str
    batch: int
    optimizer: str
    measured_bytes: float
    estimated_bytes: float
    precision: str = "fp32"

    @property
    def error(self) -> float:
        """(estimate - measured) / measured."""
        return self.estimated_bytes / self.measured_bytes - 1.0


def build_torch_model(name: str):
    """(module, input shape, classes) from trainers.models, else torchvision (weights=None)."""
    from trainers import models as tm

    if name in tm.MODELS:
        return tm.build_model(name), tm.input_shape(name), tm.MODELS[name].num_classes
    models = _torchvision_models()  # ImportError where torchvision is absent
    ctor = name.replace("-", "_")
    return getattr(models, ctor)(weights=None), (3, 224, 224), 1000


def _torchvision_models():
    """torchvision.models; a wheel built for another torch fails to register its C++ operators at import,
    which the model constructors never use: import it without them (as data/presets/models/generate.py)."""
    import sys
    import types

    try:
        import torchvision  # noqa: F401
    except RuntimeError:
        for mod in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[mod]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
        import torchvision  # noqa: F401
    from torchvision import models

    return models


def training_step(name: str, batch: int, optimizer: str = "momentum", device: str = "cpu", precision: str = "fp32"):
    """A callable running one training step (forward, backward, optimizer step) of ``name`` at ``batch`` on
    ``device``, its model, optimizer and batch built once (seed 0); ``precision`` "mixed": forward and loss
    under torch.autocast in bfloat16."""
    import contextlib

    import torch

    check_choice("precision", precision, PRECISIONS)

    torch.manual_seed(0)
    model, shape, classes = build_torch_model(name)
    model.to(device).train()
    params = list(model.parameters())
    if optimizer == "adam":
        opt = torch.optim.Adam(params, lr=1e-3)
    else:
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9 if optimizer == "momentum" else 0.0)
    x = torch.randn(batch, *shape, device=device)
    y = torch.randint(0, classes, (batch,), device=device)

    def autocast():
        if precision == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)

    def step():
        opt.zero_grad(set_to_none=False)
        with autocast():
            out = model(x)
            if isinstance(out, tuple):  # inception-style auxiliary outputs
                out = out[0]
            loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()

    return step


def measured_peak_bytes(name: str, batch: int, optimizer: str = "momentum", device: str = "cpu",
                        precision: str = "fp32") -> float:
    """Peak bytes of one training step (forward, backward, optimizer step) of ``name`` on the CPU (torch's
    memory profiler) or on a CUDA device (torch.cuda.max_memory_allocated over the step)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler._memory_profiler import MemoryProfileTimeline

    step = training_step(name, batch, optimizer, device, precision)
    step()
    if device != "cpu":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return float(torch.cuda.max_memory_allocated())
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        step()
    timeline = MemoryProfileTimeline(prof._memory_profile())
    _, sizes = timeline._coalesce_timeline(torch.device("cpu"))
    return float(max(sum(s) for s in sizes))


def estimated_bytes(name: str, acts: Activations, batch: int, optimizer: str = "momentum",
                    capability: str | None = None, precision: str = "fp32") -> float:
    """perfmodel.memory's estimate for one process (no exchange buffers) on a CPU (``capability`` None) or on an
    NVIDIA GPU of compute ``capability`` ("9.0"), bytes."""
    lib = load_model(name, presets_dir())
    wl = Workload(name, lib.tensor_sizes, {"cpu": ComputeTime("linear", t1_s=1.0)})
    return float(memory_per_gpu(wl, acts, Strategy("ssgd"), [1], batch, optimizer=optimizer, precision=precision,
                                workspace_bytes=blas_workspace_bytes(capability)).total[0])


def device_capability(device: str) -> str | None:
    """The compute capability ("9.0") of a CUDA ``device``; None for the CPU or a ROCm build (torch.version.hip)."""
    if device == "cpu":
        return None
    import torch

    if torch.version.hip:
        return None
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    return f"{major}.{minor}"


def check(name: str, acts: Activations, batch: int, optimizer: str = "momentum", device: str = "cpu",
          precision: str = "fp32") -> PeakCheck:
    """Measured against estimated peak for one model and batch."""
    return PeakCheck(name, batch, optimizer, measured_peak_bytes(name, batch, optimizer, device, precision),
                     estimated_bytes(name, acts, batch, optimizer, device_capability(device), precision), precision)
