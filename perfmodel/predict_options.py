"""The options that describe a `perfmodel predict` run, and the Strategy objects built from them.

GPU counts (``parse_gpus``), stragglers, the schedule (Strategy fields), the cluster and workload input
options (perfmodel.cluster_input, perfmodel.workload_input), and which Strategy fields the command line
fixed (``fixed_fields``). Malformed values raise CLIError (one line, exit 2).
"""

from __future__ import annotations

import argparse
import math

from .cli_guard import CLIError
from .overlap_causes import parse_slowdown
from .specs import (ALL_STRATEGIES, OVERLAP_EFFICIENCY, PS_PLACEMENTS, STAGINGS, WIRE_CASTS, Strategy,
                    daso_strategy_fields)
from .stragglers import GPU_VARIABILITY_CV


MAX_GPU_COUNTS = 100_000
"""The most GPU counts one --gpus range may list (each is a row of the prediction)."""


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
                    if hi - lo >= MAX_GPU_COUNTS:
                        raise CLIError(f"--gpus {text!r}: {hi - lo + 1:,} counts in one range; at most "
                                       f"{MAX_GPU_COUNTS:,} (use a doubling range such as {lo}-{hi}:x2)")
                    out.extend(range(lo, hi + 1))
            else:
                if step:
                    raise ValueError
                v = int(part)
                if v < 1:
                    raise ValueError
                out.append(v)
    except CLIError:
        raise
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
    p.add_argument("--bucket-copies", type=int, default=2,
                   help="copies of the gradient into the buckets and back per step, charged at the GPU's memory "
                        "bandwidth (default 2: DDP's gradient_as_bucket_view=False, Horovod's fusion buffer; 0: "
                        "gradient_as_bucket_view=True, or a collective per tensor)")
    p.add_argument("--wire-cast", choices=WIRE_CASTS, default="separate",
                   help="with --wire fp16/bf16, how fp32 gradients reach it and back: separate casts (DDP's "
                        "compress hooks, Horovod's Compression.fp16), in-copy (the bucket copies convert), none "
                        "(an fp16 model's gradients are already fp16); charged at the GPU's memory bandwidth")
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
    if not args.bucket_copies >= 0:
        raise CLIError(f"--bucket-copies must be >= 0, got {args.bucket_copies}")
    sigma, mu = parse_slowdown(args.overlap_slowdown)
    return dict(bucket_copies=args.bucket_copies, wire_cast=args.wire_cast, bucket_mb=args.bucket_mb,
                staging=args.staging, step_overhead_s=args.step_overhead_ms / 1e3,
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
    g.add_argument("--gpu-capability", default=None, metavar="MAJOR.MINOR",
                   help="an NVIDIA GPU's CUDA compute capability (9.0 for Hopper): its cuBLAS workspaces count in "
                        "memory (a preset's is known)")
    g.add_argument("--gpu-host", default=None, metavar="FABRIC",
                   help="the GPU's host link (pcie3, pcie4, pcie5; default pcie5 for a described GPU)")
    g.add_argument("--gpu-topology", default=None, metavar="FILE",
                   help="what `nvidia-smi topo -m` prints on one node: the intra link becomes the best GPU ring "
                        "through its PCIe, socket and NVLink paths, for the whole node and for GPUs 0..g-1 "
                        "(instead of --intra); docs/cli.md")
    g.add_argument("--host-cpu", default=None, metavar="CPU",
                   help="the node's CPU for --gpu-topology paths through it (broadwell, skylake, sapphire-rapids, "
                        "amd-zen3 ...; `perfmodel presets --kind host-cpu`), or its model name as lscpu prints it")
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


def parse_nodes_per_host(text: str | None, linked: bool) -> int:
    """--nodes-per-host: nodes sharing one machine's cores (0: all of them); None: 1 with --link-from, else all."""
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
    (perfmodel.lab.profile.predictor.FIXABLE)."""
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
    if args.overlap_slowdown is not None:
        out.add("overlap_slowdown")
    return frozenset(out)
