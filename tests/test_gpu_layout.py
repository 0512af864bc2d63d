"""A GPU node's `nvidia-smi topo -m` recorded in its profile and priced against its NCCL timing
(perfmodel/lab/profile/gpu_layout.py): a stand-in nvidia-smi on PATH plays the GPU machine; ring figures
are worked by hand from the module docstring of perfmodel/gpu_topology.py."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.gpu_topology import parse_topology
from perfmodel.lab.profile import cli as profile_cli
from perfmodel.lab.profile.comm import summarize
from perfmodel.lab.profile.fit import fit_alpha_beta
from perfmodel.lab.profile.gpu_layout import layout_lines, read_nvidia_smi_topology
from perfmodel.lab.profile.profile_file import load_profile, save_profile
from perfmodel.lab.profile.schema import CommProfile
from test_profile_schema import SIZES, make_profile

REPO = Path(__file__).resolve().parents[1]
LAYOUT = (REPO / "data" / "topologies" / "two_sockets_4gpu.txt").read_text(encoding="utf-8")
MATRIX = "\n".join(ln for ln in LAYOUT.splitlines() if not ln.startswith("#")) + "\n"
BROADWELL = "Intel(R) Xeon(R) CPU E5-2690 v4 @ 2.60GHz"  # host_cpus.toml: 6 GB/s between sockets, P2P 1.2
COLOURED = MATRIX.replace("GPU0\t", "\x1b[4mGPU0\t\x1b[0m", 1)  # nvidia-smi underlines its header on a terminal


def _fake_nvidia_smi(tmp_path: Path, monkeypatch, body: str) -> None:
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n{body}\n", encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(exe.parent))


def test_recorded_text_is_the_commands_output_without_colour(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path, monkeypatch, f"import sys\nassert sys.argv[1:] == ['topo', '-m']\n"
                                            f"sys.stdout.write({COLOURED!r})")
    text = read_nvidia_smi_topology()
    assert text == MATRIX and "\x1b" not in text
    assert parse_topology(text).gpus == ("GPU0", "GPU1", "GPU2", "GPU3")


@pytest.mark.parametrize("body", ["import sys; sys.exit(9)", "import time; time.sleep(30)"], ids=["fails", "hangs"])
def test_a_failing_or_hanging_nvidia_smi_records_nothing(tmp_path, monkeypatch, body):
    _fake_nvidia_smi(tmp_path, monkeypatch, body)
    assert read_nvidia_smi_topology(timeout_s=1.0) == ""


def test_no_nvidia_smi_records_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert read_nvidia_smi_topology() == ""


@pytest.mark.parametrize("gpus,recorded", [(4, True), (1, False)])
def test_describe_machine_records_the_layout_of_two_or_more_gpus(tmp_path, monkeypatch, gpus, recorded):
    from perfmodel.lab.profile import compute

    _fake_nvidia_smi(tmp_path, monkeypatch, f"import sys; sys.stdout.write({MATRIX!r})")
    monkeypatch.setattr(compute, "torch_environment", lambda: {"torch_version": "2.13", "torch_threads": 1,
                                                               "gpu_name": "Tesla V100-PCIE-16GB", "gpu_count": gpus,
                                                               "cuda_version": "12.4", "nccl_version": "2.21"})
    machine = profile_cli.describe_machine(mpiexec=None)
    assert machine.gpu_topology == (MATRIX if recorded else "")


def _gpu_profile(host_Bps: float, nccl_busbw_Bps: float | None, ranks: int = 4, cpu: str = BROADWELL):
    """make_profile(gpu=True) on a 4-GPU node: a device->host copy at host_Bps (10 us latency) and an NCCL
    allreduce whose bus bandwidth tends to nccl_busbw_Bps (t = 20 us + 2(r-1)/r n / busbw)."""
    prof = make_profile(gpu=True)
    host = fit_alpha_beta(SIZES, [10e-6 + n / host_Bps for n in SIZES])
    prof = dataclasses.replace(prof, compute=dataclasses.replace(prof.compute, host_link=host),
                               machine=dataclasses.replace(prof.machine, cpu_model=cpu, gpu_count=4,
                                                           gpu_topology=MATRIX))
    if nccl_busbw_Bps is not None:
        share = 2 * (ranks - 1) / ranks
        ar = summarize("allreduce", ranks, SIZES, [[20e-6 + share * n / nccl_busbw_Bps] * 5 for n in SIZES],
                       [1] * len(SIZES))
        prof = dataclasses.replace(prof, comm=prof.comm + (
            CommProfile(ranks=ranks, backend="nccl", library="NCCL 2.21", hosts=("h",), wall_s=1.0,
                        ops={"allreduce": ar}),))
    return prof


def test_the_layout_is_priced_from_the_profiles_host_copy_and_set_against_nccl():
    # host copy 12 GB/s: PIX hops 12; SYS hops min(12 / 1.2, 6 / 1) = 6 (one hop each way between sockets)
    lines = layout_lines(_gpu_profile(12e9, 5e9))
    assert lines[0].startswith("GPU layout (nvidia-smi topo -m, 4 GPUs, 2 socket(s)): ring 0-1-")
    assert "SYS: broadwell inter-socket 6 GB/s / 1 hop(s)" in lines[0] and "copy, 12 GB/s" in lines[0]
    # peak busbw: 5 GB/s less the 20 us at 64 MiB (1.5 x 64 MiB / 5 GB/s = 20.1 ms): 4.995 GB/s; 6 / 4.995 = 1.20
    assert lines[1] == "  layout 6 GB/s vs NCCL allreduce peak busbw 5 GB/s at 4 GPUs: layout / measured = 1.20"
    # host copy 6 GB/s: the root complex binds first, 6 / 1.2 = 5 GB/s
    assert "PCIe 6 GB/s / 1.2 (broadwell root complex)" in layout_lines(_gpu_profile(6e9, None))[0]


def test_the_layout_is_cut_to_the_gpus_nccl_ran_on():
    # NCCL on GPU0-1 (one PCIe switch): the ring 0-1-0 runs at the host link, no socket crossed
    lines = layout_lines(_gpu_profile(12e9, 11e9, ranks=2))
    assert "2 GPUs, 1 socket(s)): ring 0-1, slowest hop GPU0->GPU1 PIX: PCIe 12 GB/s" in lines[0]
    assert "layout / measured = 1.09" in lines[1]  # 12 / (11 less 20 us at 64 MiB: 10.997)


def test_what_cannot_be_priced_says_why_in_one_line():
    assert layout_lines(make_profile()) == []  # nothing recorded (a CPU machine)
    unknown = layout_lines(_gpu_profile(12e9, 5e9, cpu="Some Future CPU"))
    assert unknown == ["GPU layout (nvidia-smi topo -m, 4 GPUs, 2 socket(s)): not priced: its paths cross the CPU, "
                       "and the CPU 'Some Future CPU' is not one of host_cpus.toml's"]
    no_copy = _gpu_profile(12e9, 5e9)
    no_copy = dataclasses.replace(no_copy, compute=dataclasses.replace(no_copy.compute, host_link=None))
    assert layout_lines(no_copy)[0].endswith("not priced (no device->host copy measured for the GPU's host link)")
    garbled = dataclasses.replace(no_copy, machine=dataclasses.replace(no_copy.machine, gpu_topology="GPU0 X\n"))
    assert layout_lines(garbled)[0].startswith("GPU layout: recorded, but not read: ")


def test_show_profile_prints_the_layout_and_gives_back_the_file_predict_takes(tmp_path):
    path = tmp_path / "p.json"
    save_profile(_gpu_profile(12e9, 5e9), path)
    assert load_profile(path).machine.gpu_topology == MATRIX  # survives the JSON round trip
    run = lambda *a: subprocess.run([sys.executable, "-m", "perfmodel", "show-profile", str(path), *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=120, cwd=REPO)
    shown = run()
    assert shown.returncode == 0 and "layout / measured = 1.20" in shown.stdout, shown.stderr
    raw = run("--gpu-topology")
    assert raw.returncode == 0 and raw.stdout == MATRIX
    topo = tmp_path / "node.topo"
    topo.write_text(raw.stdout, encoding="utf-8")
    predict = lambda f: subprocess.run([sys.executable, "-m", "perfmodel", "predict", "--cluster", "custom",  # noqa: E731
                                        "--gpu", "v100", "--gpu-topology", str(f), "--host-cpu", BROADWELL,
                                        "--network", "ib-edr", "--gpus", "4", "--format", "json"],
                                       capture_output=True, text=True, timeout=120, cwd=REPO)
    from_profile, from_file = predict(topo), predict(REPO / "data" / "topologies" / "two_sockets_4gpu.txt")
    assert from_profile.returncode == 0 and from_profile.stdout == from_file.stdout, from_profile.stderr
    save_profile(make_profile(), path)  # no layout recorded
    missing = run("--gpu-topology")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no GPU layout recorded" in missing.stderr


DGX1V = """\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tmlx5_0\tCPU Affinity
GPU0\t X \tNV1\tNV1\tNV2\tNV2\tSYS\tSYS\tSYS\tNODE\t0-11,24-35
GPU1\tNV1\t X \tNV2\tNV1\tSYS\tNV2\tSYS\tSYS\tNODE\t0-11,24-35
GPU2\tNV1\tNV2\t X \tNV2\tSYS\tSYS\tNV1\tSYS\tPIX\t0-11,24-35
GPU3\tNV2\tNV1\tNV2\t X \tSYS\tSYS\tSYS\tNV1\tPIX\t0-11,24-35
GPU4\tNV2\tSYS\tSYS\tSYS\t X \tNV1\tNV1\tNV2\tSYS\t12-23,36-47
GPU5\tSYS\tNV2\tSYS\tSYS\tNV1\t X \tNV2\tNV1\tSYS\t12-23,36-47
GPU6\tSYS\tSYS\tNV1\tSYS\tNV1\tNV2\t X \tNV2\tSYS\t12-23,36-47
GPU7\tSYS\tSYS\tSYS\tNV1\tNV2\tNV1\tNV2\t X \tSYS\t12-23,36-47
mlx5_0\tNODE\tNODE\tPIX\tPIX\tSYS\tSYS\tSYS\tSYS\t X \t
"""  # the DGX-1V of DLPerf's reports (github.com/Oneflow-Inc/DLPerf test environment)


@pytest.mark.parametrize("ranks, links, gb", [(8, 6, 120), (4, 4, 80), (2, 1, 20)])
def test_an_nvlink_node_is_priced_from_the_gpu_s_nvlink_generation(ranks, links, gb):
    """A V100 profile (gpu_name as torch prints it -> preset v100 -> nvlink2, 20 GB/s a link): the rings
    over GPUs 0..r-1 of a DGX-1, set against an NCCL busbw of 100 GB/s."""
    prof = _gpu_profile(12e9, 100e9, ranks=ranks, cpu="Intel(R) Xeon(R) Gold 5118 CPU @ 2.30GHz")
    prof = dataclasses.replace(prof, machine=dataclasses.replace(prof.machine, gpu_topology=DGX1V, gpu_count=8,
                                                                 gpu_name="Tesla V100-SXM2-16GB"))
    lines = layout_lines(prof)
    assert lines[0] == (f"GPU layout (nvidia-smi topo -m, {ranks} GPUs, NVLink): NVLink rings over {links} of the "
                        f"GPUs' links x 20 GB/s (nvlink2)")
    assert lines[1].startswith(f"  layout {gb:g} GB/s vs NCCL allreduce peak busbw ")
    unknown = dataclasses.replace(prof, machine=dataclasses.replace(prof.machine, gpu_name="Some Future GPU"))
    assert "not priced: " in layout_lines(unknown)[0] and "ring over NVLink alone" in layout_lines(unknown)[0]
