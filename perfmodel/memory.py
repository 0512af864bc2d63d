"""Memory per GPU of data-parallel training: what must fit in one GPU's memory, in bytes.

With Psi parameters, per-GPU micro-batch b, W GPUs (ZeRO paper, Rajbhandari et al. SC20, sec. 3.1 and 5):
    precision fp32:   parameters 4 Psi, gradients 4 Psi
    precision mixed:  the sharded strategies (ZeRO, FSDP) as the ZeRO paper counts it: parameters 2 Psi
                      (fp16/bf16 working copy), gradients 2 Psi, plus a 4 Psi fp32 master copy counted with the
                      optimizer state; the replicated ones as PyTorch's native mixed precision (torch.autocast)
                      holds it: parameters 4 Psi (fp32) + 2 Psi (autocast's 16-bit copies of the weights,
                      cached in forward and saved for backward), gradients 4 Psi (fp32), no master copy
                      (AUTOCAST_BYTES; chosen on an H200 against the ZeRO form, docs/plan.md section 3.1)
    optimizer state:  sgd 0, momentum 4 Psi, adam 8 Psi (first and second moments, fp32)
                      (mixed precision with Adam: K = 12 bytes per parameter, the ZeRO paper's K)
    activations:      b x (bytes autograd saves per sample; data/presets/activations.json, halved for
                      mixed precision) + b x the largest saved tensor per sample (its gradient, which
                      backward allocates while it is still held)
    sharding (ZeRO stage s over W GPUs): s >= 1 divides the optimizer state by W, s >= 2 the gradients,
                      s = 3 (and FSDP FULL_SHARD) the parameters; stage 3 also holds two gathered tensors
                      (the one in use and the prefetched next), 2 x the largest tensor's parameter bytes
    buffers:          what the strategy's exchange allocates beside the gradients (``strategy_buffers``)
    temporaries:      the larger of two transient peaks, less the activations: in backward, the activations
                      plus one gradient of the largest tensor, computed before it is added into the kept
                      .grad; in Adam's step (torch's foreach implementation), one fp32 copy of the
                      (sharded) parameters for the denominator sqrt(v) + eps
    workspaces:       on an NVIDIA GPU, the cuBLAS workspaces PyTorch allocates through its caching allocator, one
                      per (cuBLAS handle, stream), and a training step uses two handles: the Python thread's in
                      forward, the autograd engine's device thread's in backward. Each is 32 MiB on compute
                      capability 9.x, 10.x and 12.x (Hopper, Blackwell), else 4096 KiB x 2 + 16 KiB x 8 = 8.125
                      MiB (PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize; cuBLASLt
                      shares them unless TORCH_CUBLASLT_UNIFIED_WORKSPACE=0); 0 on a CPU and where the GPU's
                      compute capability is unknown (AMD GPUs: hipBLAS's and hipBLASLt's are not modeled)
total = parameters + gradients + optimizer + activations + buffers + temporaries + workspaces. Not modeled: the
CUDA context (outside the allocator), cuDNN's workspaces (they grow with the batch), allocator fragmentation;
``fits`` compares with the GPU's memory (data/presets/gpu_memory.toml) times ``usable`` (0.9 by default,
leaving room for them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .compression import ternary_split
from .preset_toml import PresetError, read_toml
from .presets import capability_text, presets_dir
from .specs import TERNGRAD_LEVELS, TERNGRAD_PS, SpecError, Strategy, Workload
from .wire import level_bytes

OPTIMIZERS = ("sgd", "momentum", "adam")
PRECISIONS = ("fp32", "mixed")
#: optimizer state bytes per parameter (fp32 moments)
OPTIMIZER_BYTES = {"sgd": 0, "momentum": 4, "adam": 8}
#: (parameter, gradient, master-copy) bytes per parameter
PRECISION_BYTES = {"fp32": (4, 4, 0), "mixed": (2, 2, 4)}
#: the same under PyTorch's native mixed precision (torch.autocast): fp32 parameters and autocast's 16-bit
#: weight copies, fp32 gradients, no master copy; what "mixed" means for the replicated strategies
AUTOCAST_BYTES = (4 + 2, 4, 0)
#: share of a GPU's memory a plan may fill (the rest: CUDA context, workspaces, fragmentation)
USABLE = 0.9
SHARDING = {"zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}
_WIRE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
#: bytes of one cuBLAS workspace PyTorch allocates, by compute-capability major (CublasHandlePool.cpp)
CUBLAS_WORKSPACE = {9: 4096 * 8 * 1024, 10: 4096 * 8 * 1024, 12: 4096 * 8 * 1024}
CUBLAS_WORKSPACE_DEFAULT = 4096 * 1024 * 2 + 16 * 1024 * 8
#: cuBLAS handles a training step uses: the forward's (Python thread) and backward's (autograd's device thread)
STEP_BLAS_HANDLES = 2
#: the components of a MemoryEstimate, in the order they are printed
PARTS = ("parameters", "gradients", "optimizer", "activations", "buffers", "temporaries", "workspaces")


@dataclass(frozen=True)
class Activations:
    """Activation memory of one model: bytes autograd saves per sample (fp32), the largest saved tensor
    per sample, bytes that do not grow with the batch, where the figures come from, and (CNNs) the per-sample
    bytes backward holds at its layer-by-layer peak."""

    model: str
    bytes_per_sample: float
    output_bytes_per_sample: float
    fixed_bytes: float
    source: str
    peak_bytes_per_sample: float | None = None  # backward's layer-by-layer peak, where the inventory has it

    def __post_init__(self) -> None:
        for name in ("bytes_per_sample", "output_bytes_per_sample", "peak_bytes_per_sample"):
            v = getattr(self, name)
            if v is None and name == "peak_bytes_per_sample":
                continue
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise SpecError(f"activations of {self.model}: {name} must be a number >= 0, got {v!r}")


def load_activations(model: str, root: Path | None = None) -> Activations | None:
    """The activation inventory of library model ``model`` (data/presets/activations.json); None if absent."""
    path = (root or presets_dir()) / "activations.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise PresetError(f"{path} is malformed: {e}") from None
    rec = data.get(model)
    if rec is None:
        return None
    try:
        peak = rec.get("peak_bytes_per_sample")
        return Activations(model, float(rec["bytes_per_sample"]), float(rec["output_bytes_per_sample"]),
                           float(rec.get("fixed_bytes", 0.0)), str(rec.get("source", "")),
                           None if peak is None else float(peak))
    except (KeyError, TypeError, ValueError) as e:
        raise PresetError(f"{path} [{model}]: {e}") from None


def gpu_memory_bytes(gpu: str, root: Path | None = None) -> tuple[float, str] | None:
    """(bytes of memory, source) of GPU preset ``gpu`` (data/presets/gpu_memory.toml); None if unknown."""
    table = read_toml((root or presets_dir()) / "gpu_memory.toml")
    rec = table.get(gpu)
    if rec is None:
        return None
    v = rec.get("memory_bytes")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise PresetError(f"gpu_memory.toml [{gpu}]: memory_bytes must be a number > 0, got {v!r}")
    return float(v), str(rec.get("source", ""))


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU, each array aligned with ``gpus``."""

    gpus: np.ndarray
    parameters: np.ndarray
    gradients: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray
    buffers: np.ndarray
    temporaries: np.ndarray
    workspaces: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return sum((getattr(self, k) for k in PARTS[1:]), self.parameters)

    def parts(self, i: int) -> dict[str, float]:
        """The components at the i-th GPU count, bytes."""
        return {k: float(getattr(self, k)[i]) for k in PARTS} | {"total": float(self.total[i])}



def gpu_capability(gpu: str, root: Path | None = None) -> str | None:
    """The CUDA compute capability ("9.0") of GPU preset ``gpu`` (gpu_memory.toml); None if unknown or not NVIDIA."""
    rec = read_toml((root or presets_dir()) / "gpu_memory.toml").get(gpu) or {}
    cap = rec.get("compute_capability")
    return None if cap is None else capability_text(cap, f"gpu_memory.toml [{gpu}]")


def blas_workspace_bytes(capability: str | None) -> float:
    """Bytes of the cuBLAS workspaces a PyTorch training step holds on a GPU of compute ``capability``
    ("9.0"): STEP_BLAS_HANDLES of them, 32 MiB each on 9.x, 10.x, 12.x, 8.125 MiB on the others; 0 when None
    (a CPU, or a GPU of unknown capability)."""
    if capability is None:
        return 0.0
    major = int(capability.split(".")[0])
    return float(STEP_BLAS_HANDLES * CUBLAS_WORKSPACE.get(major, CUBLAS_WORKSPACE_DEFAULT))


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SpecError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def model_state_bytes(parameters: int, gpus, *, optimizer: str = "sgd", precision: str = "fp32",
                      stage: int = 0, autocast: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parameter, gradient, optimizer-state) bytes per GPU for ZeRO ``stage`` (0: plain data parallel);
    ``autocast``: mixed precision is PyTorch's native form (AUTOCAST_BYTES), not the ZeRO paper's."""
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("precision", precision, PRECISIONS)
    if stage not in (0, 1, 2, 3):
        raise SpecError(f"ZeRO stage must be 0..3, got {stage!r}")
    w = np.asarray(gpus, dtype=float)
    p_b, g_b, master = AUTOCAST_BYTES if autocast and precision == "mixed" else PRECISION_BYTES[precision]
    psi = float(parameters)
    params = np.full_like(w, p_b * psi) / (w if stage >= 3 else 1.0)
    grads = np.full_like(w, g_b * psi) / (w if stage >= 2 else 1.0)
    opt = np.full_like(w, (OPTIMIZER_BYTES[optimizer] + master) * psi) / (w if stage >= 1 else 1.0)
    return params, grads, opt


def activation_bytes(acts: Activations, batch, precision: str = "fp32") -> np.ndarray:
    """Activation bytes at backward's peak for a micro-batch of ``batch`` samples (fp32 figures halved for mixed
    precision): the layer-by-layer peak where the inventory has one (what the layers up to k saved, k's output
    gradient and the buffer beside k's largest saved tensor, at the worst k), else every saved tensor plus the
    largest one's gradient buffer (an upper bound: it keeps every layer's saved tensors alive at once)."""
    scale = 0.5 if precision == "mixed" else 1.0
    b = np.asarray(batch, dtype=float)
    per_sample = (acts.peak_bytes_per_sample if acts.peak_bytes_per_sample is not None
                  else acts.bytes_per_sample + acts.output_bytes_per_sample)
    return scale * (b * per_sample + max(acts.fixed_bytes, 0.0))


def strategy_buffers(workload: Workload, strategy: Strategy, gpus, precision: str = "fp32") -> np.ndarray:
    """Bytes the strategy's exchange allocates beside the gradients, per GPU.

    ssgd: DDP's buckets, a copy of every gradient in the wire format (gradient_as_bucket_view False,
    its default: Strategy.bucket_copies > 0; none when the gradients are views into the buckets); daso:
    the same for its node-local DDP, plus the global sync's send copy of the parameters (bf16 when
    blocking, fp32 otherwise); terngrad: the int8 codes of the ternarized tensors, their 2-bit packing,
    and the exchange's receive buffer (levels: the summed levels at 1 or 2
    bytes per element; ps: the shards' codes and sums; allgather: W packed copies); sync-ps, byteps,
    asgd: one gradient-sized push buffer in the wire format (fp32 for asgd); zero1/zero2: two
    reduce-scatter buckets (one being reduced, one filling) of bucket_mb MiB, zero3/fsdp: the same plus
    the flat gathered-parameter buffer counted in ``memory_per_gpu``.
    """
    w = np.asarray(gpus, dtype=float)
    psi = float(workload.parameters)
    name = strategy.name
    # mixed precision: the sharded strategies reduce 16-bit gradients; the replicated ones' are fp32 (autocast)
    wire = 2 if precision == "mixed" and strategy.wire == "fp32" and name in SHARDING else _WIRE_BYTES[strategy.wire]
    if name == "ssgd":
        out = np.full_like(w, wire * psi if strategy.bucket_copies else 0.0)
    elif name == "daso":
        buckets = 4 * psi if strategy.bucket_copies else 0.0
        out = np.full_like(w, buckets + (2 if strategy.daso_W == 0 else 4) * psi)
    elif name == "terngrad":
        split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
        n = float(split.ternary_elems)
        codes = n + n / 4.0
        if strategy.terngrad_exchange == TERNGRAD_LEVELS:
            recv = n * level_bytes(w)
        elif strategy.terngrad_exchange == TERNGRAD_PS:
            recv = 2.0 * n / 4.0 + n / np.maximum(w, 1.0)
        else:
            recv = w * n / 4.0
        out = codes + recv
    elif name in ("sync-ps", "byteps"):
        out = np.full_like(w, wire * psi)
    elif name == "asgd":
        out = np.full_like(w, 4.0 * psi)
    elif name in SHARDING:
        out = np.full_like(w, min(2 * strategy.bucket_mb * 2**20, 2 * wire * psi))
    else:  # pragma: no cover - every Strategy name is handled above
        raise SpecError(f"no buffer model for strategy {name!r}")
    return np.where(w > 1, out, 0.0)


def memory_per_gpu(workload: Workload, acts: Activations, strategy: Strategy, gpus, batch, *,
                   optimizer: str = "sgd", precision: str = "fp32", workspace_bytes: float = 0.0) -> MemoryEstimate:
    """The memory estimate of one strategy at every GPU count (bytes per GPU); ``batch`` is the per-GPU
    micro-batch (scalar or aligned with ``gpus``); ``workspace_bytes`` the libraries' fixed workspaces per GPU
    (``blas_workspace_bytes``; 0 on a CPU)."""
    w = np.asarray(gpus, dtype=float).ravel()
    stage = SHARDING.get(strategy.name, 0)
    params, grads, opt = model_state_bytes(workload.parameters, w, optimizer=optimizer, precision=precision,
                                           stage=stage, autocast=stage == 0)
    acts_b = activation_bytes(acts, np.broadcast_to(np.asarray(batch, dtype=float), w.shape), precision)
    buffers = strategy_buffers(workload, strategy, w, precision)
    largest = float(max(workload.tensor_sizes))
    if stage == 3:  # the gathered tensor in use and the prefetched next one
        params = params + np.where(w > 1, 2.0 * PRECISION_BYTES[precision][0] * largest, 0.0)
    backward_peak = acts_b + PRECISION_BYTES[precision][1] * largest
    step_peak = (4.0 * workload.parameters / (w if stage >= 1 else 1.0)) if optimizer == "adam" else 0.0
    temporaries = np.maximum(backward_peak, step_peak) - acts_b
    return MemoryEstimate(w.astype(int), params, grads, opt, acts_b, buffers, temporaries,
                          np.full_like(w, float(workspace_bytes)))


def fits(total_bytes, capacity_bytes: float, usable: float = USABLE) -> np.ndarray:
    """Whether ``total_bytes`` fits in ``usable`` of a GPU of ``capacity_bytes``."""
    return np.asarray(total_bytes, dtype=float) <= usable * float(capacity_bytes)


def format_bytes(n: float) -> str:
    """Bytes as GiB/MiB text: 17179869184 -> "16.0 GiB"."""
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.0f} MiB"


def default_optimizer(model: str) -> str:
    """Adam for transformers (BERT, GPT-2 and ViT train with Adam/AdamW), momentum SGD otherwise."""
    return "adam" if model.startswith(("bert", "gpt2", "vit")) else "momentum"


def cluster_memory_bytes(cluster) -> float | None:
    """Bytes of memory per GPU of ``cluster``: its own figure (an inline [gpu] table's memory_bytes,
    --gpu-memory-gb), else gpu_memory.toml's for its GPU; None when neither has one."""
    if cluster.gpu_memory_bytes:
        return float(cluster.gpu_memory_bytes)
    known = gpu_memory_bytes(cluster.gpu) if cluster.gpu else None
    return None if known is None else known[0]


def cluster_workspace_bytes(cluster) -> float:
    """The cuBLAS workspaces per GPU of ``cluster``'s GPU (``blas_workspace_bytes``): of the compute
    capability the cluster's GPU was described with, else of its preset's; 0 where neither is known."""
    cap = cluster.gpu_compute_capability or (gpu_capability(cluster.gpu) if cluster.gpu else None)
    return blas_workspace_bytes(cap)


def with_memory(records: list[dict], notes: list[str], workload: Workload, cluster, strategies: list[Strategy],
                precision: str = "fp32") -> tuple[list[dict], list[str]]:
    """`perfmodel predict`'s records with memory_per_gpu_bytes and fits (the model's default optimizer,
    ``default_optimizer``), and one note per strategy whose rows do not fit; unchanged where the model has
    no activation sizes or the GPU no memory size."""
    acts = load_activations(workload.name)
    cap = cluster_memory_bytes(cluster)
    if acts is None or cap is None:
        return records, notes
    optimizer = default_optimizer(workload.name)
    workspace = cluster_workspace_bytes(cluster)
    by_name = {s.name: s for s in strategies}
    notes = list(notes)
    for name, strategy in by_name.items():
        rows = [r for r in records if r["strategy"] == name]
        if not rows:
            continue
        mem = memory_per_gpu(workload, acts, strategy, [r["gpus"] for r in rows], [r["batch_per_gpu"] for r in rows],
                             optimizer=optimizer, precision=precision, workspace_bytes=workspace)
        ok = fits(mem.total, cap)
        for r, total, f in zip(rows, mem.total.tolist(), ok.tolist()):
            r["memory_per_gpu_bytes"], r["fits"] = total, f
        if not ok.all():
            bad = [r["gpus"] for r, f in zip(rows, ok) if not f]
            at = f"{bad[0]}" if len(bad) == 1 else f"{bad[0]}-{bad[-1]}"
            notes.append(f"{name} does not fit in memory at {at} GPUs: {format_bytes(mem.total.max())} "
                         f"per GPU ({optimizer}, {precision}) of the {cluster.gpu}'s {format_bytes(cap)}")
    return records, notes
