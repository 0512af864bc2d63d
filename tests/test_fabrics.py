"""Fabric table and LINK texts: units by hand, counts, latencies, and the table's own invariants."""

import pytest

from perfmodel import presets
from perfmodel.fabrics import DEFAULT_LATENCY_FABRIC, parse_bandwidth, parse_latency, parse_link
from perfmodel.specs import Link, SpecError

NAMED = ("ib-hdr", "ib-edr", "ib-fdr", "roce-100g", "roce-25g", "eth-10g", "eth-25g", "eth-100g", "nvlink1",
         "nvlink2", "nvlink3", "nvlink4", "nvswitch-v100", "nvswitch-a100", "nvswitch-h100", "pcie3", "pcie4",
         "pcie5")


@pytest.fixture(scope="module")
def fabs():
    return presets.fabrics()


def test_bandwidth_units_by_hand():
    assert parse_bandwidth("200Gb/s") == pytest.approx(25e9)  # bits: / 8
    assert parse_bandwidth("12.5GB/s") == pytest.approx(12.5e9)
    assert parse_bandwidth("100Gbps") == pytest.approx(12.5e9)
    assert parse_bandwidth("800MB/s") == pytest.approx(8e8)
    assert parse_bandwidth("1e10Bps") == pytest.approx(1e10)
    assert parse_bandwidth("1Tb/s") == pytest.approx(1.25e11)
    for bad in ("fast", "200", "200Gx/s", "GB/s"):
        with pytest.raises(ValueError):
            parse_bandwidth(bad)


def test_latency_units_by_hand():
    assert parse_latency("2us") == pytest.approx(2e-6)
    assert parse_latency("500ns") == pytest.approx(5e-7)
    assert parse_latency("0.01ms") == pytest.approx(1e-5)
    assert parse_latency("1e-6s") == pytest.approx(1e-6)
    with pytest.raises(ValueError):
        parse_latency("2 parsecs")


def test_every_named_fabric_exists_with_sources(fabs):
    for name in NAMED:
        f = fabs[name]
        assert f.achievable_Bps <= f.nominal_Bps and f.latency_s > 0 and len(f.source) > 40, name
    assert {f.kind for f in fabs.values()} == {"network", "intra", "host"}


def test_fabric_link_is_its_achievable_figure_times_count(fabs):
    one = parse_link("ib-hdr", fabs, what="--network", role="network")
    eight = parse_link("8xib-hdr", fabs, what="--network", role="network")
    assert one.count == 1 and one.link.bandwidth_Bps == fabs["ib-hdr"].achievable_Bps
    assert eight.count == 8 and eight.link.bandwidth_Bps == pytest.approx(8 * fabs["ib-hdr"].achievable_Bps)
    assert eight.link.latency_s == one.link.latency_s == fabs["ib-hdr"].latency_s
    upper = parse_link("NVSwitch-A100", fabs, what="--intra", role="intra")
    assert upper.link.bandwidth_Bps == fabs["nvswitch-a100"].achievable_Bps
    given = parse_link("ib-edr,1.5us", fabs, what="--network", role="network")
    assert given.link.latency_s == pytest.approx(1.5e-6)
    assert given.link.bandwidth_Bps == fabs["ib-edr"].achievable_Bps


def test_figures_keep_the_replaced_latency_or_take_the_reference_fabrics(fabs):
    old = Link(7e-6, 1e9)
    p = parse_link("8x200Gb/s", fabs, what="--network", role="network", replaces=old)
    assert p.count == 8 and p.link.bandwidth_Bps == pytest.approx(8 * 25e9) and p.link.latency_s == 7e-6
    p = parse_link("12.5GB/s", fabs, what="--network", role="network")
    assert p.link.latency_s == fabs[DEFAULT_LATENCY_FABRIC["network"]].latency_s
    p = parse_link("25GB/s,2us", fabs, what="--intra", role="intra", replaces=old)
    assert p.link.bandwidth_Bps == pytest.approx(25e9) and p.link.latency_s == pytest.approx(2e-6)


@pytest.mark.parametrize("text,message", [
    ("ib-xdr", "unknown fabric 'ib-xdr' for --network"),
    ("-3Gb/s", "bandwidth must be > 0"),
    ("0GB/s", "bandwidth must be > 0"),
    ("25GB/s,soon", "cannot read a latency"),
    ("12 furlongs", "cannot read a bandwidth"),
    ("0xib-hdr", "count before 'x' must be >= 1"),
])
def test_bad_links(fabs, text, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_link(text, fabs, what="--network", role="network")


@pytest.mark.parametrize("body,message", [
    ('nominal_Bps = "fast"\nachievable_Bps = 1.0\n', r"fabrics.toml \[x\]: nominal_Bps must be a positive number"),
    ("nominal_Bps = 1.0\nachievable_Bps = 2.0\n", "exceeds nominal_Bps"),
    ("nominal_Bps = 1.0\n", "missing key 'achievable_Bps'"),
])
def test_malformed_fabric_table_names_file_and_key(tmp_path, body, message):
    from perfmodel.fabrics import load_fabrics

    path = tmp_path / "fabrics.toml"
    path.write_text('[x]\nkind = "network"\n' + body + 'latency_s = 0\nsource = ""\n')
    with pytest.raises(SpecError, match=message):
        load_fabrics(path)
