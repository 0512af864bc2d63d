"""Six families judged once (docs/validation.md, "Six families judged once"): data/published/fleetx_runs.csv,
ebug_runs.csv, lambda_runs.csv, dlenew_runs.csv, dleold_runs.csv and cloud_runs.csv. Their numbers are printed
in their excerpts, the judged predictions (results/published_<family>/predictions.csv) are what the model of
the judgement gives, and the figures quoted in docs/validation.md are those of the judged predictions."""

import csv
from pathlib import Path

import numpy as np
import pytest

from reproduce import published as pub

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "data" / "published"
# the effects of the model these files were judged with (all of reproduce.published.EFFECTS at 3704387)
JUDGED_EFFECTS = ("gpu-variability", "horovod-cycle", "overlap-interference", "partial-node-rings", "bucket-copies")
# family -> rows, rows across nodes, (median |error|, median signed) over all rows and across nodes (None:
# none across nodes), the 80% band's (covered, rows) on the dev and held-out halves
FIGURES = {
    "fleetx": (42, 28, (3.9, -1.8), (6.2, -6.2), {"dev": (13, 21), "held-out": (12, 21)}),
    "ebug": (28, 22, (21.5, 2.3), (22.5, 0.5), {"dev": (8, 12), "held-out": (7, 16)}),
    "lambda": (52, 0, (1.0, -0.6), None, {"dev": (29, 29), "held-out": (23, 23)}),
    "dlenew": (54, 10, (2.0, 1.1), (17.8, -11.6), {"dev": (26, 30), "held-out": (19, 24)}),
    "dleold": (18, 10, (12.9, 12.9), (15.1, 15.1), {"dev": (8, 10), "held-out": (7, 8)}),
    "cloud": (60, 30, (10.1, 8.3), (15.6, 15.6), {"dev": (24, 32), "held-out": (18, 28)}),
}


def _medians(errors: list[float]) -> tuple[float, float]:
    return round(float(np.median(np.abs(errors))), 1), round(float(np.median(errors)), 1)


@pytest.mark.parametrize("family", sorted(FIGURES))
def test_every_number_is_printed_in_the_familys_excerpts(family):
    texts = "\n".join(p.read_text() for p in (PUBLISHED / "excerpts").glob(f"{family}_*.md"))
    rows = pub.load_runs(PUBLISHED / f"{family}_runs.csv")
    n, across = FIGURES[family][:2]
    assert len(rows) == n and sum(r["nodes"] > 1 for r in rows) == across
    with open(PUBLISHED / f"{family}_runs.csv", newline="") as f:
        for r in csv.DictReader(f):
            assert r["samples_per_s"] in texts and r["single_gpu_samples_per_s"] in texts, r["id"]
            assert r["source_url"].startswith("https://github.com/") and len(r["source_url"].split("/")[6]) == 40


@pytest.mark.parametrize("family", sorted(FIGURES))
def test_the_judged_predictions_and_figures_are_as_reported(family):
    from perfmodel.intervals import load_bands
    from reproduce.published_intervals import coverage, predicted_rows

    runs = PUBLISHED / f"{family}_runs.csv"
    frozen = {r["id"]: float(r["predicted"])
              for r in csv.DictReader(open(ROOT / "results" / f"published_{family}" / "predictions.csv"))}
    rows = pub.load_runs(runs)
    assert set(frozen) == {r["id"] for r in rows}
    for r in rows:
        assert abs(pub.predict_row(r, effects=JUDGED_EFFECTS).predicted / frozen[r["id"]] - 1) < 1e-6, r["id"]
    err = [pub.error_pct(frozen[r["id"]], r["samples_per_s"]) for r in rows]
    _, _, whole, across, cov = FIGURES[family]
    assert _medians(err) == whole
    if across is not None:
        assert _medians([e for e, r in zip(err, rows) if r["nodes"] > 1]) == across
    assert {h: coverage(predicted_rows(runs), load_bands(), h)["all"] for h in ("dev", "held-out")} == cov


def test_the_table_of_judged_families_reads_the_frozen_predictions(capsys):
    from reproduce import published_judged as pj

    for family, (n, across, whole, across_fig, cov) in FIGURES.items():
        rows = pj.judged_rows(family)
        assert len(rows) == n and sum(j.row["nodes"] > 1 for j in rows) == across
        assert _medians([j.error_pct for j in rows]) == whole
        assert pj.inside_band(rows) == cov["dev"][0] + cov["held-out"][0]
    # a row's linear guess is its single-GPU rate times its GPUs: FleetX's first row, 8 x 335.43 vs 2488.49
    first = pj.judged_rows("fleetx")[0]
    assert first.linear_error_pct == pytest.approx((8 * 335.43 / 2488.49 - 1) * 100)
    assert pj.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:3] == ["pcie", "144", "108"] and out[2].split()[3] == "24.8%"  # as judged
    assert [ln.split()[0] for ln in out[2:11]] == [*pj.JUDGED, "pooled"]


def test_a_missing_judgement_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    from reproduce import published_judged as pj

    monkeypatch.setattr(pj, "RESULTS", tmp_path)
    assert pj.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("published_judged: error:") and "predictions.csv" in err[0]
