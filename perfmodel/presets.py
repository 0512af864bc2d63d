"""Load the cluster, GPU and workload presets from data/presets (TOML, every number with its source).

Files: fabrics.toml (named links, perfmodel.fabrics), gpus.toml (peak FLOP/s, memory bandwidth and host
fabric per GPU), clusters.toml (one table per cluster with intra/host/network links), workloads.toml (one
table per workload: a tensors JSON with per-tensor sizes, compute times per GPU), models/ (the model
library, perfmodel.library). The same table readers serve users' own cluster and workload files
(perfmodel.cluster_input, perfmodel.workload_input). The folder is $DSGD_PRESETS when set,
else the copy installed with the package (perfmodel/_presets, package data of a regular install), else
data/presets of the source tree.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .preset_toml import PresetError, check_keys, closest, match_name, read_toml
from .specs import Cluster, ComputeTime, Link, SpecError, Workload, is_capability

PRESETS_ENV = "DSGD_PRESETS"


def presets_dir() -> Path:
    """The presets folder: $DSGD_PRESETS, else the installed package data, else data/presets of the checkout."""
    env = os.environ.get(PRESETS_ENV)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    installed = here / "_presets"  # pyproject.toml maps data/presets to perfmodel._presets in a wheel
    return installed if installed.is_dir() else here.parent / "data" / "presets"


def _table(path: Path) -> dict:
    return read_toml(path)


def _get(d: dict, key: str, where: str):
    if key not in d:
        raise PresetError(f"{where}: missing key {key!r}")
    return d[key]


def _number(d: dict, key: str, where: str, default=None, *, integer: bool = False):
    """d[key] as a float (int with integer=True); a string, bool or wrong type is an error naming the key."""
    if key not in d:
        if default is not None:
            return default
        raise PresetError(f"{where}: missing key {key!r}")
    v = d[key]
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok:
        raise PresetError(f"{where}: {key} must be {'an integer' if integer else 'a number'}, got {v!r}")
    return int(v) if integer else float(v)


def _link(d: dict, where: str) -> Link:
    if not isinstance(d, dict):
        raise PresetError(f"{where}: must be a table with latency_s and bandwidth_Bps, or a fabric name")
    try:
        return Link(_number(d, "latency_s", where), _number(d, "bandwidth_Bps", where), str(d.get("source", "")))
    except SpecError as e:
        raise PresetError(f"{where}: {e}") from None


@dataclass(frozen=True)
class PresetInfo:
    """One line of `perfmodel presets`."""

    kind: str
    name: str
    summary: str
    source: str


@dataclass(frozen=True)
class GpuPreset:
    """One GPU of gpus.toml: peak FLOP/s (fp32 without tensor cores; tf32 and fp16/bf16 tensor-core
    dense peaks where the GPU has them), memory bandwidth (bytes/s) and the fabric of its host link."""

    name: str
    peak_flops: float
    tf32_flops: float | None
    tensor_flops: float | None
    memory_Bps: float | None
    host: str | None
    source: str
    memory_bytes: float | None = None
    compute_capability: str | None = None


GPU_KEYS = ("peak_flops", "tf32_flops", "tensor_flops", "memory_Bps", "memory_bytes", "host", "source", "name",
            "compute_capability")
#: the GpuPreset fields a GPU carries into a cluster table or over a preset (all but name and source)
GPU_FIGURES = ("peak_flops", "tf32_flops", "tensor_flops", "memory_Bps", "memory_bytes", "host", "compute_capability")


def capability_text(value: object, where: str) -> str:
    """A CUDA compute capability as text like "9.0" (NVIDIA's CUDA GPUs table), checked."""
    if not is_capability(value):
        raise PresetError(f"{where}: compute_capability must be text like \"9.0\" (NVIDIA's CUDA GPUs table), "
                          f"got {value!r}")
    return value
# The keys of a cluster table: what cluster_from_table reads, the layout keys a cluster file's loader reads
# (gpu_topology, host_cpu: perfmodel.cluster_input), the plan's price_per_gpu_hour (perfmodel.plan_cli)
# and the descriptive ones. A link table: latency_s, bandwidth_Bps, source (and nics for the network).
CLUSTER_KEYS = ("gpu", "gpus_per_node", "intra", "host", "network", "nics", "max_nodes", "host_memory_Bps",
                "gpu_topology", "host_cpu", "price_per_gpu_hour", "source", "description", "host_memory_source")
LINK_KEYS = ("latency_s", "bandwidth_Bps", "source")
NETWORK_KEYS = LINK_KEYS + ("nics",)
LAYOUT_KEYS = ("gpu_topology", "host_cpu")


def gpu_from_table(name: str, d: dict, where: str) -> GpuPreset:
    """One GPU in the gpus.toml schema (peak_flops required; tf32_flops, tensor_flops, memory_Bps,
    memory_bytes, host, source, compute_capability optional); every number must be > 0 and finite."""
    if not isinstance(d, dict):
        raise PresetError(f"{where}: must be a table with peak_flops (and tf32_flops, tensor_flops, memory_Bps)")
    check_keys(d, GPU_KEYS, where)
    nums = {}
    for k in ("peak_flops", "tf32_flops", "tensor_flops", "memory_Bps", "memory_bytes"):
        if k in d or k == "peak_flops":
            v = _number(d, k, where)
            if not (0 < v < float("inf")):
                raise PresetError(f"{where}: {k} must be a positive finite number, got {d[k]!r}")
            nums[k] = v
        else:
            nums[k] = None
    cap = capability_text(d["compute_capability"], where) if "compute_capability" in d else None
    return GpuPreset(name, nums["peak_flops"], nums["tf32_flops"], nums["tensor_flops"], nums["memory_Bps"],
                     str(d["host"]) if "host" in d else None, str(d.get("source", "")), nums["memory_bytes"], cap)


def gpus(root: Path | None = None) -> dict[str, GpuPreset]:
    """Every GPU preset of gpus.toml by name."""
    data = _table((root or presets_dir()) / "gpus.toml")
    return {name: gpu_from_table(name, d, f"gpus.toml [{name}]") for name, d in data.items()}


def cluster_gpu_fields(gpu: GpuPreset | None) -> dict:
    """The Cluster fields that describe ``gpu`` (all None without one)."""
    if gpu is None:
        return dict(gpu="", peak_flops=None, gpu_tf32_flops=None, gpu_tensor_flops=None, gpu_memory_Bps=None,
                    gpu_memory_bytes=None, gpu_compute_capability=None)
    return dict(gpu=gpu.name, peak_flops=gpu.peak_flops, gpu_tf32_flops=gpu.tf32_flops,
                gpu_tensor_flops=gpu.tensor_flops, gpu_memory_Bps=gpu.memory_Bps, gpu_memory_bytes=gpu.memory_bytes,
                gpu_compute_capability=gpu.compute_capability)


def cluster_gpu(cluster: Cluster) -> GpuPreset | None:
    """The GPU a cluster describes, as a GpuPreset (None when it has no peak FLOP/s)."""
    if not cluster.peak_flops:
        return None
    return GpuPreset(cluster.gpu or "gpu", cluster.peak_flops, cluster.gpu_tf32_flops, cluster.gpu_tensor_flops,
                     cluster.gpu_memory_Bps, None, "", cluster.gpu_memory_bytes, cluster.gpu_compute_capability)


def gpu_peaks(root: Path | None = None) -> dict[str, float]:
    """Peak fp32 FLOP/s per GPU name."""
    return {name: g.peak_flops for name, g in gpus(root).items()}


def fabrics(root: Path | None = None):
    """Every fabric of fabrics.toml by name (perfmodel.fabrics.Fabric)."""
    from .fabrics import load_fabrics

    return load_fabrics((root or presets_dir()) / "fabrics.toml")


def cluster_names(root: Path | None = None) -> list[str]:
    return sorted(_table((root or presets_dir()) / "clusters.toml"))


def workload_names(root: Path | None = None) -> list[str]:
    return sorted(_table((root or presets_dir()) / "workloads.toml"))


def _cluster_link(d: dict, which: str, where: str, fabs: dict, gpu: GpuPreset | None):
    """A cluster's link from its table: a {latency_s, bandwidth_Bps} table or a LINK text (fabric name or
    figure); host defaults to the GPU's host fabric. Returns (Link, count of NICs/links)."""
    from .fabrics import parse_link

    if which not in d:
        if which == "host" and gpu is not None and gpu.host:
            return fabs[gpu.host].link(), 1
        raise PresetError(_missing_link(which, where, gpu, isinstance(d.get("gpu"), dict)))
    v = d[which]
    if isinstance(v, str):
        try:
            parsed = parse_link(v, fabs, what=f"{where}.{which}", role=which)
        except SpecError as e:
            raise PresetError(str(e) if where in str(e) else f"{where}.{which}: {e}") from None
        return parsed.link, parsed.count
    if isinstance(v, dict):
        check_keys(v, NETWORK_KEYS if which == "network" else LINK_KEYS, f"{where}.{which}")
    link = _link(v, f"{where}.{which}")
    return link, _number(v, "nics", f"{where}.{which}", 1, integer=True) if isinstance(v, dict) else 1


_LINK_ROLES = {"intra": ("the GPU <-> GPU link inside a node", '"nvswitch-a100"'),
               "network": ("the link between nodes", '"8xib-hdr"'),
               "host": ("the GPU <-> CPU link", '"pcie4"')}


def _missing_link(which: str, where: str, gpu: GpuPreset | None, inline: bool) -> str:
    """The error line for a cluster table without link ``which``: what the link is and how to give it;
    for host also where it comes from when left out (the host fabric of the cluster's GPU)."""
    role, example = _LINK_ROLES[which]
    give = (f"give {which} = LINK (a fabric such as {example}, or a figure) or a {which} table of latency_s, "
            f"bandwidth_Bps")
    if which != "host":
        return f"{where}: missing key {which!r} ({role}): {give}"
    if gpu is None:
        return (f"{where}: missing the host link ({role}), which defaults to the host fabric of the cluster's "
                f"GPU, and it names no gpu: {give}, or gpu = a GPU preset with a host fabric "
                f'(`perfmodel presets --kind gpu`) or a gpu table with host = "pcie4"')
    if inline:
        return (f"{where}: missing the host link ({role}), which defaults to the host fabric of the cluster's "
                f'GPU, and its gpu table has no host: {give}, or host = "pcie4" (a fabric) in the gpu table')
    return (f"{where}: missing the host link ({role}), and gpu {gpu.name!r} has no host fabric in gpus.toml to "
            f'default to: {give}, or describe the GPU in a gpu table with host = "pcie4" (a fabric)')


def cluster_from_table(name: str, d: dict, where: str, root: Path | None = None) -> Cluster:
    """A Cluster from one table in the clusters.toml schema (``where`` names file and table in errors).

    Links are tables (latency_s, bandwidth_Bps, source) or LINK texts ("nvswitch-a100", "8xib-hdr",
    "25GB/s,2us"); host may be left out when gpu names a GPU preset with a host fabric. ``gpu`` is a
    gpus.toml name or an inline table in the gpus.toml schema (an unlisted GPU; its ``name`` key, else
    "custom-gpu", names it).
    """
    root = root or presets_dir()
    if not isinstance(d, dict):
        raise PresetError(f"{where}: must be a table")
    check_keys(d, CLUSTER_KEYS, where)
    layout = [k for k in LAYOUT_KEYS if k in d]  # a cluster file's loader reads and removes them
    if layout:
        raise PresetError(f"{where}: {layout[0]} is read from a cluster file (--cluster FILE.toml) only")
    gpu_name = d.get("gpu", "")
    table = gpus(root)
    if isinstance(gpu_name, str):
        gpu_name = match_name(gpu_name, table) or gpu_name
    if isinstance(gpu_name, dict):
        gpu = gpu_from_table(str(gpu_name.get("name", "custom-gpu")), gpu_name, f"{where}.gpu")
        if gpu.host is not None and gpu.host not in fabrics(root):
            raise PresetError(f"{where}.gpu: host {gpu.host!r} is not a fabric of fabrics.toml")
    elif not isinstance(gpu_name, str):
        raise PresetError(f"{where}: gpu must be a GPU name or a [gpu] table, got {gpu_name!r}")
    elif gpu_name and gpu_name not in table:
        raise PresetError(f"{where}: gpu {gpu_name!r} is not in gpus.toml{closest(gpu_name, table)} "
                          f"({', '.join(sorted(table))}); describe an unlisted GPU in a [gpu] table "
                          f"(peak_flops; optional tf32_flops, tensor_flops, memory_Bps, memory_bytes, host "
                          f"= a fabric such as \"pcie4\", source)")
    else:
        gpu = table.get(gpu_name)
    fabs = fabrics(root)
    gpn = _number(d, "gpus_per_node", where, integer=True)
    intra, _ = _cluster_link(d, "intra", where, fabs, gpu)
    host, _ = _cluster_link(d, "host", where, fabs, gpu)
    network, nics = _cluster_link(d, "network", where, fabs, gpu)
    nics = _number(d, "nics", where, nics, integer=True)
    max_nodes = _number(d, "max_nodes", where, integer=True) if "max_nodes" in d else None
    host_mem = _number(d, "host_memory_Bps", where) if "host_memory_Bps" in d else None
    try:
        return Cluster(name=name, gpus_per_node=gpn, intra=intra, host=host, network=network, max_nodes=max_nodes,
                       host_memory_Bps=host_mem, source=str(d.get("source", d.get("description", ""))),
                       nics=nics, **cluster_gpu_fields(gpu))
    except SpecError as e:
        raise PresetError(f"{where}: {e}") from None


def load_cluster(name: str, root: Path | None = None) -> Cluster:
    """The cluster preset ``name``."""
    root = root or presets_dir()
    data = _table(root / "clusters.toml")
    name = match_name(name, data) or name
    if name not in data:
        raise PresetError(f"unknown cluster {name!r}{closest(name, data)}; presets: {', '.join(sorted(data))}")
    return cluster_from_table(name, data[name], f"clusters.toml [{name}]", root)


WORKLOAD_KEYS = ("tensors", "model", "compute", "accumulate", "wire", "classifier_tensors", "source")
COMPUTE_KEYS = ("kind", "t0_s", "t1_s", "copy_s", "batches", "times_s", "precision", "source")
_COMPUTE_SHAPE = ('kind = "linear" with t0_s, t1_s, or kind = "table" with batches, times_s; optional copy_s, '
                  'precision, source')


def _compute(d: dict, where: str) -> ComputeTime:
    check_keys(d, COMPUTE_KEYS, where)
    kind = _get(d, "kind", where)
    try:
        if kind == "linear":
            return ComputeTime("linear", t0_s=_number(d, "t0_s", where), t1_s=_number(d, "t1_s", where),
                               copy_s=_number(d, "copy_s", where, 0.0), source=str(d.get("source", "")))
        if kind == "table":
            batches = _get(d, "batches", where)
            times = _get(d, "times_s", where)
            if not isinstance(batches, list) or not isinstance(times, list):
                raise PresetError(f"{where}: batches and times_s must be lists")
            return ComputeTime("table", batches=tuple(_number({"batch": b}, "batch", where, integer=True)
                                                      for b in batches),
                               times_s=tuple(_number({"time": t}, "time", where) for t in times),
                               copy_s=_number(d, "copy_s", where, 0.0), source=str(d.get("source", "")))
        raise PresetError(f"{where}: kind must be 'linear' or 'table', got {kind!r}")
    except SpecError as e:
        raise PresetError(e if where in str(e) else f"{where}: {e}") from None


def read_tensors(path: Path) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(names, sizes) from a tensors JSON: {"tensors": [[name, numel], ...]}."""
    try:
        data = json.loads(path.read_text())
        pairs = data["tensors"]
        names = tuple(str(n) for n, _ in pairs)
        sizes = tuple(int(k) for _, k in pairs)
    except FileNotFoundError:
        raise PresetError(f"tensor file {path} is missing") from None
    except (ValueError, KeyError, TypeError) as e:
        raise PresetError(f"tensor file {path} is malformed: {e}") from None
    if "parameters" in data and int(data["parameters"]) != sum(sizes):
        raise PresetError(f"tensor file {path}: parameters {data['parameters']} != sum of tensors {sum(sizes)}")
    return names, sizes


WIRES = ("fp32", "fp16", "bf16")


@dataclass(frozen=True)
class WorkloadSettings:
    """Workload-file settings that are not part of the Workload spec: the gradient wire format
    (``wire = "fp16"``; maps to Strategy.wire unless --wire is given), None when the file has none;
    warnings: lines the compute rule has for the user (perfmodel.workload_input.rule_compute)."""

    wire: str | None = None
    warnings: tuple[str, ...] = ()


def _library_flops(names: tuple[str, ...], sizes: tuple[int, ...], model: str, root: Path,
                   where: str, required: bool) -> tuple[float, ...]:
    """Per-tensor forward FLOPs from the library model ``model`` when its tensors are these ones."""
    from .library import LibraryError, load_model

    try:
        lib = load_model(model, root)
    except LibraryError:
        if required:
            raise
        return ()
    if lib.tensor_sizes != sizes or (names and lib.tensor_names != names):
        if required:
            raise PresetError(f"{where}: tensors differ from library model {model!r}")
        return ()
    return lib.tensor_flops


def workload_from_table(name: str, d: dict, where: str, base_dir: Path, root: Path | None = None,
                        compute: dict[str, ComputeTime] | None = None) -> tuple[Workload, WorkloadSettings]:
    """A Workload from one table in the workloads.toml schema (``where`` names file and table in errors).

    Tensors: ``tensors = "file.json"`` (relative to base_dir) or ``model = "<library name>"``; per-tensor
    FLOPs come from the library model of that name (or of the workload's own name, when its tensors are
    the same). ``compute.<gpu>`` tables give measured times; ``compute`` (from the command line) replaces
    them. Optional: classifier_tensors, accumulate, wire, source.
    """
    from .library import load_model

    root = root or presets_dir()
    if not isinstance(d, dict):
        raise PresetError(f"{where}: must be a table")
    check_keys(d, WORKLOAD_KEYS, where)
    if "model" in d and "tensors" in d:
        raise PresetError(f"{where}: give tensors (a tensors JSON) or model (a library model), not both")
    if "model" in d:
        if not isinstance(d["model"], str):
            raise PresetError(f"{where}: model must be a library model name, got {d['model']!r}")
        lib = load_model(d["model"], root)
        names, sizes, flops = lib.tensor_names, lib.tensor_sizes, lib.tensor_flops
    else:
        if "tensors" not in d:
            raise PresetError(f"{where}: missing key 'tensors' (a tensors JSON) or 'model' (a library model)")
        tensors = d["tensors"]
        if not isinstance(tensors, str):
            raise PresetError(f"{where}: tensors must be a path to a tensors JSON, got {tensors!r}")
        names, sizes = read_tensors(base_dir / tensors)
        flops = _library_flops(names, sizes, name, root, where, required=False)
    tables = d.get("compute", {})
    if not isinstance(tables, dict):
        raise PresetError(f"{where}: compute must be a table of per-GPU tables ({_COMPUTE_SHAPE})")
    for gpu, c in tables.items():
        if not isinstance(c, dict):
            raise PresetError(f"{where}: compute.{gpu} must be a table ({_COMPUTE_SHAPE}), got {c!r}")
    own = {gpu: _compute(c, f"{where}.compute.{gpu}") for gpu, c in tables.items()}
    compute = own if compute is None else compute
    wire = d.get("wire")
    if wire is not None and wire not in WIRES:
        raise PresetError(f"{where}: wire must be one of {', '.join(WIRES)}, got {wire!r}")
    accumulate = _number(d, "accumulate", where, 1, integer=True)
    if accumulate < 1:
        raise PresetError(f"{where}: accumulate must be a positive integer, got {accumulate!r}")
    if not compute:
        raise PresetError(f"{where}: no compute time; give one on the command line (--samples-per-s R with "
                          f"--batch, --compute-ms T, --estimate PRECISION or --profile) or a [compute.<gpu>] table")
    table = gpus(root)

    def fp32_measured(g: str) -> bool:  # a TF32-capable GPU runs fp32 training in TF32 unless told
        said = tables.get(g, {}).get("precision")
        return said == "fp32" or (said is None and table[g].tf32_flops is None)
    try:
        workload = Workload(name=name, tensor_sizes=sizes, tensor_names=names, compute=compute,
                            classifier_tensors=_number(d, "classifier_tensors", where, 2, integer=True),
                            compute_peak_flops={g: table[g].peak_flops for g in compute
                                                if g in table and fp32_measured(g)},
                            source=str(d.get("source", "")),
                            accumulate=accumulate, tensor_flops=flops)
    except SpecError as e:
        raise PresetError(e if where in str(e) else f"{where}: {e}") from None
    return workload, WorkloadSettings(wire)


def load_workload(name: str, root: Path | None = None) -> Workload:
    """The workload preset ``name``."""
    return load_workload_with_settings(name, root)[0]


def load_workload_with_settings(name: str, root: Path | None = None,
                                compute: dict[str, ComputeTime] | None = None) -> tuple[Workload, WorkloadSettings]:
    """The workload preset ``name`` and its settings; ``compute`` replaces its measured times."""
    root = root or presets_dir()
    data = _table(root / "workloads.toml")
    name = match_name(name, data) or name
    if name not in data:
        raise PresetError(f"unknown workload {name!r}{closest(name, data)}; presets: {', '.join(sorted(data))}")
    return workload_from_table(name, data[name], f"workloads.toml [{name}]", root, root, compute)


PRESET_KINDS = ("fabric", "gpu", "host-cpu", "cluster", "workload", "model")


def list_presets(root: Path | None = None, kinds: tuple[str, ...] = PRESET_KINDS) -> list[PresetInfo]:
    """Every preset of the given kinds with a one-line summary and its source."""
    from .library import load_model, model_names

    root = root or presets_dir()
    out = []
    if "fabric" in kinds:
        for name, f in sorted(fabrics(root).items()):
            more = f"; {f.links_per_gpu} links per GPU ({', '.join(f.gpus)})" if f.links_per_gpu else ""
            if f.partial_Bps:
                more += (f"; GPUs 0..g-1 of {f.node_gpus}: " + ", ".join(
                    f"{g} {'host' if b == 0 else f'{b / 1e9:.4g}'}" for g, b in f.partial_Bps) + " GB/s")
            out.append(PresetInfo("fabric", name, f"{f.kind}: nominal {f.nominal_Bps / 1e9:.4g} GB/s, achievable "
                                  f"{f.achievable_Bps / 1e9:.4g} GB/s (used), {f.latency_s * 1e6:.3g} us{more}",
                                  f.source))
    if "gpu" in kinds:
        for name, g in sorted(gpus(root).items()):
            parts = [f"fp32 {g.peak_flops / 1e12:.4g} TFLOP/s"]
            if g.tf32_flops:
                parts.append(f"tf32 {g.tf32_flops / 1e12:.4g}")
            if g.tensor_flops:
                parts.append(f"fp16/bf16 {g.tensor_flops / 1e12:.4g}")
            if g.memory_Bps:
                parts.append(f"memory {g.memory_Bps / 1e9:.4g} GB/s")
            if g.host:
                parts.append(f"host {g.host}")
            out.append(PresetInfo("gpu", name, ", ".join(parts), g.source))
    if "host-cpu" in kinds:
        from .gpu_topology import host_cpus

        for name, c in host_cpus(root).items():
            out.append(PresetInfo("host-cpu", name, f"inter-socket {c.inter_socket_Bps / 1e9:.4g} GB/s, P2P "
                                  f"overhead {c.p2p_overhead:g} (for --gpu-topology)", c.source))
    if "cluster" in kinds:
        for name in cluster_names(root):
            c = load_cluster(name, root)
            gb = lambda link: f"{link.bandwidth_Bps / 1e9:.4g} GB/s"  # noqa: E731
            nodes = f", max {c.max_nodes} nodes" if c.max_nodes else ""
            out.append(PresetInfo("cluster", name,
                                  f"{c.gpus_per_node}x {c.gpu or '?'} per node; intra {gb(c.intra)}, host "
                                  f"{gb(c.host)}, network {gb(c.network)} ({c.network.latency_s * 1e6:.1f} us)"
                                  f"{nodes}", c.source))
    if "workload" in kinds:
        for name in workload_names(root):
            w = load_workload(name, root)
            measured = ", ".join(sorted(w.compute))
            out.append(PresetInfo("workload", name, f"{w.parameters / 1e6:.2f}M parameters in {len(w.tensor_sizes)} "
                                  f"tensors; compute measured on {measured}", w.source))
    if "model" in kinds:
        for name in model_names(root):
            m = load_model(name, root)
            out.append(PresetInfo("model", name, f"{m.parameters / 1e6:.2f}M parameters in {len(m.tensor_sizes)} "
                                  f"tensors; {m.forward_flops / 1e9:.4g} GFLOP forward per sample ({m.input})",
                                  m.source))
    return out
