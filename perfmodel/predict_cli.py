"""`perfmodel predict`: its options, and everything it computes and prints from them.

``predict_result`` is the command's whole computation (what perfmodel.lab.validate runs for each run log);
``cmd_predict`` prints it as a table, CSV or JSON. With ``--profile`` and no preset cluster each point is
predicted from the profile on its own (perfmodel.lab.profile.predictor); otherwise from the cluster and
workload the options describe (perfmodel.scaling). Bad input raises CLIError, SpecError or ProfileError.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cli_checks import MAX_STEP_COMPUTE_S, check_kernel_ms_per_mb, print_compute_warnings
from .cli_guard import CLIError, OneLineParser
from .memory import with_memory
from .predict_options import (add_input_options, add_schedule_options, build_strategies, fixed_fields,
                              parse_gpus, parse_nodes_per_host)
from .plot import plot_file
from .predict_output import csv_text as _csv, format_table, refuse_non_finite
from .specs import (ALLREDUCE_ALGORITHMS, DASO_PROGRESS, DEFAULT_TERNGRAD_EXCHANGE, STRATEGIES, TERNGRAD_EXCHANGES,
                    TERNGRAD_LANES, Strategy)
from .stragglers import GPU_VARIABILITY_CV

DEFAULT_GPUS = "1-512:x2"

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


def _cluster_options(args: argparse.Namespace):
    from .cluster_input import ClusterOptions

    return ClusterOptions(gpu=args.gpu, gpus_per_node=args.gpus_per_node, intra=args.intra, network=args.network,
                          nics=args.nics, nodes=args.nodes, gpu_tflops=args.gpu_tflops, gpu_mem_bw=args.gpu_mem_bw,
                          gpu_memory_gb=args.gpu_memory_gb, gpu_host=args.gpu_host, gpu_capability=args.gpu_capability,
                          gpu_topology=args.gpu_topology, host_cpu=args.host_cpu)


def _compute_options(args: argparse.Namespace, batch: int):
    from .workload_input import ComputeOptions

    return ComputeOptions(samples_per_s=args.samples_per_s, compute_ms=args.compute_ms, estimate=args.estimate,
                          batch=batch, accumulate=args.accumulate)


def resolve_workload_cluster(args: argparse.Namespace):
    """(workload, cluster, TernGrad codec rates, DASO fields, workload settings) from the command line."""
    from .cluster_input import apply_overrides, resolve_cluster
    from .presets import WorkloadSettings
    from .workload_input import resolve_workload

    copts = _cluster_options(args)
    # the measured rate is per GPU at the per-GPU batch: --batch (weak) or --batch / 1 GPU (strong)
    wopts = _compute_options(args, args.batch)
    profile = None
    if getattr(args, "profile", None):
        from .lab.profile.profile_file import load_profile

        profile = load_profile(args.profile)
    settings = WorkloadSettings()
    if profile is not None:
        from .lab.profile.to_specs import profile_cluster, profile_daso, profile_workload

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
    prediction from a profile on its own cluster the points (perfmodel.lab.profile.predictor.Point)."""

    records: list
    notes: list
    header: str
    points: list | None = None


def _profiled_result(args: argparse.Namespace, gpus: list[int]) -> PredictResult:
    """`perfmodel predict --profile P [--link-from L] [--cluster local]`: each strategy and GPU count
    predicted from the profile on its own (perfmodel.lab.profile.predictor), as `perfmodel validate` does."""
    from dataclasses import replace

    from .cluster_input import apply_overrides
    from .lab.profile.linkfile import load_links
    from .lab.profile.predictor import Layout, profiled_records
    from .lab.profile.profile_file import load_profile
    from .lab.profile.to_specs import profile_cluster
    from .specs import Cluster, Link
    from .workload_input import resolve_workload

    profile = load_profile(args.profile)
    link = load_links(args.link_from) if args.link_from else None
    if args.cores is not None and args.cores < 1:
        raise CLIError(f"--cores must be >= 1 (CPU cores of one machine), got {args.cores}")
    kms = check_kernel_ms_per_mb(args.kernel_ms_per_mb, CLIError)
    layout = Layout(gpus_per_node=args.gpus_per_node or 1,
                    nodes_per_host=parse_nodes_per_host(args.nodes_per_host, link is not None), cores=args.cores,
                    kernel_s_per_byte=kms * 1e-9 if kms is not None else None)
    copts = replace(_cluster_options(args), gpus_per_node=None)
    edit = (lambda c: apply_overrides(c, copts)) if copts.any() else None
    settings = None
    workload = None
    if args.workload is not None:
        workload, settings = resolve_workload(args.workload, profile_cluster(profile, op_bytes=None),
                                              _compute_options(args, args.batch))
    if args.wire is None:
        args.wire = (settings.wire if settings is not None else None) or "fp32"
    on_cpu = profile.compute is None or profile.compute.device == "cpu"
    free = Link(latency_s=0.0, bandwidth_Bps=float("inf"), source="probe")
    probe = Cluster(name="local", gpus_per_node=1, intra=free, network=free,
                    host=free if on_cpu else Link(latency_s=1e-6, bandwidth_Bps=1e10, source="probe"))
    strategies = build_strategies(args, cluster=probe)
    records, notes, points = profiled_records(profile, strategies, gpus, args.batch, layout, link=link,
                                              workload=workload, fixed=fixed_fields(args), scaling=args.scaling,
                                              edit=edit, accumulate=args.accumulate or 1)
    model = profile.model.name if profile.model is not None else "?"
    where = "nodes share one machine's cores" if layout.nodes_per_host == 0 else \
        f"{layout.nodes_per_host} node(s) per machine"
    header = (f"# {workload.name if workload is not None else model} from profile {args.profile}"
              f"{' and link ' + ','.join(args.link_from) if args.link_from else ''}, {args.scaling} scaling, "
              f"batch {args.batch}{' per GPU' if args.scaling == 'weak' else ' total'}"
              f"{f' x {args.accumulate} micro-batches' if (args.accumulate or 1) > 1 else ''}, allreduce "
              f"{strategies[0].allreduce}, wire {args.wire}\n"
              f"# layout: {layout.gpus_per_node} rank(s) per node, {where}, "
              f"{layout.cores or profile.machine.cpu_affinity} cores per machine")
    return PredictResult(records, notes, header, points)


def _with_node_overhead(args: argparse.Namespace, workload, cluster, strategies: list[Strategy]):
    """--node-rate: the one strategy's step overhead from its measured one-node rate (perfmodel.node_overhead),
    and a note that says what it is."""
    from dataclasses import replace

    from .node_overhead import node_step
    from .specs import SpecError

    if len(strategies) != 1:
        raise CLIError(f"--node-rate is one scheme's measured rate: give one --strategy, not {len(strategies)}")
    if args.scaling != "weak":
        raise CLIError("--node-rate needs --scaling weak (the node ran --batch samples per GPU)")
    if args.step_overhead_ms:
        raise CLIError("give --node-rate or --step-overhead-ms, not both: the rate sets the overhead")
    try:
        node = node_step(workload, cluster, strategies[0], args.batch, args.node_rate)
    except SpecError as e:
        raise CLIError(f"--node-rate: {e}") from None
    if node.measured_s > MAX_STEP_COMPUTE_S:
        raise CLIError(f"--node-rate {args.node_rate:g} samples/s makes one node's step take "
                       f"{node.measured_s / 3600:.3g} hours, more than a day")
    o = node.overhead_s
    note = (f"step overhead {o * 1e3:.4g} ms per multi-GPU step from --node-rate {args.node_rate:g} samples/s on "
            f"one node of {cluster.gpus_per_node} GPUs (the model's one-node step {node.model_s * 1e3:.4g} ms, "
            f"measured {node.measured_s * 1e3:.4g} ms); the same as --step-overhead-ms {o * 1e3:.17g}")
    return [replace(strategies[0], step_overhead_s=o)], [note]


def predict_result(args: argparse.Namespace) -> PredictResult:
    """Everything `perfmodel predict` prints, computed from its parsed arguments (``build_parser``)."""
    from .cluster_input import describe, link_notes, topology_note

    gpus = parse_gpus(args.gpus)
    if args.profile and args.cluster in (None, "local"):
        if args.node_rate is not None:
            raise CLIError("--node-rate describes a preset or custom cluster's node, not a --profile's")
        return _profiled_result(args, gpus)
    if args.link_from or args.nodes_per_host is not None or args.cores is not None \
            or args.kernel_ms_per_mb is not None:
        raise CLIError("--link-from, --nodes-per-host, --cores and --kernel-ms-per-mb describe a cluster predicted "
                       "from --profile (with --cluster local or none)")
    workload, cluster, codec_rates, daso, settings = resolve_workload_cluster(args)
    if args.wire is None:  # the workload file's wire format, else fp32
        args.wire = settings.wire or "fp32"
    strategies = build_strategies(args, codec_rates, daso, cluster)
    node_note = []
    if args.node_rate is not None:
        strategies, node_note = _with_node_overhead(args, workload, cluster, strategies)
    print_compute_warnings(settings.warnings)
    records, notes = predict_records(workload, cluster, strategies, gpus, args.scaling, args.batch)
    notes = node_note + notes + link_notes(cluster, max(gpus), node_measured=args.node_rate is not None)
    from .exposure import exposure_note

    notes += [n for n in (exposure_note(records),) if n]  # the most exposed prediction across nodes
    records, notes = with_memory(records, notes, workload, cluster, strategies)
    _, _, source = workload.compute_for(cluster)
    accumulate = f" x {workload.accumulate} micro-batches" if workload.accumulate > 1 else ""
    intra = topology_note(cluster)  # where a node layout priced the intra link
    header = (f"# {workload.name} ({workload.parameters / 1e6:.2f}M params) on {cluster.name}, {args.scaling} "
              f"scaling, batch {args.batch}{' per GPU' if args.scaling == 'weak' else ' total'}{accumulate}, "
              f"allreduce {strategies[0].allreduce}{', staged on host' if args.staging == 'host' else ''}, "
              f"wire {args.wire}\n"
              f"# cluster: {describe(cluster)}\n"
              + (f"# intra: {intra}\n" if intra else "")
              + f"# compute: {source}")
    return PredictResult(records, notes, header)


def cmd_predict(args: argparse.Namespace) -> int:
    from .cli_checks import check_predict_args

    print("".join(f"perfmodel: warning: {w}\n" for w in check_predict_args(args, CLIError)), end="", file=sys.stderr)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, in one line
        result = predict_result(args)
    records, notes = result.records, result.notes
    refuse_non_finite(records, "prediction")
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


def add_predict_parser(sub) -> None:
    """The `predict` subcommand (func=cmd_predict) on an argparse subparsers object."""
    p = sub.add_parser("predict", help="predict throughput for 1..512 GPUs", epilog=PREDICT_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    p.add_argument("--strategy", default=",".join(STRATEGIES), help=f"comma list of {', '.join(STRATEGIES)}")
    p.add_argument("--gpus", default=DEFAULT_GPUS, help="1-512 (every integer), 1-512:x2, or a list 1,2,4")
    p.add_argument("--scaling", choices=["strong", "weak"], default="weak")
    p.add_argument("--node-rate", type=float, default=None, metavar="SAMPLES_PER_S",
                   help="the one --strategy's throughput measured on one node with all its GPUs at --batch per GPU "
                        "(and --accumulate); "
                        "the step it took beyond the model's one-node step is charged to every multi-GPU step "
                        "(perfmodel.node_overhead, docs/model.md)")
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
    last = p.add_mutually_exclusive_group()  # two answers to one question: refused together
    last.add_argument("--terngrad-fp32-last", dest="terngrad_fp32_last", action="store_true", default=True,
                      help="keep the classifier layer in fp32 (the default, as the trainers)")
    last.add_argument("--terngrad-ternarize-last", dest="terngrad_fp32_last", action="store_false",
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
    p.add_argument("--kernel-ms-per-mb", type=float, default=None,
                   help="with --profile: CPU milliseconds the kernel's network work takes per MB sent between "
                        "nodes, charged on the cores of the nodes that share a machine (default: the --link-from "
                        "profile's measurement, else not charged)")
    p.add_argument("--profile-links", default="network",
                   help="with a preset --cluster: which links the profile overrides (comma list of "
                        "intra, host, network, or none)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", type=plot_file, default=None,
                   help="write a throughput-vs-GPUs figure here (.png, .pdf or .svg)")
    p.set_defaults(func=cmd_predict)


def predict_parser() -> argparse.ArgumentParser:
    """A `perfmodel` parser that knows the predict subcommand alone: what perfmodel.lab.validate parses its
    `perfmodel predict` commands with."""
    parser = OneLineParser(prog="perfmodel")
    add_predict_parser(parser.add_subparsers(dest="command", parser_class=OneLineParser))
    return parser
