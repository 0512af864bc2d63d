"""The committed overlap check (reproduce.overlap_check): its frozen predictions recompute at this commit,
the alternatives too, and every row's error is its prediction over its measurement."""

import os
from pathlib import Path

import pandas as pd
import pytest

from reproduce import overlap_check as oc
from reproduce.scale_out import read_frozen

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "results" / "validation" / "overlap_check.csv"
pytestmark = pytest.mark.skipif(not TABLE.exists(), reason="no committed overlap check")


def _frozen(remake: int) -> dict:
    return read_frozen(oc.frozen_path(ROOT / "results" / "validation", remake))


def test_every_planned_run_is_in_the_table_against_its_frozen_prediction():
    d = pd.read_csv(TABLE)
    assert len(d) == 4 * d.remake.nunique() and set(d.overlap) == {"on", "off"} and set(d.rate) == set(oc.RATES)
    for _, row in d.iterrows():
        pred = _frozen(row.remake)["rows"][f"{row.rate}|{row.overlap}"]
        assert row.predicted_step_s == pytest.approx(pred["t_step_s"], rel=1e-12)
        assert row.step_error_pct == pytest.approx((row.predicted_step_s / row.measured_step_s - 1) * 100, rel=1e-9)
        assert _frozen(row.remake)["predicted_at"] <= row.started_at  # frozen before the run started (seconds)
        if row.overlap == "on":
            for name in oc.ALTERNATIVES:
                assert row[f"predicted_step_{name}_s"] == pytest.approx(pred["alternatives"][name], rel=1e-12)


@pytest.mark.parametrize("remake", [0])
def test_the_alternatives_recompute_from_the_frozen_commands(remake):
    frozen = _frozen(remake)
    cwd = os.getcwd()
    os.chdir(ROOT)  # the commands name the profiles relative to the checkout
    try:
        for rate in oc.RATES:
            pred = frozen["rows"][f"{rate}|on"]
            for name, extra in oc.ALTERNATIVES.items():
                assert oc._alternative(pred["commands"][0], extra) == pytest.approx(pred["alternatives"][name],
                                                                                  rel=1e-12)
    finally:
        os.chdir(cwd)
    # measured slowdowns sit between the ideal schedule and no overlap at all
    for rate in oc.RATES:
        pred = frozen["rows"][f"{rate}|on"]
        assert pred["alternatives"]["ideal"] <= pred["t_step_s"] <= pred["alternatives"]["none"]


def test_report_and_bad_input(tmp_path, capsys):
    assert oc.main(["--report"]) == 0
    out = capsys.readouterr().out
    on = pd.read_csv(TABLE).query("overlap == 'on'")
    assert f"measured slowdowns (the frozen default): {on.step_error_pct.abs().median():.1f}%" in out
    assert oc.main(["--remakes", "0"]) == 2
    assert oc.main(["--report", "--out", str(tmp_path)]) == 2  # no table there: one line, exit 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "no table at" in err
