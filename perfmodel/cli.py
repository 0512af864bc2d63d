"""`perfmodel`: predict | presets | profile | validate.

Bad input prints one line, ``perfmodel: error: ...``, and exits with status 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from pathlib import Path

from .specs import (Strategy, STRATEGIES, ALLREDUCE_ALGORITHMS, DASO_PROGRESS, TERNGRAD_EXCHANGES,
                    daso_strategy_fields)

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


def build_strategies(args: argparse.Namespace, codec_rates: tuple[float, float] = (0.0, 0.0),
                     daso: dict | None = None) -> list[Strategy]:
    """Strategies from the command line; TernGrad codec rates from a profile unless given."""
    names = [s.strip() for s in args.strategy.split(",") if s.strip()]
    if not names:
        raise CLIError("--strategy is empty")
    cv_task, cv_mach = _parse_straggler(args.stragglers)
    daso = dict(daso or {})  # the profile's DASO progress and factor; the command line overrides them
    if args.daso_progress:
        daso["progress"] = args.daso_progress
    if args.daso_nb_factor is not None:
        daso["nonblocking_factor"] = args.daso_nb_factor
    out = []
    for name in names:
        if name not in STRATEGIES:
            raise CLIError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}")
        out.append(Strategy(name, allreduce=args.allreduce, overlap=args.overlap, wire=args.wire,
                            terngrad_min_elems=args.terngrad_min_elems, terngrad_fp32_last=args.terngrad_fp32_last,
                            terngrad_encode_elems_per_s=args.terngrad_encode_rate or codec_rates[0],
                            terngrad_decode_elems_per_s=args.terngrad_decode_rate or codec_rates[1],
                            terngrad_exchange=args.terngrad_exchange, daso_B=args.daso_b, daso_W=args.daso_w,
                            ps_servers=args.ps_servers, straggler_cv=cv_task, straggler_machine_cv=cv_mach,
                            **daso_strategy_fields(daso)))
    return out


def _resolve_workload_cluster(args: argparse.Namespace):
    from . import presets

    profile = None
    if getattr(args, "profile", None):
        from .profile.schema import load_profile

        profile = load_profile(args.profile)
    if profile is not None:
        from .profile.schema import profile_cluster, profile_daso, profile_workload

        workload = profile_workload(profile) if args.workload is None else presets.load_workload(args.workload)
        base = None if args.cluster in (None, "local") else presets.load_cluster(args.cluster)
        cluster = profile_cluster(profile, base, links=args.profile_links)
        codec = profile.compute.codec if profile.compute is not None else None
        rates = codec.rates() if codec is not None and args.workload is None else (0.0, 0.0)
        daso = profile_daso(profile) if base is None else {}
    else:
        workload = presets.load_workload(args.workload or "vgg-a")
        cluster = presets.load_cluster(args.cluster or "terngrad-infiniband")
        rates, daso = (0.0, 0.0), {}
    return workload, cluster, rates, daso


TABLE_COLUMNS = [("strategy", "strategy", "{}"), ("gpus", "gpus", "{:d}"), ("nodes", "nodes", "{:d}"),
                 ("batch_per_gpu", "b/gpu", "{:.4g}"), ("t_compute_s", "t_comp ms", "{:.2f}"),
                 ("t_comm_s", "t_comm ms", "{:.2f}"), ("t_iter_s", "t_iter ms", "{:.2f}"),
                 ("throughput", "samples/s", "{:,.0f}"), ("speedup", "speedup", "{:.1f}"),
                 ("efficiency", "eff", "{:.0%}")]


def format_table(records: list[dict]) -> str:
    """A fixed-width table for a terminal (times in milliseconds)."""
    rows = []
    for r in records:
        row = []
        for key, _, fmt in TABLE_COLUMNS:
            v = r[key]
            if key.endswith("_s"):
                v = v * 1e3
            row.append(fmt.format(v))
        rows.append(row)
    heads = [h for _, h, _ in TABLE_COLUMNS]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths)))]
    prev = None
    for r in rows:
        if prev is not None and r[0] != prev:
            lines.append("")
        prev = r[0]
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def _csv(records: list[dict]) -> str:
    keys: list[str] = []
    for r in records:
        keys.extend(k for k in r if k not in keys)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buf.getvalue()


def cmd_predict(args: argparse.Namespace) -> int:
    from .scaling import predict

    gpus = parse_gpus(args.gpus)
    workload, cluster, codec_rates, daso = _resolve_workload_cluster(args)
    records: list[dict] = []
    for strategy in build_strategies(args, codec_rates, daso):
        records.extend(predict(workload, cluster, strategy, gpus, scaling=args.scaling, batch=args.batch).records())
    if args.format == "json":
        text = json.dumps(records, indent=1)
    elif args.format == "csv":
        text = _csv(records)
    else:
        _, _, source = workload.compute_for(cluster)
        head = (f"# {workload.name} ({workload.parameters / 1e6:.2f}M params) on {cluster.name} "
                f"({cluster.gpus_per_node} GPUs/node), {args.scaling} scaling, batch {args.batch}"
                f"{' per GPU' if args.scaling == 'weak' else ' total'}, allreduce {args.allreduce}\n"
                f"# compute: {source}")
        text = head + "\n" + format_table(records)
    print(text)
    if args.plot:
        from .plot import plot_throughput

        plot_throughput(records, Path(args.plot), title=f"{workload.name} on {cluster.name} ({args.scaling})")
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from .presets import list_presets

    for p in list_presets():
        if args.kind and p.kind != args.kind:
            continue
        print(f"{p.kind:8s} {p.name:20s} {p.summary}")
        if args.sources:
            print(f"{'':29s} source: {p.source}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import format_rows, mape, rows_json, validate

    if not args.profile:
        raise CLIError("validate needs --profile (from `perfmodel profile`), one per model trained")
    rows = validate(args.logs, args.profile, skip=args.skip, cores=args.cores)
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
    spec = EmulationSpec(nodes=args.nodes, ranks_per_node=args.ranks_per_node, rate_bps=parse_rate(args.rate))
    return run_in_cluster(spec, argv)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perfmodel", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("predict", help="predict throughput for 1..512 GPUs")
    p.add_argument("--workload", default=None, help="workload preset (default vgg-a; see `perfmodel presets`)")
    p.add_argument("--cluster", default=None, help="cluster preset (default terngrad-infiniband), or local with --profile")
    p.add_argument("--strategy", default="ssgd,terngrad,daso,asgd", help=f"comma list of {', '.join(STRATEGIES)}")
    p.add_argument("--gpus", default=DEFAULT_GPUS, help="1-512 (every integer), 1-512:x2, or a list 1,2,4")
    p.add_argument("--scaling", choices=["strong", "weak"], default="weak")
    p.add_argument("--batch", type=int, default=32, help="per-GPU batch (weak) or total batch (strong)")
    p.add_argument("--allreduce", choices=ALLREDUCE_ALGORITHMS, default="ring",
                   help="collective; 'paper' is TernGrad Appendix B exactly")
    p.add_argument("--wire", choices=["fp32", "fp16", "bf16"], default="fp32", help="ssgd gradient format")
    p.add_argument("--overlap", type=float, default=0.0, help="fraction of communication hidden behind backprop")
    p.add_argument("--stragglers", default=None,
                   help="none | homogeneous | heterogeneous | CV | CV_TASK,CV_MACHINE (gamma CVB model)")
    p.add_argument("--terngrad-min-elems", type=int, default=0, help="tensors smaller than this stay fp32")
    p.add_argument("--terngrad-fp32-last", action="store_true", help="keep the classifier layer in fp32")
    p.add_argument("--terngrad-encode-rate", type=float, default=0.0,
                   help="elements/s to ternarize+pack (0: free, or the profile's measurement)")
    p.add_argument("--terngrad-decode-rate", type=float, default=0.0,
                   help="elements/s to unpack+average one copy (0: free, or the profile's measurement)")
    p.add_argument("--terngrad-exchange", choices=TERNGRAD_EXCHANGES, default="levels")
    p.add_argument("--daso-b", type=int, default=4, help="DASO: global sync every B batches")
    p.add_argument("--daso-w", type=int, default=1, help="DASO: batches to overlap the global sync with (0 blocking)")
    p.add_argument("--daso-progress", choices=DASO_PROGRESS, default=None,
                   help="DASO: does the non-blocking sync move during compute (async: NCCL, RDMA) or only in "
                        "its wait (wait: MPI on CPU ranks)? default async, or wait with a CPU --profile")
    p.add_argument("--daso-nb-factor", type=float, default=None,
                   help="DASO: non-blocking sync time over a blocking allreduce (default 1, or the "
                        "--profile's iallreduce/allreduce)")
    p.add_argument("--ps-servers", type=int, default=1, help="ASGD: parameter servers")
    p.add_argument("--profile", default=None, help="profile JSON from `perfmodel profile`")
    p.add_argument("--profile-links", default="network",
                   help="with a preset --cluster: which links the profile overrides (comma list of "
                        "intra, host, network, or none)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", default=None, help="write a throughput-vs-GPUs PNG here")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("presets", help="list the cluster and workload presets with their sources")
    p.add_argument("--kind", choices=["cluster", "workload"], default=None)
    p.add_argument("--sources", action="store_true", help="print each preset's source")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("validate", help="measured (run logs) versus predicted step time and throughput")
    p.add_argument("logs", nargs="+", help="run logs (JSONL) written by `trainers run`")
    p.add_argument("--profile", action="append", default=[], help="profile JSON; repeat for each model")
    p.add_argument("--skip", type=int, default=5, help="warm-up steps to leave out of each run")
    p.add_argument("--cores", type=int, default=None, help="cores the runs shared (default: the profile's)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", default=None, help="write a predicted-vs-measured PNG here")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("emulate", help="run a command on an emulated multi-node cluster (network namespaces, "
                                       "shaped links; Linux, root)")
    p.add_argument("--nodes", type=int, default=2, help="emulated nodes (default 2)")
    p.add_argument("--ranks-per-node", type=int, default=1, help="MPI ranks placed on each node (default 1)")
    p.add_argument("--rate", default="1gbit", help="each node's link rate, tc notation (default 1gbit)")
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
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help()
            return 2
        return args.func(args)

    return run_guarded(call)


if __name__ == "__main__":
    sys.exit(main())
