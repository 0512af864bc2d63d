"""The run log: one JSON object per line, written by every trainer, read by `perfmodel validate`.

Line types (key "type"):
    header   first line: schema, algo, config (the full command configuration), versions, ranks, start time
    step     step, epoch, loss, samples (this step, all ranks), t_compute, t_comm, t_compress, t_idle,
             t_step (seconds, rank 0's view; the trainer may add per-rank maxima), bytes_sent (this
             rank's bytes per step, below); SSGD adds t_comm_exposed (communication left after
             backward, = t_comm) and t_comm_full (the time the backend was busy with the step's
             gradient buckets, overlapped with backprop or not; trainers/grad_buckets.py); the
             parameter server's lines cover windows of gradients (trainers/ps.py: t_comm is the
             workers' exchange as they time it, t_step the server's seconds per gradient, plus
             t_server and bytes_exchanged, one exchange's payloads)
    eval     step, epoch, test_loss, test_acc (fraction 0..1); at an epoch's end also train_loss (mean
             over all ranks) and DASO's daso_phase, daso_B, daso_W (what the epoch's batches used),
             daso_plateau (the epoch completed a plateau that moved B/W) and daso_plateaus (so far)
    resume   a rerun with --resume continued the log here: step (the first step it runs), time, command
    summary  free-form totals at the end (e.g. the staleness histogram of a parameter server); a
             synchronous run's steps_run counts the steps of all its segments (resumed or not)
Bytes per step (bytes_sent; the model's Prediction.bytes_per_gpu counts the same): the bytes one rank
sends per step on the wire, for the algorithm each collective is charged as -- Allreduce as a ring,
2(p-1)/p of the buffer; Allgather as a ring and Alltoall pairwise, (p-1) blocks -- over gradient data
and TernGrad scalers (the 4-byte loss a trainer fuses into a bucket is not counted); 0 with one rank.
The helpers are perfmodel.wire.ring_allreduce_bytes, ring_allgather_bytes and alltoall_bytes. A float:
2(p-1)/p of a buffer need not be whole.
A log is appended to, flushed line by line; a rerun that resumes reads it back, drops a torn last
line, and continues after the last step it holds, so no logged step is lost or written twice.

Every line is strict JSON (RFC 8259: no NaN or Infinity tokens): a non-finite number is written as
null and the line gets a "nonfinite" object naming it, e.g. a diverged step
``{"type":"step",...,"loss":null,"nonfinite":{"loss":"nan"}}`` (nested keys joined by ".", list
items by their index). ``value_of(record, key)`` gives the float back (nan, inf or -inf).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from trainers.errors import TrainerError

SCHEMA = 1
NONFINITE = "nonfinite"  # the key that names a record's non-finite values
STEP_KEYS = ("step", "epoch", "loss", "samples", "t_compute", "t_comm", "t_compress", "t_idle", "t_step",
             "bytes_sent")


class RunLogError(TrainerError):
    """A run log is missing, unreadable or not in this schema."""


@dataclass
class RunLogContents:
    """What a run log holds, line types split apart."""

    path: Path
    header: dict
    steps: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    summaries: list[dict] = field(default_factory=list)
    resumes: list[dict] = field(default_factory=list)

    @property
    def last_step(self) -> int:
        """The last step number logged, -1 when none."""
        return self.step_of(self.steps[-1]) if self.steps else -1

    def step_of(self, record: dict) -> int:
        """A step, eval or resume line's step number; RunLogError unless it is an integer >= 0 (a log edited
        or of another program: read back on --resume)."""
        step = record.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RunLogError(f"run log {self.path}: a {record.get('type')} line's step must be an integer >= 0, "
                              f"got {step!r}")
        return step


def read_run_log(path: str | os.PathLike) -> RunLogContents:
    """Parse a run log; a torn final line (a killed writer) is ignored, any other bad line is an error."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise RunLogError(f"run log {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunLogError(f"run log {path} cannot be read: {e}") from None
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # torn last line
            raise RunLogError(f"run log {path}: line {i + 1} is not JSON") from None
        if not isinstance(records[-1], dict):  # valid JSON, but a list or a number is no record
            raise RunLogError(f"run log {path}: line {i + 1} is not a JSON object")
        if not isinstance(records[-1].get("type", ""), str):
            raise RunLogError(f"run log {path}: line {i + 1}'s type is not text")
    if not records or records[0].get("type") != "header":
        raise RunLogError(f"run log {path}: the first line is not a header")
    if records[0].get("schema") != SCHEMA:
        raise RunLogError(f"run log {path}: schema {records[0].get('schema')!r}, expected {SCHEMA}")
    out = RunLogContents(path, records[0])
    for r in records[1:]:
        {"step": out.steps, "eval": out.evals, "summary": out.summaries,
         "resume": out.resumes}.get(r.get("type"), []).append(r)
    return out


def load_avg() -> float | None:
    """The machine's 1-minute load average (None where the OS has none): a run log's header and summary
    carry it, so that `perfmodel validate` can say when other work shared the cores differently from the
    profile's."""
    try:
        return round(float(os.getloadavg()[0]), 2)
    except (AttributeError, OSError):
        return None


class RunLog:
    """Appends records to a JSONL run log (only rank 0 of a job should hold one).

    ``RunLog(path, header)`` starts a new log (replacing an old one); ``RunLog.resume(path)`` continues
    an existing one, truncating a torn last line first.
    """

    def __init__(self, path: str | os.PathLike, header: dict | None = None, *, _resume: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if _resume:
            # Cut an unterminated last line before reading: a writer killed just before its "\n" leaves
            # a line that parses as JSON; counting it as logged while cutting it would lose that step.
            self._truncate_torn_tail()
            contents = read_run_log(self.path)
            self.header = contents.header
            self.last_step = contents.last_step
            self._f = open(self.path, "a")
        else:
            self.header = {"type": "header", "schema": SCHEMA, "time": time.time(), "load_avg": load_avg(),
                           **(header or {})}
            self.last_step = -1
            self._f = open(self.path, "w")
            self._write(self.header)

    @classmethod
    def resume(cls, path: str | os.PathLike) -> "RunLog":
        return cls(path, _resume=True)

    def _truncate_torn_tail(self) -> None:
        if not self.path.is_file():
            return  # read_run_log reports it
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)

    def _write(self, record: dict) -> None:
        self._f.write(json.dumps(strict_record(record), separators=(",", ":"), allow_nan=False) + "\n")
        self._f.flush()

    def step(self, **values: Any) -> None:
        """Append one step line; steps at or before the last logged one (a resumed rerun) are skipped."""
        if int(values["step"]) <= self.last_step:
            return
        self._write({"type": "step", **values})
        self.last_step = int(values["step"])

    def eval(self, **values: Any) -> None:
        self._write({"type": "eval", **values})

    def mark_resume(self, **values: Any) -> None:
        """Mark where a resumed rerun continues the log (step: the first step it runs)."""
        self._write({"type": "resume", "time": time.time(), **values})

    def summary(self, **values: Any) -> None:
        self._write({"type": "summary", "load_avg": load_avg(), **values})

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()

    def __enter__(self) -> "RunLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _nonfinite_name(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _strict(value: Any, path: str, found: dict[str, str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        found[path] = _nonfinite_name(value)
        return None
    if isinstance(value, dict):
        return {k: _strict(v, f"{path}.{k}" if path else str(k), found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v, f"{path}.{i}" if path else str(i), found) for i, v in enumerate(value)]
    return value


def strict_record(record: dict) -> dict:
    """``record`` with every non-finite float (at any depth) replaced by None, plus a "nonfinite"
    object {key path: "nan" | "inf" | "-inf"} when there was any; the input is not changed."""
    found: dict[str, str] = {}
    out = _strict(record, "", found)
    if found:
        out[NONFINITE] = {**out.get(NONFINITE, {}), **found}
    return out


def value_of(record: dict, key: str) -> float | None:
    """A top-level number of a log record as a float: nan/inf/-inf where the line flags it non-finite,
    None where it is absent or null without a flag."""
    flagged = record.get(NONFINITE, {}).get(key)
    if flagged is not None:
        return float(flagged)
    v = record.get(key)
    return None if v is None else float(v)


def steps_table(contents: Iterable[dict]) -> dict[str, list]:
    """Column lists of the step records (for pandas.DataFrame(...))."""
    cols: dict[str, list] = {k: [] for k in STEP_KEYS}
    for r in contents:
        for k in STEP_KEYS:
            cols[k].append(r.get(k))
    return cols
