"""A node's GPU ring bandwidth from what ``nvidia-smi topo -m`` prints on it (``--gpu-topology``).

A node runs its allreduce as fast as the rings NCCL builds through its GPUs, and that depends on where
the GPUs sit: behind one PCIe switch, behind the CPU's root complex, on two sockets, or bonded by
NVLinks. ``nvidia-smi topo -m`` names the path between every pair of GPUs:

    X     the GPU itself
    PIX   at most one PCIe bridge          PXB   several PCIe bridges, no host bridge
    PHB   through a PCIe host bridge (the CPU)
    NODE  between PCIe host bridges inside one NUMA node
    SYS   across the link between NUMA nodes (QPI/UPI, Infinity Fabric); SOC in old releases
    NV#   a bond of # NVLinks

Each hop's bandwidth per direction, with P the GPU's host link (its PCIe preset, achievable), and for
the host CPU (data/presets/host_cpus.toml, NCCL's own topology figures) o its P2P overhead (6/5 on
Intel: GPU-to-GPU traffic through the root complex travels as 64-byte TLPs) and S its inter-socket link:

    PIX, PXB     b = P                     peer to peer through PCIe switches
    PHB, NODE    b = P / o                 through the CPU's root complex
    SYS          b = min(P / o, S / k)     k: the ring's hops that cross between the same two sockets in
                                           the same direction (they share that direction of the link)
    NV#          faster than any PCIe path: never the bottleneck of a ring that has a PCIe hop

Ring bandwidth = max over the rings through all GPUs (Hamiltonian cycles) of the slowest hop: NCCL
searches its rings for the same thing. Every ring of up to 8 GPUs is tried (2,520 at 8); a larger node
must have one path class between all its GPUs. GPUs that can ring over NVLink alone ring at L x one
NVLink's achievable figure, L the links per GPU the best packing of rings uses (perfmodel.nvlink_rings),
at most the GPU's own links (behind NVSwitches every pair shows all of them: NV18 on an HGX H100),
one link's figure from the NVLink fabric that fabrics.toml lists for the cluster's GPU preset (nvlink2
for v100: 120 / 6 = 20 GB/s), the latency that fabric's; a GPU with no listed generation is refused (give
the NVLink fabric with --intra). A run on GPUs 0..g-1 of the node rings through their own paths: the link
carries that ring's figure for each such g where it differs (``Link.partial_Bps``; two GPUs behind one
switch of a two-socket node never cross the socket link; two GPUs of a DGX-1 ring over their one bond).
The sockets are the groups of GPUs joined by PCIe paths other than SYS (an NV# pair says nothing of its
PCIe path). The CPU is a host_cpus.toml name or the model string lscpu prints (``cpu_from_model``). Not
modelled: a PCIe switch's uplink shared by two hops in the same direction, PCIe links narrower than x16,
and a partial node's NVLink latency (the whole node's link latency is used).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .fabrics import Fabric, load_fabrics, nvlink_of
from .nvlink_rings import ring_links
from .preset_toml import PresetError, read_toml
from .specs import Link, SpecError

CLASSES = ("PIX", "PXB", "PHB", "NODE", "SYS", "NV")
MAX_SEARCH_GPUS = 8
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU = re.compile(r"GPU(\d+)$")


@dataclass(frozen=True)
class HostCpu:
    """A host CPU's figures: inter_socket_Bps (bytes/s per direction), p2p_overhead (PCIe bytes per byte)."""

    name: str
    inter_socket_Bps: float
    p2p_overhead: float
    source: str


@dataclass(frozen=True)
class Topology:
    """The GPU-to-GPU path classes of one node: paths[i][j] in CLASSES ("" on the diagonal)."""

    gpus: tuple[str, ...]
    paths: tuple[tuple[str, ...], ...]
    where: str
    nvlinks: tuple[tuple[int, ...], ...]  # the # of NV# per pair, 0 elsewhere

    def first(self, g: int) -> "Topology":
        """The layout of GPUs 0..g-1 alone (what a run on g of the node's GPUs rings through)."""
        return Topology(self.gpus[:g], tuple(row[:g] for row in self.paths[:g]), self.where,
                        tuple(row[:g] for row in self.nvlinks[:g]))

    def layout_words(self) -> str:
        """"N GPUs, K socket(s)", or "N GPUs, NVLink" where a GPU's paths are NV# and SYS alone (its
        socket mates are not shown, so the socket count is not known)."""
        hidden = any(all(c in ("", "NV", "SYS") for c in row) and "NV" in row for row in self.paths)
        return f"{len(self.gpus)} GPUs, " + ("NVLink" if hidden else f"{len(set(self.sockets()))} socket(s)")

    def cpu_paths(self) -> list[str]:
        """The path classes that go through the CPU (PHB, NODE, SYS): pricing them needs the host CPU."""
        return sorted({c for row in self.paths for c in row if c in ("PHB", "NODE", "SYS")})

    def sockets(self) -> tuple[int, ...]:
        """Socket index of each GPU: GPUs joined by PCIe paths other than SYS share one. An NV# pair says
        nothing of its PCIe path: a GPU whose every other path is NV# or SYS (a DGX-1) is a socket alone."""
        n = len(self.gpus)
        group = list(range(n))
        for i, j in itertools.combinations(range(n), 2):
            if self.paths[i][j] not in ("SYS", "NV"):
                old, new = group[j], group[i]
                group = [new if g == old else g for g in group]
        for i, j in itertools.combinations(range(n), 2):
            if self.paths[i][j] != "NV" and (group[i] != group[j]) != (self.paths[i][j] == "SYS"):
                raise SpecError(f"{self.where}: {self.gpus[i]}-{self.gpus[j]} is {self.paths[i][j]}, but the other "
                                f"paths put them on {'different' if group[i] != group[j] else 'the same'} socket(s)")
        labels = {g: k for k, g in enumerate(dict.fromkeys(group))}
        return tuple(labels[g] for g in group)


@dataclass(frozen=True)
class Ring:
    """The best ring: bandwidth_Bps (bytes/s per direction), GPU order, its slowest hop in words, and
    whether it runs over NVLink alone."""

    bandwidth_Bps: float
    order: tuple[int, ...]
    bottleneck: str
    nvlink: bool = False

    def words(self) -> str:
        """The ring in words: its NVLink packing, or its order and slowest hop."""
        if self.nvlink:
            return self.bottleneck
        return f"ring {'-'.join(str(i) for i in self.order)}, slowest hop {self.bottleneck}"


def _cell(text: str, where: str) -> str:
    t = text.upper()
    if t == "SOC":
        return "SYS"
    if re.fullmatch(r"NV[1-9]\d*", t):
        return "NV"
    if t in CLASSES or t == "X":
        return t
    raise SpecError(f"{where}: unknown path {text!r} (nvidia-smi topo -m cells: X, PIX, PXB, PHB, NODE, SYS, NV#)")


def parse_topology(text: str, where: str = "nvidia-smi topo -m") -> Topology:
    """The GPU rows of ``nvidia-smi topo -m`` output (tabs or spaces, terminal colour codes allowed)."""
    lines = [ANSI.sub("", ln) for ln in text.splitlines()]
    at = next((k for k, ln in enumerate(lines) if ln.split()[:1] == ["GPU0"]), None)
    if at is None:
        raise SpecError(f"{where}: no header row starting with GPU0 (paste what `nvidia-smi topo -m` prints)")
    names = tuple(itertools.takewhile(lambda t: _GPU.match(t) is not None, lines[at].split()))
    n = len(names)
    rows: dict[str, list[str]] = {}
    bonds: dict[str, tuple[int, ...]] = {}  # NV#: # NVLinks, 0 for other paths
    for ln in lines[at + 1:]:
        tok = ln.split()
        if tok and tok[0] in names and len(tok) > n:
            if tok[0] in rows:
                raise SpecError(f"{where}: row {tok[0]} appears twice")
            rows[tok[0]] = [_cell(c, f"{where}, row {tok[0]}") for c in tok[1:n + 1]]
            bonds[tok[0]] = tuple(int(c[2:]) if c.upper().startswith("NV") else 0 for c in tok[1:n + 1])
    missing = [g for g in names if g not in rows]
    if missing:
        raise SpecError(f"{where}: no row for {', '.join(missing)}")
    paths = []
    for i, g in enumerate(names):
        row = rows[g]
        for j, c in enumerate(row):
            if (c == "X") != (i == j):
                raise SpecError(f"{where}: {g}-{names[j]} is {c!r}; X belongs on the diagonal only")
            if i != j and c != rows[names[j]][i]:
                raise SpecError(f"{where}: {g}-{names[j]} is {c} but {names[j]}-{g} is {rows[names[j]][i]}")
        paths.append(tuple("" if c == "X" else c for c in row))
    nv = tuple(bonds[g] for g in names)
    if any(nv[i][j] != nv[j][i] for i in range(n) for j in range(n)):
        raise SpecError(f"{where}: the NVLink counts (NV#) differ between a pair's two rows")
    return Topology(names, tuple(paths), where, nv)


def read_topology(path: str | Path) -> Topology:
    """parse_topology of a file; a missing or unreadable file is a SpecError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig", errors="replace")  # a BOM from a Windows editor
    except OSError as e:
        raise SpecError(f"--gpu-topology {path}: cannot read it ({e.strerror or e})") from None
    return parse_topology(text, f"--gpu-topology {path}")


def host_cpus(root: Path) -> dict[str, HostCpu]:
    """The host CPUs of host_cpus.toml by name."""
    out = {}
    for name, d in read_toml(root / "host_cpus.toml").items():
        try:
            out[name] = HostCpu(name, float(d["inter_socket_Bps"]), float(d["p2p_overhead"]), str(d["source"]))
        except (KeyError, TypeError, ValueError) as e:
            raise PresetError(f"host_cpus.toml [{name}]: {e}") from None
    return out


def cpu_from_model(model: str) -> str | None:
    """The host_cpus.toml name for a CPU model string as lscpu or /proc/cpuinfo print it ("Intel(R) Xeon(R)
    Gold 6230 CPU @ 2.10GHz" -> "skylake"), or None when it is not recognised. Intel Xeon Scalable numbers
    carry the generation in their second digit (x1xx-x3xx Skylake to Ice Lake, x4xx Sapphire Rapids, x5xx
    Emerald Rapids); Xeon E5/E7 are the QPI generations; AMD EPYC numbers carry it in their last digit
    (1-2 Zen 1-2, 3-4 Zen 3-4, 5 Zen 5)."""
    text = model.upper()
    if re.search(r"XEON.*\bE[57]-\d{4}", text):
        return "broadwell"
    m = re.search(r"XEON.*\b(?:PLATINUM|GOLD|SILVER|BRONZE)\s+(\d)(\d)\d\d", text)
    if m:
        return {"1": "skylake", "2": "skylake", "3": "skylake", "4": "sapphire-rapids",
                "5": "emerald-rapids"}.get(m.group(2))
    m = re.search(r"EPYC\s+\d[\dA-Z]\d(\d)", text)  # 7763, and cloud parts such as 7V73X
    if m:
        return {"1": "amd-zen2", "2": "amd-zen2", "3": "amd-zen3", "4": "amd-zen3", "5": "amd-zen5"}.get(m.group(1))
    if "POWER9" in text:
        return "power9"
    return None


def ring(topo: Topology, host_Bps: float, cpu: HostCpu | None, nvlink: Fabric | None = None) -> Ring:
    """The ring with the fastest slowest hop (module docstring); ``cpu`` is needed for PHB, NODE and SYS. A
    ring of NVLinks alone is priced with one link of ``nvlink`` (the GPU's NVLink fabric,
    perfmodel.fabrics.nvlink_of); without one it is a SpecError."""
    best = _priced(topo, host_Bps, cpu, nvlink)
    if best is None:
        raise SpecError(f"{topo.where}: the GPUs ring over NVLink alone; give the NVLink fabric with --intra "
                        f"(nvlink2, nvswitch-a100 ...; --gpu-topology prices PCIe and socket paths, and NV# "
                        f"bonds of a GPU preset whose NVLink generation fabrics.toml lists)")
    return best


def _search(topo: Topology, host_Bps: float, cpu: HostCpu | None) -> Ring:
    """ring()'s search; a ring of NVLinks alone comes back with an infinite bandwidth."""
    n = len(topo.gpus)
    if n < 2:
        raise SpecError(f"{topo.where}: one GPU has no GPU-to-GPU path")
    needs_cpu = topo.cpu_paths()
    if needs_cpu and cpu is None:
        raise SpecError(f"{topo.where}: paths through the CPU ({', '.join(needs_cpu)}) need --host-cpu "
                        f"(broadwell, skylake, sapphire-rapids, amd-zen3 ...; `perfmodel presets --kind host-cpu`)")
    sockets = topo.sockets()
    classes = {c for row in topo.paths for c in row if c}
    if n <= MAX_SEARCH_GPUS:
        cycles = ((0, *p) for p in itertools.permutations(range(1, n)) if n < 3 or p[0] < p[-1])
    elif len(classes) == 1:
        cycles = iter([tuple(range(n))])
    else:
        raise SpecError(f"{topo.where}: {n} GPUs with mixed paths ({', '.join(sorted(classes))}); up to "
                        f"{MAX_SEARCH_GPUS} are searched: give the node's measured bus bandwidth with --intra")
    best: tuple[float, tuple[int, ...], tuple[int, int, int]] | None = None  # (Bps, order, slowest hop a, b, k)
    for order in cycles:
        hops = [(order[i], order[(i + 1) % n]) for i in range(n)]
        crossings: dict[tuple[int, int], int] = {}
        for a, b in hops:
            if sockets[a] != sockets[b]:
                crossings[(sockets[a], sockets[b])] = crossings.get((sockets[a], sockets[b]), 0) + 1
        slowest, hop = math.inf, (0, 0, 0)
        for a, b in hops:
            k = crossings.get((sockets[a], sockets[b]), 0)
            bw = _hop(topo.paths[a][b], host_Bps, cpu, k)
            if bw < slowest:
                slowest, hop = bw, (a, b, k)
        if best is None or slowest > best[0]:
            best = (slowest, order, hop)
    assert best is not None
    bandwidth, order, (a, b, k) = best
    if math.isinf(bandwidth):
        return Ring(bandwidth, order, "NVLink alone")
    path = topo.paths[a][b]
    return Ring(bandwidth, order, f"{topo.gpus[a]}->{topo.gpus[b]} {path}: {_hop_words(path, host_Bps, cpu, k)}")


def _priced(topo: Topology, host_Bps: float, cpu: HostCpu | None, nvlink: Fabric | None) -> Ring | None:
    """The best ring of ``topo``; a ring of NVLinks alone priced by perfmodel.nvlink_rings with one link
    of ``nvlink`` (a Fabric), or None without one."""
    best = _search(topo, host_Bps, cpu)
    if not math.isinf(best.bandwidth_Bps):
        return best
    if nvlink is None:
        return None
    # a GPU sends on at most its own links: behind NVSwitches every pair shows them all (NV18 on HGX H100)
    links = min(ring_links(topo.nvlinks), float(nvlink.links_per_gpu))
    return Ring(links * nvlink.link_Bps, best.order,
                f"NVLink rings over {links:g} of the GPUs' links x {nvlink.link_Bps / 1e9:.4g} GB/s ({nvlink.name})",
                nvlink=True)


def _hop(path: str, host_Bps: float, cpu: HostCpu | None, k: int) -> float:
    """One hop's bandwidth, bytes/s (module docstring); k: the ring's hops crossing its socket pair its way."""
    if path == "NV":
        return math.inf
    if path in ("PIX", "PXB"):
        return host_Bps
    assert cpu is not None
    through_cpu = host_Bps / cpu.p2p_overhead
    return through_cpu if path in ("PHB", "NODE") else min(through_cpu, cpu.inter_socket_Bps / k)


def _hop_words(path: str, host_Bps: float, cpu: HostCpu | None, k: int) -> str:
    """How _hop reached its figure, for the slowest hop of the chosen ring."""
    gb = lambda v: f"{v / 1e9:.4g} GB/s"  # noqa: E731
    if path in ("PIX", "PXB"):
        return f"PCIe {gb(host_Bps)}"
    assert cpu is not None
    if path == "SYS" and cpu.inter_socket_Bps / k < host_Bps / cpu.p2p_overhead:
        return f"{cpu.name} inter-socket {gb(cpu.inter_socket_Bps)} / {k} hop(s) crossing that way"
    return f"PCIe {gb(host_Bps)} / {cpu.p2p_overhead:g} ({cpu.name} root complex)"


def topology_link(path: str | Path | Topology, host: Link, cpu_name: str | None, root: Path,
                  gpus_per_node: int | None, gpu: str = "") -> Link:
    """The intra-node link (bytes/s; the host link's latency, the NVLink fabric's over NVLink) that ``path``
    (nvidia-smi topo -m output, or the Topology read from it) gives GPUs whose host link is ``host`` on CPU
    ``cpu_name``; its GPU count must be ``gpus_per_node``. GPUs that ring over NVLink alone ring at L x one
    link's figure (perfmodel.nvlink_rings) when ``gpu`` names a preset whose NVLink generation fabrics.toml
    lists; the figure of each count g of GPUs 0..g-1 that differs rides along (``Link.partial_Bps``)."""
    topo = path if isinstance(path, Topology) else read_topology(path)
    if gpus_per_node is not None and len(topo.gpus) != gpus_per_node:
        raise SpecError(f"{topo.where}: {len(topo.gpus)} GPUs, but the cluster's nodes have {gpus_per_node} "
                        f"(--gpus-per-node)")
    cpu = None
    if cpu_name is not None:
        cpus = host_cpus(root)
        name = cpu_name if cpu_name in cpus else cpu_from_model(cpu_name)
        if name is None:
            raise SpecError(f"unknown --host-cpu {cpu_name!r}; host CPUs: {', '.join(cpus)} (or a Xeon or EPYC "
                            f"model name as lscpu prints it)")
        cpu = cpus[name]
    nvlink = nvlink_of(gpu, load_fabrics(root / "fabrics.toml"))  # not presets.fabrics: presets imports this module
    best = ring(topo, host.bandwidth_Bps, cpu, nvlink)
    where = topo.where.removeprefix("--gpu-topology ")
    partial = []  # a run on GPUs 0..g-1 rings through their own paths (Cluster.intra_for)
    for g in range(2, len(topo.gpus)):
        sub = _priced(topo.first(g), host.bandwidth_Bps, cpu, nvlink)
        if sub is not None and sub.bandwidth_Bps != best.bandwidth_Bps:  # None: NVLink of an unknown generation
            partial.append((g, sub.bandwidth_Bps))
    latency = nvlink.latency_s if best.nvlink else host.latency_s  # best.nvlink: nvlink priced it
    return Link(latency, best.bandwidth_Bps, f"gpu-topology: {where} ({topo.layout_words()}); {best.words()}"
                + (f"; {cpu.source}" if cpu else ""), tuple(partial), len(topo.gpus) if partial else 0)
