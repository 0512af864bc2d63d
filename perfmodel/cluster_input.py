"""The cluster a user asks for: a preset, a TOML file, or one built on the command line, plus overrides.

    --cluster NAME             a preset of data/presets/clusters.toml
    --cluster FILE.toml[:T]    a file in the clusters.toml schema: table T, the only table, or the file
                               itself when its top level has gpus_per_node
    --cluster custom           built from --gpu, --gpus-per-node, --intra, --network (and --nics)
An unlisted GPU (H200, B200, MI300X, L40S ...): --gpu-tflops fp32=X[,tf32=Y][,fp16=Z] (dense peaks,
TFLOP/s; bf16 and mixed are names for fp16), --gpu-mem-bw GB/s, --gpu-memory-gb GB, --gpu-host FABRIC,
--gpu-capability MAJOR.MINOR (an NVIDIA GPU's CUDA compute capability: its cuBLAS workspaces in memory);
named by --gpu NAME (default "custom-gpu"), or overriding the figures of the preset --gpu names; or an
inline [<cluster>.gpu] table in the gpus.toml schema in a cluster file.
Overrides on any of them: --gpu NAME, --gpus-per-node N, --intra LINK, --network LINK, --nics K (the
network is K NICs of the per-NIC figure), --nodes N (the cluster's node count; without it and without
max_nodes the cluster is open-ended). LINK: see perfmodel.fabrics.
--gpu-topology FILE (what `nvidia-smi topo -m` prints on one node) with --host-cpu NAME sets the intra link
to the slowest hop of the best GPU ring through that node's PCIe and socket paths (perfmodel.gpu_topology);
in a cluster file, gpu_topology = "FILE" (relative to the cluster file) and host_cpu = "NAME" instead of intra.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .fabrics import parse_link
from .gpu_topology import Topology, read_topology, topology_link
from .preset_toml import PresetError, closest, match_name, read_toml
from .presets import (GPU_FIGURES, GpuPreset, capability_text, cluster_from_table, cluster_gpu, cluster_gpu_fields,
                      fabrics, gpu_from_table, gpus, load_cluster, presets_dir)
from .specs import Cluster, SpecError

TFLOPS_KEYS = {"fp32": "peak_flops", "tf32": "tf32_flops", "fp16": "tensor_flops", "bf16": "tensor_flops",
               "mixed": "tensor_flops"}
# The host link of a GPU described on the command line without --gpu-host: PCIe 5.0 x16, the host
# interface of the data-centre GPUs since 2022 (H100, H200, MI300X; fabrics.toml pcie5). L40S: pcie4.
DEFAULT_GPU_HOST = "pcie5"

CUSTOM = "custom"
PCIE_FABRICS = ("pcie3", "pcie4", "pcie5")  # fabrics.toml's PCIe presets: one x16 link's copy rate
SOCKET_FABRICS = ("eth-25g", "eth-100g")  # fabrics.toml's TCP presets above 10 Gb/s: payload at line rate


@dataclass(frozen=True)
class ClusterOptions:
    """Command-line overrides; None leaves the cluster's own value."""

    gpu: str | None = None
    gpus_per_node: int | None = None
    intra: str | None = None
    network: str | None = None
    nics: int | None = None
    nodes: int | None = None
    gpu_tflops: str | None = None
    gpu_mem_bw: float | None = None
    gpu_memory_gb: float | None = None
    gpu_host: str | None = None
    gpu_capability: str | None = None
    gpu_topology: str | None = None
    host_cpu: str | None = None

    def custom_gpu(self) -> bool:
        """Whether the options describe the GPU's figures (an unlisted GPU or a preset's overridden)."""
        return any(v is not None for v in (self.gpu_tflops, self.gpu_mem_bw, self.gpu_memory_gb, self.gpu_host,
                                           self.gpu_capability))

    def any(self) -> bool:
        return self.custom_gpu() or any(v is not None for v in (self.gpu, self.gpus_per_node, self.intra,
                                                                 self.network, self.nics, self.nodes,
                                                                 self.gpu_topology, self.host_cpu))


def _figure(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise SpecError(f"{what} must be a number, got {text!r}") from None
    if not 0 < v < float("inf"):
        raise SpecError(f"{what} must be a positive finite number, got {text!r}")
    return v


def gpu_from_options(opts: ClusterOptions, root: Path, current: GpuPreset | None = None) -> GpuPreset | None:
    """The GPU the options describe: --gpu's preset (else ``current``, the cluster's own GPU), with
    --gpu-tflops/--gpu-mem-bw/--gpu-memory-gb/--gpu-host/--gpu-capability figures over it (or alone, for an
    unlisted GPU);
    None when they name none."""
    table = gpus(root)
    preset = match_name(opts.gpu, table) if opts.gpu else None
    if not opts.custom_gpu():
        if opts.gpu is None:
            return None
        if preset is None:
            raise SpecError(f"unknown GPU {opts.gpu!r} for --gpu{closest(opts.gpu, table)}; GPUs: "
                            f"{', '.join(sorted(table))}; describe an unlisted one with --gpu-tflops "
                            f"fp32=X,tf32=Y,fp16=Z --gpu-mem-bw GB/s")
        return table[preset]
    base = table.get(preset) if opts.gpu else current
    d: dict = {}
    if base is not None:
        d = {k: getattr(base, k) for k in GPU_FIGURES if getattr(base, k) is not None}
    if opts.gpu_tflops is not None:
        parts = [part for part in opts.gpu_tflops.split(",") if part.strip()]
        for part in parts or [""]:
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in TFLOPS_KEYS:
                raise SpecError(f"--gpu-tflops takes PRECISION=TFLOPS pairs of {', '.join(TFLOPS_KEYS)} "
                                f"(e.g. fp32=67,tf32=495,fp16=989), got {opts.gpu_tflops!r}")
            d[TFLOPS_KEYS[key]] = _figure(value.strip(), f"--gpu-tflops {key}") * 1e12
    if opts.gpu_mem_bw is not None:
        d["memory_Bps"] = _figure(str(opts.gpu_mem_bw), "--gpu-mem-bw (GB/s)") * 1e9
    if opts.gpu_memory_gb is not None:
        d["memory_bytes"] = _figure(str(opts.gpu_memory_gb), "--gpu-memory-gb") * 1e9
    if opts.gpu_host is not None:
        if opts.gpu_host not in fabrics(root):
            raise SpecError(f"--gpu-host must be a fabric of `perfmodel presets --kind fabric` (pcie3, pcie4, "
                            f"pcie5 ...), got {opts.gpu_host!r}")
        d["host"] = opts.gpu_host
    if opts.gpu_capability is not None:
        d["compute_capability"] = capability_text(opts.gpu_capability.strip(), "--gpu-capability")
    d.setdefault("host", DEFAULT_GPU_HOST)
    if "peak_flops" not in d:
        raise SpecError("an unlisted GPU needs its fp32 peak: --gpu-tflops fp32=X[,tf32=Y][,fp16=Z]")
    name = opts.gpu or (current.name if current is not None else "custom-gpu")
    figures = ", ".join(f"{k} {d[v] / 1e12:g}" for k, v in (("fp32", "peak_flops"), ("tf32", "tf32_flops"),
                                                            ("fp16", "tensor_flops")) if v in d)
    d["source"] = f"given on the command line: {figures} TFLOP/s" + (
        f", memory {d['memory_Bps'] / 1e9:g} GB/s" if "memory_Bps" in d else "")
    return gpu_from_table(name, d, "--gpu-tflops/--gpu-mem-bw")


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
    topo = None if opts.gpu_topology is None else read_topology(opts.gpu_topology)
    if opts.gpus_per_node is None and topo is not None:
        opts = replace(opts, gpus_per_node=len(topo.gpus))
    missing = [o for o, v in (("--gpu", opts.gpu or opts.gpu_tflops), ("--gpus-per-node", opts.gpus_per_node),
                              ("--network", opts.network)) if v is None]
    if missing:
        raise SpecError(f"--cluster custom needs {', '.join(missing)} (and --intra unless the GPUs talk over "
                        f"their PCIe host link), e.g. --gpu a100 --gpus-per-node 8 --intra nvswitch-a100 "
                        f"--network 8xib-hdr (an unlisted GPU: --gpu-tflops fp32=X,tf32=Y,fp16=Z --gpu-mem-bw GB/s)")
    gpu = gpu_from_options(opts, root)
    gpu_table = {k: getattr(gpu, k) for k in GPU_FIGURES + ("source",) if getattr(gpu, k) is not None}
    table = {"gpu": {"name": gpu.name, **gpu_table}, "gpus_per_node": opts.gpus_per_node, "network": opts.network}
    if opts.intra is not None:
        table["intra"] = opts.intra
    elif gpu.host:
        table["intra"] = gpu.host
    if opts.nodes is not None:
        table["max_nodes"] = opts.nodes
    cluster = cluster_from_table(CUSTOM, table, "--cluster custom", root)
    _nics_agree(cluster.nics, opts)
    if opts.nics is not None:
        cluster = _with_nics(cluster, opts.nics, f"--network {opts.network}")
    cluster = _with_topology(cluster, opts, root, topo)
    return replace(cluster, source=f"built on the command line: {describe(cluster)}")


def _with_topology(cluster: Cluster, opts: ClusterOptions, root: Path, topo: Topology | None = None) -> Cluster:
    """The cluster with its intra link from --gpu-topology (or ``topo``, already read from it) and
    --host-cpu (perfmodel.gpu_topology)."""
    if opts.gpu_topology is None:
        if opts.host_cpu is not None:
            raise SpecError("--host-cpu needs --gpu-topology (the node's `nvidia-smi topo -m` output)")
        return cluster
    if opts.intra is not None:
        raise SpecError("give one of --intra (the link's figure) and --gpu-topology (the node's paths), not both")
    link = topology_link(topo or opts.gpu_topology, cluster.host, opts.host_cpu, root, cluster.gpus_per_node,
                         cluster.gpu)
    return replace(cluster, intra=link)


def _nics_agree(count: int, opts: ClusterOptions) -> None:
    """SpecError when --network said ``count`` > 1 NICs and --nics says another number."""
    if opts.nics is not None and count > 1 and count != opts.nics:
        raise SpecError(f"--network {opts.network} already says {count} NICs; --nics {opts.nics} contradicts it")


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
    gpu = gpu_from_options(opts, root, cluster_gpu(cluster))
    if gpu is not None:
        changes.update(cluster_gpu_fields(gpu))
        said.append(f"gpu {gpu.name}" + (" (given figures)" if opts.custom_gpu() else ""))
    if opts.gpus_per_node is not None:
        changes["gpus_per_node"] = opts.gpus_per_node
        said.append(f"{opts.gpus_per_node} GPUs/node")
    if opts.intra is not None:
        changes["intra"] = parse_link(opts.intra, fabs, what="--intra", role="intra", replaces=cluster.intra).link
        said.append(f"intra {opts.intra}")
    if opts.network is not None:
        parsed = parse_link(opts.network, fabs, what="--network", role="network", replaces=cluster.network)
        _nics_agree(parsed.count, opts)
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
    out = _with_topology(out, opts, root)
    if opts.gpu_topology is not None:
        said.append(f"intra from --gpu-topology {opts.gpu_topology}")
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
        table, topology, cpu = _file_layout(table, path, where)
        cluster = cluster_from_table(name, table, where, root)
        if topology is not None:
            cluster = replace(cluster, intra=topology_link(topology, cluster.host, cpu, root, cluster.gpus_per_node,
                                                           cluster.gpu))
    else:
        cluster = load_cluster(ref, root)
    return apply_overrides(cluster, opts, root)


def _file_layout(table: dict, path: Path, where: str) -> tuple[dict, Path | None, str | None]:
    """A cluster file's table without its layout keys (gpu_topology: an nvidia-smi topo -m file, relative
    to the cluster file; host_cpu), the layout's path and the host CPU; (table, None, None) without them."""
    topology, cpu = table.get("gpu_topology"), table.get("host_cpu")
    if topology is None:
        if cpu is not None:
            raise PresetError(f"{where}: host_cpu needs gpu_topology (a node's `nvidia-smi topo -m` file)")
        return table, None, None
    if not isinstance(topology, str) or not (cpu is None or isinstance(cpu, str)):
        raise PresetError(f"{where}: gpu_topology must be a file name and host_cpu a CPU name (strings)")
    if "intra" in table:
        raise PresetError(f"{where}: give intra (the link) or gpu_topology (the node's paths), not both")
    rest = {k: v for k, v in table.items() if k not in ("gpu_topology", "host_cpu")}
    rest["intra"] = "1GB/s"  # a placeholder: the layout's link replaces it
    return rest, path.parent / topology, cpu


def describe(cluster: Cluster) -> str:
    """One line: GPUs per node, links (achievable GB/s, latency), node count."""
    gb = lambda link: f"{link.bandwidth_Bps / 1e9:.4g} GB/s, {link.latency_s * 1e6:.3g} us"  # noqa: E731
    nodes = f"max {cluster.max_nodes} nodes" if cluster.max_nodes else "open-ended node count"
    nics = f" ({cluster.nics} NICs)" if cluster.nics > 1 else ""
    return (f"{cluster.gpus_per_node}x {cluster.gpu or '?'} per node; intra {gb(cluster.intra)}{partial_note(cluster)}; "
            f"host {gb(cluster.host)}; network {gb(cluster.network)}{nics}; {nodes}")


def partial_note(cluster: Cluster) -> str:
    """' (GPUs 0..g-1 of a node ring on fewer links: ...)', the intra figure of each GPU count that has its
    own (``Cluster.intra_for``), else ''."""
    if not cluster.intra_partial():
        return ""
    each = [f"{g} GPUs {'host link' if b == 0 else f'{b / 1e9:.4g} GB/s'}" for g, b in cluster.intra_partial()]
    return f" (GPUs 0..g-1 of a node ring on fewer links: {', '.join(each)})"


def topology_note(cluster: Cluster) -> str | None:
    """Where the intra link came from when a node layout priced it: the ring and its slowest hop."""
    if not cluster.intra.source.startswith("gpu-topology: "):
        return None
    return "; ".join(cluster.intra.source.split("; ")[:2])  # the layout and the ring, not the CPU's source


def _fabric_name(link) -> str:
    """The fabrics.toml name a preset link came from (Fabric.link's source: "NAME: ..." or "Kx NAME: ..."); for a
    measured or typed link, whatever its source starts with (no fabric name)."""
    return link.source.split(":", 1)[0].split("x ", 1)[-1]


def pcie_intra_note(cluster: Cluster) -> str | None:
    """One line when the GPUs of a node talk over a PCIe fabric preset (pcie3-5): that preset is one
    x16 link's copy rate, and on published PCIe nodes the exchange inside the node ran far slower
    (docs/validation.md, "V100 PCIe clusters"). None for other links, measured figures and 1-GPU nodes."""
    fabric = _fabric_name(cluster.intra)
    if cluster.gpus_per_node < 2 or fabric not in PCIE_FABRICS:
        return None
    return (f"the node's GPUs talk over the {fabric} preset ({cluster.intra.bandwidth_Bps / 1e9:.4g} GB/s, one x16 "
            f"link's copy rate): on 144 published runs of 4 V100 PCIe per node it made the model 20.6% too fast "
            f"inside one node (41% on 16 runs of 2-4 GPUs over PCIe judged since, yet 0.9% at the median on 99 runs "
            f"of 2-8 PCIe workstation and server GPUs judged after those; docs/validation.md); profile the "
            f"node (perfmodel profile), give its measured allreduce bus bandwidth with --intra, or its "
            f"`nvidia-smi topo -m` with --gpu-topology and --host-cpu")


def socket_network_note(cluster: Cluster, max_gpus: int) -> str | None:
    """One line when a prediction crosses nodes over a TCP Ethernet preset above 10 Gb/s (SOCKET_FABRICS):
    the preset is TCP's payload at line rate, which socket transports rarely reach there (NVIDIA/nccl
    issues #209 and #450; docs/validation.md, "Before a third round"). None for RDMA fabrics,
    measured figures, 10 Gb/s and slower Ethernet, and predictions inside one node."""
    fabric = _fabric_name(cluster.network)
    if fabric not in SOCKET_FABRICS or max_gpus <= cluster.gpus_per_node:
        return None
    return (f"the nodes talk over the {fabric} preset ({cluster.network.bandwidth_Bps / 1e9:.4g} GB/s, TCP payload at "
            f"line rate): socket transports (NCCL without RDMA, MPI over TCP, gRPC) rarely reach it above 10 Gb/s "
            f"(NCCL: at most 60% of 32 Gb/s, 4-6 GB/s bus bandwidth on 100 Gb/s; NVIDIA/nccl issues #209, #450), "
            f"and on published runs across nodes over 25-100 GbE the model was 60% too fast at the median on 60, "
            f"12% too fast on 33 judged since (docs/validation.md): measure two nodes with nccl-tests and give the "
            f"bus bandwidth with --network")


def link_notes(cluster: Cluster, max_gpus: int, node_measured: bool = False) -> list[str]:
    """The notes on preset links a prediction up to ``max_gpus`` GPUs leans on: pcie_intra_note (unless a
    measured one-node run, ``node_measured``, priced the node) and socket_network_note."""
    pcie = pcie_intra_note(cluster) if max_gpus > 1 and not node_measured else None
    return [n for n in (pcie, socket_network_note(cluster, max_gpus)) if n]
