"""perfmodel validate on odd but parseable run logs: unusable step lines (null, zero or negative t_step,
no samples) are left out with one note; a log with too few usable steps is one error line, exit 2; the
JSON output is strict (no NaN or Infinity) and the CSV has no nan."""

import csv
import io
import json
from pathlib import Path

import pytest

from perfmodel.cli import main
from perfmodel.lab.validate import rows_json

DATA = Path(__file__).resolve().parent / "data" / "quickstart"
PROFILE = str(DATA / "profile.json")


def variant(tmp_path, name, change) -> str:
    """The quickstart run log with ``change(index, step line)`` applied to each step line."""
    out = []
    for i, line in enumerate((DATA / "run.jsonl").read_text().splitlines()):
        rec = json.loads(line)
        if rec.get("type") == "step":
            change(i, rec)
        out.append(json.dumps(rec))
    path = tmp_path / name
    path.write_text("\n".join(out) + "\n")
    return str(path)


def null_step(i, rec):
    if i == 50:  # the trainers' encoding of a non-finite value
        rec.update(t_step=None, nonfinite={"t_step": "nan"})


def strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_a_null_step_is_left_out_with_one_note(tmp_path, capsys, fmt):
    log = variant(tmp_path, "null.jsonl", null_step)
    assert main(["validate", log, "--profile", PROFILE, "--format", fmt]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    left_out = [x for x in lines if "left out" in x]
    assert len(left_out) == 1 and "null.jsonl: 1 of 195 step lines" in left_out[0]
    if fmt == "json":
        (row,) = strict_json(out)["runs"]
        assert row["steps"] == 194 and row["measured_step_s"] > 0 and row["measured_throughput"] > 0
    elif fmt == "csv":
        (row,) = csv.DictReader(io.StringIO(out))
        assert "nan" not in out.lower() and float(row["measured_step_s"]) > 0
    else:
        assert "MAPE over 1 runs" in out and "nan" not in out


@pytest.mark.parametrize("name, change", [
    ("zero.jsonl", lambda i, rec: rec.update(t_step=0.0)),
    ("negative.jsonl", lambda i, rec: rec.update(t_step=-0.1)),
    ("nosamples.jsonl", lambda i, rec: rec.pop("samples")),
    ("allnull.jsonl", lambda i, rec: rec.update(t_step=None, nonfinite={"t_step": "inf"})),
])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_log_without_usable_steps_is_one_error_line(tmp_path, capsys, name, change, fmt):
    log = variant(tmp_path, name, change)
    assert main(["validate", log, "--profile", PROFILE, "--format", fmt]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith("perfmodel: error: run log ") and name in err and "0 of the 195 step lines" in err


def test_rows_json_writes_non_finite_numbers_as_null():
    text = rows_json([{"run": "a", "step_error_pct": float("nan"), "x": [float("inf")]}])
    out = strict_json(text)
    assert out["runs"][0]["step_error_pct"] is None and out["runs"][0]["x"] == [None]
    assert out["mape_step_pct"] is None
