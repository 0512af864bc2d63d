"""80% bands on predictions (perfmodel.intervals) and their fit on the published runs
(reproduce.published_intervals)."""

import json
import tomllib
from pathlib import Path

import pytest

from perfmodel import intervals as iv
from perfmodel.cli import main
from perfmodel.specs import SpecError
from reproduce import published_intervals as pi

ROOT = Path(__file__).resolve().parent.parent
TOML = ROOT / "data" / "presets" / "intervals.toml"


def _bands(min_rows=10):
    b = {("multi-node", "allreduce"): iv.Band("multi-node", "allreduce", 0.5, 1.25, 40),
         ("multi-node", "parameter-server"): iv.Band("multi-node", "parameter-server", 0.9, 1.1, 3),
         ("multi-node", "pooled"): iv.Band("multi-node", "pooled", 0.6, 1.2, 43),
         ("one-node", "pooled"): iv.Band("one-node", "pooled", 0.8, 1.0, 20)}
    return iv.Bands(b, min_rows, "test")


def _rec(strategy, gpus, nodes, tp):
    return {"strategy": strategy, "gpus": gpus, "nodes": nodes, "throughput": tp}


def test_band_is_the_prediction_times_its_regimes_percentiles():
    recs = iv.with_band([_rec("ssgd", 16, 2, 1000.0),     # multi-node allreduce: own band (40 rows)
                         _rec("sync-ps", 16, 2, 1000.0),  # 3 rows < min_rows 10: the span's pooled band
                         _rec("terngrad", 16, 2, 1000.0),  # no published rows: pooled
                         _rec("ssgd", 8, 1, 1000.0),       # one node: no allreduce band of its own
                         _rec("ssgd", 1, 1, 123.0)], _bands())
    got = [(r["throughput_lo"], r["throughput_hi"]) for r in recs]
    assert got[0] == pytest.approx((500.0, 1250.0))
    assert got[1] == pytest.approx((600.0, 1200.0))
    assert got[2] == pytest.approx((600.0, 1200.0))
    assert got[3] == pytest.approx((800.0, 1000.0))
    assert got[4] == (123.0, 123.0)  # 1 GPU exchanges nothing
    assert recs[0]["band"] == "multi-node allreduce (40 dev rows)"
    assert recs[1]["band"] == "multi-node pooled (43 dev rows)"
    # with min_rows 3 the parameter-server band is its own
    r = iv.with_band([_rec("sync-ps", 16, 2, 1000.0)], _bands(min_rows=3))[0]
    assert (r["throughput_lo"], r["throughput_hi"]) == pytest.approx((900.0, 1100.0))


@pytest.mark.parametrize("kw, words", [
    ({"q_lo": 1.2, "q_hi": 1.1}, "q_lo 1.2 > q_hi 1.1"),
    ({"q_lo": -0.1}, "q_lo must be a positive number"),
    ({"q_hi": float("nan")}, "q_hi must be a positive number"),
    ({"rows": 0}, "rows must be a positive integer"),
    ({"span": "rack"}, "band span 'rack'"),
])
def test_a_bad_band_is_refused(kw, words):
    args = dict(span="one-node", family="allreduce", q_lo=0.9, q_hi=1.1, rows=5)
    args.update(kw)
    with pytest.raises(SpecError, match=words):
        iv.Band(**args)


def test_fit_takes_the_percentiles_of_dev_rows_only():
    # 11 dev rows across nodes with measured / predicted 1.0, 1.1, ..., 2.0: numpy's linear percentiles
    # are 1.1 (10th: position 1 of 0..10) and 1.9 (90th: position 9); held-out rows (ratio 100) are ignored
    rows = [dict(row={"half": "dev", "samples_per_s": 100.0 * (1 + k / 10)}, predicted=100.0,
                 span="multi-node", family="allreduce", strategy="ssgd") for k in range(11)]
    rows += [dict(row={"half": "held-out", "samples_per_s": 1e4}, predicted=100.0, span="multi-node",
                  family="allreduce", strategy="ssgd")]
    rows += [dict(row={"half": "dev", "samples_per_s": 90.0}, predicted=100.0, span="one-node",
                  family="parameter-server", strategy="sync-ps")]
    b = pi.fit_bands(rows)
    own = b.bands[("multi-node", "allreduce")]
    assert (own.q_lo, own.q_hi, own.rows) == (pytest.approx(1.1), pytest.approx(1.9), 11)
    assert b.bands[("multi-node", "pooled")] == iv.Band("multi-node", "pooled", own.q_lo, own.q_hi, 11)
    one = b.bands[("one-node", "pooled")]
    assert (one.q_lo, one.q_hi, one.rows) == (pytest.approx(0.9), pytest.approx(0.9), 1)


def test_the_toml_round_trips(tmp_path):
    rows = [dict(row={"half": "dev", "samples_per_s": 100.0 + k}, predicted=100.0, span=sp, family="allreduce",
                 strategy="ssgd") for k in range(5) for sp in ("one-node", "multi-node")]
    b = pi.fit_bands(rows, min_rows=4)
    path = tmp_path / "intervals.toml"
    path.write_text(pi.toml_text(b, Path("runs.csv")))
    back = iv.load_bands(path)
    assert back.bands == b.bands and back.min_rows == 4


@pytest.mark.parametrize("text, words", [
    ("min_rows = 10\n", "needs min_rows"),
    ("min_rows = 10\n[band.one-node.pooled]\nq_lo = 1.0\n", "needs min_rows"),
    ("min_rows = 10\n[band.one-node.pooled]\nq_lo = 0.9\nq_hi = 1.1\nrows = 4\n", "no pooled band for span"),
    ("min_rows = [\n", "malformed"),
])
def test_a_bad_intervals_file_is_one_error(tmp_path, text, words):
    path = tmp_path / "intervals.toml"
    path.write_text(text)
    with pytest.raises(SpecError, match=words):
        iv.load_bands(path)


def test_committed_bands_are_what_the_script_makes_from_the_published_runs():
    # the generator on data/published/runs.csv (reproduce.published's predictions, dev rows) against the
    # committed file: regenerate with `python -m reproduce.published_intervals --write data/presets/intervals.toml`
    made = pi.fit_bands(pi.predicted_rows(ROOT / "data" / "published" / "runs.csv"))
    assert iv.load_bands(TOML).bands == made.bands


@pytest.mark.slow  # predicts every row of runs.csv and a judged family: 10-20 s on 2 cores
def test_also_files_count_every_row_as_development(tmp_path):
    # --also: a judged family's rows join the fit whatever their half column says; the held-out half of
    # runs.csv stays held out
    runs, lumi = ROOT / "data" / "published" / "runs.csv", ROOT / "data" / "published" / "lumi_runs.csv"
    base, both = pi.predicted_rows(runs), pi.predicted_rows(runs, (lumi,))
    extra = both[len(base):]
    assert len(extra) == 38 and {x["row"]["half"] for x in extra} == {"dev"}
    assert [x["row"]["half"] for x in both[:len(base)]] == [x["row"]["half"] for x in base]
    assert "held-out" in {x["row"]["half"] for x in base}
    assert any(r["half"] == "held-out" for r in pi.pub.load_runs(lumi))  # the file's own split was overridden
    fitted = pi.fit_bands(both)
    assert fitted.bands[("multi-node", "pooled")].rows == pi.fit_bands(base).bands[("multi-node", "pooled")].rows + 16
    path = tmp_path / "bands.toml"
    path.write_text(pi.toml_text(fitted, runs, (lumi,)))
    assert "every row of lumi_runs.csv" in iv.load_bands(path).source


def test_held_out_coverage_of_the_committed_bands_is_near_80_percent():
    rows = pi.predicted_rows(ROOT / "data" / "published" / "runs.csv")
    inside, total = pi.coverage(rows, iv.load_bands(TOML), "held-out")["all"]
    assert total > 300
    assert 0.70 <= inside / total <= 0.90
    # counted by hand from the same predictions: measured inside [P q_lo, P q_hi] of the row's regime
    d = tomllib.loads(TOML.read_text())
    n = 0
    for x in rows:
        if x["row"]["half"] != "held-out":
            continue
        fam = x["family"] if d["band"][x["span"]].get(x["family"], {}).get("rows", 0) >= d["min_rows"] else "pooled"
        b = d["band"][x["span"]][fam]
        n += x["predicted"] * b["q_lo"] <= x["row"]["samples_per_s"] <= x["predicted"] * b["q_hi"]
    assert n == inside


def test_predict_prints_the_band_in_json_csv_and_table(capsys):
    d = tomllib.loads(TOML.read_text())
    args = ["predict", "--cluster", "dgx1-v100", "--workload", "resnet50", "--gpus", "1,8,32", "--strategy", "ssgd"]
    assert main(args + ["--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    for r in recs:
        assert r["throughput_lo"] <= r["throughput"] <= r["throughput_hi"]
    multi = next(r for r in recs if r["gpus"] == 32)
    b = d["band"]["multi-node"]["allreduce"]
    assert multi["throughput_lo"] == pytest.approx(multi["throughput"] * b["q_lo"])
    assert multi["throughput_hi"] == pytest.approx(multi["throughput"] * b["q_hi"])
    one = next(r for r in recs if r["gpus"] == 1)
    assert one["throughput_lo"] == one["throughput_hi"] == one["throughput"]
    assert main(args + ["--format", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert "throughput_lo" in header and "throughput_hi" in header
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "80% lo" in table and "80% hi" in table
    assert f"{multi['throughput_lo']:,.0f}" in table


def test_predict_with_a_broken_intervals_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "intervals.toml"
    bad.write_text("min_rows = 10\n")
    monkeypatch.setattr(iv, "intervals_path", lambda root=None: bad)
    code = main(["predict", "--cluster", "dgx1-v100", "--workload", "resnet50", "--gpus", "8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("perfmodel: error:") and "intervals.toml" in err[0]
