"""The committed accumulation check (reproduce.accumulation_check): every planned run is in the table
against its frozen prediction, the frozen predictions recompute at this commit from their commands, the
transfer ratios follow from the rows, and the report's figures are the table's."""

import os
import shlex
from pathlib import Path

import pandas as pd
import pytest

from reproduce import accumulation_check as ac
from reproduce.scale_out import read_frozen

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "results" / "validation" / "accumulation_check.csv"
pytestmark = pytest.mark.skipif(not TABLE.exists(), reason="no committed accumulation check")


def _frozen(remake: int) -> dict:
    return read_frozen(ac.frozen_path(ROOT / "results" / "validation", remake))


def test_every_planned_run_is_in_the_table_against_its_frozen_prediction():
    d = pd.read_csv(TABLE)
    assert len(d) == len(ac.RUNS) * d.remake.nunique()
    assert set(zip(d.algo, d.overlap, d.accumulate)) == set(ac.RUNS)
    for _, row in d.iterrows():
        frozen = _frozen(row.remake)
        pred = frozen["rows"][ac._row_key(row.algo, row.overlap, row.accumulate)]
        assert row.predicted_step_s == pytest.approx(pred["t_step_s"], rel=1e-12)
        assert row.step_error_pct == pytest.approx((row.predicted_step_s / row.measured_step_s - 1) * 100, rel=1e-9)
        assert frozen["predicted_at"] <= row.started_at  # frozen before the run started (seconds)
        assert f"--accumulate {row.accumulate}" in row.predict_command or row.accumulate == 1
        assert row.measured_throughput == pytest.approx(2 * ac.BATCH * row.accumulate / row.measured_step_s, rel=1e-9)


def test_the_frozen_predictions_recompute_from_their_commands():
    """Remakes judged with the current model recompute in full; earlier ones at A = 1, which the change
    after them (the straggler CV over sqrt(A)) left alone."""
    from perfmodel.lab.validate import trainer_view
    from perfmodel.predict_cli import predict_parser, predict_result

    remakes = sorted(set(pd.read_csv(TABLE).remake))
    cwd = os.getcwd()
    os.chdir(ROOT)  # the commands name the profiles relative to the checkout
    try:
        for remake in (remakes[0], remakes[-1]):
            for key, pred in _frozen(remake)["rows"].items():
                if remake < ac.JUDGED_FROM and not key.endswith("|1"):
                    continue
                argv = shlex.split(pred["commands"][0])[1:]
                result = predict_result(predict_parser().parse_args(argv))
                (record,), (point,) = result.records, result.points
                assert trainer_view(record, point, 2)["t_step_s"] == pytest.approx(pred["t_step_s"], rel=1e-12), key
    finally:
        os.chdir(cwd)


def test_transfer_is_the_ratio_of_ratios_and_the_report_prints_the_table():
    d = pd.read_csv(TABLE)
    t = ac.transfer(d)
    assert len(t) == 4 * d.remake.nunique()  # ssgd on A=2, 4; ssgd off A=4; terngrad A=4
    r = t.iloc[0]
    same = d[(d.remake == r.remake) & (d.algo == r.algo) & (d.overlap == r.overlap)]
    one, acc = same[same.accumulate == 1].iloc[0], same[same.accumulate == r.accumulate].iloc[0]
    expect = (acc.predicted_step_s / one.predicted_step_s) / (acc.measured_step_s / one.measured_step_s) - 1
    assert r.ratio_error_pct == pytest.approx(100 * expect, rel=1e-12)
    text = ac.report(TABLE)
    for part in (d[d.remake < ac.JUDGED_FROM], d[d.remake >= ac.JUDGED_FROM]):
        if len(part):
            a, tr = part[part.accumulate > 1].step_error_pct, ac.transfer(part).ratio_error_pct
            assert f"A > 1: {a.abs().median():.1f}% ({a.median():+.1f}%)" in text
            assert f"transfer from A=1 (predicted T_A/T_1 over measured): {tr.abs().median():.1f}%" in text


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert ac.main(["--remakes", "0"]) == 2
    assert ac.main(["--report", "--out", str(tmp_path)]) == 2  # no table there
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "no table at" in err
