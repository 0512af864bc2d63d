"""The workload a user asks for and its per-GPU compute time.

    --workload NAME            a preset of data/presets/workloads.toml (with measured compute times),
                               or a model of the library (data/presets/models/, no compute time)
    --workload FILE.toml[:T]   a file in the workloads.toml schema (``tensors = "x.json"`` relative to the
                               file, or ``model = "<library name>"``; optional accumulate, wire, compute)
Compute time on the cluster's GPU, one of (each replaces the workload's own tables):
    --samples-per-s R          a measured single-GPU training rate at --batch: t(b) = b / R  (seconds)
    --compute-ms T             measured milliseconds per mini-batch of --batch on one GPU
    --estimate PRECISION       the compute rule (perfmodel.compute_rule, docs/compute.md) at fp32 | tf32 |
                               mixed: a published single-GPU rate of the library model on the GPU
                               (data/presets/measured_rates.toml), else the FLOP/memory ESTIMATE
(--profile, handled by the CLI, is the fourth source.) --accumulate K sets Workload.accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .cluster_input import split_file_ref, table_from_file
from .compute_rule import (DISAGREE, ELEMENT_BYTES, KERNELS_PER_TENSOR, LAUNCH_SHARE, PEAK_FIELD, activation_elements,
                           disagreement, launch_bound, load_measured_rates, load_rule)
from .compute_rule import estimate_seconds_per_sample as estimate_seconds_per_sample_rule
from .library import LibraryError, load_model, model_names, normalize
from .preset_toml import closest, match_name, read_toml
from .presets import (WorkloadSettings, cluster_gpu, load_workload_with_settings, presets_dir, workload_from_table,
                      workload_names)
from .specs import Cluster, ComputeTime, SpecError, Workload

ESTIMATE_PRECISIONS = ("fp32", "tf32", "mixed")


@dataclass(frozen=True)
class ComputeOptions:
    """How the per-GPU compute time is given on the command line (at most one of the three)."""

    samples_per_s: float | None = None
    compute_ms: float | None = None
    estimate: str | None = None
    batch: int = 32
    accumulate: int | None = None


def _library(model: str | None, root: Path):
    if model is None:
        raise SpecError("--estimate needs the workload's forward FLOPs: use a library model "
                        "(`perfmodel presets --kind model`) or `model = ...` in the workload file")
    try:
        return load_model(model, root)
    except LibraryError:
        raise SpecError(f"--estimate needs the forward FLOPs of {model!r}, which is not in the model library "
                        f"(`perfmodel presets --kind model`)") from None


def _rule_gpu(cluster: Cluster):
    gpu = cluster_gpu(cluster)
    if gpu is None:
        raise SpecError(f"--estimate needs the cluster's GPU; cluster {cluster.name} has {cluster.gpu or 'no GPU'!r} "
                        f"(give --gpu NAME, or --gpu-tflops for an unlisted GPU)")
    return gpu


def estimate_seconds_per_sample(model: str | None, cluster: Cluster, precision: str,
                                root: Path | None = None) -> tuple[float, str]:
    """(seconds per sample, provenance) of the ESTIMATE (perfmodel.compute_rule) on ``cluster``'s GPU."""
    root = root or presets_dir()
    if precision not in ESTIMATE_PRECISIONS:
        raise SpecError(f"--estimate must be one of {', '.join(ESTIMATE_PRECISIONS)}, got {precision!r}")
    gpu = _rule_gpu(cluster)
    lib = _library(model, root)
    rule = load_rule(root)
    acts = activation_elements(lib.tensor_sizes, lib.tensor_flops)
    seconds = estimate_seconds_per_sample_rule(lib.forward_flops, acts, gpu, precision, rule)
    mem = (f" + {rule.crossings:g} x {acts / 1e6:.4g}M activations x {ELEMENT_BYTES[precision]:g} B / "
           f"{gpu.memory_Bps / 1e9:.4g} GB/s" if gpu.memory_Bps else " (no memory bandwidth: FLOPs only)")
    return seconds, (f"ESTIMATE (no published single-GPU rate of {lib.name} on {gpu.name} at {precision}; "
                     f"{rule.error_text or 'error not stated'}): {rule.factor:g} x {lib.forward_flops / 1e9:.4g} "
                     f"GFLOP / ({gpu.name} {precision} peak {getattr(gpu, PEAK_FIELD[precision]) / 1e12:.4g} "
                     f"TFLOP/s x {rule.fraction[precision]:g}){mem} = {seconds * 1e3:.4g} ms per sample; "
                     f"see docs/compute.md")


def rule_compute(model: str | None, cluster: Cluster, precision: str, batch: int,
                 root: Path | None = None) -> tuple[ComputeTime, list[str]]:
    """The compute rule (perfmodel.compute_rule) for a library model on ``cluster``'s GPU at ``precision``:
    the published single-GPU rate when measured_rates.toml has one, else the ESTIMATE; and its warnings
    (the two disagree by more than DISAGREE; the model is too small for the estimate)."""
    root = root or presets_dir()
    per_sample, est_source = estimate_seconds_per_sample(model, cluster, precision, root)
    lib = _library(model, root)
    warnings = []
    m = load_measured_rates(root).get((lib.name, cluster.gpu, precision))
    if m is not None:
        ct = ComputeTime.table({m.batch: m.batch / m.samples_per_s},
                               source=f"measured: published single-GPU rate {m.samples_per_s:g} samples/s at batch "
                                      f"{m.batch} ({m.source})")
        ratio = disagreement(1.0 / m.samples_per_s, per_sample)
        if ratio > DISAGREE:
            warnings.append(f"compute sources disagree {ratio:.2g}x: published {m.samples_per_s:,.0f} samples/s vs "
                            f"ESTIMATE {1.0 / per_sample:,.0f} samples/s for {lib.name} on {cluster.gpu} at "
                            f"{precision}; using the published rate")
    else:
        ct = ComputeTime("linear", t0_s=0.0, t1_s=per_sample, source=est_source)
        if launch_bound(lib.forward_flops, len(lib.tensor_sizes), batch, per_sample):
            warnings.append(f"{lib.name} is too small for the FLOP ESTIMATE at batch {batch}: its "
                            f"{KERNELS_PER_TENSOR * len(lib.tensor_sizes)} kernel launches take more than "
                            f"{LAUNCH_SHARE:.0%} of the estimated {per_sample * batch * 1e3:.3g} ms step; measure "
                            f"it (--samples-per-s, --profile)")
    return ct, warnings


def command_line_compute(opts: ComputeOptions, cluster: Cluster, model: str | None,
                         root: Path) -> tuple[dict[str, ComputeTime] | None, list[str]]:
    """The compute table the options give, keyed by the cluster's GPU (None when they give none), and
    the compute rule's warnings."""
    given = [o for o, v in (("--samples-per-s", opts.samples_per_s), ("--compute-ms", opts.compute_ms),
                            ("--estimate", opts.estimate)) if v is not None]
    if not given:
        return None, []
    if len(given) > 1:
        raise SpecError(f"give one compute time, not {' and '.join(given)}")
    b = opts.batch
    warnings: list[str] = []
    if opts.samples_per_s is not None:
        r = opts.samples_per_s
        if not r > 0 or r == float("inf"):
            raise SpecError(f"--samples-per-s must be > 0, got {r!r}")
        ct = ComputeTime.table({b: b / r}, source=f"measured single-GPU rate {r:g} samples/s at batch {b} "
                                                  f"(given): {b / r * 1e3:.4g} ms per batch")
    elif opts.compute_ms is not None:
        t = opts.compute_ms
        if not t > 0 or t == float("inf"):
            raise SpecError(f"--compute-ms must be > 0, got {t!r}")
        ct = ComputeTime.table({b: t / 1e3}, source=f"measured {t:g} ms per batch of {b} on one GPU (given)")
    else:
        ct, warnings = rule_compute(model, cluster, opts.estimate, b, root)
    return {cluster.gpu or "given": ct}, warnings


def _preset_disagreement(workload: Workload, cluster: Cluster, compute: dict | None, batch: int) -> list[str]:
    """A warning when the options' compute time and the workload's own (measured on this GPU, or scaled
    from another by the fp32 peak ratio) differ by more than DISAGREE."""
    if compute is None:
        return []
    try:
        curve, scale, _ = workload.compute_for(cluster)
    except SpecError:
        return []
    own = float(curve(float(batch))) * scale
    given = float(next(iter(compute.values()))(float(batch)))
    ratio = disagreement(own, given)
    if ratio <= DISAGREE:
        return []
    return [f"compute sources disagree {ratio:.2g}x at batch {batch}: the workload's own {own * 1e3:.4g} ms "
            f"vs the command line's {given * 1e3:.4g} ms on {cluster.gpu}; using the command line's"]


def resolve_workload(ref: str | None, cluster: Cluster, opts: ComputeOptions = ComputeOptions(),
                     root: Path | None = None, default: str = "vgg-a") -> tuple[Workload, WorkloadSettings]:
    """The workload ``ref`` names (preset, library model or FILE.toml[:name]) with its compute time on
    ``cluster`` (from the options when given) and --accumulate applied."""
    root = root or presets_dir()
    ref = ref or default
    file_ref = split_file_ref(ref)
    if file_ref is not None:
        path, name = file_ref
        name, table, where = table_from_file(path, name, "workload", "tensors" if "model" not in
                                             read_toml(path) else "model")
        model = table.get("model") if isinstance(table.get("model"), str) else name
        compute, warnings = command_line_compute(opts, cluster, model, root)
        workload, settings = workload_from_table(name, table, where, path.parent, root, compute)
    elif match_name(ref, workload_names(root)) is not None:
        ref = match_name(ref, workload_names(root))
        compute, warnings = command_line_compute(opts, cluster, ref, root)
        own = load_workload_with_settings(ref, root)[0]
        warnings += _preset_disagreement(own, cluster, compute, opts.batch)
        workload, settings = load_workload_with_settings(ref, root, compute)
    else:
        try:
            lib = load_model(ref, root)
        except LibraryError:
            raise SpecError(f"unknown workload {ref!r}{closest(ref, workload_names(root) + model_names(root))}; "
                            f"presets: {', '.join(workload_names(root))}; library models: "
                            f"{', '.join(model_names(root))}; or a workload FILE.toml") from None
        compute, warnings = command_line_compute(opts, cluster, normalize(ref), root)
        if compute is None:
            raise SpecError(f"workload {lib.name!r} (model library) has no measured compute time: give "
                            f"--samples-per-s R (with --batch), --compute-ms T, --estimate fp32|tf32|mixed, "
                            f"or --profile")
        workload, settings = workload_from_table(lib.name, {"model": lib.name, "source": lib.source},
                                                 f"model {lib.name}", root, root, compute)
    settings = replace(settings, warnings=tuple(warnings))
    if opts.accumulate is not None:
        try:
            workload = replace(workload, accumulate=opts.accumulate)
        except SpecError as e:
            raise SpecError(f"--accumulate: {e}") from None
    return workload, settings
