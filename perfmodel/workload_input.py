"""The workload a user asks for and its per-GPU compute time.

    --workload NAME            a preset of data/presets/workloads.toml (with measured compute times),
                               or a model of the library (data/presets/models/, no compute time)
    --workload FILE.toml[:T]   a file in the workloads.toml schema (``tensors = "x.json"`` relative to the
                               file, or ``model = "<library name>"``; optional accumulate, wire, compute)
Compute time on the cluster's GPU, one of (each replaces the workload's own tables):
    --samples-per-s R          a measured single-GPU training rate at --batch: t(b) = b / R  (seconds)
    --compute-ms T             measured milliseconds per mini-batch of --batch on one GPU
    --estimate PRECISION       an ESTIMATE from FLOPs: t(b) = 3 F b / (peak x fraction), F the library's
                               forward FLOPs per sample, peak the GPU preset's fp32 | tf32 | mixed peak,
                               fraction the achieved share in data/presets/compute_estimate.toml
(--profile, handled by the CLI, is the fourth source.) --accumulate K sets Workload.accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .cluster_input import split_file_ref, table_from_file
from .library import LibraryError, load_model, model_names, normalize
from .presets import (PresetError, WorkloadSettings, gpus, load_workload_with_settings, presets_dir,
                      read_toml, workload_from_table, workload_names)
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


def estimate_seconds_per_sample(forward_flops: float, cluster: Cluster, precision: str,
                                root: Path | None = None) -> tuple[float, str]:
    """(seconds per sample, provenance) of the FLOP-based ESTIMATE on ``cluster``'s GPU preset."""
    root = root or presets_dir()
    if precision not in ESTIMATE_PRECISIONS:
        raise SpecError(f"--estimate must be one of {', '.join(ESTIMATE_PRECISIONS)}, got {precision!r}")
    table = gpus(root)
    if cluster.gpu not in table:
        raise SpecError(f"--estimate needs the cluster's GPU in gpus.toml; cluster {cluster.name} has "
                        f"{cluster.gpu or 'no GPU'!r} (give --gpu NAME)")
    gpu = table[cluster.gpu]
    cfg = read_toml(root / "compute_estimate.toml")
    where = f"compute_estimate.toml [{precision}]"
    if precision not in cfg or "fraction" not in cfg[precision] or "peak" not in cfg[precision]:
        raise PresetError(f"{where}: missing (needs peak and fraction)")
    factor = cfg.get("training_flops_factor")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0:
        raise PresetError(f"compute_estimate.toml: training_flops_factor must be a positive number, got {factor!r}")
    fraction = cfg[precision]["fraction"]
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise PresetError(f"{where}: fraction must be a number in (0, 1], got {fraction!r}")
    peak = getattr(gpu, cfg[precision]["peak"], None)
    if not peak:
        raise SpecError(f"--estimate {precision}: GPU {gpu.name} has no {cfg[precision]['peak']} in gpus.toml")
    seconds = factor * forward_flops / (peak * fraction)
    return seconds, (f"ESTIMATE (no measured time): {factor:g} x {forward_flops / 1e9:.4g} GFLOP forward per sample "
                     f"/ ({gpu.name} {precision} peak {peak / 1e12:.4g} TFLOP/s x achieved fraction {fraction:g}) "
                     f"= {seconds * 1e3:.4g} ms per sample; see compute_estimate.toml")


def _forward_flops(model: str | None, root: Path) -> float:
    if model is None:
        raise SpecError("--estimate needs the workload's forward FLOPs: use a library model "
                        "(`perfmodel presets --kind model`) or `model = ...` in the workload file")
    try:
        return load_model(model, root).forward_flops
    except LibraryError:
        raise SpecError(f"--estimate needs the forward FLOPs of {model!r}, which is not in the model library "
                        f"(`perfmodel presets --kind model`)") from None


def command_line_compute(opts: ComputeOptions, cluster: Cluster, model: str | None,
                         root: Path) -> dict[str, ComputeTime] | None:
    """The compute table the options give, keyed by the cluster's GPU; None when they give none."""
    given = [o for o, v in (("--samples-per-s", opts.samples_per_s), ("--compute-ms", opts.compute_ms),
                            ("--estimate", opts.estimate)) if v is not None]
    if not given:
        return None
    if len(given) > 1:
        raise SpecError(f"give one compute time, not {' and '.join(given)}")
    b = opts.batch
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
        per_sample, source = estimate_seconds_per_sample(_forward_flops(model, root), cluster, opts.estimate, root)
        ct = ComputeTime("linear", t0_s=0.0, t1_s=per_sample, source=source)
    return {cluster.gpu or "given": ct}


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
        compute = command_line_compute(opts, cluster, model, root)
        workload, settings = workload_from_table(name, table, where, path.parent, root, compute)
    elif ref in workload_names(root):
        compute = command_line_compute(opts, cluster, ref, root)
        workload, settings = load_workload_with_settings(ref, root, compute)
    else:
        try:
            lib = load_model(ref, root)
        except LibraryError:
            raise SpecError(f"unknown workload {ref!r}; presets: {', '.join(workload_names(root))}; library "
                            f"models: {', '.join(model_names(root))}; or a workload FILE.toml") from None
        compute = command_line_compute(opts, cluster, normalize(ref), root)
        if compute is None:
            raise SpecError(f"workload {lib.name!r} (model library) has no measured compute time: give "
                            f"--samples-per-s R (with --batch), --compute-ms T, --estimate fp32|tf32|mixed, "
                            f"or --profile")
        workload, settings = workload_from_table(lib.name, {"model": lib.name, "source": lib.source},
                                                 f"model {lib.name}", root, root, compute)
    if opts.accumulate is not None:
        try:
            workload = replace(workload, accumulate=opts.accumulate)
        except SpecError as e:
            raise SpecError(f"--accumulate: {e}") from None
    return workload, settings
