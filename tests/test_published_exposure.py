"""reproduce.published_exposure: the across-node rows by exposed share and network (a development diagnostic)."""

from pathlib import Path

import numpy as np

from reproduce import published as pub
from reproduce import published_exposure as pe

LUMI = Path(pub.RUNS).parent / "lumi_runs.csv"


def test_every_row_across_nodes_lands_in_one_bin_and_its_error_is_the_models():
    rows = pe.exposed_rows([LUMI])
    runs = [r for r in pub.load_runs(LUMI) if r["nodes"] > 1]
    assert len(rows) == len(runs) == 16
    text = pe.report(rows)
    binned = sum(int(ln.split()[2]) for ln in text.split("by network:")[0].splitlines()[2:])
    assert binned == 16 and "200Gb/s,2us" in text and all(0 < x["exposed"] < 1 for x in rows)
    first = pub.predict_row(runs[0])
    assert rows[0]["error"] == pub.error_pct(first.predicted, runs[0]["samples_per_s"])
    assert np.isclose(rows[0]["linear"], (runs[0]["single_gpu_samples_per_s"] * runs[0]["gpus"]
                                          / runs[0]["samples_per_s"] - 1) * 100)


def test_a_missing_runs_file_is_one_line_and_exit_2(capsys, tmp_path):
    assert pe.main(["--runs", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("published_exposure: error:")


def test_the_socket_cap_moves_only_tcp_links_above_it():
    rows = pe.exposed_rows([Path(pub.RUNS).parent / "pcie_runs.csv", LUMI], socket_cap_Bps=2e9)
    fast = [x for x in rows if x["network"] == "eth-100g"]  # 11.8 GB/s capped at 2: slower predictions
    ten = [x for x in rows if x["network"] == "eth-10g"]  # 1.18 GB/s is under the cap: unchanged
    assert fast and ten and all(x["capped"] < x["error"] for x in fast)
    assert all(x["capped"] == x["error"] for x in ten)
    assert not any("capped" in x for x in rows if x["file"] == "lumi_runs.csv")  # RDMA: no cap
    assert pe.is_tcp({"network": "4.707GB/s,15us"}) and not pe.is_tcp({"network": "ib-edr"})
    assert "capped at 2 GB/s" in pe.cap_report(rows, 2)
