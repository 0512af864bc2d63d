"""Named fabrics (data/presets/fabrics.toml) and the LINK text that names a link on the command line.

A LINK is one of
    NAME                 a fabric of fabrics.toml: ib-hdr, nvswitch-a100, pcie4, eth-10g ...
    KxNAME               K of them side by side (K NICs per node): 8xib-hdr
    FIGURE               a bandwidth: 200Gb/s, 12.5GB/s, 100Gbps, 800MB/s (bits with a lower-case b)
    KxFIGURE             K links of that bandwidth: 8x200Gb/s
    ...,LATENCY          any of these with a latency: 25GB/s,2us, ib-edr,1.5us (ns, us, ms, s)
A fabric brings its achievable bandwidth and latency (what the model uses, see fabrics.toml). A bare
figure is taken as the achievable bandwidth; its latency is the one of the link it replaces, else the
latency of the reference fabric of its role (DEFAULT_LATENCY_FABRIC).

An intra fabric wired as a mesh of direct links (the DGX-1's hybrid cube-mesh) may say how many of its
links per GPU the rings through GPUs 0..g-1 can use: ``node_gpus`` (the node the fabric describes) and
``ring_links = {g = links}`` (with g = node_gpus, the links its achievable figure stands for). A node
running g < node_gpus of its GPUs then rings at achievable x links(g) / links(node_gpus); 0 links: no
ring on the fabric (the host link carries it). docs/model.md section 10.3c derives the DGX-1 tables.
An NVLink fabric also says how many links per GPU its achievable figure stands for (``links_per_gpu``)
and which GPU presets carry that generation (``gpus``): ``--gpu-topology`` prices an ``NV#`` bond of
such a GPU at # x achievable / links_per_gpu (perfmodel.gpu_topology).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from .preset_toml import PresetError, read_toml
from .specs import Link, SpecError

FABRIC_KINDS = ("network", "intra", "host")
# a bare figure with nothing to replace takes the latency of this fabric of its role
DEFAULT_LATENCY_FABRIC = {"network": "ib-hdr", "intra": "nvlink3", "host": "pcie4"}

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_LATENCY_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


@dataclass(frozen=True)
class Fabric:
    """One fabric: nominal and achievable bandwidth (bytes/s per direction; per NIC for network fabrics,
    per GPU for intra and host fabrics) and latency (seconds)."""

    name: str
    kind: str
    nominal_Bps: float
    achievable_Bps: float
    latency_s: float
    source: str
    partial_Bps: tuple[tuple[int, float], ...] = ()  # (g, bytes/s) when g < node_gpus GPUs of a node run
    node_gpus: int = 0
    links_per_gpu: int = 0  # NVLinks per GPU behind achievable_Bps (0: not an NVLink fabric)
    gpus: tuple[str, ...] = ()  # GPU presets whose NVLinks are this fabric's

    @property
    def link_Bps(self) -> float:
        """One NVLink's achievable bytes/s per direction (achievable over links_per_gpu)."""
        if not self.links_per_gpu:
            raise SpecError(f"fabric {self.name} does not say how many links per GPU it stands for")
        return self.achievable_Bps / self.links_per_gpu

    def link(self, count: int = 1) -> Link:
        """The link the model uses: ``count`` of these side by side (achievable bandwidth x count)."""
        if count > 1:
            return Link(self.latency_s, self.achievable_Bps * count, f"{count}x {self.name}: {self.source}")
        return Link(self.latency_s, self.achievable_Bps, f"{self.name}: {self.source}", self.partial_Bps,
                    self.node_gpus)


def _ring_links(d: dict, where: str, achievable: float) -> tuple[tuple[tuple[int, float], ...], int, int]:
    """(partial_Bps, node_gpus, the whole node's links) from a fabric's node_gpus and ring_links (module
    docstring); ((), 0, 0) without."""
    if "ring_links" not in d and "node_gpus" not in d:
        return (), 0, 0
    node, links = d.get("node_gpus"), d.get("ring_links")
    if isinstance(node, bool) or not isinstance(node, int) or node < 2:
        raise PresetError(f"{where}: node_gpus must be an integer >= 2 (the GPUs of the node ring_links "
                          f"describes), got {node!r}")
    if not isinstance(links, dict):
        raise PresetError(f"{where}: ring_links must be a table {{g = links}} for g = 2..{node}, got {links!r}")
    table = {}
    for key, v in links.items():
        if not key.isdigit() or not 2 <= int(key) <= node:
            raise PresetError(f"{where}: ring_links key {key!r} must be a GPU count 2..{node}")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise PresetError(f"{where}: ring_links[{key}] must be an integer >= 0, got {v!r}")
        table[int(key)] = v
    full = table.get(node, 0)
    if full < 1 or any(v > full for v in table.values()):
        raise PresetError(f"{where}: ring_links[{node}] (the whole node's links, what achievable_Bps stands "
                          f"for) must be >= 1 and >= every other count, got {links!r}")
    return tuple((g, achievable * v / full) for g, v in sorted(table.items()) if g < node), node, full


def load_fabrics(path: Path) -> dict[str, Fabric]:
    """Every fabric of a fabrics.toml, by name; a malformed entry raises SpecError naming file and key."""
    data = read_toml(path)
    out = {}
    for name, d in data.items():
        if not isinstance(d, dict):
            continue  # file-level settings such as model_uses
        where = f"{path.name} [{name}]"
        values = {}
        for key in ("kind", "nominal_Bps", "achievable_Bps", "latency_s", "source"):
            if key not in d:
                raise PresetError(f"{where}: missing key {key!r}")
            values[key] = d[key]
        if values["kind"] not in FABRIC_KINDS:
            raise PresetError(f"{where}: kind must be one of {', '.join(FABRIC_KINDS)}, got {values['kind']!r}")
        for key in ("nominal_Bps", "achievable_Bps", "latency_s"):
            v = values[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or \
                    (v == 0 and key != "latency_s"):
                raise PresetError(f"{where}: {key} must be a positive number, got {v!r}")
        if values["achievable_Bps"] > values["nominal_Bps"]:
            raise PresetError(f"{where}: achievable_Bps {values['achievable_Bps']} exceeds nominal_Bps "
                              f"{values['nominal_Bps']}")
        partial, node, full = _ring_links(d, where, float(values["achievable_Bps"]))
        links, gpus = d.get("links_per_gpu", 0), d.get("gpus", [])
        if isinstance(links, bool) or not isinstance(links, int) or links < 0:
            raise PresetError(f"{where}: links_per_gpu must be a whole number of NVLinks, got {links!r}")
        if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus) or (gpus and not links):
            raise PresetError(f"{where}: gpus must be a list of GPU preset names, with links_per_gpu, got {gpus!r}")
        if node and links and full != links:
            raise PresetError(f"{where}: ring_links[{node}] must equal links_per_gpu {links}")
        out[name] = Fabric(name, values["kind"], float(values["nominal_Bps"]), float(values["achievable_Bps"]),
                           float(values["latency_s"]), str(values["source"]), partial, node, links, tuple(gpus))
    return out


def nvlink_of(gpu: str, fabrics: dict[str, Fabric]) -> Fabric | None:
    """The NVLink fabric whose ``gpus`` list ``gpu`` (a GPU preset name), else None."""
    return next((f for f in fabrics.values() if gpu and gpu in f.gpus), None)


def parse_bandwidth(text: str) -> float:
    """Bytes/s from "200Gb/s", "12.5GB/s", "100Gbps", "800MB/s", "1e10Bps" (lower-case b = bits)."""
    m = re.fullmatch(rf"\s*({_NUMBER})\s*([kKMGT]?)(B/s|Bps|b/s|bps|bit/s)\s*", text)
    if not m:
        raise ValueError(f"cannot read a bandwidth from {text!r}; use e.g. 200Gb/s, 12.5GB/s, 100Gbps")
    scale = _PREFIX[m.group(2).upper()]
    return float(m.group(1)) * scale / (1 if m.group(3) in ("B/s", "Bps") else 8)


def parse_latency(text: str) -> float:
    """Seconds from "2us", "1.5 us", "500ns", "0.01ms", "1e-6s"."""
    m = re.fullmatch(rf"\s*({_NUMBER})\s*([a-zµ]+)\s*", text)
    if not m or m.group(2) not in _LATENCY_UNITS:
        raise ValueError(f"cannot read a latency from {text!r}; use e.g. 2us, 500ns, 0.01ms")
    return float(m.group(1)) * _LATENCY_UNITS[m.group(2)]


@dataclass(frozen=True)
class ParsedLink:
    """A LINK text resolved: the link, and how many NICs/links it stands for (the K of KxNAME)."""

    link: Link
    count: int


def parse_link(text: str, fabrics: dict[str, Fabric], *, what: str, role: str,
               replaces: Link | None = None) -> ParsedLink:
    """Resolve a LINK text (module docstring) for ``role`` ("network", "intra", "host").

    what names the option or key in error messages ("--network"); replaces is the link it overrides
    (a bare figure keeps its latency).
    """
    raw = text
    text = text.strip()
    latency = None
    if "," in text:
        text, lat_text = text.split(",", 1)
        try:
            latency = parse_latency(lat_text)
        except ValueError as e:
            raise SpecError(f"{what} {raw!r}: {e}") from None
        if not latency >= 0 or not math.isfinite(latency):
            raise SpecError(f"{what} {raw!r}: latency must be >= 0")
    count = 1
    m = re.fullmatch(r"(\d+)\s*[xX]\s*(.+)", text.strip())
    if m:
        count = int(m.group(1))
        text = m.group(2)
        if count < 1:
            raise SpecError(f"{what} {raw!r}: the count before 'x' must be >= 1")
    name = text.strip().lower()
    if name in fabrics:
        fab = fabrics[name]
        link = fab.link(count)
        if latency is not None:
            link = Link(latency, link.bandwidth_Bps, link.source + f" (latency {latency:g} s given)",
                        link.partial_Bps, link.node_gpus)
        return ParsedLink(link, count)
    if not re.match(rf"\s*{_NUMBER}", text):
        raise SpecError(f"unknown fabric {text.strip()!r} for {what}; fabrics: {', '.join(sorted(fabrics))}; "
                        f"or a figure such as 200Gb/s, 12.5GB/s, 25GB/s,2us, 8x200Gb/s")
    try:
        bandwidth = parse_bandwidth(text)
    except ValueError as e:
        raise SpecError(f"{what} {raw!r}: {e}") from None
    if not math.isfinite(bandwidth * count):
        raise SpecError(f"{what} {raw!r}: bandwidth must be a finite number > 0 (it overflows to infinity)")
    if not bandwidth > 0:
        raise SpecError(f"{what} {raw!r}: bandwidth must be > 0")
    if latency is None:
        if replaces is not None:
            latency, why = replaces.latency_s, "latency of the link it replaces"
        else:
            ref = fabrics[DEFAULT_LATENCY_FABRIC[role]]
            latency, why = ref.latency_s, f"latency of {ref.name}"
    else:
        why = "given"
    return ParsedLink(Link(latency, bandwidth * count,
                           f"given on the command line or in a cluster file as {raw!r} "
                           f"({bandwidth * count / 1e9:g} GB/s, {why} {latency * 1e6:g} us)"), count)
