"""`perfmodel`: predict | presets | profile | validate.

Bad input prints one line, ``perfmodel: error: ...``, and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from .overlap_causes import parse_slowdown
from .predict_output import csv_text as _csv, format_table
from .specs import (ALL_STRATEGIES, OVERLAP_EFFICIENCY, Strategy, STRATEGIES, ALLREDUCE_ALGORITHMS, DASO_PROGRESS, PS_PLACEMENTS,
                    STAGINGS, DEFAULT_TERNGRAD_EXCHANGE, TERNGRAD_EXCHANGES, TERNGRAD_LANES, daso_strategy_fields)
from .stragglers import GPU_VARIABILITY_CV
from .memory import with_memory
from .plan_cli import add_plan_parser

DEFAULT_GPUS = "1-512:x2"


class CLIError(ValueError):
    """A command-line value is malformed."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage too by default)
        raise CLIError(message)


def parse_gpus(text: str) -> list[int]:
    """GPU counts from "1-512" (every integer), "1-512:x2" (doubling), "1,2,8" or a mix "1,4-8"."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:
                raise ValueError
            step = None
            if ":" in part:
                part, step_text = part.split(":", 1)
                if not step_text.startswith("x"):
                    raise ValueError
                step = int(step_text[1:])
                if step < 2:
                    raise ValueError
            if "-" in part:
                lo_text, hi_text = part.split("-", 1)
                lo, hi = int(lo_text), int(hi_text)
                if lo < 1 or hi < lo:
                    raise ValueError
                if step:
                    v = lo
                    while v <= hi:
                        out.append(v)
                        v *= step
                else:
                    out.extend(range(lo, hi + 1))
            else:
                if step:
                    raise ValueError
                v = int(part)
                if v < 1:
                    raise ValueError
                out.append(v)
    except ValueError:
        raise CLIError(f"cannot parse --gpus {text!r}: use a list like 1,2,4, a range 1-512, or 1-512:x2") from None
    return sorted(set(out))


def _parse_straggler(text: str | None) -> tuple[float, float]:
    if not text or text == "none":
        return 0.0, 0.0
    if text == "gpu":
        return GPU_VARIABILITY_CV, 0.0
    if text == "homogeneous":
        return 0.1, 0.0
    if text == "heterogeneous":
        return 0.1, 0.6
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2) or any(p < 0 or math.isnan(p) for p in parts):
        raise CLIError(f"--stragglers must be none, homogeneous, heterogeneous, CV or CV_TASK,CV_MACHINE; got {text!r}")
    return parts[0], parts[1] if len(parts) == 2 else 0.0


def default_allreduce(cluster, staging: str = "device") -> str:
    """--allreduce auto: NCCL's choice on GPU clusters (what PyTorch DDP, Horovod and DASO run there),
    an MPI ring where the ranks are CPUs (a cluster whose host link is free, as a CPU profile's) or the
    gradients are staged on the host (MPI without CUDA awareness)."""
    return "ring" if cpu_ranks(cluster) or staging == "host" else "nccl"


def cpu_ranks(cluster) -> bool:
    """Whether the cluster's ranks are CPUs (a CPU profile's cluster: its host link is free)."""
    return cluster is not None and math.isinf(cluster.host.bandwidth_Bps)


def add_schedule_options(p: argparse.ArgumentParser) -> None:
    """Options of the synchronous schemes and of the overlap schedule (Strategy fields)."""
    p.add_argument("--bucket-mb", type=float, default=25.0,
                   help="gradient bucket size in MiB for the overlap schedule (PyTorch DDP 25; Horovod's "
                        "fusion buffer 64 before v0.21, 128 from v0.21)")
    p.add_argument("--staging", choices=STAGINGS, default="device",
                   help="host: allreduce through host memory, as MPI without CUDA awareness (Horovod over a "
                        "non-CUDA-aware MPI); uses the cluster's host memory bandwidth")
    p.add_argument("--step-overhead-ms", type=float, default=0.0,
                   help="framework time per multi-GPU step in ms (default 0)")
    p.add_argument("--sync-wait-ms", type=float, default=None,
                   help="terngrad: ms that each collective after the codec's own work costs beyond its own time "
                        "(the wait for the slowest rank, the scheduling of its hops on shared cores; perfmodel "
                        "profile measures it on CPU ranks, show-profile prints it; default: the --profile's "
                        "measurement, else 0)")
    p.add_argument("--cycle-time-ms", type=float, default=0.0,
                   help="period of the framework's communication loop in ms: each bucket waits half of it "
                        "(Horovod's HOROVOD_CYCLE_TIME: 5 before v0.21, 1 from v0.21; default 0: DDP, TF)")
    p.add_argument("--overlap-efficiency", type=float, default=None,
                   help=f"override: this share of the ideal bucket schedule's hidden time is hidden (the old "
                        f"default was {OVERLAP_EFFICIENCY}); default: from the overlap's causes, docs/overlap.md")
    p.add_argument("--overlap-slowdown", default=None, metavar="SIGMA[,MU]",
                   help="how much slower backprop (SIGMA) and a collective (MU, default SIGMA) run while both run, "
                        "e.g. measured as step-with / step-alone - 1 (default on a GPU: 0.79 each, Agrawal et al. 2024)")
    p.add_argument("--first-bucket-mb", type=float, default=0.0,
                   help="MiB at which the first bucket closes (PyTorch DDP 1; default 0: --bucket-mb)")
    p.add_argument("--ps-placement", choices=PS_PLACEMENTS, default="colocated",
                   help="sync-ps: servers on the worker nodes or on dedicated nodes; byteps: dedicated = "
                        "--ps-servers CPU summation machines, colocated = none")
    p.add_argument("--ps-local-reduce", choices=["on", "off"], default="on",
                   help="sync-ps: sum a node's GPUs before the push (TF distributed_replicated, MXNet "
                        "dist_device_sync) or push from every GPU")


def _schedule_fields(args: argparse.Namespace) -> dict:
    if args.step_overhead_ms is not None and not args.step_overhead_ms >= 0:
        raise CLIError(f"--step-overhead-ms must be >= 0, got {args.step_overhead_ms}")
    if not args.cycle_time_ms >= 0:
        raise CLIError(f"--cycle-time-ms must be >= 0, got {args.cycle_time_ms}")
    sync_wait_ms = 0.0 if args.sync_wait_ms is None else args.sync_wait_ms
    if not 0 <= sync_wait_ms < float("inf"):
        raise CLIError(f"--sync-wait-ms must be >= 0 and finite, got {args.sync_wait_ms}")
    sigma, mu = parse_slowdown(args.overlap_slowdown)
    return dict(bucket_mb=args.bucket_mb, staging=args.staging, step_overhead_s=args.step_overhead_ms / 1e3,
                cycle_time_s=args.cycle_time_ms / 1e3, sync_wait_s=sync_wait_ms / 1e3,
                overlap_efficiency=args.overlap_efficiency, first_bucket_mb=args.first_bucket_mb,
                overlap_compute_slowdown=sigma, overlap_comm_slowdown=mu,
                ps_placement=args.ps_placement, ps_local_reduce=args.ps_local_reduce == "on")


def build_strategies(args: argparse.Namespace, codec_rates: tuple[float, ...] = (0.0, 0.0, 0.0),
                     daso: dict | None = None, cluster=None) -> list[Strategy]:
    """Strategies from the command line; TernGrad codec rates from a profile unless given."""
    names = [s.strip() for s in args.strategy.split(",") if s.strip()]
    if not names:
        raise CLIError("--strategy is empty")
    stragglers = args.stragglers
    if stragglers is None:  # chips of one GPU model differ in speed; CPU ranks (a CPU profile) get none
        stragglers = "none" if cluster is None or cpu_ranks(cluster) else "gpu"
    cv_task, cv_mach = _parse_straggler(stragglers)
    daso = dict(daso or {})  # the profile's DASO progress and factor; the command line overrides them
    if args.daso_progress:
        daso["progress"] = args.daso_progress
    if args.daso_nb_factor is not None:
        daso["nonblocking_factor"] = args.daso_nb_factor
    allreduce = default_allreduce(cluster, args.staging) if args.allreduce == "auto" else args.allreduce
    out = []
    for name in names:
        if name not in ALL_STRATEGIES:
            raise CLIError(f"unknown strategy {name!r}; choose from {', '.join(ALL_STRATEGIES)}")
        out.append(Strategy(name, allreduce=allreduce, overlap=args.overlap, wire=args.wire,
                            terngrad_min_elems=args.terngrad_min_elems, terngrad_fp32_last=args.terngrad_fp32_last,
                            terngrad_encode_elems_per_s=args.terngrad_encode_rate or codec_rates[0],
                            terngrad_decode_elems_per_s=args.terngrad_decode_rate or codec_rates[1],
                            terngrad_convert_elems_per_s=args.terngrad_convert_rate or codec_rates[2],
                            terngrad_ps_aggregate_elems_per_s=args.terngrad_ps_aggregate_rate or (
                                codec_rates[3] if len(codec_rates) > 3 else 0.0),
                            terngrad_exchange=args.terngrad_exchange, terngrad_lanes=args.terngrad_lanes,
                            daso_B=args.daso_b, daso_W=args.daso_w,
                            ps_servers=args.ps_servers, ps_update_s=(args.ps_update_ms or 0.0) / 1e3,
                            straggler_cv=cv_task, straggler_machine_cv=cv_mach,
                            **_schedule_fields(args), **daso_strategy_fields(daso)))
    return out


# ---------------------------------------------------------------- cluster, workload and compute inputs

def _positive_int_arg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def _positive_float_arg(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not v > 0 or math.isinf(v):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return v


def add_input_options(p: argparse.ArgumentParser) -> None:
    """--workload/--cluster and the options that describe hardware and compute (perfmodel.cluster_input,
    perfmodel.workload_input)."""
    from .workload_input import ESTIMATE_PRECISIONS

    g = p.add_argument_group("cluster", "a preset, a TOML file, or `custom`; then overrides (LINK: a fabric "
                             "of `perfmodel presets --kind fabric` such as ib-hdr or nvswitch-a100, Kx a fabric "
                             "(8xib-hdr), or a figure: 200Gb/s, 12.5GB/s, 25GB/s,2us, 8x200Gb/s)")
    g.add_argument("--cluster", default=None,
                   help="preset (default terngrad-infiniband), FILE.toml or FILE.toml:NAME (clusters.toml "
                        "schema), custom (with --gpu, --gpus-per-node, --intra, --network), or local with --profile")
    g.add_argument("--gpu", default=None, help="GPU preset (k80, p100, v100, a100, h100 ...)")
    g.add_argument("--gpus-per-node", type=_positive_int_arg, default=None, help="GPUs in one node")
    g.add_argument("--intra", default=None, metavar="LINK", help="GPU-GPU link inside a node, per GPU")
    g.add_argument("--network", default=None, metavar="LINK", help="link between nodes, per node (KxLINK: K NICs)")
    g.add_argument("--nics", type=_positive_int_arg, default=None,
                   help="NICs per node: the network is K times the per-NIC figure")
    g.add_argument("--nodes", type=_positive_int_arg, default=None,
                   help="nodes the cluster has (default: the preset's max_nodes, else open-ended)")
    g.add_argument("--gpu-tflops", default=None, metavar="fp32=X,tf32=Y,fp16=Z",
                   help="an unlisted GPU's dense peaks in TFLOP/s (or a preset's, overridden); docs/compute.md")
    g.add_argument("--gpu-mem-bw", type=float, default=None, metavar="GB/s", help="the GPU's memory bandwidth")
    g.add_argument("--gpu-memory-gb", type=float, default=None, metavar="GB", help="the GPU's memory size")
    g.add_argument("--gpu-host", default=None, metavar="FABRIC",
                   help="the GPU's host link (pcie3, pcie4, pcie5; default pcie5 for a described GPU)")
    g = p.add_argument_group("workload", "a preset, a library model, or a TOML file; compute time on the "
                             "cluster's GPU from one of --samples-per-s, --compute-ms, --estimate, --profile")
    g.add_argument("--workload", default=None,
                   help="preset (default vgg-a), library model (resnet18, bert-large, gpt2-xl ...; `perfmodel "
                        "presets --kind model`), or FILE.toml[:NAME] (workloads.toml schema)")
    g.add_argument("--samples-per-s", type=_positive_float_arg, default=None,
                   help="measured single-GPU training rate (samples/s) at --batch")
    g.add_argument("--compute-ms", type=_positive_float_arg, default=None,
                   help="measured milliseconds per mini-batch of --batch on one GPU")
    g.add_argument("--estimate", choices=ESTIMATE_PRECISIONS, default=None,
                   help="compute from the GPU and model alone at fp32, tf32 or mixed: a published single-GPU "
                        "rate (data/presets/measured_rates.toml), else the FLOP/memory ESTIMATE; docs/compute.md")
    g.add_argument("--accumulate", type=_positive_int_arg, default=None,
                   help="micro-batches of --batch per gradient exchange (gradient accumulation)")


LINK_OPTIONS = ("--intra", "--network")

PREDICT_EXAMPLES = """examples:
  perfmodel predict --workload resnet50 --cluster dgx1-v100 --gpus 1-64:x2
  perfmodel predict --cluster my.toml --workload resnet50 --samples-per-s 2500 --batch 256 --gpus 8,64
  perfmodel predict --cluster my.toml:mycluster --gpus-per-node 8 --intra nvswitch-a100 --network 8x200Gb/s \\
      --workload resnet50 --samples-per-s 2500 --batch 256 --gpus 8,64
  perfmodel predict --cluster custom --gpu a100 --gpus-per-node 8 --intra nvswitch-a100 --network 8xib-hdr \\
      --nodes 8 --workload resnet50 --samples-per-s 2500 --batch 256 --gpus 8-64:x2 --strategy ssgd
  perfmodel predict --cluster custom --gpu h100 --gpus-per-node 8 --intra nvswitch-h100 --network 8xib-ndr \\
      --workload gpt2-xl --estimate mixed --batch 8 --accumulate 4 --wire bf16 --gpus 8-512:x2
  perfmodel predict --cluster juwels-booster --network 25GB/s,2us --nics 4 --workload my_workload.toml

  a cluster file (clusters.toml schema; links as tables or LINK texts, host defaults to the GPU's PCIe):
    [mycluster]
    gpu = "a100"
    gpus_per_node = 8
    intra = "nvswitch-a100"
    network = "8xib-hdr"
    max_nodes = 8          # optional; without it the node count is open-ended
"""


def glue_dash_values(argv: list[str]) -> list[str]:
    """``--network -3Gb/s`` as ``--network=-3Gb/s``, so a negative figure reaches the LINK parser (and its
    one-line error) instead of argparse taking it for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in LINK_OPTIONS and i + 1 < len(argv) and argv[i + 1][:2] in {f"-{d}" for d in "0123456789."}:
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _cluster_options(args: argparse.Namespace):
    from .cluster_input import ClusterOptions

    return ClusterOptions(gpu=args.gpu, gpus_per_node=args.gpus_per_node, intra=args.intra, network=args.network,
                          nics=args.nics, nodes=args.nodes, gpu_tflops=args.gpu_tflops, gpu_mem_bw=args.gpu_mem_bw,
                          gpu_memory_gb=args.gpu_memory_gb, gpu_host=args.gpu_host)


def _compute_options(args: argparse.Namespace, batch: int):
    from .workload_input import ComputeOptions

    return ComputeOptions(samples_per_s=args.samples_per_s, compute_ms=args.compute_ms, estimate=args.estimate,
                          batch=batch, accumulate=args.accumulate)


def _resolve_workload_cluster(args: argparse.Namespace):
    """(workload, cluster, TernGrad codec rates, DASO fields, workload settings) from the command line."""
    from .cluster_input import apply_overrides, resolve_cluster
    from .presets import WorkloadSettings
    from .workload_input import resolve_workload

    copts = _cluster_options(args)
    # the measured rate is per GPU at the per-GPU batch: --batch (weak) or --batch / 1 GPU (strong)
    wopts = _compute_options(args, args.batch)
    profile = None
    if getattr(args, "profile", None):
        from .profile.schema import load_profile

        profile = load_profile(args.profile)
    settings = WorkloadSettings()
    if profile is not None:
        from .profile.schema import profile_cluster, profile_daso, profile_workload

        base = None if args.cluster in (None, "local") else resolve_cluster(args.cluster, copts)
        # the local cluster also carries the link measured on DASO's global group, where profiled
        op_bytes = {"global_iallreduce": profile.model.gradient_bytes} if profile.model is not None else None
        cluster = profile_cluster(profile, base, links=args.profile_links, op_bytes=op_bytes)
        if base is None:
            cluster = apply_overrides(cluster, copts)
        if args.workload is None:
            workload = profile_workload(profile)
            if args.accumulate is not None:
                from dataclasses import replace

                workload = replace(workload, accumulate=args.accumulate)
        else:
            workload, settings = resolve_workload(args.workload, cluster, wopts)
        codec = profile.compute.codec if profile.compute is not None else None
        rates = codec.rates() if codec is not None and args.workload is None else (0.0, 0.0, 0.0)
        daso = profile_daso(profile) if base is None else {}
    else:
        cluster = resolve_cluster(args.cluster, copts)
        workload, settings = resolve_workload(args.workload, cluster, wopts)
        rates, daso = (0.0, 0.0, 0.0), {}
    if settings.warnings:  # the compute rule's, one line: sources disagree, model too small
        print(f"perfmodel: warning: {'; '.join(settings.warnings)}", file=sys.stderr)
    return workload, cluster, rates, daso, settings


def predict_records(workload, cluster, strategies: list[Strategy], gpus: list[int], scaling: str,
                    batch: int) -> tuple[list[dict], list[str]]:
    """Records of every strategy at the GPU counts it can run, and one note per skipped set of counts.
    Raises CLIError when no strategy can run any count."""
    import numpy as np

    from .intervals import with_band
    from .scaling import predict, unrunnable

    records: list[dict] = []
    notes: list[str] = []
    accumulate = int(getattr(workload, "accumulate", 1) or 1)
    w = np.asarray(gpus)
    for strategy in strategies:
        skip = unrunnable(w, cluster, strategy, scaling=scaling, batch=batch, accumulate=accumulate)
        keep = np.ones(len(w), bool)
        for why, bad in skip.items():
            keep &= ~np.isin(w, bad)
            notes.append(f"skipped {strategy.name} at {', '.join(str(int(x)) for x in bad)} GPUs: {why}")
        if keep.any():
            records.extend(with_band(predict(workload, cluster, strategy, w[keep], scaling=scaling,
                                             batch=batch).records()))
    if not records:
        raise CLIError("nothing to predict: " + "; ".join(dict.fromkeys(n.split(": ", 1)[1] for n in notes)))
    return records, notes


@dataclass(frozen=True)
class PredictResult:
    """What `perfmodel predict` computes: its records, its notes, the table's header lines, and for a
    prediction from a profile on its own cluster the points (perfmodel.profile.predictor.Point)."""

    records: list
    notes: list
    header: str
    points: list | None = None


def _nodes_per_host(text: str | None, linked: bool) -> int:
    if text is None:
        return 1 if linked else 0
    if text == "all":
        return 0
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise CLIError(f"--nodes-per-host must be 'all' or an integer >= 1, got {text!r}")
    return v


def fixed_fields(args: argparse.Namespace) -> frozenset[str]:
    """The Strategy fields the command line set, which a profile must not replace
    (perfmodel.profile.predictor.FIXABLE)."""
    out = set()
    if args.stragglers is not None:
        out.add("straggler_cv")
    if args.sync_wait_ms is not None:
        out.add("sync_wait_s")
    if any((args.terngrad_encode_rate, args.terngrad_decode_rate, args.terngrad_convert_rate,
            args.terngrad_ps_aggregate_rate)):
        out.add("codec")
    if args.ps_update_ms is not None:
        out.add("ps_update_s")
    if args.daso_progress:
        out.add("daso_progress")
    if args.daso_nb_factor is not None:
        out.add("daso_nonblocking_factor")
    return frozenset(out)


def _profiled_result(args: argparse.Namespace, gpus: list[int]) -> PredictResult:
    """`perfmodel predict --profile P [--link-from L] [--cluster local]`: each strategy and GPU count
    predicted from the profile on its own (perfmodel.profile.predictor), as `perfmodel validate` does."""
    from dataclasses import replace

    from .cluster_input import apply_overrides
    from .profile.linkfile import load_links
    from .profile.predictor import Layout, profiled_records
    from .profile.schema import load_profile, profile_cluster
    from .specs import Cluster, Link
    from .workload_input import resolve_workload

    profile = load_profile(args.profile)
    link = load_links(args.link_from) if args.link_from else None
    if args.cores is not None and args.cores < 1:
        raise CLIError(f"--cores must be >= 1 (CPU cores of one machine), got {args.cores}")
    layout = Layout(gpus_per_node=args.gpus_per_node or 1,
                    nodes_per_host=_nodes_per_host(args.nodes_per_host, link is not None), cores=args.cores)
    copts = replace(_cluster_options(args), gpus_per_node=None)
    edit = (lambda c: apply_overrides(c, copts)) if copts.any() else None
    settings = None
    workload = None
    if args.workload is not None:
        workload, settings = resolve_workload(args.workload, profile_cluster(profile, op_bytes=None),
                                              _compute_options(args, args.batch))
    elif args.accumulate is not None:
        raise CLIError("--accumulate with --profile needs --workload (the profile times one micro-batch per step)")
    if args.wire is None:
        args.wire = (settings.wire if settings is not None else None) or "fp32"
    on_cpu = profile.compute is None or profile.compute.device == "cpu"
    free = Link(latency_s=0.0, bandwidth_Bps=float("inf"), source="probe")
    probe = Cluster(name="local", gpus_per_node=1, intra=free, network=free,
                    host=free if on_cpu else Link(latency_s=1e-6, bandwidth_Bps=1e10, source="probe"))
    strategies = build_strategies(args, cluster=probe)
    records, notes, points = profiled_records(profile, strategies, gpus, args.batch, layout, link=link,
                                              workload=workload, fixed=fixed_fields(args), scaling=args.scaling,
                                              edit=edit)
    model = profile.model.name if profile.model is not None else "?"
    where = "nodes share one machine's cores" if layout.nodes_per_host == 0 else \
        f"{layout.nodes_per_host} node(s) per machine"
    header = (f"# {workload.name if workload is not None else model} from profile {args.profile}"
              f"{' and link ' + ','.join(args.link_from) if args.link_from else ''}, {args.scaling} scaling, "
              f"batch {args.batch}{' per GPU' if args.scaling == 'weak' else ' total'}, allreduce "
              f"{strategies[0].allreduce}, wire {args.wire}\n"
              f"# layout: {layout.gpus_per_node} rank(s) per node, {where}, "
              f"{layout.cores or profile.machine.cpu_affinity} cores per machine")
    return PredictResult(records, notes, header, points)


def predict_result(args: argparse.Namespace) -> PredictResult:
    """Everything `perfmodel predict` prints, computed from its parsed arguments (``build_parser``)."""
    from .cluster_input import describe

    gpus = parse_gpus(args.gpus)
    if args.profile and args.cluster in (None, "local"):
        return _profiled_result(args, gpus)
    if args.link_from or args.nodes_per_host is not None or args.cores is not None:
        raise CLIError("--link-from, --nodes-per-host and --cores describe a cluster predicted from --profile "
                       "(with --cluster local or none)")
    workload, cluster, codec_rates, daso, settings = _resolve_workload_cluster(args)
    if args.wire is None:  # the workload file's wire format, else fp32
        args.wire = settings.wire or "fp32"
    strategies = build_strategies(args, codec_rates, daso, cluster)
    records, notes = predict_records(workload, cluster, strategies, gpus, args.scaling, args.batch)
    records, notes = with_memory(records, notes, workload, cluster, strategies)
    _, _, source = workload.compute_for(cluster)
    accumulate = f" x {workload.accumulate} micro-batches" if workload.accumulate > 1 else ""
    header = (f"# {workload.name} ({workload.parameters / 1e6:.2f}M params) on {cluster.name}, {args.scaling} "
              f"scaling, batch {args.batch}{' per GPU' if args.scaling == 'weak' else ' total'}{accumulate}, "
              f"allreduce {strategies[0].allreduce}{', staged on host' if args.staging == 'host' else ''}, "
              f"wire {args.wire}\n"
              f"# cluster: {describe(cluster)}\n"
              f"# compute: {source}")
    return PredictResult(records, notes, header)


def cmd_predict(args: argparse.Namespace) -> int:
    from .cli_checks import check_predict_args

    print("".join(f"perfmodel: warning: {w}\n" for w in check_predict_args(args, CLIError)), end="", file=sys.stderr)
    result = predict_result(args)
    records, notes = result.records, result.notes
    if notes and args.format != "table":
        for note in notes:
            print(f"perfmodel: note: {note}", file=sys.stderr)
    if args.format == "json":
        text = json.dumps(records, indent=1)
    elif args.format == "csv":
        text = _csv(records)
    else:
        text = result.header + "".join(f"\n# {note}" for note in notes) + "\n" + format_table(records)
    if args.plot:  # before the text: a reader that leaves early (`| head`) must not cost the figure
        from .plot import plot_throughput

        r0 = records[0]
        plot_throughput(records, Path(args.plot), title=f"{r0['workload']} on {r0['cluster']} ({args.scaling})")
    print(text)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from .presets import PRESET_KINDS, list_presets

    for p in list_presets(kinds=(args.kind,) if args.kind else PRESET_KINDS):
        print(f"{p.kind:8s} {p.name:20s} {p.summary}")
        if args.sources:
            print(f"{'':29s} source: {p.source}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import format_rows, mape, rows_json, validate

    if not args.profile:
        raise CLIError("validate needs --profile (from `perfmodel profile`), one per model trained")
    if args.skip < 0:
        raise CLIError(f"--skip must be >= 0 (warm-up steps left out of each run), got {args.skip}")
    if args.cores is not None and args.cores < 1:
        raise CLIError(f"--cores must be >= 1 (cores the runs shared), got {args.cores}")
    npH = None if args.nodes_per_host is None else _nodes_per_host(args.nodes_per_host, bool(args.link_from))
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        raise CLIError(f"--gpus-per-node must be >= 1 (ranks per node), got {args.gpus_per_node}")
    rows = validate(args.logs, args.profile, skip=args.skip, cores=args.cores, link=tuple(args.link_from),
                    gpus_per_node=args.gpus_per_node, nodes_per_host=npH)
    for row in rows:  # what the prediction reads beyond what was measured
        for note in filter(None, row["notes"].split(" | ")):
            print(f"perfmodel: note: {row['run']}: {note}", file=sys.stderr)
    if args.format == "json":
        print(rows_json(rows))
    elif args.format == "csv":
        print(_csv(rows), end="")
    else:
        print(format_rows(rows))
    if args.plot:
        from .plot import plot_validation

        plot_validation(rows, Path(args.plot), title=f"perfmodel validate: throughput MAPE "
                        f"{mape(rows, 'throughput_error_pct'):.1f}%")
    return 0


def cmd_emulate(args: argparse.Namespace) -> int:
    from .emulate import EmulationSpec, cleanup_stale, parse_rate, run_in_cluster

    if args.cleanup:
        removed = cleanup_stale()
        print(f"removed {len(removed)}: {', '.join(removed)}" if removed else "nothing left behind")
        return 0
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    spec = EmulationSpec(nodes=args.nodes, ranks_per_node=args.ranks_per_node, rate_bps=parse_rate(args.rate),
                         burst_bytes=args.burst)
    return run_in_cluster(spec, argv)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perfmodel", description=__doc__.splitlines()[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog="examples:\n"
                            "  perfmodel presets --kind fabric --sources\n"
                            "  perfmodel predict --cluster custom --gpu a100 --gpus-per-node 8 --intra nvswitch-a100 \\\n"
                            "      --network 8x200Gb/s --workload resnet50 --samples-per-s 2500 --batch 256 --gpus 8,64\n"
                            "  perfmodel predict --help   (more examples: cluster files, library models, estimates)")
    from .fileio import package_version

    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("predict", help="predict throughput for 1..512 GPUs", epilog=PREDICT_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    p.add_argument("--strategy", default=",".join(STRATEGIES), help=f"comma list of {', '.join(STRATEGIES)}")
    p.add_argument("--gpus", default=DEFAULT_GPUS, help="1-512 (every integer), 1-512:x2, or a list 1,2,4")
    p.add_argument("--scaling", choices=["strong", "weak"], default="weak")
    p.add_argument("--batch", type=int, default=32, help="per-GPU batch (weak) or total batch (strong)")
    p.add_argument("--allreduce", choices=("auto",) + ALLREDUCE_ALGORITHMS, default="auto",
                   help="collective; auto: nccl (NCCL's ring/tree choice) on GPU clusters, ring on CPU ranks; "
                        "ompi: Open MPI 5.0 tuned's choice by communicator and message size; "
                        "'paper' is TernGrad Appendix B exactly")
    p.add_argument("--wire", choices=["fp32", "fp16", "bf16"], default=None,
                   help="ssgd gradient format (default: the workload file's wire, else fp32)")
    p.add_argument("--overlap", type=float, default=None,
                   help="constant fraction of communication hidden behind backprop (default: computed from "
                        "the gradient bucket schedule, see --bucket-mb)")
    p.add_argument("--stragglers", default=None,
                   help="gpu | none | homogeneous | heterogeneous | CV | CV_TASK,CV_MACHINE (gamma CVB model; "
                        "default gpu on GPU clusters: the chip-to-chip speed spread of one GPU model, CV "
                        f"{GPU_VARIABILITY_CV:.4f}, Sinha et al. SC22; none on CPU ranks)")
    p.add_argument("--terngrad-min-elems", type=int, default=1,
                   help="tensors smaller than this stay fp32 (default 1, as the trainers)")
    p.add_argument("--terngrad-fp32-last", dest="terngrad_fp32_last", action="store_true", default=True,
                   help="keep the classifier layer in fp32 (the default, as the trainers)")
    p.add_argument("--terngrad-ternarize-last", dest="terngrad_fp32_last", action="store_false",
                   help="ternarize the classifier layer too")
    p.add_argument("--terngrad-encode-rate", type=float, default=0.0,
                   help="elements/s to ternarize+pack (0: free, or the profile's measurement)")
    p.add_argument("--terngrad-decode-rate", type=float, default=0.0,
                   help="elements/s to unpack+sum one copy (0: free, or the profile's measurement)")
    p.add_argument("--terngrad-convert-rate", type=float, default=0.0,
                   help="elements/s to turn the summed codes into the float mean, once per step (0: free, "
                        "or the profile's measurement)")
    p.add_argument("--terngrad-ps-aggregate-rate", type=float, default=0.0,
                   help="elements (W x shard) per second of the ps exchange's own work on each rank: the "
                        "shards' sum, its packing, the sums' unpacking (0: two decodes, or the profile's "
                        "measurement)")
    p.add_argument("--terngrad-exchange", choices=TERNGRAD_EXCHANGES, default=DEFAULT_TERNGRAD_EXCHANGE,
                   help="levels (integer allreduce), ps (sharded parameter server) or allgather "
                        "(does not scale); the trainer's exchanges")
    p.add_argument("--terngrad-lanes", choices=TERNGRAD_LANES, default="int8",
                   help="levels exchange lanes: int8 (native integer types, as NCCL and gloo; default) or "
                        "packed (4-bit lanes at 2..7 workers, MPI's user-defined operation: CPU MPI ranks)")
    p.add_argument("--daso-b", type=int, default=4, help="DASO: global sync every B batches")
    p.add_argument("--daso-w", type=int, default=1, help="DASO: batches to overlap the global sync with (0 blocking)")
    p.add_argument("--daso-progress", choices=DASO_PROGRESS, default=None,
                   help="DASO: does the non-blocking sync move during compute (async: NCCL, RDMA) or only in "
                        "its wait (wait: MPI on CPU ranks)? default async, or wait with a CPU --profile")
    p.add_argument("--daso-nb-factor", type=float, default=None,
                   help="DASO: non-blocking sync time over a blocking allreduce (default 1, or the "
                        "--profile's iallreduce/allreduce)")
    p.add_argument("--ps-servers", type=int, default=1,
                   help="asgd, sync-ps: parameter servers; byteps: CPU summation machines (--ps-placement dedicated)")
    p.add_argument("--ps-update-ms", type=float, default=None,
                   help="asgd: milliseconds a server spends applying one whole push before it answers (default: "
                        "the --profile's optimizer step, else 0)")
    add_schedule_options(p)
    p.add_argument("--profile", default=None, help="profile JSON from `perfmodel profile`")
    p.add_argument("--link-from", action="append", default=[], metavar="FILE",
                   help="with --profile: the network between nodes from a `perfmodel profile --link` file, "
                        "nccl-tests output (all_reduce_perf, all_gather_perf, alltoall_perf) or OSU output "
                        "(osu_allreduce, osu_iallreduce, osu_allgather, osu_alltoall, osu_latency, osu_bw); "
                        "repeatable; the profile then gives one node")
    p.add_argument("--nodes-per-host", default=None, metavar="K|all",
                   help="with --profile: nodes that share one machine's CPU cores (all: emulated nodes, or the "
                        "profile's ranks on its own machine; default all without --link-from, else 1)")
    p.add_argument("--cores", type=int, default=None,
                   help="with --profile: CPU cores of one machine the ranks compute on (default: the profile's)")
    p.add_argument("--profile-links", default="network",
                   help="with a preset --cluster: which links the profile overrides (comma list of "
                        "intra, host, network, or none)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", default=None, help="write a throughput-vs-GPUs PNG here")
    p.set_defaults(func=cmd_predict)

    add_plan_parser(sub, add_input_options, _resolve_workload_cluster)
    p = sub.add_parser("presets", help="list fabrics, GPUs, clusters, workloads and library models with sources")
    p.add_argument("--kind", choices=["fabric", "gpu", "cluster", "workload", "model"], default=None)
    p.add_argument("--sources", action="store_true", help="print each preset's source")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("validate", help="measured (run logs) versus predicted step time and throughput")
    p.add_argument("logs", nargs="+", help="run logs (JSONL) written by `trainers run`")
    p.add_argument("--profile", action="append", default=[], help="profile JSON; repeat for each model")
    p.add_argument("--skip", type=int, default=5, help="warm-up steps to leave out of each run")
    p.add_argument("--cores", type=int, default=None, help="cores of one machine (default: the profile's)")
    p.add_argument("--link-from", action="append", default=[], metavar="FILE",
                   help="the network between nodes (a `perfmodel profile --link` file, nccl-tests or OSU output; "
                        "as for predict); default: the profile's own MPI runs")
    p.add_argument("--gpus-per-node", type=int, default=None,
                   help="ranks per node of the runs (default: DASO's --ranks-per-node, else 1)")
    p.add_argument("--nodes-per-host", default=None, metavar="K|all",
                   help="nodes that shared one machine's cores (default all without --link-from, else 1)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", default=None, help="write a predicted-vs-measured PNG here")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("emulate", help="run a command on an emulated multi-node cluster (network namespaces, "
                                       "shaped links; Linux, root)")
    p.add_argument("--nodes", type=int, default=2, help="emulated nodes (default 2)")
    p.add_argument("--ranks-per-node", type=int, default=1, help="MPI ranks placed on each node (default 1)")
    p.add_argument("--rate", default="1gbit", help="each node's link rate, tc notation (default 1gbit)")
    p.add_argument("--burst", type=int, default=0, metavar="BYTES",
                   help="token bucket depth of each link in bytes (default 0: rate x 131 us, at least two full "
                        "frames, 3028 B; a deeper bucket lets a message after idle pass faster than the rate)")
    p.add_argument("--cleanup", action="store_true",
                   help="only remove what killed emulations left behind (namespaces, links, hosts lines)")
    p.add_argument("argv", nargs=argparse.REMAINDER,
                   help="-- COMMAND...: run with $PERFMODEL_MPIEXEC_ARGS (mpiexec placement on the nodes)")
    p.set_defaults(func=cmd_emulate)

    try:
        from .profile.cli import add_profile_parser
    except ImportError:  # pragma: no cover - the profile hooks ship with the package
        add_profile_parser = None
    if add_profile_parser is not None:
        from .profile.cli import add_show_parser

        add_profile_parser(sub)
        add_show_parser(sub, "show-profile")
    return parser


def run_guarded(call) -> int:
    """Run a command callable; bad input (ValueError: SpecError, PresetError, CLIError, ProfileError...;
    OSError: missing files) is one line `perfmodel: error: ...` and exit status 2, never a traceback."""
    try:
        return int(call() or 0)
    except BrokenPipeError:  # e.g. `perfmodel predict | head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, OSError) as e:
        print(f"perfmodel: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perfmodel: interrupted", file=sys.stderr)
        return 130


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()

    def call() -> int:
        args = parser.parse_args(glue_dash_values(list(sys.argv[1:] if argv is None else argv)))
        if not getattr(args, "command", None):
            parser.print_help()
            return 2
        return args.func(args)

    return run_guarded(call)


if __name__ == "__main__":
    sys.exit(main())
