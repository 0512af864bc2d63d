"""Every row of the committed validation tables names the `perfmodel predict` command that gives its
prediction; running that command prints the same number (one predictor: perfmodel validate runs it)."""

import contextlib
import io
import json
import os
import shlex
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.cli import main

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("validate", "emulated", "scale_out", "scale_out_baseline/scale_out", "scale_out_rendezvous/scale_out",
          "overlap_check")


def _rows():
    for table in TABLES:
        path = ROOT / "results" / "validation" / f"{table}.csv"
        if path.exists():
            for i, row in pd.read_csv(path, keep_default_na=False).iterrows():
                yield pytest.param(row["predict_command"], float(row["predicted_step_s"]), id=f"{table}-{i}")


def _predict(command: str) -> list[dict]:
    argv = shlex.split(command)
    assert argv[:2] == ["perfmodel", "predict"], command
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)  # the commands name the profiles relative to the checkout
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv[1:] + ["--format", "json"])
    finally:
        os.chdir(cwd)
    assert code == 0, command
    return json.loads(out.getvalue())


def test_every_committed_table_has_its_commands():
    rows = list(_rows())
    assert len(rows) >= 50  # validate.csv (20) and emulated.csv (30) at least
    assert all(" ; " not in p.values[0] for p in rows)  # one phase per run: one command each


@pytest.mark.parametrize("command, predicted", list(_rows()))
def test_the_printed_command_reproduces_the_prediction_exactly(command, predicted):
    (record,) = _predict(command)
    assert record["t_iter_s"] == pytest.approx(predicted, rel=1e-12, abs=0.0)
