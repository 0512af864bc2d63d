"""`perfmodel`: predict and plan data-parallel training on 1 to 512 GPUs; profile, validate, emulate.

Bad input prints one line, ``perfmodel: error: ...``, and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli_checks import check_kernel_ms_per_mb
from .cli_guard import CLIError, OneLineParser, glue_dash_values, run_guarded, value_options
from .plan_cli import add_plan_parser
from .plot import plot_file
from .predict_cli import add_predict_parser, resolve_workload_cluster
from .predict_options import add_input_options, parse_nodes_per_host
from .predict_output import csv_text as _csv

EXAMPLES = ("examples:\n"
            "  perfmodel presets --kind fabric --sources\n"
            "  perfmodel predict --cluster custom --gpu a100 --gpus-per-node 8 --intra nvswitch-a100 \\\n"
            "      --network 8x200Gb/s --workload resnet50 --samples-per-s 2500 --batch 256 --gpus 8,64\n"
            "  perfmodel plan --workload resnet50 --cluster juwels-booster --epochs 90 --dataset-size 1281167 \\\n"
            "      --gpus-max 512 --price 2.5\n"
            "  perfmodel predict --help   (more examples: cluster files, library models, estimates)")

#: the subcommands whose one-value options take a value that starts with - (``--deadline -1h``) as given
DASH_VALUE_COMMANDS = ("predict", "plan", "validate", "emulate")


def cmd_presets(args: argparse.Namespace) -> int:
    from .presets import PRESET_KINDS, list_presets

    for p in list_presets(kinds=(args.kind,) if args.kind else PRESET_KINDS):
        print(f"{p.kind:8s} {p.name:20s} {p.summary}")
        if args.sources:
            print(f"{'':29s} source: {p.source}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .lab.validate import format_rows, mape, rows_json, validate

    if not args.profile:
        raise CLIError("validate needs --profile (from `perfmodel profile`), one per model trained")
    if args.skip < 0:
        raise CLIError(f"--skip must be >= 0 (warm-up steps left out of each run), got {args.skip}")
    if args.cores is not None and args.cores < 1:
        raise CLIError(f"--cores must be >= 1 (cores the runs shared), got {args.cores}")
    npH = None if args.nodes_per_host is None else parse_nodes_per_host(args.nodes_per_host, bool(args.link_from))
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        raise CLIError(f"--gpus-per-node must be >= 1 (ranks per node), got {args.gpus_per_node}")
    kms = check_kernel_ms_per_mb(args.kernel_ms_per_mb, CLIError)
    rows = validate(args.logs, args.profile, skip=args.skip, cores=args.cores, link=tuple(args.link_from),
                    gpus_per_node=args.gpus_per_node, nodes_per_host=npH, kernel_ms_per_mb=kms)
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
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if args.cleanup and argv:  # before anything is imported, built or removed
        raise CLIError(f"--cleanup only removes what killed emulations left behind; it runs no command "
                       f"(got {' '.join(argv)!r}): run the cleanup and the command separately")
    from .lab.emulate import EmulationSpec, cleanup_stale, parse_rate, run_in_cluster

    if args.cleanup:
        removed = cleanup_stale()
        print(f"removed {len(removed)}: {', '.join(removed)}" if removed else "nothing left behind")
        return 0
    spec = EmulationSpec(nodes=args.nodes, ranks_per_node=args.ranks_per_node, rate_bps=parse_rate(args.rate),
                         burst_bytes=args.burst)
    return run_in_cluster(spec, argv)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="perfmodel", description=__doc__.splitlines()[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    from .fileio import package_version

    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)

    add_predict_parser(sub)
    add_plan_parser(sub, add_input_options, resolve_workload_cluster)
    from .presets import PRESET_KINDS

    p = sub.add_parser("presets", help="list fabrics, GPUs, host CPUs, clusters, workloads and library models with "
                       "sources")
    p.add_argument("--kind", choices=list(PRESET_KINDS), default=None)
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
    p.add_argument("--kernel-ms-per-mb", type=float, default=None,
                   help="the kernel's network CPU milliseconds per MB sent between nodes, as for predict (default: "
                        "the --link-from profile's measurement; 0: not charged)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", type=plot_file, default=None,
                   help="write a predicted-vs-measured figure here (.png, .pdf or .svg)")
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
        from .lab.profile.cli import add_profile_parser
    except ImportError:  # pragma: no cover - the profile hooks ship with the package
        add_profile_parser = None
    if add_profile_parser is not None:
        from .lab.profile.cli import add_show_parser

        add_profile_parser(sub)
        add_show_parser(sub, "show-profile")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    options = value_options(parser, DASH_VALUE_COMMANDS)

    def call() -> int:
        args = parser.parse_args(glue_dash_values(list(sys.argv[1:] if argv is None else argv), options))
        if not getattr(args, "command", None):
            parser.print_help()
            return 2
        return args.func(args)

    return run_guarded(call)


if __name__ == "__main__":
    sys.exit(main())
