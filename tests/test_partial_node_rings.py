"""A run on part of a DGX-1 rings over the NVLinks among its GPUs (fabrics.toml ring_links).

The tables in fabrics.toml are checked against a second derivation: a linear program that packs
directed rings through GPUs 0..g-1 of the node's NVLink wiring (each direction of a bond of k links
carries k rings), solved by scipy. The model's use of the table is checked by hand: a 2-GPU ring
allreduce on dgx1-v100 costs what the same ring over a 20 GB/s link costs, and a sweep that mixes
partial and whole-node counts gives each count what it gets alone.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from perfmodel import presets
from reproduce import published as pub
from perfmodel.fabrics import load_fabrics
from perfmodel.preset_toml import PresetError
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload

# NVLinks between GPU pairs. DGX-1V: what `nvidia-smi topo -m` prints (NV1, NV2) in the test
# environment of DLPerf's reports (github.com/Oneflow-Inc/DLPerf). DGX-1 P100: one link to each GPU of
# its quad and one to GPU i+4 (NVIDIA DGX-1 System Architecture white paper, hybrid cube-mesh).
DGX1V = {(0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2, (1, 2): 2, (1, 3): 1, (1, 5): 2, (2, 3): 2, (2, 6): 1,
         (3, 7): 1, (4, 5): 1, (4, 6): 1, (4, 7): 2, (5, 6): 2, (5, 7): 1, (6, 7): 2}
DGX1P = {pair: 1 for pair in [(a, b) for q in (0, 4) for a, b in itertools.combinations(range(q, q + 4), 2)]
         + [(i, i + 4) for i in range(4)]}


def ring_links(bonds: dict, g: int) -> float:
    """Most directed rings through GPUs 0..g-1 at once, each link direction carrying one ring."""
    cycles = []
    for rest in itertools.permutations(range(1, g)):
        order = (0,) + rest
        hops = [(order[i], order[(i + 1) % g]) for i in range(g)]
        if all(bonds.get(tuple(sorted(h)), 0) for h in hops):
            cycles.append(hops)
    if not cycles:
        return 0.0
    hops = sorted({h for c in cycles for h in c})
    a = np.array([[c.count(h) for c in cycles] for h in hops], dtype=float)
    b = np.array([bonds[tuple(sorted(h))] for h in hops], dtype=float)
    res = linprog(-np.ones(len(cycles)), A_ub=a, b_ub=b, bounds=(0, None))
    assert res.success
    return -res.fun


@pytest.mark.parametrize("fabric, bonds", [("nvlink2", DGX1V), ("nvlink1", DGX1P)])
def test_ring_links_are_the_ring_packing_of_the_wiring(fabric, bonds):
    fab = presets.fabrics(presets.presets_dir())[fabric]
    whole = ring_links(bonds, 8)
    assert whole == pytest.approx(fab.nominal_Bps / {"nvlink2": 25e9, "nvlink1": 20e9}[fabric])  # 6 and 4 links
    assert fab.node_gpus == 8
    for g, bw in fab.partial_Bps:
        assert bw == pytest.approx(fab.achievable_Bps * ring_links(bonds, g) / whole), g


def test_dgx1_v100_figures_by_hand():
    c = presets.load_cluster("dgx1-v100")
    assert c.intra.bandwidth_Bps == 120e9
    assert c.intra_for(2).bandwidth_Bps == pytest.approx(20e9)  # one NVLink 2: 25 GB/s x 0.8
    assert c.intra_for(4).bandwidth_Bps == pytest.approx(80e9)  # four of the quad's links
    assert c.intra_for(5) == Link(c.host.latency_s, c.host.bandwidth_Bps, c.intra_for(5).source)  # GPU 4: one bond
    assert c.intra_for(8) is c.intra and c.intra_for(16) is c.intra


def test_only_for_nodes_the_table_describes():
    fab = presets.fabrics(presets.presets_dir())["nvlink2"]
    four = Cluster("four", 4, fab.link(), Link(1e-5, 1.2e10), Link(1e-6, 1.2e10), gpu="v100")
    assert four.intra_for(2) is four.intra  # a 4-GPU V100 board is not a DGX-1
    assert fab.link(2).partial_Bps == ()  # two fabrics side by side: no wiring known


def _ring_workload():
    return Workload("w", (4_000_000, 1_000_000), {"v100": ComputeTime("linear", t0_s=0.01, t1_s=0.001)})


def test_two_gpus_cost_a_ring_over_one_link():
    c = presets.load_cluster("dgx1-v100")
    s = Strategy("ssgd", allreduce="ring", overlap=0.0)
    p = predict(_ring_workload(), c, s, [2], batch=32)
    n = 5_000_000 * 4  # fp32 bytes
    assert p.t_comm_s[0] == pytest.approx(2 * (2 - 1) * (2e-6 + n / 2 / 20e9))
    alone = predict(_ring_workload(), c.with_link("intra", Link(2e-6, 20e9)), s, [2], batch=32)
    assert alone.t_iter_s[0] == pytest.approx(p.t_iter_s[0])


@pytest.mark.parametrize("strategy", [Strategy(name) for name in ("ssgd", "terngrad", "daso", "asgd", "sync-ps",
                                                                   "byteps", "zero1", "zero3", "fsdp")]
                         + [Strategy("ssgd", straggler_cv=0.02)], ids=lambda s: f"{s.name}-{s.straggler_cv}")
def test_a_sweep_gives_each_count_what_it_gets_alone(strategy):
    wl = presets.load_workload("resnet50")
    c = presets.load_cluster("dgx1-v100")
    gpus = [1, 2, 4, 5, 8, 16] if strategy.name != "daso" else [1, 2, 4, 8, 16]  # DASO: whole nodes or one part
    sweep = predict(wl, c, strategy, gpus, batch=64)
    for i, g in enumerate(gpus):
        one = predict(wl, c, strategy, [g], batch=64)
        assert sweep.gpus[i] == g and sweep.nodes[i] == one.nodes[0]
        for f in ("t_comm_s", "t_iter_s", "throughput", "efficiency", "bytes_per_gpu"):
            assert getattr(sweep, f)[i] == pytest.approx(getattr(one, f)[0]), (g, f)
        assert sweep.extra.keys() == one.extra.keys()
        for k in one.extra:
            assert sweep.extra[k][i] == pytest.approx(one.extra[k][0]), (g, k)
    t2 = predict(wl, c, Strategy("ssgd", overlap=0.0), [2], batch=64).t_comm_s[0]
    t2_whole = predict(wl, c.with_link("intra", Link(2e-6, 120e9)), Strategy("ssgd", overlap=0.0), [2],
                       batch=64).t_comm_s[0]
    assert t2 > 3 * t2_whole  # a sixth of the bandwidth (latency terms aside)


@pytest.mark.parametrize("body, message", [
    ("node_gpus = 8", "ring_links must be a table"),
    ("ring_links = { 2 = 1, 8 = 6 }", "node_gpus must be an integer >= 2"),
    ("node_gpus = 8\nring_links = { 2 = 1, 9 = 6 }", "ring_links key '9' must be a GPU count 2..8"),
    ("node_gpus = 8\nring_links = { 2 = -1, 8 = 6 }", "ring_links[2] must be an integer >= 0"),
    ("node_gpus = 8\nring_links = { 2 = 7, 8 = 6 }", "must be >= 1 and >= every other count"),
    ("node_gpus = 8\nring_links = { 2 = 1 }", "must be >= 1 and >= every other count"),
])
def test_bad_ring_links_are_one_line(tmp_path, body, message):
    path = tmp_path / "fabrics.toml"
    path.write_text('[mesh]\nkind = "intra"\nnominal_Bps = 1.5e11\nachievable_Bps = 1.2e11\nlatency_s = 2e-6\n'
                    f'source = "test"\n{body}\n')
    with pytest.raises(PresetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_fabrics(path)


def test_link_refuses_a_count_outside_the_node():
    with pytest.raises(SpecError, match="GPU count 8 must be 2..7"):
        Link(2e-6, 1e11, "x", ((8, 1e10),), 8)
    with pytest.raises(SpecError, match="node_gpus must be a positive integer"):
        Link(2e-6, 1e11, "x", ((2, 1e10),), 0)


def test_the_published_effect_switches_the_table_off():
    """reproduce.published's ablation: without partial-node-rings a 2-GPU DGX-1 row rings at 120 GB/s."""
    row = next(r for r in pub.load_runs(pub.RUNS) if r["system"] == "dlperf-v100-cluster" and r["gpus"] == 2
               and r["comm_overlap"] == "after-backward")
    assert pub.build_cluster(row).intra_for(2).bandwidth_Bps == pytest.approx(20e9)
    assert pub.build_cluster(row, effects=()).intra_for(2).bandwidth_Bps == 120e9
    on, off = pub.predict_row(row), pub.predict_row(row, effects=tuple(e for e in pub.EFFECTS
                                                                       if e != "partial-node-rings"))
    assert on.predicted < off.predicted


def _matrix(bonds: dict, g: int) -> list[list[int]]:
    m = [[0] * g for _ in range(g)]
    for (a, b), k in bonds.items():
        if a < g and b < g:
            m[a][b] = m[b][a] = k
    return m


@pytest.mark.parametrize("bonds", [DGX1V, DGX1P])
def test_the_model_s_ring_packing_agrees_with_this_file_s(bonds):
    from perfmodel.nvlink_rings import ring_links as model_ring_links

    for g in range(2, 9):
        assert model_ring_links(_matrix(bonds, g)) == pytest.approx(ring_links(bonds, g)), g


def test_ring_packing_by_hand():
    from perfmodel.nvlink_rings import ring_links as model_ring_links

    assert model_ring_links([[0, 3], [3, 0]]) == 3  # two GPUs: their bond, both ways at once
    assert model_ring_links([[0, 2, 2], [2, 0, 2], [2, 2, 0]]) == 4  # a triangle: 2 rings each way
    assert model_ring_links([[0, 1, 0], [1, 0, 1], [0, 1, 0]]) == 0  # a line: no ring
    with pytest.raises(SpecError, match="up to 8"):
        model_ring_links([[0] * 9 for _ in range(9)])


def test_a_complete_uniform_mesh_is_n_minus_1_rings_a_link():
    from perfmodel.nvlink_rings import ring_links as model_ring_links

    for n in (3, 4, 5, 6):
        mesh = [[0 if i == j else 2 for j in range(n)] for i in range(n)]
        assert model_ring_links(mesh) == 2 * (n - 1) == pytest.approx(ring_links(
            {(i, j): 2 for i in range(n) for j in range(i + 1, n)}, n))  # the linear program agrees
