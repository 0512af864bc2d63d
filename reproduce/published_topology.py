"""Published PCIe runs priced as if their nodes had a given GPU layout: a diagnostic of the intra-node cause.

Every row whose node has the layout's GPU count and whose GPUs talk over a PCIe preset (pcie3-5) gets its
intra link from ``--gpu-topology`` and ``--host-cpu`` (perfmodel.gpu_topology: the slowest hop of the best
ring, with NCCL's own figures for the root complex and the link between sockets); every other row, and
everything else about each row, is predicted as ``reproduce.published`` predicts it. The layouts of
data/topologies/ are vendors' designs, not the measured nodes' (the sources do not state theirs), so the
result says how far a layout explains the misses, not what the model predicts by default.

    python -m reproduce.published_topology --runs data/published/pcie_runs.csv \\
        --gpu-topology data/topologies/two_sockets_4gpu.txt --host-cpu broadwell
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from perfmodel import presets
from perfmodel.gpu_topology import read_topology, topology_link
from perfmodel.specs import SpecError
from reproduce.published import RUNS, PublishedError, error_pct, load_runs, predict_row, row_half

PCIE = ("pcie3", "pcie4", "pcie5")


def with_layout(rows: list[dict], topology: Path, cpu: str | None) -> tuple[list[dict], int]:
    """The rows with the layout's intra link where it applies (a LINK text: GB/s and us), and how many."""
    root = presets.presets_dir()
    gpus = len(read_topology(topology).gpus)
    gpu_host = {name: g.host for name, g in presets.gpus(root).items()}
    fabs = presets.fabrics(root)
    links: dict[str, str] = {}  # host fabric -> the layout's intra LINK text
    out, changed = [], 0
    for r in rows:
        host = gpu_host.get(r["gpu"])
        if r["intra"] in PCIE and r["gpus_per_node"] == gpus and host in fabs:
            if host not in links:
                link = topology_link(topology, fabs[host].link(1), cpu, root, gpus)
                links[host] = f"{link.bandwidth_Bps / 1e9!r}GB/s,{link.latency_s * 1e6!r}us"
            r = {**r, "intra": links[host]}
            changed += 1
        out.append(r)
    return out, changed


def groups(r: dict) -> list[str]:
    """The report groups a row belongs to."""
    span = ["one node"] if r["nodes"] == 1 else ["across nodes", f"across nodes, {r['network']}"]
    return ["all", *span, f"{row_half(r)} half"]


def errors(rows: list[dict]) -> dict[str, list[float]]:
    """Signed errors (percent) per group; rows the model cannot express are left out."""
    out: dict[str, list[float]] = {}
    for r in rows:
        o = predict_row(r)
        if o.predicted is None:
            continue
        for g in groups(r):
            out.setdefault(g, []).append(error_pct(o.predicted, r["samples_per_s"]))
    return out


def report(before: dict[str, list[float]], after: dict[str, list[float]], changed: int, label: str) -> str:
    """Median |error| (signed) per group, as published and with the layout."""
    lines = [f"rows given the layout's intra link: {changed} ({label})",
             f"{'group':<28}{'rows':>6}  {'as published':>20}  {'with the layout':>20}"]
    cell = lambda v: (f"{statistics.median(abs(x) for x in v):.1f}% ({statistics.median(v):+.1f}%)")  # noqa: E731
    for g in sorted(before, key=lambda g: (g != "all", g)):
        lines.append(f"{g:<28}{len(before[g]):>6}  {cell(before[g]):>20}  {cell(after[g]):>20}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reproduce.published_topology", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS, help="published runs CSV (default: %(default)s)")
    ap.add_argument("--gpu-topology", type=Path, required=True, help="a node layout (nvidia-smi topo -m text)")
    ap.add_argument("--host-cpu", default=None, help="the host CPU (data/presets/host_cpus.toml)")
    args = ap.parse_args(argv)
    try:
        rows = load_runs(args.runs)
        laid, changed = with_layout(rows, args.gpu_topology, args.host_cpu)
        text = report(errors(rows), errors(laid), changed, f"{args.gpu_topology.name}, host CPU {args.host_cpu}")
    except (PublishedError, SpecError) as e:
        print(f"published_topology: error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
