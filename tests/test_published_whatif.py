"""reproduce.published_whatif: the published PCIe runs priced with a vendor's node layout, or with TCP over
InfiniBand read as 25 Gb/s Ethernet (docs/validation.md, "V100 PCIe clusters"; data/topologies/README.md)."""

import statistics

import pytest

from reproduce import published, published_node, published_pairs, published_whatif
from reproduce.published import ROOT, load_runs
from reproduce.published_pairs import pairs, tally
from reproduce.published_whatif import errors, main, with_layout, with_network

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
    assert medians(errs, "all") == (11.0, 7.4)
    assert medians(errs, "one node") == (9.9, 7.3)
    assert medians(errs, "across nodes, ib-edr") == (7.4, 4.3)
    assert medians(errs, "across nodes, eth-10g") == (5.4, 2.3)
    assert medians(errs, "across nodes, eth-100g") == (44.7, 44.7)
    assert medians(errs, "held-out half") == (12.1, 7.3)
    assert tally(pairs(laid))["right"] == 104 and tally(pairs(load_runs(PCIE_RUNS)))["right"] == 89  # of 144


def test_other_nodes_keep_their_links():
    rows = load_runs(ROOT / "data" / "published" / "runs.csv")
    laid, changed = with_layout(rows, LAYOUTS / "two_sockets_4gpu.txt", "broadwell")
    assert changed == 0 and laid == rows  # no 4-GPU PCIe node among the NVLink and 8-GPU K80 machines


def test_tcp_over_infiniband_read_as_25_gigabit_ethernet():
    """The DLPerf rows' socket-speed reading (data/published/README.md, before these rows were
    transcribed), carried to the HKBU runs that set NCCL_IB_DISABLE=1 on ib0."""
    rows = load_runs(PCIE_RUNS)
    read, changed = with_network(rows, "eth-100g=eth-25g")
    assert changed == 48 and sum(r["network"] == "eth-25g" for r in read) == 48
    assert medians(errors(read, rows), "across nodes, eth-100g") == (17.6, 15.9)
    assert medians(errors(read, rows), "across nodes, ib-edr") == medians(errors(rows), "across nodes, ib-edr")


@pytest.mark.parametrize("argv, words", [
    (["--gpu-topology", str(LAYOUTS / "two_sockets_4gpu.txt")], "need --host-cpu"),
    (["--network-as", "eth-100g"], "expected FROM=LINK"),
    (["--network-as", "ib-edr=bogus"], "unknown fabric 'bogus' for --network-as"),
    (["--network-as", "ib-edr=-5GB/s"], "'-5GB/s': bandwidth must be > 0"),
    (["--network-as", "ib-edr=25GB/s,-1us"], "latency must be >= 0"),
    (["--network-as", "ib-edr=2xeth-25g"], "give one NIC's link"),
    ([], "nothing to change"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    code = main(["--runs", str(PCIE_RUNS), *argv])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("link", ["eth-25g", "25GB/s", "25GB/s,2us"])
def test_a_readable_network_link_prices_every_row_it_replaces(link):
    rows = load_runs(PCIE_RUNS)
    read, changed = with_network(rows, f"ib-edr={link}")
    assert changed == 48
    assert {g: len(v) for g, v in errors(read, rows).items()} == {g: len(v) for g, v in errors(rows).items()}


@pytest.mark.parametrize("module, argv", [
    (published, ["--no-plot"]), (published_pairs, []), (published_node, []),
    (published_whatif, ["--network-as", "eth-100g=eth-25g"]),
])
@pytest.mark.parametrize("kind", ["directory", "binary"])
def test_an_unreadable_runs_file_is_one_line_and_exit_2(tmp_path, capsys, module, argv, kind):
    """The four commands read --runs through reproduce.published.load_runs."""
    runs = tmp_path
    if kind == "binary":
        runs = tmp_path / "b.csv"
        runs.write_bytes(b"\xff\xfe\x00\x01")
    out = ["--out", str(tmp_path / "out")] if module is published else []
    code = module.main(["--runs", str(runs), *argv, *out])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(runs) in err
    assert ("is a directory" if kind == "directory" else "cannot be read as a runs CSV") in err
    assert not (tmp_path / "out").exists()
