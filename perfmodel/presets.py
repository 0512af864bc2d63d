"""Load the cluster, GPU and workload presets from data/presets (TOML, every number with its source).

Files: gpus.toml (peak FLOP/s per GPU), clusters.toml (one table per cluster with intra/host/network
links), workloads.toml (one table per workload: a tensors JSON with per-tensor sizes, compute times per
GPU). The folder is $DSGD_PRESETS when set, else the copy installed with the package
(perfmodel/_presets, package data of a regular install), else data/presets of the source tree.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .specs import Cluster, ComputeTime, Link, SpecError, Workload

PRESETS_ENV = "DSGD_PRESETS"


class PresetError(SpecError):
    """A preset is unknown, or a preset file is missing or malformed."""


def presets_dir() -> Path:
    """The presets folder: $DSGD_PRESETS, else the installed package data, else data/presets of the checkout."""
    env = os.environ.get(PRESETS_ENV)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    installed = here / "_presets"  # pyproject.toml maps data/presets to perfmodel._presets in a wheel
    return installed if installed.is_dir() else here.parent / "data" / "presets"


@lru_cache(maxsize=8)
def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise PresetError(f"preset file {path} is missing") from None
    except tomllib.TOMLDecodeError as e:
        raise PresetError(f"preset file {path} is malformed: {e}") from None


def _table(path: Path) -> dict:
    return _read_toml(path.resolve())


def _get(d: dict, key: str, where: str):
    if key not in d:
        raise PresetError(f"{where}: missing key {key!r}")
    return d[key]


def _link(d: dict, where: str) -> Link:
    try:
        return Link(float(_get(d, "latency_s", where)), float(_get(d, "bandwidth_Bps", where)),
                    str(d.get("source", "")))
    except (TypeError, ValueError) as e:
        raise PresetError(f"{where}: {e}") from None


@dataclass(frozen=True)
class PresetInfo:
    """One line of `perfmodel presets`."""

    kind: str
    name: str
    summary: str
    source: str


def gpu_peaks(root: Path | None = None) -> dict[str, float]:
    """Peak fp32 FLOP/s per GPU name."""
    data = _table((root or presets_dir()) / "gpus.toml")
    return {name: float(_get(d, "peak_flops", f"gpus.toml [{name}]")) for name, d in data.items()}


def cluster_names(root: Path | None = None) -> list[str]:
    return sorted(_table((root or presets_dir()) / "clusters.toml"))


def workload_names(root: Path | None = None) -> list[str]:
    return sorted(_table((root or presets_dir()) / "workloads.toml"))


def load_cluster(name: str, root: Path | None = None) -> Cluster:
    """The cluster preset ``name``."""
    root = root or presets_dir()
    data = _table(root / "clusters.toml")
    if name not in data:
        raise PresetError(f"unknown cluster {name!r}; presets: {', '.join(sorted(data))}")
    d = data[name]
    where = f"clusters.toml [{name}]"
    gpu = str(d.get("gpu", ""))
    peaks = gpu_peaks(root)
    if gpu and gpu not in peaks:
        raise PresetError(f"{where}: gpu {gpu!r} is not in gpus.toml")
    try:
        return Cluster(name=name, gpus_per_node=int(_get(d, "gpus_per_node", where)),
                       intra=_link(_get(d, "intra", where), where + ".intra"),
                       host=_link(_get(d, "host", where), where + ".host"),
                       network=_link(_get(d, "network", where), where + ".network"),
                       gpu=gpu, peak_flops=peaks.get(gpu), max_nodes=d.get("max_nodes"),
                       source=str(d.get("source", "")))
    except SpecError as e:
        raise PresetError(f"{where}: {e}") from None


def _compute(d: dict, where: str) -> ComputeTime:
    kind = _get(d, "kind", where)
    try:
        if kind == "linear":
            return ComputeTime("linear", t0_s=float(_get(d, "t0_s", where)), t1_s=float(_get(d, "t1_s", where)),
                               copy_s=float(d.get("copy_s", 0.0)), source=str(d.get("source", "")))
        return ComputeTime("table", batches=tuple(int(b) for b in _get(d, "batches", where)),
                           times_s=tuple(float(t) for t in _get(d, "times_s", where)),
                           copy_s=float(d.get("copy_s", 0.0)), source=str(d.get("source", "")))
    except (TypeError, ValueError) as e:
        raise PresetError(f"{where}: {e}") from None


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


def load_workload(name: str, root: Path | None = None) -> Workload:
    """The workload preset ``name``."""
    root = root or presets_dir()
    data = _table(root / "workloads.toml")
    if name not in data:
        raise PresetError(f"unknown workload {name!r}; presets: {', '.join(sorted(data))}")
    d = data[name]
    where = f"workloads.toml [{name}]"
    names, sizes = read_tensors(root / str(_get(d, "tensors", where)))
    compute = {gpu: _compute(c, f"{where}.compute.{gpu}") for gpu, c in _get(d, "compute", where).items()}
    peaks = gpu_peaks(root)
    try:
        return Workload(name=name, tensor_sizes=sizes, tensor_names=names, compute=compute,
                        classifier_tensors=int(d.get("classifier_tensors", 2)),
                        compute_peak_flops={g: peaks[g] for g in compute if g in peaks},
                        source=str(d.get("source", "")))
    except SpecError as e:
        raise PresetError(f"{where}: {e}") from None


def list_presets(root: Path | None = None) -> list[PresetInfo]:
    """Every preset with a one-line summary and its source."""
    root = root or presets_dir()
    out = []
    for name in cluster_names(root):
        c = load_cluster(name, root)
        gbps = lambda link: link.bandwidth_Bps * 8 / 1e9  # noqa: E731
        out.append(PresetInfo("cluster", name,
                              f"{c.gpus_per_node}x {c.gpu or '?'} per node; intra {gbps(c.intra):.0f} Gb/s, "
                              f"host {gbps(c.host):.0f} Gb/s, network {gbps(c.network):.0f} Gb/s "
                              f"({c.network.latency_s * 1e6:.1f} us)", c.source))
    for name in workload_names(root):
        w = load_workload(name, root)
        gpus = ", ".join(sorted(w.compute))
        out.append(PresetInfo("workload", name, f"{w.parameters / 1e6:.2f}M parameters in {len(w.tensor_sizes)} "
                              f"tensors; compute measured on {gpus}", w.source))
    return out
