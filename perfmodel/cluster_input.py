"""The cluster a user asks for: a preset, a TOML file, or one built on the command line, plus overrides.

    --cluster NAME             a preset of data/presets/clusters.toml
    --cluster FILE.toml[:T]    a file in the clusters.toml schema: table T, the only table, or the file
                               itself when its top level has gpus_per_node
    --cluster custom           built from --gpu, --gpus-per-node, --intra, --network (and --nics)
Overrides on any of them: --gpu NAME, --gpus-per-node N, --intra LINK, --network LINK, --nics K (the
network is K NICs of the per-NIC figure), --nodes N (the cluster's node count; without it and without
max_nodes the cluster is open-ended). LINK: see perfmodel.fabrics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .fabrics import parse_link
from .presets import PresetError, cluster_from_table, fabrics, gpus, load_cluster, presets_dir, read_toml
from .specs import Cluster, SpecError

CUSTOM = "custom"


@dataclass(frozen=True)
class ClusterOptions:
    """Command-line overrides; None leaves the cluster's own value."""

    gpu: str | None = None
    gpus_per_node: int | None = None
    intra: str | None = None
    network: str | None = None
    nics: int | None = None
    nodes: int | None = None

    def any(self) -> bool:
        return any(v is not None for v in (self.gpu, self.gpus_per_node, self.intra, self.network, self.nics,
                                            self.nodes))


def split_file_ref(ref: str) -> tuple[Path, str | None] | None:
    """("my.toml", "name") for "my.toml:name", ("my.toml", None) for "my.toml"; None if not a file ref."""
    head, sep, tail = ref.partition(".toml")
    if not sep or (tail and not tail.startswith(":")):
        return None
    return Path(head + ".toml"), (tail[1:] or None)


def table_from_file(path: Path, name: str | None, kind: str, marker: str) -> tuple[str, dict, str]:
    """(name, table, where) of one table of a TOML file: the named one, the only one, or the file itself
    when its top level has ``marker`` (a key every table of that kind has)."""
    data = read_toml(path)
    if name is not None:
        if name not in data or not isinstance(data[name], dict):
            tables = [k for k, v in data.items() if isinstance(v, dict)]
            raise PresetError(f"{path}: no {kind} table [{name}]; tables: {', '.join(tables) or 'none'}")
        return name, data[name], f"{path} [{name}]"
    if marker in data:
        return path.stem, data, str(path)
    tables = [k for k, v in data.items() if isinstance(v, dict)]
    if len(tables) != 1:
        raise PresetError(f"{path}: {len(tables)} tables ({', '.join(tables) or 'none'}); pick one with "
                          f"{path}:NAME")
    return tables[0], data[tables[0]], f"{path} [{tables[0]}]"


def _custom(opts: ClusterOptions, root: Path) -> Cluster:
    missing = [o for o, v in (("--gpu", opts.gpu), ("--gpus-per-node", opts.gpus_per_node),
                              ("--network", opts.network)) if v is None]
    if missing:
        raise SpecError(f"--cluster custom needs {', '.join(missing)} (and --intra unless the GPUs talk over "
                        f"their PCIe host link), e.g. --gpu a100 --gpus-per-node 8 --intra nvswitch-a100 "
                        f"--network 8xib-hdr")
    table = {"gpu": opts.gpu, "gpus_per_node": opts.gpus_per_node, "network": opts.network}
    gpu = gpus(root).get(opts.gpu)
    if opts.intra is not None:
        table["intra"] = opts.intra
    elif gpu is not None and gpu.host:
        table["intra"] = gpu.host
    if opts.nodes is not None:
        table["max_nodes"] = opts.nodes
    cluster = cluster_from_table(CUSTOM, table, "--cluster custom", root)
    if opts.nics is not None:
        cluster = _with_nics(cluster, opts.nics, f"--network {opts.network}")
    return replace(cluster, source=f"built on the command line: {describe(cluster)}")


def _with_nics(cluster: Cluster, nics: int, what: str) -> Cluster:
    """The network as ``nics`` NICs of the per-NIC figure (network bandwidth / its current NIC count)."""
    if isinstance(nics, bool) or not isinstance(nics, int) or nics < 1:
        raise SpecError(f"--nics must be a positive integer, got {nics!r}")
    per_nic = cluster.network.bandwidth_Bps / cluster.nics
    link = replace(cluster.network, bandwidth_Bps=per_nic * nics,
                   source=f"{nics} NICs of {per_nic / 1e9:g} GB/s ({what}); {cluster.network.source}")
    return replace(cluster, network=link, nics=nics)


def apply_overrides(cluster: Cluster, opts: ClusterOptions, root: Path | None = None) -> Cluster:
    """``cluster`` with the command-line overrides applied (named in its name)."""
    if not opts.any():
        return cluster
    root = root or presets_dir()
    fabs = fabrics(root)
    changes: dict = {}
    said = []
    if opts.gpu is not None:
        table = gpus(root)
        if opts.gpu not in table:
            raise SpecError(f"unknown GPU {opts.gpu!r} for --gpu; GPUs: {', '.join(sorted(table))}")
        changes.update(gpu=opts.gpu, peak_flops=table[opts.gpu].peak_flops)
        said.append(f"gpu {opts.gpu}")
    if opts.gpus_per_node is not None:
        changes["gpus_per_node"] = opts.gpus_per_node
        said.append(f"{opts.gpus_per_node} GPUs/node")
    if opts.intra is not None:
        changes["intra"] = parse_link(opts.intra, fabs, what="--intra", role="intra", replaces=cluster.intra).link
        said.append(f"intra {opts.intra}")
    if opts.network is not None:
        parsed = parse_link(opts.network, fabs, what="--network", role="network", replaces=cluster.network)
        if opts.nics is not None and parsed.count > 1 and parsed.count != opts.nics:
            raise SpecError(f"--network {opts.network} already says {parsed.count} NICs; --nics {opts.nics} "
                            f"contradicts it")
        changes.update(network=parsed.link, nics=parsed.count)
        said.append(f"network {opts.network}")
    if opts.nodes is not None:
        changes["max_nodes"] = opts.nodes
        said.append(f"{opts.nodes} nodes")
    try:
        out = replace(cluster, **changes)
        if opts.nics is not None and out.nics != opts.nics:
            out = _with_nics(out, opts.nics, f"--nics {opts.nics}")
            said.append(f"{opts.nics} NICs")
    except SpecError as e:
        raise SpecError(f"cluster overrides: {e}") from None
    return replace(out, name=f"{cluster.name} ({', '.join(said)})")


def resolve_cluster(ref: str | None, opts: ClusterOptions = ClusterOptions(), root: Path | None = None,
                    default: str = "terngrad-infiniband") -> Cluster:
    """The cluster ``ref`` names (preset, FILE.toml[:name] or "custom") with ``opts`` applied."""
    root = root or presets_dir()
    ref = ref or default
    if ref == CUSTOM:
        return _custom(opts, root)
    file_ref = split_file_ref(ref)
    if file_ref is not None:
        path, name = file_ref
        name, table, where = table_from_file(path, name, "cluster", "gpus_per_node")
        cluster = cluster_from_table(name, table, where, root)
    else:
        cluster = load_cluster(ref, root)
    return apply_overrides(cluster, opts, root)


def describe(cluster: Cluster) -> str:
    """One line: GPUs per node, links (achievable GB/s, latency), node count."""
    gb = lambda link: f"{link.bandwidth_Bps / 1e9:.4g} GB/s, {link.latency_s * 1e6:.3g} us"  # noqa: E731
    nodes = f"max {cluster.max_nodes} nodes" if cluster.max_nodes else "open-ended node count"
    nics = f" ({cluster.nics} NICs)" if cluster.nics > 1 else ""
    return (f"{cluster.gpus_per_node}x {cluster.gpu or '?'} per node; intra {gb(cluster.intra)}; host "
            f"{gb(cluster.host)}; network {gb(cluster.network)}{nics}; {nodes}")


