"""The JSONL run log (trainers.log): line types, resume after a kill (torn lines, no step twice), errors,
and the lines a real trainer run writes (one single-process `trainers run` in a subprocess)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainers.log import (SCHEMA, STEP_KEYS, RunLog, RunLogError, read_run_log, steps_table, strict_record,
                          value_of)

REPO = Path(__file__).resolve().parents[1]


def _step(i: int) -> dict:
    return {"step": i, "epoch": 0, "loss": 1.0 / (i + 1), "samples": 8, "t_compute": 0.1, "t_comm": 0.02,
            "t_compress": 0.0, "t_idle": 0.001, "t_step": 0.121, "bytes_sent": 100}


def test_line_types_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "run.jsonl"
    with RunLog(path, {"algo": "ssgd", "ranks": 2, "config": {"batch": 4}}) as log:
        for i in range(3):
            log.step(**_step(i))
        log.eval(step=2, epoch=1.0, test_loss=0.5, test_acc=0.75)
        log.summary(steps_run=3)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["type"] for r in lines] == ["header", "step", "step", "step", "eval", "summary"]
    assert lines[0]["schema"] == SCHEMA and lines[0]["algo"] == "ssgd"
    got = read_run_log(path)
    assert got.header["config"] == {"batch": 4} and got.last_step == 2
    assert [s["loss"] for s in got.steps] == [1.0, 0.5, 1 / 3]
    load = got.summaries[0]["load_avg"]  # the machine's 1-minute load average, as os.getloadavg gives it
    assert load is None or (isinstance(load, float) and load >= 0) and got.header["load_avg"] is not None
    assert got.evals[0]["test_acc"] == 0.75 and got.summaries == [{"type": "summary", "load_avg": load, "steps_run": 3}]
    table = steps_table(got.steps)
    assert list(table) == list(STEP_KEYS) and table["step"] == [0, 1, 2] and table["bytes_sent"] == [100] * 3


@pytest.mark.parametrize("tail", [b'{"type":"step","step":3,"epo', b'{"type":"step","step":3}'])
def test_resume_drops_a_torn_last_line_and_never_writes_a_step_twice(tmp_path: Path, tail: bytes) -> None:
    """A writer killed mid-line leaves either broken JSON or a complete object without its newline;
    both are cut, so step 3 is written again (once) by the resumed run."""
    path = tmp_path / "run.jsonl"
    log = RunLog(path, {"algo": "x"})
    for i in range(3):
        log.step(**_step(i))
    log.close()
    with open(path, "ab") as f:
        f.write(tail)
    assert read_run_log(path).last_step == (3 if tail.endswith(b"}") else 2)
    resumed = RunLog.resume(path)
    assert resumed.last_step == 2
    for i in range(6):  # a rerun from an older checkpoint repeats steps 0..2: they are skipped
        resumed.step(**_step(i))
    resumed.close()
    got = read_run_log(path)
    assert [s["step"] for s in got.steps] == [0, 1, 2, 3, 4, 5]
    assert path.read_bytes().endswith(b"\n")


def test_bad_logs_raise_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(RunLogError, match="does not exist"):
        read_run_log(tmp_path / "none.jsonl")
    with pytest.raises(RunLogError, match="does not exist"):
        RunLog.resume(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"header","schema":1}\nnot json\n{"type":"step","step":0}\n')
    with pytest.raises(RunLogError, match="line 2 is not JSON"):
        read_run_log(bad)
    for not_a_record in ("[]", "3", '"header"'):  # JSON, but no object: a one-line error, not AttributeError
        bad.write_text(f'{not_a_record}\n{{"type":"header","schema":1}}\n')
        with pytest.raises(RunLogError, match="line 1 is not a JSON object"):
            read_run_log(bad)
    bad.write_text('{"type":"step","step":0}\n')
    with pytest.raises(RunLogError, match="not a header"):
        read_run_log(bad)
    bad.write_text('{"type":"header","schema":99}\n')
    with pytest.raises(RunLogError, match="schema 99"):
        read_run_log(bad)


def test_a_trainer_run_writes_the_format(tmp_path: Path) -> None:
    """`trainers run` as one process (MPI singleton): header with config, versions and ranks; one step line
    per step with the phase times partitioning t_step; evals at the epoch end and the last step."""
    log = tmp_path / "run.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "trainers.run", "run", "--algo", "ssgd", "--model", "lenet",
                           "--dataset", "synthetic", "--synthetic-n", "64", "--batch", "8", "--steps", "10",
                           "--seed", "1", "--log", str(log), "--no-progress"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = read_run_log(log)
    h = got.header
    assert h["ranks"] == 1 and h["algo"] == "ssgd" and h["config"]["batch"] == 8 and h["config"]["steps"] == 10
    assert {"python", "torch", "numpy", "mpi4py", "mpi"} <= set(h["versions"])
    assert h["model_parameters"] == 431_080 and h["steps_per_epoch"] == 8 and h["total_steps"] == 10
    assert [s["step"] for s in got.steps] == list(range(10))
    assert [s["epoch"] for s in got.steps] == [0] * 8 + [1] * 2
    for s in got.steps:
        assert set(STEP_KEYS) <= set(s)
        assert s["samples"] == 8 and s["bytes_sent"] == 0  # one rank sends nothing
        parts = s["t_compute"] + s["t_comm"] + s["t_compress"] + s["t_idle"]
        assert parts == pytest.approx(s["t_step"], rel=1e-9) and s["t_compute"] > 0 and s["t_comm"] == 0
    assert [e["step"] for e in got.evals] == [7, 9]  # end of epoch 0, end of the run
    assert 0.0 <= got.evals[0]["test_acc"] <= 1.0 and "train_loss" in got.evals[0]
    # the train loss of epoch 0 is the mean of its step losses
    assert got.evals[0]["train_loss"] == pytest.approx(sum(s["loss"] for s in got.steps[:8]) / 8, rel=1e-12)
    assert got.summaries[-1]["steps_run"] == 10


def _strict_loads(line: str) -> dict:
    """json.loads that refuses NaN / Infinity / -Infinity (RFC 8259 JSON)."""
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(line, parse_constant=refuse)


def test_non_finite_values_are_written_as_null_and_flagged(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    step = {**_step(0), "loss": float("nan"), "t_comm": float("inf")}
    with RunLog(path, {"algo": "ssgd"}) as log:
        log.step(**step)
        log.eval(step=0, epoch=1.0, test_loss=float("-inf"), test_acc=0.1)
        log.summary(speedup=float("nan"), per_worker=[1.0, float("inf")], nested={"a": float("nan"), "b": 2.0})
    lines = [_strict_loads(line) for line in path.read_text().splitlines()]
    s, e, summary = lines[1], lines[2], lines[3]
    assert s["loss"] is None and s["t_comm"] is None and s["nonfinite"] == {"loss": "nan", "t_comm": "inf"}
    assert s["t_compute"] == 0.1  # finite values untouched
    assert e["test_loss"] is None and e["nonfinite"] == {"test_loss": "-inf"}
    assert summary["per_worker"] == [1.0, None] and summary["nested"] == {"a": None, "b": 2.0}
    assert summary["nonfinite"] == {"speedup": "nan", "per_worker.1": "inf", "nested.a": "nan"}
    assert "nonfinite" not in lines[0]  # a clean line gets no flag
    assert math.isnan(value_of(s, "loss")) and value_of(s, "t_comm") == math.inf
    assert value_of(e, "test_loss") == -math.inf and value_of(e, "test_acc") == 0.1
    assert value_of(e, "missing") is None
    assert step["loss"] != step["loss"]  # the caller's record is not changed
    assert len(read_run_log(path).steps) == 1


def test_strict_record_leaves_clean_records_equal() -> None:
    rec = {"step": 3, "loss": 0.5, "hist": {"0": 2}, "xs": [1, 2.5], "name": "x", "ok": True, "none": None}
    assert strict_record(rec) == rec
