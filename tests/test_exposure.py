"""perfmodel.exposure: the out-of-sample error by exposed share, and the one line predict and plan print from it."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.cli import main
from perfmodel.exposure import (EXPOSED_EDGES, ExposureBin, ExposureTable, exposed_share, exposure_note,
                                exposure_path, load_exposure)
from perfmodel.specs import SpecError

ROOT = Path(__file__).resolve().parents[1]
TABLE = ExposureTable((ExposureBin(0.0, 0.1, 50, 4.0, 1.0, 0.8, 1.05),
                       ExposureBin(0.1, 0.3, 40, 15.0, 12.0, 0.6, 1.1),
                       ExposureBin(0.5, 1.0, 20, 40.0, -30.0, 1.1, 2.0)), 10.0, "by hand")


def rec(gpus, nodes, t_iter, t_comp, strategy="ssgd"):
    return {"gpus": gpus, "nodes": nodes, "t_iter_s": t_iter, "t_compute_s": t_comp, "strategy": strategy}


def test_exposed_share_is_the_part_of_the_step_that_is_not_compute():
    assert exposed_share(0.2, 0.15) == pytest.approx(0.25)  # 50 ms of 200 ms
    assert exposed_share(0.1, 0.1) == 0.0 and exposed_share(0.1, 0.12) == 0.0  # clamped: never negative
    with pytest.raises(SpecError):
        exposed_share(0.0, 0.0)


def test_the_note_quotes_the_bin_of_the_most_exposed_prediction_across_nodes():
    # 8 GPUs in one node would be 50% exposed, but one node is not what the table measured: ignored;
    # across nodes 0.05 of 0.2 s (25%) beats 0.01 of 0.2 s (5%): the (0.1, 0.3] bin, 15% > 10%
    recs = [rec(8, 1, 0.2, 0.1), rec(16, 2, 0.2, 0.19), rec(64, 8, 0.2, 0.15)]
    note = exposure_note(recs, TABLE)
    assert note.startswith("the exchange leaves 25% of the predicted step exposed (ssgd at 64 GPUs); on 40 ")
    assert "10%-30% exposed" in note and "12% too fast at the median (15% absolute" in note
    assert "0.60 .. 1.10" in note and "optimistic" in note
    # a bin the model was too slow in says so
    slow = exposure_note([rec(64, 8, 1.0, 0.3)], TABLE)
    assert "30% too slow" in slow and "pessimistic" in slow


def test_no_note_below_the_threshold_in_an_empty_bin_on_one_node_or_for_unpublished_schemes():
    assert exposure_note([rec(64, 8, 0.2, 0.19)], TABLE) is None  # 5%: the bin's 4% is under 10%
    assert exposure_note([rec(64, 8, 1.0, 0.6)], TABLE) is None  # 40%: no published row in (0.3, 0.5]
    assert exposure_note([rec(8, 1, 1.0, 0.1)], TABLE) is None  # one node
    assert exposure_note([rec(64, 8, 1.0, 0.3, "asgd"), rec(64, 8, 1.0, 0.3, "terngrad-levels")], TABLE) is None
    assert exposure_note([], TABLE) is None


def test_the_committed_table_loads_with_the_diagnostics_bins_and_a_bad_file_is_one_spec_error(tmp_path):
    t = load_exposure()
    assert [b.lo for b in t.bins] == list(EXPOSED_EDGES[:-1]) and [b.hi for b in t.bins] == list(EXPOSED_EDGES[1:])
    # the finding the note rests on: the more of the step is exposed, the further off the model, from within
    # the threshold at under 5% exposed to several times it above 50%
    errs = [b.median_abs_pct for b in t.bins]
    assert t.note_above_pct == 10.0 and errs == sorted(errs) and errs[0] < 10 < 3 * 10 < errs[-1]
    cases = {"rows must be a positive integer": "note_above_pct = 10\n[[bin]]\nlo = 0.0\nhi = 0.1\nrows = 0\n"
                                                 "median_abs_pct = 1\nmedian_signed_pct = 1\nq10 = 0.9\nq90 = 1.1\n",
             "needs note_above_pct": "note_above_pct = 10\n[[bin]]\nlo = 0.0\n",
             "unknown key 'bins'": "note_above_pct = 10\nbins = 3\n",
             "is malformed": "note_above_pct = \n"}
    for i, (why, text) in enumerate(cases.items()):  # a file each: read_toml caches by path
        bad = tmp_path / f"exposure{i}.toml"
        bad.write_text(text)
        with pytest.raises(SpecError, match=why):
            load_exposure(bad)
    with pytest.raises(SpecError, match="is missing"):
        load_exposure(tmp_path / "none.toml")


def _predict(capsys, *args):
    assert main(["predict", "--workload", "resnet50", *args]) == 0
    return capsys.readouterr()


def test_predict_prints_it_over_a_slow_network_and_not_where_the_exchange_hides(capsys):
    top = load_exposure().bins[-1]  # ResNet-50 over the 1 GbE preset at 64 GPUs: the exchange is nearly the step
    out = _predict(capsys, "--cluster", "terngrad-ethernet", "--gpus", "8,64", "--strategy", "ssgd")
    note = [ln for ln in out.out.splitlines() if ln.startswith("# the exchange leaves")]
    assert len(note) == 1 and f"on {top.rows} published runs across nodes with 50%-100% exposed" in note[0]
    assert "(ssgd at 64 GPUs)" in note[0]
    js = _predict(capsys, "--cluster", "terngrad-ethernet", "--gpus", "64", "--strategy", "ssgd", "--format", "json")
    assert json.loads(js.out) and "perfmodel: note: the exchange leaves" in js.err
    quiet = _predict(capsys, "--cluster", "dgx1-v100", "--gpus", "8,16,32", "--strategy", "ssgd")  # NVLink, 4 HCAs
    assert "the exchange leaves" not in quiet.out + quiet.err


@pytest.mark.slow
def test_the_committed_table_is_the_generators_and_agrees_with_the_frozen_judgements():
    """data/presets/exposure.toml is what `python -m reproduce.published_exposure --write` makes from the
    current model, and each bin's errors are the frozen predictions' (results/published_<family>/predictions.csv,
    written when each family was judged) binned the same way: two paths to one figure."""
    from reproduce import published_exposure as pe

    paths = pe.judged_runs()
    rows = pe.exposed_rows(paths)
    assert pe.exposure_toml(rows, paths) == exposure_path().read_text()
    frozen = pd.concat([pd.read_csv(ROOT / "results" / f"published_{p.name.removesuffix('_runs.csv')}"
                                    / "predictions.csv", dtype={"id": str}).assign(file=p.name) for p in paths])
    frozen = frozen[(frozen.nodes > 1) & (frozen.expressible == 1)].set_index(["file", "id"]).error_pct
    assert len(frozen) == len(rows) == sum(b.rows for b in load_exposure().bins)
    # each family's frozen judgement is the current model's, but for the three priced again since (pcie and
    # lumi before the bucket copies, paddle's runs file corrected after it: docs/validation.md)
    again = {"pcie_runs.csv", "lumi_runs.csv", "paddle_runs.csv"}
    for x in rows:
        assert x["file"] in again or abs(x["error"] - frozen.loc[(x["file"], x["id"])]) < 1e-3
    for b, (lo, hi, group) in zip(load_exposure().bins, pe.bins(rows)):  # the frozen figures, binned alike
        errs = frozen.loc[[(x["file"], x["id"]) for x in group]].to_numpy()
        assert (b.lo, b.hi, b.rows) == (lo, hi, len(group))
        assert b.median_abs_pct == pytest.approx(np.median(np.abs(errs)), abs=0.5)
        assert b.median_signed_pct == pytest.approx(np.median(errs), abs=0.5)


def test_plan_says_it_of_its_recommendation(capsys):
    args = ["plan", "--workload", "resnet50", "--epochs", "1", "--dataset-size", "1281167", "--gpus-max", "64",
            "--strategy", "ssgd", "--top", "1"]
    assert main([*args, "--cluster", "terngrad-ethernet"]) == 0  # 1 GbE: the top row's exchange is 73% of its step
    out = capsys.readouterr().out
    assert "# note: the exchange leaves 73% of the predicted step exposed (ssgd at 64 GPUs)" in out
    assert main([*args, "--cluster", "dgx1-v100"]) == 0
    assert "the exchange leaves" not in capsys.readouterr().out
