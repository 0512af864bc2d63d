"""`perfmodel plan`: which scheme, how many GPUs, how long, at what cost, and will it fit (perfmodel.plan).

perfmodel.cli's build_parser calls ``add_plan_parser(sub, add_input_options, resolve)`` and passes its own
option and input helpers, so this module never imports perfmodel.cli (no import circle).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

from .cli_checks import print_compute_warnings
from .launch_settings import launch_settings
from .learning_effect import effect_for
from .memory import (OPTIMIZERS, PRECISIONS, cluster_memory_bytes, cluster_workspace_bytes, default_optimizer,
                     format_bytes, load_activations)
from .plan import (RANKS, Constraints, PlanInput, batch_choices, candidates, infeasible_message, pareto, rank,
                   search, why_line, with_node_overheads, work_from)
from .plan_interval import interval
from .plot import plot_file
from .predict_output import refuse_non_finite
from .specs import ALL_STRATEGIES, SpecError
from .stragglers import GPU_VARIABILITY_CV

PLAN_EXAMPLES = """examples:
  perfmodel plan --workload resnet50 --cluster juwels-booster --epochs 90 --dataset-size 1281167 \\
      --gpus-max 512 --price 2.5
  perfmodel plan --workload gpt2-xl --estimate mixed --cluster dgx1-v100 --tokens 3e10 --seq-len 1024 \\
      --batch 1-16 --optimizer adam --precision mixed --deadline 14d --rank cost
"""
JSON_KEYS = ("gpus", "strategy", "label", "samples_per_s", "efficiency", "time_to_train_s", "gpu_hours", "cost",
             "memory_per_gpu_bytes", "fits", "batch_per_gpu", "accumulate", "global_batch", "comm_exposed_share",
             "interval", "learning_effect", "memory", "settings")
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds from "36h", "90m", "2d" or "3600s": the unit is required (is a bare 36 hours or seconds?)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*(s|m|min|h|d)\s*", text or "")
    if not m or not (math.isfinite(float(m.group(1))) and float(m.group(1)) > 0):
        raise argparse.ArgumentTypeError(f"must be a positive duration with its unit, like 36h, 90m, 2d or "
                                         f"3600s, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_memory(text: str) -> float:
    """Bytes from "16GiB", "40GB", "80G" (GiB), "512MiB": the unit is required (a bare 32 is not 32 bytes)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(GiB|GB|G|MiB|MB)\s*", text or "")
    if not m or not float(m.group(1)) > 0:
        raise argparse.ArgumentTypeError(f"must be a memory size with its unit, like 16GiB or 40GB, got {text!r}")
    scale = {"GiB": 2**30, "G": 2**30, "GB": 1e9, "MiB": 2**20, "MB": 1e6}[m.group(2)]
    return float(m.group(1)) * scale


def _positive(kind):
    def parse(text: str):
        try:
            v = kind(float(text)) if kind is int else float(text)
        except (ValueError, OverflowError):  # int(inf) overflows
            raise argparse.ArgumentTypeError(f"must be a {'positive integer' if kind is int else 'number > 0'}, "
                                             f"got {text!r}") from None
        if not (math.isfinite(v) and v > 0) or (kind is int and v != float(text)):
            raise argparse.ArgumentTypeError(f"must be a {'positive integer' if kind is int else 'number > 0'}, "
                                             f"got {text!r}")
        return v
    return parse


def parse_node_rates(text: str) -> dict[str, float]:
    """"ssgd=2000,sync-ps=1500" -> {"ssgd": 2000.0, "sync-ps": 1500.0} (samples/s, each > 0 and finite)."""
    out: dict[str, float] = {}
    for part in (x.strip() for x in text.split(",") if x.strip()):
        name, eq, value = (x.strip() for x in part.partition("="))
        try:
            rate = float(value) if eq else float("nan")
        except ValueError:
            rate = float("nan")
        if name not in ALL_STRATEGIES:
            raise argparse.ArgumentTypeError(f"unknown strategy {name!r} in {part!r}; choose from "
                                             f"{', '.join(ALL_STRATEGIES)}")
        if not (math.isfinite(rate) and rate > 0):
            raise argparse.ArgumentTypeError(f"{part!r}: give STRATEGY=SAMPLES_PER_S with a rate > 0")
        out[name] = rate
    if not out:
        raise argparse.ArgumentTypeError("give STRATEGY=SAMPLES_PER_S[,...]")
    return out


def parse_batch_range(text: str) -> tuple[int, int]:
    """(lo, hi) from "32" or "16-128"."""
    try:
        lo, _, hi = text.partition("-")
        lo_i, hi_i = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a per-GPU batch N or a range LO-HI, got {text!r}") from None
    if lo_i < 1 or hi_i < lo_i:
        raise argparse.ArgumentTypeError(f"must be a per-GPU batch N or a range LO-HI with 1 <= LO <= HI, got {text!r}")
    return lo_i, hi_i


def add_plan_parser(sub, add_input_options, resolve) -> None:
    """The `plan` subcommand; ``add_input_options`` and ``resolve`` are perfmodel.cli's --workload/--cluster
    options and their resolver (workload, cluster, codec rates, DASO fields, settings)."""
    p = sub.add_parser("plan", help="rank schemes x GPU counts by time to train or cost, with memory per GPU",
                       epilog=PLAN_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    g = p.add_argument_group("work", "one of: --epochs with --dataset-size, --samples, --tokens with --seq-len")
    g.add_argument("--epochs", type=_positive(float), default=None)
    g.add_argument("--dataset-size", type=_positive(int), default=None, help="samples in one epoch")
    g.add_argument("--samples", type=_positive(float), default=None, help="samples to process in all")
    g.add_argument("--tokens", type=_positive(float), default=None, help="tokens to process (with --seq-len)")
    g.add_argument("--seq-len", type=_positive(int), default=None, help="tokens per sample")
    g = p.add_argument_group("constraints")
    g.add_argument("--gpus-max", type=_positive(int), default=512)
    g.add_argument("--deadline", type=parse_duration, default=None, help="e.g. 36h, 90m, 2d")
    g.add_argument("--budget", type=_positive(float), default=None, help="in the price's currency")
    g.add_argument("--min-efficiency", type=_positive(float), default=None, help="0..1")
    g.add_argument("--global-batch", type=_positive(int), default=None,
                   help="fixed samples per update: per-GPU batch x accumulation x GPUs (accumulation 1, 2, 4, 8 "
                        "searched)")
    g.add_argument("--batch", type=parse_batch_range, default=(32, 32),
                   help="per-GPU micro-batch N or a range LO-HI (default 32)")
    g.add_argument("--same-update", action="store_true",
                   help="only schemes that compute the SSGD update (no TernGrad, asynchronous, DASO)")
    g.add_argument("--strategy", default=None, help=f"comma list to search among {', '.join(ALL_STRATEGIES)}")
    g.add_argument("--node-rate", type=parse_node_rates, default=None, metavar="STRATEGY=SAMPLES_PER_S[,...]",
                   help="throughput each strategy measured on one node with all its GPUs, at the smallest --batch per "
                        "GPU: the step it took beyond the model's one-node step is charged to every multi-GPU step "
                        "of that strategy's candidates (perfmodel.node_overhead)")
    g = p.add_argument_group("price and memory")
    g.add_argument("--price", type=_positive(float), default=None,
                   help="price per GPU-hour (default: the cluster file's price_per_gpu_hour)")
    g.add_argument("--optimizer", choices=OPTIMIZERS, default=None,
                   help="optimizer state for the memory estimate (default adam for transformers, momentum otherwise)")
    g.add_argument("--precision", choices=PRECISIONS, default=None,
                   help="fp32 or mixed (fp16/bf16 + fp32 master); default: mixed with --estimate mixed, else fp32")
    g.add_argument("--gpu-memory", type=parse_memory, default=None, help="memory per GPU, e.g. 32GiB")
    g = p.add_argument_group("output")
    g.add_argument("--rank", choices=RANKS, default="time")
    g.add_argument("--top", type=_positive(int), default=10, help="rows to print (default 10)")
    g.add_argument("--all", action="store_true", help="print every row, infeasible ones flagged")
    g.add_argument("--format", choices=["table", "csv", "json"], default="table")
    g.add_argument("--plot", type=plot_file, default=None,
                   help="write time to train against cost (.png, .pdf or .svg), Pareto front marked")
    p.set_defaults(func=lambda args: cmd_plan(args, resolve))


def _price(args, cluster_ref: str | None) -> float | None:
    if args.price is not None:
        return args.price
    if cluster_ref and cluster_ref.split(":")[0].endswith(".toml"):
        from .cluster_input import split_file_ref, table_from_file

        path, name = split_file_ref(cluster_ref)
        _, table, where = table_from_file(path, name, "cluster", "gpus_per_node")
        v = table.get("price_per_gpu_hour")
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise SpecError(f"{where}: price_per_gpu_hour must be a number > 0, got {v!r}")
            return float(v)
    return None


def build_input(args, workload, cluster) -> PlanInput:
    work = work_from(args.epochs, args.dataset_size, args.samples, args.tokens, args.seq_len)
    constraints = Constraints(gpus_max=args.gpus_max, deadline_s=args.deadline, budget=args.budget,
                              min_efficiency=args.min_efficiency, global_batch=args.global_batch)
    acts = load_activations(workload.name)
    if acts is None:
        raise SpecError(f"workload {workload.name!r} has no activation sizes (data/presets/activations.json): plan "
                        f"needs a library model")
    if args.gpu_memory is not None:
        capacity = args.gpu_memory
    else:
        capacity = cluster_memory_bytes(cluster)
        if capacity is None:
            raise SpecError(f"no memory size for GPU {cluster.gpu or '?'!r} (data/presets/gpu_memory.toml): give "
                            f"--gpu-memory, e.g. 16GiB")
    lo, hi = args.batch
    accs = (1, 2, 4, 8) if args.global_batch is not None else (args.accumulate or 1,)
    price = _price(args, args.cluster)
    if args.budget is not None and price is None:
        raise SpecError("--budget needs a price per GPU-hour: --price, or price_per_gpu_hour in the cluster file")
    return PlanInput(work, constraints, acts, capacity, price,
                     args.optimizer or default_optimizer(workload.name),
                     args.precision or ("mixed" if args.estimate == "mixed" else "fp32"),
                     tuple(batch_choices(lo, hi)), accs,
                     workspace_bytes=cluster_workspace_bytes(cluster))


def public_row(r: dict, workload, cluster, inp: PlanInput) -> dict:
    out = {k: r[k] for k in JSON_KEYS if k in r}
    out["learning_effect"] = effect_for(r["strategy"])
    out["interval"] = interval(r["strategy"], r["gpus"], r["nodes"], r["samples_per_s"], inp.work.samples)
    out["settings"] = launch_settings(r["_strategy"], gpus=r["gpus"], gpus_per_node=cluster.gpus_per_node,
                                      batch_per_gpu=r["batch_per_gpu"], accumulate=r["accumulate"],
                                      model=workload.name, optimizer=inp.optimizer)
    out["violates"] = r["violates"]
    return {k: out[k] for k in (*JSON_KEYS, "violates")}


def _hours(s: float) -> str:
    h = s / 3600
    return f"{h:.3g}" if h < 1000 else f"{h:,.0f}"


def format_plan_table(rows: list[dict]) -> str:
    """Fixed-width table with units in the header."""
    heads = ["#", "strategy", "gpus", "b/gpu x acc", "samples/s", "eff", "time h", "80% range h", "GPU-h", "cost",
             "mem/GPU",
             "fits", "learning", "launch"]
    body = []
    for i, r in enumerate(rows, 1):
        s = r["settings"]
        launch = s.get("trainers_run") or json.dumps({k: v for k, v in s.items()
                                                      if k not in ("per_gpu_batch", "gradient_accumulation_steps")})
        eff = r["learning_effect"]
        body.append([str(i), r["label"], str(r["gpus"]), f"{r['batch_per_gpu']:g} x {r['accumulate']}",
                     f"{r['samples_per_s']:,.0f}", f"{r['efficiency']:.0%}", _hours(r["time_to_train_s"]),
                     "-".join(_hours(t) for t in r["interval"]["time_to_train_s"]),
                     f"{r['gpu_hours']:,.0f}", "-" if r["cost"] is None else f"{r['cost']:,.0f}",
                     format_bytes(r["memory_per_gpu_bytes"]),
                     "yes" if r["fits"] else "NO", "same as SSGD" if eff is None else eff["summary"], launch])
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip() for b in body]
    return "\n".join(lines)


def _csv_rows(rows: list[dict]) -> str:
    """The rows as CSV: one number or text per cell (the interval as its four bounds; settings as JSON)."""
    import csv
    import io

    flat = []
    for r in rows:
        d = {k: v for k, v in r.items() if k not in ("memory", "settings", "learning_effect", "violates", "interval")}
        (d["samples_per_s_lo"], d["samples_per_s_hi"]), (d["time_to_train_lo_s"], d["time_to_train_hi_s"]) = (
            r["interval"]["samples_per_s"], r["interval"]["time_to_train_s"])  # the 80% band, one number a cell
        d["learning_effect"] = "" if r["learning_effect"] is None else r["learning_effect"]["summary"]
        d["violates"] = ";".join(r["violates"])
        d["settings"] = json.dumps(r["settings"])
        flat.append(d)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(flat[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(flat)
    return buf.getvalue()


def cmd_plan(args, resolve) -> int:
    if args.min_efficiency is not None and args.min_efficiency > 1:
        raise SpecError(f"--min-efficiency must be in (0, 1], got {args.min_efficiency:g}")
    args.profile, args.profile_links = None, "network"
    resolve_args = argparse.Namespace(**vars(args))
    resolve_args.batch = args.batch[0]  # the compute rule reads one batch: the range's smallest
    workload, cluster, _, _, settings = resolve(resolve_args)
    inp = build_input(args, workload, cluster)
    names = None
    if args.strategy:
        names = tuple(s.strip() for s in args.strategy.split(",") if s.strip())
        bad = [n for n in names if n not in ALL_STRATEGIES]
        if bad or not names:
            raise SpecError(f"unknown strategy {bad[0] if bad else args.strategy!r}; choose from "
                            f"{', '.join(ALL_STRATEGIES)}")
    cv = 0.0 if math.isinf(cluster.host.bandwidth_Bps) else GPU_VARIABILITY_CV  # as predict's default
    cands = candidates(cluster, same_update=args.same_update, names=names, straggler_cv=cv,
                       wires=("fp32", "fp16") if inp.precision == "fp32" else ("fp16",))
    if not cands:
        raise SpecError("no strategy left to search (--strategy with --same-update removed them all)")
    if args.node_rate:
        cands = with_node_overheads(cands, workload, cluster, args.batch[0], args.node_rate)
    print_compute_warnings(settings.warnings)  # after the options are checked: bad input prints its error alone
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, in one line
        rows = search(workload, cluster, cands, inp)
    feasible = [r for r in rows if not r["violates"]]
    if not feasible:
        print(f"perfmodel: error: {infeasible_message(rows, inp)}", file=sys.stderr)
        return 2
    ranked = rank(feasible, args.rank)
    shown = rank(rows, args.rank) if args.all else ranked[:args.top]
    out = [public_row(r, workload, cluster, inp) for r in shown]
    refuse_non_finite(out, "plan")
    why = why_line(ranked, rows, args.rank)
    from .cluster_input import link_notes

    notes = link_notes(cluster, max(r["gpus"] for r in rows), node_measured=bool(args.node_rate))
    from .exposure import exposure_note
    from .pair_confidence import rival_note

    # how far to trust the recommendation: its exchange, and its lead over the best plan of another strategy
    notes += [n for n in (exposure_note(ranked[:1]), rival_note(ranked)) if n]
    if args.format != "table":
        for note in notes:
            print(f"perfmodel: note: {note}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(out, indent=1))
    elif args.format == "csv":
        print(_csv_rows(out), end="")
    else:
        cost = f", price {inp.price:g}/GPU-hour" if inp.price is not None else ", no price (cost -)"
        print(f"# {workload.name} on {cluster.name}: {inp.work.text} = {inp.work.samples:,.0f} samples; "
              f"{inp.optimizer}, {inp.precision}; {format_bytes(inp.gpu_memory_bytes)} per GPU{cost}")
        print(f"# compute: {workload.compute_for(cluster)[2]}")
        print(f"# {len(rows)} plans searched, {len(feasible)} feasible, ranked by {args.rank}")
        print(format_plan_table(out))
        print(f"# why: {why}")
        for note in notes:
            print(f"# note: {note}")
    if args.format != "table":
        print(f"perfmodel: why: {why}", file=sys.stderr)
    if args.plot:
        from .plan_plot import plot_plan

        plot_plan(rows, pareto(feasible), Path(args.plot), title=f"{workload.name} on {cluster.name}")
    return 0

