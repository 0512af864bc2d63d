"""Compute time when only a GPU and a model are known: a measured rate, else the FLOP ESTIMATE.

The rule (docs/compute.md):
  1. a published single-GPU rate of the library model on that GPU at that precision
     (data/presets/measured_rates.toml, built from data/published/runs.csv by
     ``python -m reproduce.compute_rates --write``): t(b) = b / rate, seconds per mini-batch;
  2. else the ESTIMATE: the step's arithmetic at an achieved share of the GPU's peak plus its
     activation traffic at the GPU's memory bandwidth (convolutions and matmuls are bound by the
     first, normalization, activation and element-wise kernels by the second):
         t(b) = b x (3 F / (P_p x f_p) + k x A x e_p / B)                              seconds
     F forward FLOPs per sample (model library), 3 F the training FLOPs (forward + backward),
     P_p the GPU's peak at precision p (fp32: peak_flops, tf32: tf32_flops, mixed: tensor_flops),
     f_p the achieved share of it; A the activation elements one sample produces in the forward pass
     (``activation_elements``: each layer's output channels times the positions its weight is applied
     at), e_p the bytes of one (4 for fp32 and tf32, 2 for mixed precision), k the times each crosses
     GPU memory in a training step, B the GPU's memory bandwidth (bytes/s). f_p and k come from
     compute_estimate.toml, fitted on the development half's published single-GPU rates
     (``python -m reproduce.compute_rates``); its median error on both halves is stated there and in
     every ESTIMATE's provenance. A GPU without a memory bandwidth gets the arithmetic term alone.
A TF32 or mixed figure is never scaled by an fp32 ratio: a measured rate moves to another GPU by the
ratio of the ESTIMATE's times at the precision it was measured in (``time_ratio``).

Warnings (one line each, ``compute_warnings``): two compute sources for the same GPU and model differ
by more than DISAGREE (1.5x); or the model is too small for the estimate to mean anything: the kernel
launches alone (KERNELS_PER_TENSOR per parameter tensor at LAUNCH_S each) take more than
LAUNCH_SHARE of the estimated step, so the step is bound by launches, not FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .preset_toml import PresetError, read_toml
from .presets import GpuPreset, presets_dir
from .specs import SpecError

PRECISIONS = ("fp32", "tf32", "mixed")
PEAK_FIELD = {"fp32": "peak_flops", "tf32": "tf32_flops", "mixed": "tensor_flops"}
ELEMENT_BYTES = {"fp32": 4.0, "tf32": 4.0, "mixed": 2.0}
# runs.csv precision column -> the estimate's precision
RUNS_PRECISION = {"fp32": "fp32", "tf32": "tf32", "fp16": "mixed", "amp": "mixed"}
DISAGREE = 1.5
# A kernel launched back to back in a stream costs about 3.8 us of GPU time when the kernel itself is
# short (A. Gray, "Getting Started with CUDA Graphs", NVIDIA Technical Blog, 2019: 3.8 us per kernel
# without synchronization for a ~2.9 us kernel; figure not re-verified in this session).
LAUNCH_S = 3.8e-6
KERNELS_PER_TENSOR = 3  # forward, gradient of the input, gradient of the weight
LAUNCH_SHARE = 0.1


@dataclass(frozen=True)
class EstimateRule:
    """The ESTIMATE's constants (compute_estimate.toml): training FLOPs factor, achieved share of each
    precision's peak, memory crossings per activation element per training step, the stated error."""

    factor: float
    fraction: dict[str, float]
    crossings: float
    error_text: str


@dataclass(frozen=True)
class MeasuredRate:
    """A published single-GPU training rate (samples/s at ``batch``) with where it comes from."""

    model: str
    gpu: str
    precision: str
    samples_per_s: float
    batch: int
    source: str


def _positive(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise PresetError(f"{where} must be a positive number, got {v!r}")
    return float(v)


def load_rule(root: Path | None = None) -> EstimateRule:
    """The ESTIMATE's constants from compute_estimate.toml."""
    cfg = read_toml((root or presets_dir()) / "compute_estimate.toml")
    where = "compute_estimate.toml"
    fractions = {}
    for p in PRECISIONS:
        if p not in cfg or "fraction" not in cfg[p]:
            raise PresetError(f"{where} [{p}]: missing (needs fraction)")
        fractions[p] = _positive(cfg[p]["fraction"], f"{where} [{p}] fraction")
        if fractions[p] > 1:
            raise PresetError(f"{where} [{p}]: fraction must be in (0, 1], got {fractions[p]!r}")
    return EstimateRule(_positive(cfg.get("training_flops_factor"), f"{where}: training_flops_factor"),
                        fractions, _positive(cfg.get("memory_crossings"), f"{where}: memory_crossings"),
                        str(cfg.get("median_error", "")))


def activation_elements(tensor_sizes, tensor_flops) -> float:
    """Activation elements one sample produces in the forward pass, from a library model's tensors.

    A weight of ``size`` elements charged ``flops`` forward FLOPs per sample is applied at
    flops / (2 size) positions (2 FLOPs per multiply-add) and writes its output channels there. The
    output channels are the size of the FLOP-free tensor that follows it (its bias or norm weight)
    when that divides the weight's size, else sqrt(size) (a square weight)."""
    sizes, flops = list(tensor_sizes), list(tensor_flops)
    if not flops:
        raise SpecError("activation_elements needs per-tensor FLOPs (a library model)")
    total = 0.0
    for i, (n, f) in enumerate(zip(sizes, flops)):
        if f <= 0:
            continue
        nxt = i + 1 < len(sizes) and flops[i + 1] == 0 and n % sizes[i + 1] == 0
        cout = sizes[i + 1] if nxt else n ** 0.5
        total += cout * f / (2.0 * n)
    return total


def estimate_seconds_per_sample(forward_flops: float, activations: float, gpu: GpuPreset, precision: str,
                                rule: EstimateRule) -> float:
    """Seconds per training sample of the ESTIMATE (module docstring): 3 F / (P f) + k A e / B."""
    if precision not in PRECISIONS:
        raise SpecError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    peak = getattr(gpu, PEAK_FIELD[precision])
    if not peak:
        raise SpecError(f"--estimate {precision}: GPU {gpu.name} has no {PEAK_FIELD[precision]} in gpus.toml")
    t = rule.factor * forward_flops / (peak * rule.fraction[precision])
    if gpu.memory_Bps:
        t += rule.crossings * activations * ELEMENT_BYTES[precision] / gpu.memory_Bps
    return t


def time_ratio(to_gpu: GpuPreset, from_gpu: GpuPreset, forward_flops: float, activations: float,
               precision: str, rule: EstimateRule) -> float:
    """The ESTIMATE's time on ``to_gpu`` over its time on ``from_gpu`` (the factor a time measured on
    ``from_gpu`` at ``precision`` is multiplied by on ``to_gpu``)."""
    return (estimate_seconds_per_sample(forward_flops, activations, to_gpu, precision, rule)
            / estimate_seconds_per_sample(forward_flops, activations, from_gpu, precision, rule))


def load_measured_rates(root: Path | None = None) -> dict[tuple[str, str, str], MeasuredRate]:
    """measured_rates.toml as {(model, gpu, precision): MeasuredRate}; an absent file is an empty table."""
    path = (root or presets_dir()) / "measured_rates.toml"
    if not path.exists():
        return {}
    data = read_toml(path)
    out = {}
    for key, d in data.items():
        if not isinstance(d, dict):
            continue
        where = f"measured_rates.toml [{key}]"
        try:
            model, gpu, precision = str(d["model"]), str(d["gpu"]), str(d["precision"])
            batch = d["batch"]
        except KeyError as e:
            raise PresetError(f"{where}: missing key {e.args[0]!r}") from None
        if precision not in PRECISIONS:
            raise PresetError(f"{where}: precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise PresetError(f"{where}: batch must be a positive integer, got {batch!r}")
        out[(model, gpu, precision)] = MeasuredRate(model, gpu, precision,
                                                    _positive(d.get("samples_per_s"), f"{where} samples_per_s"),
                                                    batch, str(d.get("source", "")))
    return out


def launch_bound(forward_flops: float, tensors: int, batch: int, seconds_per_sample: float) -> bool:
    """Whether kernel launches (KERNELS_PER_TENSOR x tensors x LAUNCH_S) exceed LAUNCH_SHARE of the
    estimated step of ``batch`` samples (seconds_per_sample x batch): too small for a FLOP estimate."""
    return KERNELS_PER_TENSOR * tensors * LAUNCH_S > LAUNCH_SHARE * seconds_per_sample * batch


def disagreement(a_s: float, b_s: float) -> float:
    """max(a/b, b/a) of two positive times (seconds)."""
    return max(a_s / b_s, b_s / a_s)
