"""The AMD MI250X rows (data/published/lumi_runs.csv, data/published/build_lumi.py)."""

from pathlib import Path

from reproduce import published as pub

ROOT = Path(__file__).resolve().parent.parent
LUMI = ROOT / "data" / "published" / "lumi_runs.csv"
EXCERPT = ROOT / "data" / "published" / "excerpts" / "csc_ml_benchmarks.md"


def test_every_lumi_number_is_on_its_line_and_the_cluster_is_the_guides():
    rows = pub.load_runs(LUMI)
    lines = EXCERPT.read_text().splitlines()[1:]
    assert len(rows) == 38 and sum(r["nodes"] > 1 for r in rows) == 16
    for r in rows:
        n = int(r["source_loc"].split(" line ")[1].split(",")[0])
        cells = [c.strip() for c in lines[n - 1].strip().strip("|").split("|")]
        assert cells[2] == "lumi" and int(cells[3]) == r["gpus"] and float(cells[5]) == r["samples_per_s"]
        assert r["nodes"] == -(-r["gpus"] // 8) and r["gpu"] == "mi250x-gcd"
    c = pub.build_cluster(rows[0])
    assert c.gpus_per_node == 8 and c.intra.bandwidth_Bps == 50e9 and c.nics == 4
    assert c.network.bandwidth_Bps == 4 * 200e9 / 8  # four 200 Gb/s endpoints, per direction


def _median_abs(errors: list[float]) -> float:
    import numpy as np

    return round(float(np.median(np.abs(errors))), 1)


def test_the_judged_predictions_and_figures_are_as_reported(judged_effects):
    """results/published_lumi/predictions.csv is the one judgement (docs/validation.md, "AMD MI250X on
    LUMI"); the medians and the 80% band's coverage quoted there."""
    import csv

    from perfmodel.intervals import load_bands
    from reproduce.published_intervals import coverage, predicted_rows

    frozen = {r["id"]: float(r["predicted"])
              for r in csv.DictReader(open(ROOT / "results" / "published_lumi" / "predictions.csv"))}
    rows = pub.load_runs(LUMI)
    assert set(frozen) == {r["id"] for r in rows}
    for r in rows:
        # the model of the judgement; bucket-copies came after (docs/validation.md)
        assert abs(pub.predict_row(r, effects=judged_effects).predicted / frozen[r["id"]] - 1) < 1e-6, r["id"]
    err = [pub.error_pct(frozen[r["id"]], r["samples_per_s"]) for r in rows]
    across = [e for e, r in zip(err, rows) if r["nodes"] > 1]
    assert (_median_abs(err), _median_abs(across)) == (2.0, 3.8)
    cov = {h: coverage(predicted_rows(LUMI), load_bands(), h)["all"] for h in ("dev", "held-out")}
    assert cov == {"dev": (13, 17), "held-out": (20, 21)}
