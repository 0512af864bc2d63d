"""--gpu-topology: a PCIe node's ring bandwidth from `nvidia-smi topo -m`, cases worked by hand from
perfmodel/gpu_topology.py's rules and data/presets/host_cpus.toml (NCCL's topology figures)."""

import json

import pytest

from perfmodel.cli import main
from perfmodel.gpu_topology import cpu_from_model, host_cpus, parse_topology, read_topology, ring, topology_link
from perfmodel.presets import presets_dir
from perfmodel.specs import Link, SpecError

PCIE3 = 12.15e9  # fabrics.toml pcie3, achievable
CPUS = host_cpus(presets_dir())


def matrix(rows: list[str], extra: str = "\tCPU Affinity\tNUMA Affinity") -> str:
    """nvidia-smi topo -m text: a header, one tab-separated row per GPU, and the legend."""
    n = len(rows)
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + extra
    body = [f"GPU{i}\t" + "\t".join(r.split()) + ("\t0-19\t0" if extra else "") for i, r in enumerate(rows)]
    return "\n".join([head, *body, "", "Legend:", "", "  X    = Self", "  SYS  = Connection traversing PCIe"]) + "\n"


SPLIT = matrix(["X PIX SYS SYS", "PIX X SYS SYS", "SYS SYS X PIX", "SYS SYS PIX X"])  # 2 + 2 on two sockets
ALONE = matrix(["X SYS SYS SYS", "SYS X NODE NODE", "SYS NODE X NODE", "SYS NODE NODE X"])  # NVIDIA/nccl #428's node
SWITCH = matrix(["X PIX PXB PXB", "PIX X PXB PXB", "PXB PXB X PIX", "PXB PXB PIX X"])  # one PCIe switch tree


def bw(text: str, cpu: str | None = None) -> float:
    return ring(parse_topology(text), PCIE3, CPUS[cpu] if cpu else None).bandwidth_Bps


def test_two_sockets_cost_the_inter_socket_link_or_the_root_complex_whichever_is_slower():
    # one SYS hop each way: min(P / o, S / 1); the PIX hops run at P
    assert bw(SPLIT, "broadwell") == pytest.approx(6.0e9)  # min(12.15/1.2, 6)
    assert bw(SPLIT, "skylake") == pytest.approx(10.0e9)  # min(10.125, 10)
    assert bw(SPLIT, "amd-zen3") == pytest.approx(PCIE3)  # min(12.15/1, 24) and the PIX hops: 12.15
    assert bw(ALONE, "skylake") == pytest.approx(10.0e9)  # SYS 10, NODE 12.15/1.2 = 10.125
    assert bw(ALONE, "amd-zen2") == pytest.approx(PCIE3)  # NODE 12.15/1, SYS min(12.15, 16)


def test_a_switch_only_node_is_the_pcie_figure_and_needs_no_cpu():
    assert bw(SWITCH) == pytest.approx(PCIE3)  # the same figure as --intra pcie3


def test_the_search_keeps_each_socket_s_gpus_together():
    # 8 GPUs, even ones on socket 0 and odd ones on socket 1: the ring 0-1-2-...-7 crosses 8 times (k = 4
    # each way: 6/4 = 1.5 GB/s on Broadwell); the best ring crosses once each way: 6 GB/s
    rows = [" ".join("X" if i == j else ("PXB" if i % 2 == j % 2 else "SYS") for j in range(8)) for i in range(8)]
    topo = parse_topology(matrix(rows))
    assert topo.sockets() == (0, 1, 0, 1, 0, 1, 0, 1)
    best = ring(topo, PCIE3, CPUS["broadwell"])
    assert best.bandwidth_Bps == pytest.approx(6.0e9)
    crossings = sum(topo.sockets()[a] != topo.sockets()[b] for a, b in zip(best.order, best.order[1:] + best.order[:1]))
    assert crossings == 2


def test_nvlink_bridges_leave_the_pcie_hops_as_the_bottleneck():
    # pairs bridged by NVLink (0-1, 2-3); the ring must cross PHB twice: 12.15 / 1.2 on an Intel host
    text = matrix(["X NV4 PHB PHB", "NV4 X PHB PHB", "PHB PHB X NV4", "PHB PHB NV4 X"])
    assert bw(text, "skylake") == pytest.approx(PCIE3 / 1.2)


# A real node's output with NIC columns and rows (NVIDIA/nccl issue #243, 2019): 6 GPUs, 3 per socket.
NCCL_243 = """ \tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tmlx5_1\tmlx5_0\tCPU Affinity
GPU0\t X \tPIX\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\t0-13,28-41
GPU1\tPIX\t X \tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\t0-13,28-41
GPU2\tNODE\tNODE\t X \tSYS\tSYS\tSYS\tSYS\tPIX\t0-13,28-41
GPU3\tSYS\tSYS\tSYS\t X \tPIX\tNODE\tNODE\tSYS\t14-27,42-55
GPU4\tSYS\tSYS\tSYS\tPIX\t X \tNODE\tNODE\tSYS\t14-27,42-55
GPU5\tSYS\tSYS\tSYS\tNODE\tNODE\t X \tPIX\tSYS\t14-27,42-55
mlx5_1\tSYS\tSYS\tSYS\tNODE\tNODE\tPIX\t X \tSYS\t
mlx5_0\tNODE\tNODE\tPIX\tSYS\tSYS\tSYS\tSYS\t X \t
"""


def test_a_real_output_with_nic_columns():
    topo = parse_topology(NCCL_243)
    assert topo.gpus == tuple(f"GPU{i}" for i in range(6)) and topo.sockets() == (0, 0, 0, 1, 1, 1)
    assert bw(NCCL_243, "broadwell") == pytest.approx(6.0e9)  # SYS once each way: min(10.125, 6)
    assert bw(NCCL_243, "sapphire-rapids") == pytest.approx(PCIE3 / 1.2)  # the NODE hops: 10.125 < 22


def test_terminal_colours_and_the_old_soc_name_parse():
    text = "\x1b[4m\tGPU0\tGPU1\tCPU Affinity\x1b[0m\n\x1b[4mGPU0\x1b[0m\t X \tSOC\t0-9\n\x1b[4mGPU1\x1b[0m\tSOC\t X \t10-19\n"
    topo = parse_topology(text)
    assert topo.paths == (("", "SYS"), ("SYS", "")) and topo.sockets() == (0, 1)
    assert bw(text, "broadwell") == pytest.approx(6.0e9)


@pytest.mark.parametrize("text, cpu, words", [
    (matrix(["X NV12 NV12", "NV12 X NV12", "NV12 NV12 X"]), None, "NVLink alone"),
    (matrix(["X PCI", "PCI X"]), None, "unknown path 'PCI'"),
    (matrix(["X NV0", "NV0 X"]), None, "unknown path 'NV0'"),  # no link is no NVLink bond
    (matrix(["X NV2", "NV1 X"]), None, "differ between a pair's two rows"),
    (matrix(["X PIX PIX", "PIX X PXB", "PXB PXB X"]), None, "GPU0-GPU2 is PIX but GPU2-GPU0 is PXB"),
    (matrix(["PIX PIX", "PIX X"]), None, "X belongs on the diagonal"),
    ("GPU0\tGPU1\nGPU0\t X \tPIX\n", None, "no row for GPU1"),
    ("nvidia-smi: command not found\n", None, "no header row"),
    (matrix(["X PIX SYS", "PIX X PIX", "SYS PIX X"]), "broadwell", "socket"),
    (SPLIT, None, "need --host-cpu"),
    (matrix([" ".join("X" if i == j else ("PIX" if i // 5 == j // 5 else "PXB") for j in range(10))
             for i in range(10)]), None, "10 GPUs with mixed paths"),
])
def test_what_cannot_be_priced_is_one_clear_error(text, cpu, words):
    with pytest.raises(SpecError, match=words):
        ring(parse_topology(text), PCIE3, CPUS[cpu] if cpu else None)


def test_a_large_node_with_one_path_class_is_priced_without_a_search():
    text = matrix([" ".join("X" if i == j else "PIX" for j in range(10)) for i in range(10)])
    assert bw(text) == pytest.approx(PCIE3)


def test_topology_link_checks_the_gpu_count_the_cpu_name_and_the_file(tmp_path):
    f = tmp_path / "topo.txt"
    f.write_text("\ufeff" + SPLIT.replace("\n", "\r\n"), encoding="utf-8")  # saved by a Windows editor
    host = Link(1e-5, PCIE3)
    link = topology_link(f, host, "broadwell", presets_dir(), 4)
    assert (link.bandwidth_Bps, link.latency_s) == (pytest.approx(6.0e9), 1e-5)
    assert "GPU1->GPU2 SYS" in link.source or "GPU3->GPU0 SYS" in link.source
    with pytest.raises(SpecError, match="4 GPUs, but the cluster's nodes have 8"):
        topology_link(f, host, "broadwell", presets_dir(), 8)
    with pytest.raises(SpecError, match="unknown --host-cpu 'pentium'"):
        topology_link(f, host, "pentium", presets_dir(), 4)
    with pytest.raises(SpecError, match="cannot read it"):
        read_topology(tmp_path / "missing.txt")


def test_every_host_cpu_cites_nccl_s_topology_figure():
    assert set(CPUS) >= {"broadwell", "skylake", "sapphire-rapids", "amd-zen3"}
    for c in CPUS.values():
        assert "src/graph/topo.h" in c.source and c.inter_socket_Bps > 0 and c.p2p_overhead >= 1


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


BASE = ["predict", "--cluster", "custom", "--gpu", "v100-pcie", "--network", "ib-edr", "--workload", "resnet50",
        "--samples-per-s", "360", "--batch", "64", "--strategy", "ssgd", "--gpus", "4,8", "--format", "json"]
WORK = BASE[7:]  # BASE after its cluster options: the workload, GPUs and format


def test_predict_with_a_topology_is_predict_with_its_ring_figure(tmp_path, capsys):
    f = tmp_path / "topo.txt"
    f.write_text(SPLIT)
    code, out, err = run(capsys, *BASE, "--gpu-topology", str(f), "--host-cpu", "broadwell")  # 4 GPUs from the file
    assert code == 0, err
    code2, out2, err2 = run(capsys, *BASE, "--gpus-per-node", "4", "--intra", "6GB/s,10us")
    assert code2 == 0, err2
    got, want = json.loads(out), json.loads(out2)
    assert [r["throughput"] for r in got] == pytest.approx([r["throughput"] for r in want], rel=1e-12)
    assert "pcie3 preset" not in err  # no PCIe note: the intra figure is the node's own
    code, out, err = run(capsys, *BASE[:-2], "--format", "table", "--gpus-per-node", "4", "--gpu-topology", str(f),
                         "--host-cpu", "skylake")
    assert code == 0 and "intra 10 GB/s, 10 us" in out, err


@pytest.mark.parametrize("extra, words", [
    (["--intra", "pcie3"], "give one of --intra"),
    (["--host-cpu", "skylake", "--gpus-per-node", "4"], "--host-cpu needs --gpu-topology"),
    (["--gpu-topology", "/nonexistent/topo.txt"], "cannot read it"),
])
def test_predict_refuses_bad_topology_options_in_one_line(tmp_path, capsys, extra, words):
    f = tmp_path / "topo.txt"
    f.write_text(SPLIT)
    if extra[0] == "--intra":
        extra = [*extra, "--gpu-topology", str(f), "--host-cpu", "broadwell"]
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_a_cluster_file_names_its_layout_beside_it(tmp_path, capsys):
    (tmp_path / "topo.txt").write_text(SPLIT)
    cfile = tmp_path / "lab.toml"
    cfile.write_text('[lab]\ngpu = "v100-pcie"\ngpus_per_node = 4\ngpu_topology = "topo.txt"\nhost_cpu = "broadwell"\n'
                     'network = "ib-edr"\n')
    code, out, err = run(capsys, "predict", "--cluster", str(cfile), *WORK)
    assert code == 0, err
    code2, out2, err2 = run(capsys, *BASE, "--gpus-per-node", "4", "--intra", "6GB/s,10us")
    assert [r["throughput"] for r in json.loads(out)] == pytest.approx([r["throughput"] for r in json.loads(out2)])
    code, out, err = run(capsys, "predict", "--cluster", str(cfile), *WORK[:-2], "--format", "table")
    assert code == 0 and "# intra: gpu-topology: " in out and "slowest hop GPU" in out, err


@pytest.mark.parametrize("keys, words", [
    ('gpu_topology = "topo.txt"\nhost_cpu = "broadwell"\nintra = "pcie3"\n', "give intra (the link) or gpu_topology"),
    ('host_cpu = "broadwell"\nintra = "pcie3"\n', "host_cpu needs gpu_topology"),
    ('gpu_topology = 4\nhost_cpu = "broadwell"\n', "must be a file name"),
    ('gpu_topology = "missing.txt"\nhost_cpu = "broadwell"\n', "cannot read it"),
])
def test_a_cluster_file_s_bad_layout_keys_are_one_line(tmp_path, capsys, keys, words):
    (tmp_path / "topo.txt").write_text(SPLIT)
    cfile = tmp_path / "lab.toml"
    cfile.write_text(f'[lab]\ngpu = "v100-pcie"\ngpus_per_node = 4\nnetwork = "ib-edr"\n{keys}')
    code, out, err = run(capsys, "predict", "--cluster", str(cfile), *WORK)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("model, name", [
    ("Intel(R) Xeon(R) CPU E5-2690 v4 @ 2.60GHz", "broadwell"),  # Azure NCv3's CPU, Dell's C4130 config G
    ("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", "skylake"),  # Cascade Lake: UPI as Skylake
    ("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", "skylake"),  # Ice Lake
    ("Intel(R) Xeon(R) Platinum 8480+", "sapphire-rapids"),
    ("INTEL(R) XEON(R) PLATINUM 8580", "emerald-rapids"),
    ("AMD EPYC 7742 64-Core Processor", "amd-zen2"),
    ("AMD EPYC 7V73X 64-Core Processor", "amd-zen3"),  # Milan-X, an Azure part number
    ("AMD EPYC 9654 96-Core Processor", "amd-zen3"),  # Genoa: NCCL's Zen 3-4 figure
    ("AMD EPYC 9755 128-Core Processor", "amd-zen5"),
    ("POWER9, altivec supported", "power9"),
    ("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", None),
])
def test_a_cpu_model_string_names_its_host_cpu(model, name):
    assert cpu_from_model(model) == name


def test_host_cpu_takes_the_model_string_lscpu_prints(tmp_path):
    f = tmp_path / "topo.txt"
    f.write_text(SPLIT)
    host = Link(1e-5, PCIE3)
    by_model = topology_link(f, host, "Intel(R) Xeon(R) CPU E5-2690 v4 @ 2.60GHz", presets_dir(), 4)
    assert by_model.bandwidth_Bps == topology_link(f, host, "broadwell", presets_dir(), 4).bandwidth_Bps == 6.0e9
    with pytest.raises(SpecError, match="or a Xeon or EPYC model name"):
        topology_link(f, host, "Intel(R) Core(TM) i7-8700", presets_dir(), 4)


def test_a_run_on_part_of_the_node_rings_through_its_own_paths(tmp_path, capsys):
    """SPLIT on Broadwell: GPUs 0-1 share a switch (PIX, 12.15 GB/s); 3 and 4 GPUs cross the socket link
    (6 GB/s), so only 2 GPUs get their own figure (Cluster.intra_for)."""
    host = Link(1e-5, PCIE3)
    link = topology_link(parse_topology(SPLIT), host, "broadwell", presets_dir(), 4)
    assert link.bandwidth_Bps == pytest.approx(6.0e9)
    assert link.partial_Bps == ((2, pytest.approx(PCIE3)),) and link.node_gpus == 4
    assert topology_link(parse_topology(SWITCH), host, None, presets_dir(), 4).partial_Bps == ()  # one figure
    f = tmp_path / "topo.txt"
    f.write_text(SPLIT)
    two = [a if a != "4,8" else "2" for a in BASE]
    code, out, err = run(capsys, *two, "--gpu-topology", str(f), "--host-cpu", "broadwell")
    assert code == 0, err
    code2, out2, err2 = run(capsys, *two, "--gpus-per-node", "4", "--intra", "12.15GB/s,10us")
    assert code2 == 0, err2
    assert json.loads(out)[0]["throughput"] == pytest.approx(json.loads(out2)[0]["throughput"], rel=1e-12)


# NVLink nodes: NV# bonds priced at # x one link's achievable figure of the GPU's NVLink generation
# (fabrics.toml links_per_gpu and gpus), rings packed by perfmodel.nvlink_rings.
DGX1V = matrix(["X NV1 NV1 NV2 NV2 SYS SYS SYS", "NV1 X NV2 NV1 SYS NV2 SYS SYS", "NV1 NV2 X NV2 SYS SYS NV1 SYS",
                "NV2 NV1 NV2 X SYS SYS SYS NV1", "NV2 SYS SYS SYS X NV1 NV1 NV2", "SYS NV2 SYS SYS NV1 X NV2 NV1",
                "SYS SYS NV1 SYS NV1 NV2 X NV2", "SYS SYS SYS NV1 NV2 NV1 NV2 X"])  # DLPerf's reports
C4140 = matrix(["X NV2 NV2 NV2", "NV2 X NV2 NV2", "NV2 NV2 X NV2", "NV2 NV2 NV2 X"])  # NVIDIA/nccl-tests #68
A100_PAIRS = matrix(["X NV12 NODE NODE SYS SYS SYS SYS", "NV12 X NODE NODE SYS SYS SYS SYS",
                     "NODE NODE X NV12 SYS SYS SYS SYS", "NODE NODE NV12 X SYS SYS SYS SYS",
                     "SYS SYS SYS SYS X NV12 NODE NODE", "SYS SYS SYS SYS NV12 X NODE NODE",
                     "SYS SYS SYS SYS NODE NODE X NV12", "SYS SYS SYS SYS NODE NODE NV12 X"])  # nccl-tests #178


def nv_link(text: str, gpu: str, cpu: str | None = None, host: float = PCIE3) -> Link:
    return topology_link(parse_topology(text), Link(1e-5, host), cpu, presets_dir(), None, gpu)


def test_a_dgx1_topology_gives_the_nvlink2_preset_s_figures():
    """Two routes to one table: fabrics.toml's ring_links for nvlink2 (entered by hand from the wiring) and
    the ring packing of the topology text; 5 GPUs cross a socket (GPU 4 has one bond among 0..4)."""
    from perfmodel.presets import fabrics

    link = nv_link(DGX1V, "v100", "skylake")
    committed = read_topology(presets_dir().parents[1] / "data" / "topologies" / "dgx1_v100_8gpu.txt")
    assert (committed.paths, committed.nvlinks) == (parse_topology(DGX1V).paths, parse_topology(DGX1V).nvlinks)
    preset = fabrics(presets_dir())["nvlink2"]
    assert link.bandwidth_Bps == pytest.approx(preset.achievable_Bps) == pytest.approx(120e9)
    got = dict(link.partial_Bps)
    for g, bw in preset.partial_Bps:
        if bw:
            assert got[g] == pytest.approx(bw), g
    assert got[5] == pytest.approx(10.0e9)  # the SYS hop: min(12.15 / 1.2, 10) on Skylake
    assert "NVLink rings over 6 of the GPUs' links x 20 GB/s (nvlink2)" in link.source


def test_a_quad_of_double_bonds_and_an_a100_pair():
    quad = nv_link(C4140, "v100")  # no CPU path between GPUs: no --host-cpu needed
    assert quad.bandwidth_Bps == pytest.approx(120e9)  # 3 pairs x 2 links = 6 links per GPU
    assert dict(quad.partial_Bps) == {2: pytest.approx(40e9), 3: pytest.approx(80e9)}  # NV2; a triangle 2 x 2
    pairs = nv_link(A100_PAIRS, "a100", "amd-zen2")
    assert pairs.bandwidth_Bps == pytest.approx(PCIE3)  # 8 GPUs ring through PCIe: NODE and SYS hops
    # GPUs 0 and 1 alone: NV12 = 12 x 208/12 GB/s = the 208 GB/s busbw nccl-tests #178 measured on that pair
    # (where nvlink3's achievable figure comes from: the bonds' count and the layout's parse are what this checks)
    assert dict(pairs.partial_Bps)[2] == pytest.approx(208e9)


def test_nvlink_of_an_unknown_generation_is_refused_in_one_line():
    with pytest.raises(SpecError, match="ring over NVLink alone; give the NVLink fabric with --intra"):
        nv_link(C4140, "v100-pcie")  # no NVLink generation listed for it
    assert nv_link(A100_PAIRS, "", "amd-zen2").partial_Bps == ()  # the PCIe ring stands; NV12 left unpriced


def test_predict_on_an_nvlink_quad_is_predict_with_its_figures(tmp_path, capsys):
    f = tmp_path / "topo.txt"
    f.write_text(C4140)
    base = ["predict", "--cluster", "custom", "--gpu", "v100", "--network", "ib-edr", "--workload", "resnet50",
            "--samples-per-s", "360", "--batch", "64", "--strategy", "ssgd", "--format", "json"]
    for gpus, figure in (("2", "40GB/s,2us"), ("4", "120GB/s,2us")):  # NVLink's latency (fabrics.toml)
        code, out, err = run(capsys, *base, "--gpus", gpus, "--gpu-topology", str(f))
        assert code == 0, err
        code2, out2, err2 = run(capsys, *base, "--gpus", gpus, "--gpus-per-node", "4", "--intra", figure)
        assert code2 == 0, err2
        assert json.loads(out)[0]["throughput"] == pytest.approx(json.loads(out2)[0]["throughput"], rel=1e-12)


def test_nvswitch_nodes_ring_at_the_gpu_s_own_links():
    """Behind NVSwitches `nvidia-smi topo -m` shows every pair bonded by all of a GPU's links (NV18 on an
    HGX H100): a GPU still sends on 18 links, 18 x 370/18 = 370 GB/s, nvswitch-h100's figure, at any count."""
    hgx = matrix([" ".join("X" if i == j else "NV18" for j in range(8)) for i in range(8)])
    link = nv_link(hgx, "h100")
    assert link.bandwidth_Bps == pytest.approx(370e9) and link.partial_Bps == ()
    assert nv_link(hgx, "b200").bandwidth_Bps == pytest.approx(721.8e9)  # 18 x 40.1 GB/s: nvswitch-b200's


def test_a_switched_node_of_16_gpus_needs_no_search():
    """A DGX-2 shows NV6 between all 16 V100s: L = min(6 x 15, 6 links) = 6, 120 GB/s (nvswitch-v100's)."""
    dgx2 = matrix([" ".join("X" if i == j else "NV6" for j in range(16)) for i in range(16)])
    assert nv_link(dgx2, "v100").bandwidth_Bps == pytest.approx(120e9)
