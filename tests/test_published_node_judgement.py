"""How a family's rows across nodes are judged from their one-node runs (reproduce.published_node --out) and read
back (reproduce.published_judged.node_judged, node_report, pair_report): what is written is what the predictors
give, a judgement is written once, and a damaged one is one line and exit status 2."""

import csv
import shutil
import statistics

import pytest

from reproduce import published as pub
from reproduce import published_judged as pj
from reproduce import published_node as pn


@pytest.fixture(scope="module")
def cloud():
    return pub.load_runs(pj.runs_path("cloud"))


def test_node_records_hold_both_predictors_for_every_row_across_nodes(cloud):
    records = pn.node_records(cloud)
    assert [r["id"] for r in records] == [r["id"] for r in cloud if r["nodes"] > 1]
    nodes, by_id = pn.node_rows(cloud), {r["id"]: r for r in cloud}
    for rec in records[:6]:
        r = by_id[rec["id"]]
        assert float(rec["predicted_node"]) == pytest.approx(pn.predict_from_node(r, nodes).predicted, rel=1e-9)
        assert float(rec["predicted_single_gpu"]) == pytest.approx(pub.predict_row(r).predicted, rel=1e-9)
        node = by_id[rec["node_id"]]
        assert node["nodes"] == 1 and node["gpus"] == r["gpus_per_node"]
        assert all(node[k] == r[k] for k in pn.NODE_KEY)


def test_a_node_judgement_is_written_once(tmp_path, capsys):
    runs = str(pj.runs_path("ebug"))
    assert pn.main(["--runs", runs, "--out", str(tmp_path)]) == 0
    written = (tmp_path / pn.NODE_FILE).read_bytes()
    assert pn.main(["--runs", runs, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a judgement is made once" in err[0]
    assert (tmp_path / pn.NODE_FILE).read_bytes() == written


@pytest.fixture
def judged_ebug(tmp_path, monkeypatch):
    """results/ in tmp_path with ebug's frozen predictions and a node judgement written now; ebug the one
    family judged from its one-node runs."""
    shutil.copytree(pj.RESULTS / "published_ebug", tmp_path / "published_ebug")
    pn.write_node_predictions(pub.load_runs(pj.runs_path("ebug")), tmp_path / "published_ebug")
    monkeypatch.setattr(pj, "RESULTS", tmp_path)
    monkeypatch.setattr(pj, "NODE_JUDGED", ("ebug",))
    monkeypatch.setattr(pj, "NODE_ROUNDS", {"test": ("ebug",)})
    return tmp_path / "published_ebug" / pn.NODE_FILE


def test_the_node_table_is_the_medians_of_the_frozen_files(judged_ebug):
    with open(judged_ebug, newline="") as f:
        frozen = [r for r in csv.DictReader(f) if r["predicted_node"]]
    errors = [100 * (float(r["predicted_node"]) / float(r["measured"]) - 1) for r in frozen]
    line = pj.node_report(["ebug"]).splitlines()[2].split()
    assert line[:2] == ["ebug", str(len(frozen))] and len(frozen) == 8  # p2.8xlarge's rows across nodes
    assert line[4] == f"{statistics.median(map(abs, errors)):.1f}%"
    assert line[5] == f"({statistics.median(errors):+.1f}%)"


@pytest.mark.parametrize("damage", ["measured", "text", "unknown id"])
def test_a_damaged_node_judgement_is_one_line_and_exit_2(judged_ebug, capsys, damage, monkeypatch):
    with open(judged_ebug, newline="") as f:
        rows = list(csv.DictReader(f))
    key, value = {"measured": ("measured", "1.5"), "text": ("predicted_node", "fast"),
                  "unknown id": ("id", "z999")}[damage]
    rows[0][key] = value
    with open(judged_ebug, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=pn.NODE_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    monkeypatch.setattr(pj, "JUDGED", {"ebug": pj.JUDGED["ebug"]})
    assert pj.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("published_judged: error:") and pn.NODE_FILE in err[0], err
