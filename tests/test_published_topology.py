"""reproduce.published_topology: the published PCIe runs priced with a vendor's node layout
(docs/validation.md, "V100 PCIe clusters"; data/topologies/README.md)."""

import statistics

import pytest

from reproduce.published import ROOT, load_runs
from reproduce.published_topology import errors, main, with_layout

PCIE_RUNS = ROOT / "data" / "published" / "pcie_runs.csv"
LAYOUTS = ROOT / "data" / "topologies"


def medians(errs: dict[str, list[float]], group: str) -> tuple[float, float]:
    v = errs[group]
    return round(statistics.median(abs(x) for x in v), 1), round(statistics.median(v), 1)


def test_a_pcie_switch_layout_is_the_pcie3_preset_row_for_row():
    rows = load_runs(PCIE_RUNS)
    laid, changed = with_layout(rows, LAYOUTS / "pcie_switch_4gpu.txt", None)
    assert changed == 144
    got, want = errors(laid), errors(rows)
    assert got.keys() == want.keys()
    for group in want:  # PIX hops run at the host link's figure
        assert got[group] == pytest.approx(want[group], rel=1e-12), group


def test_two_sockets_on_broadwell_halve_the_one_node_and_infiniband_misses():
    """The figures docs/validation.md quotes (a diagnostic made after the rows were judged)."""
    laid, changed = with_layout(load_runs(PCIE_RUNS), LAYOUTS / "two_sockets_4gpu.txt", "broadwell")
    errs = errors(laid)
    assert changed == 144 and {r["intra"] for r in laid} == {"6.0GB/s,10.0us"}
    assert medians(errs, "all") == (11.0, 7.9)
    assert medians(errs, "one node") == (10.3, 7.6)
    assert medians(errs, "across nodes, ib-edr") == (7.9, 4.3)
    assert medians(errs, "across nodes, eth-10g") == (5.5, 2.5)
    assert medians(errs, "across nodes, eth-100g") == (45.0, 45.0)
    assert medians(errs, "held-out half") == (12.1, 7.4)


def test_other_nodes_keep_their_links():
    rows = load_runs(ROOT / "data" / "published" / "runs.csv")
    laid, changed = with_layout(rows, LAYOUTS / "two_sockets_4gpu.txt", "broadwell")
    assert changed == 0 and laid == rows  # no 4-GPU PCIe node among the NVLink and 8-GPU K80 machines


def test_bad_input_is_one_line_and_exit_2(capsys):
    code = main(["--runs", str(PCIE_RUNS), "--gpu-topology", str(LAYOUTS / "two_sockets_4gpu.txt")])
    err = capsys.readouterr().err
    assert code == 2 and "need --host-cpu" in err and len(err.strip().splitlines()) == 1
