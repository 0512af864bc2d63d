"""A GPU node's layout in its profile: what ``nvidia-smi topo -m`` prints, recorded beside the NCCL timing,
and the ring ``--gpu-topology`` prices from it set against that timing.

``perfmodel profile`` on a machine with two or more GPUs stores the command's output (colour codes cut)
in ``machine.gpu_topology``. ``perfmodel show-profile`` then prints the layout's best ring over the GPUs
the NCCL run used (CUDA devices 0..r-1, taken as nvidia-smi's first r: both follow the PCI bus order for
identical GPUs), priced as perfmodel.gpu_topology prices it:

    host link P   the profile's own device->host copy (single line over all sizes, bytes/s)
    host CPU      the profile's CPU model string (gpu_topology.cpu_from_model; NCCL's topology figures)
    ring b        the slowest hop of the best ring (bytes/s per direction); GPUs that ring over NVLink
                  alone: the links per GPU of the best packing of rings x one link of the GPU's NVLink
                  generation (the profile's gpu_name as a gpus.toml preset, ``gpu_preset``; fabrics.toml)

beside the largest bus bandwidth NCCL's allreduce reached there (nccl-tests' busbw = algbw 2(r-1)/r, the
per-direction link figure a ring runs at). Nothing in b is fitted to that measurement: the ratio b /
busbw is the out-of-sample check of ``--gpu-topology`` a node with GPUs gives. ``show-profile
--gpu-topology`` prints the recorded text alone, the file ``--gpu-topology`` and a cluster file take.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ...fabrics import nvlink_of
from ...gpu_topology import ANSI, cpu_from_model, host_cpus, parse_topology, ring
from ...presets import fabrics, gpus, presets_dir
from ...specs import SpecError
from .schema import Profile, device_key

__all__ = ["read_nvidia_smi_topology", "layout_lines"]


def read_nvidia_smi_topology(timeout_s: float = 20.0) -> str:
    """What ``nvidia-smi topo -m`` prints on this machine, colour codes cut; "" when the command is
    absent, fails, or runs past ``timeout_s`` seconds (the profile is still written without it)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ""
    try:
        done = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, errors="replace",
                              timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return ANSI.sub("", done.stdout) if done.returncode == 0 else ""


def layout_lines(profile: Profile, presets: Path | None = None) -> list[str]:
    """``show-profile``'s lines on the recorded layout (none when nothing was recorded): its ring priced
    from the profile's host copy and CPU (host_cpus.toml of ``presets``, default the presets folder), against
    NCCL's measured bus bandwidth where both exist."""
    text = profile.machine.gpu_topology
    if not text.strip():
        return []
    try:
        topo = parse_topology(text, "recorded nvidia-smi topo -m")
    except SpecError as e:
        return [f"GPU layout: recorded, but not read: {e}"]
    nccl = profile.comm_for("nccl")
    r = nccl.ranks if nccl is not None and "allreduce" in nccl.ops else len(topo.gpus)
    if r > len(topo.gpus):
        return [f"GPU layout: {len(topo.gpus)} GPUs recorded, fewer than the NCCL run's {r}: not compared"]
    topo = topo.first(r)
    head = f"GPU layout (nvidia-smi topo -m, {topo.layout_words()})"
    host = profile.compute.host_link if profile.compute is not None else None
    if host is None:
        return [f"{head}: not priced (no device->host copy measured for the GPU's host link)"]
    name = cpu_from_model(profile.machine.cpu_model)
    if name is None and topo.cpu_paths():
        return [f"{head}: not priced: its paths cross the CPU, and the CPU {profile.machine.cpu_model!r} is not "
                f"one of host_cpus.toml's"]
    root = presets or presets_dir()
    nvlink = nvlink_of(gpu_preset(profile.machine.gpu_name, root), fabrics(root))
    try:
        best = ring(topo, host.bandwidth_Bps, host_cpus(root)[name] if name is not None else None, nvlink)
    except SpecError as e:  # NVLink of an unknown generation, or a large node with mixed paths
        return [f"{head}: not priced: {e}"]
    lines = [f"{head}: {best.words()}" + ("" if best.nvlink else f" (host link: this profile's device->host "
                                                                  f"copy, {host.bandwidth_Bps / 1e9:.3g} GB/s)")]
    if nccl is not None and "allreduce" in nccl.ops:
        busbw = max(nccl.ops["allreduce"].busbw_Bps)
        lines.append(f"  layout {best.bandwidth_Bps / 1e9:.3g} GB/s vs NCCL allreduce peak busbw "
                     f"{busbw / 1e9:.3g} GB/s "
                     f"at {r} GPUs: layout / measured = {best.bandwidth_Bps / busbw:.2f}")
    return lines


def gpu_preset(gpu_name: str, root: Path | None = None) -> str:
    """The gpus.toml preset a GPU name as torch prints it stands for: the longest preset name (letters and
    digits only) that the name starts with, vendor words dropped ("Tesla V100-SXM2-16GB" -> "v100",
    "NVIDIA H100 80GB HBM3" -> "h100"); "" when none fits."""
    key = device_key(gpu_name)  # "cpu" for an empty name: no preset starts it
    fits = [n for n in gpus(root) if key.startswith(device_key(n))]
    return max(fits, key=len, default="")
