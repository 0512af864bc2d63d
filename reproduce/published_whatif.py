"""Published runs priced with a stated change to their hardware description: a diagnostic of a cause.

Two changes, each applied only where it is stated to apply; everything else about every row is
predicted as ``reproduce.published`` predicts it, and the report puts both predictions side by side:

* ``--gpu-topology FILE --host-cpu CPU``: every row whose node has the layout's GPU count and whose GPUs
  talk over a PCIe preset (pcie3-5) gets its intra link from the layout (perfmodel.gpu_topology: the
  slowest hop of the best ring, with NCCL's own figures for the root complex and the socket link);
* ``--network-as FROM=LINK``: every row whose network is the fabric FROM runs over LINK instead (a
  fabric or a figure, per NIC), e.g. a transport the source's scripts chose (TCP over InfiniBand) read
  as the Ethernet speed that another source's rows pointed to.

The layouts of data/topologies/ are vendors' designs, not the measured nodes' (the sources do not state
theirs), so a result says how far a stated cause explains the misses, not what the model predicts.

    python -m reproduce.published_whatif --runs data/published/pcie_runs.csv \\
        --gpu-topology data/topologies/two_sockets_4gpu.txt --host-cpu broadwell
    python -m reproduce.published_whatif --runs data/published/pcie_runs.csv --network-as eth-100g=eth-25g
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from perfmodel.cli_guard import OneLineExitParser
from perfmodel import presets
from perfmodel.cluster_input import PCIE_FABRICS
from perfmodel.fabrics import parse_link
from perfmodel.gpu_topology import read_topology, topology_link
from perfmodel.specs import SpecError
from reproduce.published import RUNS, PublishedError, error_pct, load_runs, predict_row, row_half
from reproduce.published_pairs import pairs, tally


def with_layout(rows: list[dict], topology: Path, cpu: str | None) -> tuple[list[dict], int]:
    """The rows with the layout's intra link where it applies (a LINK text: GB/s and us), and how many."""
    root = presets.presets_dir()
    topo = read_topology(topology)
    gpus = len(topo.gpus)
    gpu_host = {name: g.host for name, g in presets.gpus(root).items()}
    fabs = presets.fabrics(root)
    links: dict[str, str] = {}  # host fabric -> the layout's intra LINK text
    out, changed = [], 0
    for r in rows:
        host = gpu_host.get(r["gpu"])
        if r["intra"] in PCIE_FABRICS and r["gpus_per_node"] == gpus and host in fabs:
            if host not in links:
                link = topology_link(topo, fabs[host].link(1), cpu, root, gpus)
                links[host] = f"{link.bandwidth_Bps / 1e9!r}GB/s,{link.latency_s * 1e6!r}us"
            r = {**r, "intra": links[host]}
            changed += 1
        out.append(r)
    return out, changed


def with_network(rows: list[dict], mapping: str) -> tuple[list[dict], int]:
    """The rows whose network is FROM read as LINK (``mapping`` "FROM=LINK"), and how many."""
    old, sep, new = mapping.partition("=")
    if not sep or not old.strip() or not new.strip():
        raise SpecError(f"--network-as {mapping!r}: expected FROM=LINK, e.g. eth-100g=eth-25g")
    check_network_link(new.strip())
    out = [{**r, "network": new.strip()} if r["network"] == old.strip() else r for r in rows]
    return out, sum(r["network"] == old.strip() for r in rows)


def check_network_link(text: str) -> None:
    """Refuse a LINK that perfmodel.fabrics.parse_link cannot read (SpecError), before any row is priced
    (an unreadable one would leave the rows it replaces out of the statistics), and a count: LINK is per
    NIC, the row's NIC count multiplies it."""
    parsed = parse_link(text, presets.fabrics(presets.presets_dir()), what="--network-as LINK", role="network")
    if parsed.count != 1:
        raise SpecError(f"--network-as LINK {text!r}: give one NIC's link (the row's NIC count multiplies it), "
                        f"without the count {parsed.count}x")


def groups(r: dict) -> list[str]:
    """The report groups a row belongs to."""
    span = ["one node"] if r["nodes"] == 1 else ["across nodes", f"across nodes, {r['network']}"]
    return ["all", *span, f"{row_half(r)} half"]


def errors(rows: list[dict], labels: list[dict] | None = None, outcomes: dict | None = None) -> dict[str, list[float]]:
    """Signed errors (percent) per group (named after ``labels``' rows, default the rows themselves);
    rows the model cannot express are left out. ``outcomes``: predict_row's Outcome by row id, when made."""
    out: dict[str, list[float]] = {}
    for r, label in zip(rows, labels or rows):
        o = outcomes[r["id"]] if outcomes is not None else predict_row(r)
        if o.predicted is None:
            continue
        for g in groups(label):
            out.setdefault(g, []).append(error_pct(o.predicted, r["samples_per_s"]))
    return out


def report(before: dict[str, list[float]], after: dict[str, list[float]], said: list[str]) -> str:
    """Median |error| (signed) per group, as published and with the change."""
    lines = [*said, f"{'group':<28}{'rows':>6}  {'as published':>20}  {'with the change':>20}"]
    cell = lambda v: (f"{statistics.median(abs(x) for x in v):.1f}% ({statistics.median(v):+.1f}%)"  # noqa: E731
                      if v else "-")
    for g in sorted(before, key=lambda g: (g != "all", g)):
        lines.append(f"{g:<28}{len(before[g]):>6}  {cell(before[g]):>20}  {cell(after.get(g, [])):>20}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineExitParser(prog="python -m reproduce.published_whatif", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS, help="published runs CSV (default: %(default)s)")
    ap.add_argument("--gpu-topology", type=Path, default=None, help="a node layout (nvidia-smi topo -m text)")
    ap.add_argument("--host-cpu", default=None, help="the host CPU (data/presets/host_cpus.toml)")
    ap.add_argument("--network-as", default=None, metavar="FROM=LINK", help="rows on network FROM run over LINK")
    args = ap.parse_args(argv)
    try:
        if args.gpu_topology is None and args.network_as is None:
            raise SpecError("nothing to change: give --gpu-topology (with --host-cpu) and/or --network-as")
        rows = load_runs(args.runs)
        changed, said = rows, []
        if args.gpu_topology is not None:
            changed, n = with_layout(changed, args.gpu_topology, args.host_cpu)
            said.append(f"rows given the layout's intra link: {n} ({args.gpu_topology.name}, host CPU {args.host_cpu})")
        if args.network_as is not None:
            changed, n = with_network(changed, args.network_as)
            said.append(f"rows whose network is read as another: {n} ({args.network_as})")
        was = {r["id"]: predict_row(r) for r in rows}  # each row predicted once per set, for both reports
        now = {r["id"]: predict_row(r) for r in changed}
        text = report(errors(rows, outcomes=was), errors(changed, rows, outcomes=now), said)
        before = tally(pairs(rows, predict=lambda r: was[r["id"]]))
        after = tally(pairs(changed, predict=lambda r: now[r["id"]]))
        text += (f"\npairs of schemes ranked as measured (reproduce.published_pairs): as published "
                 f"{before['right']}/{before['pairs']}, with the change {after['right']}/{after['pairs']}")
    except (PublishedError, SpecError) as e:
        print(f"published_whatif: error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
