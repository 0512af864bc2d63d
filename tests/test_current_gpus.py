"""GPUs of current clusters (H200, B200, MI300X, L40S) and their intra-node fabrics: each figure from its
cited rule, worked by hand, and what the presets do in a prediction."""

import json

import pytest

from perfmodel import presets
from perfmodel.cli import main
from perfmodel.compute_rule import activation_elements, load_rule
from perfmodel.library import load_model
from perfmodel.memory import gpu_memory_bytes

MIB = 1024 * 1024


def test_intra_fabrics_are_the_collective_libraries_own_ring_figures():
    fabs = presets.fabrics()
    # NCCL src/graph/topo.h: ring bandwidth = NVLinks per GPU x per-link figure (18 x 20.6 on Hopper).
    assert fabs["nvswitch-h100"].achievable_Bps == pytest.approx(18 * 20.6e9, rel=3e-3)
    assert fabs["nvswitch-b200"].achievable_Bps == pytest.approx(18 * 40.1e9)  # SM100_NVLINK_BW
    assert fabs["nvswitch-b200"].nominal_Bps == pytest.approx(1.8e12 / 2)  # 1.8 TB/s bidirectional
    # RCCL: 7 xGMI links to the 7 other GPUs x GFX94X_XGMI_WIDTH 48 GB/s; nominal 7 x 64 GB/s each way.
    assert fabs["xgmi-mi300x"].achievable_Bps == pytest.approx(7 * 48e9)
    assert fabs["xgmi-mi300x"].nominal_Bps == pytest.approx(7 * 64e9)
    for name in ("nvswitch-b200", "xgmi-mi300x"):
        assert fabs[name].kind == "intra" and fabs[name].achievable_Bps < fabs[name].nominal_Bps


def test_gpu_peaks_memory_and_host():
    g = presets.gpus()
    h100, h200 = g["h100"], g["h200"]
    # One die and clock: the H200 differs from the H100 in memory alone.
    assert (h200.peak_flops, h200.tf32_flops, h200.tensor_flops) == (h100.peak_flops, h100.tf32_flops,
                                                                     h100.tensor_flops)
    assert h200.memory_Bps == 4.8e12 > h100.memory_Bps
    # Datasheets print tensor peaks with sparsity; the presets hold the dense half.
    assert g["b200"].tensor_flops == pytest.approx(4.5e15 / 2) and g["b200"].tf32_flops == pytest.approx(2.2e15 / 2)
    assert g["mi300x"].tensor_flops == pytest.approx(304 * 2048 * 2.1e9, rel=1e-3)  # CUs x FLOPS/clock/CU x clock
    assert g["mi300x"].peak_flops == pytest.approx(304 * 256 * 2.1e9, rel=1e-3)
    assert g["mi300x"].tf32_flops is None  # PyTorch on ROCm runs fp32 work in fp32
    assert [g[k].host for k in ("h200", "b200", "mi300x", "l40s")] == ["pcie5", "pcie5", "pcie5", "pcie4"]
    assert gpu_memory_bytes("h200")[0] == 143771 * MIB  # nvidia-smi's memory.total
    assert gpu_memory_bytes("b200")[0] == 183359 * MIB
    assert gpu_memory_bytes("mi300x")[0] == 192 * 1024 ** 3
    assert gpu_memory_bytes("l40s")[0] == 48 * 1024 ** 3


def _predict(capsys, *args) -> list[dict]:
    assert main(["predict", "--cluster", "custom", "--gpus-per-node", "8", "--network", "8xib-ndr",
                 "--workload", "resnet50", "--batch", "256", "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_on_b200_is_the_rule_with_the_presets_figures(capsys):
    rec = _predict(capsys, "--gpu", "b200", "--intra", "nvswitch-b200", "--estimate", "mixed", "--gpus", "1")[0]
    rule, lib = load_rule(), load_model("resnet50", presets.presets_dir())
    per = (3 * lib.forward_flops / (2.25e15 * rule.fraction["mixed"])
           + rule.crossings * activation_elements(lib.tensor_sizes, lib.tensor_flops) * 2 / 7.7e12)
    assert rec["throughput"] == pytest.approx(1 / per)


def test_one_node_exchange_scales_with_the_intra_figure(capsys):
    """The same node with each intra fabric: the bandwidth part of 8 GPUs' ring allreduce goes as 1 / busbw."""
    t = {}
    for fabric in ("nvswitch-h100", "nvswitch-b200"):
        rec = _predict(capsys, "--gpu", "b200", "--intra", fabric, "--compute-ms", "100", "--gpus", "8",
                       "--overlap", "0")
        t[fabric] = next(r for r in rec if r["strategy"] == "ssgd")["t_comm_s"]
    grad_bytes = 4 * sum(load_model("resnet50", presets.presets_dir()).tensor_sizes)
    ring = {f: 2 * 7 / 8 * grad_bytes / bw for f, bw in (("nvswitch-h100", 18 * 20.6e9), ("nvswitch-b200", 18 * 40.1e9))}
    # latency terms are equal on both (2 us links); the difference is the bandwidth term's alone
    assert t["nvswitch-h100"] - t["nvswitch-b200"] == pytest.approx(ring["nvswitch-h100"] - ring["nvswitch-b200"],
                                                                    rel=0.02)


def test_node_presets_of_current_systems():
    c = presets.load_cluster("hgx-b200")
    assert (c.gpu, c.gpus_per_node, c.nics) == ("b200", 8, 8)
    assert c.intra.bandwidth_Bps == pytest.approx(18 * 40.1e9) and c.network.bandwidth_Bps == pytest.approx(8 * 48e9)
    assert c.host.bandwidth_Bps == presets.fabrics()["pcie5"].achievable_Bps  # the GPU preset's host link
    h = presets.load_cluster("hgx-h200")
    assert (h.gpu, h.nics) == ("h200", 8) and h.intra.bandwidth_Bps == presets.fabrics()["nvswitch-h100"].achievable_Bps
