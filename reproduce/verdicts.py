"""Verdicts on the papers' headline claims: one reading per seed, a 95% interval over seeds, a decision.

A claim is decided from one reading per seed (or per repeat) x_1 .. x_k of the same configuration: a
final test accuracy, the mean test error of the last epochs (a stable reading where single epochs
swing), or a paired difference between two methods run with the same seed.

  interval      mean +- t(0.975, k - 1) * s / sqrt(k)       Student t; s the sample standard deviation
                (k = 1 gives no interval: one seed decides nothing)
  acceptance    the claim as a range [lo, hi] of the reading (either end may be open), with its source
  verdict       reproduced                   the interval lies inside [lo, hi]
                not reproduced               the interval lies entirely outside [lo, hi]
                inconclusive at this scale   otherwise: it straddles an end, or k = 1

Every verdict is one at the scale that was run (a reduced run can reproduce or miss a claim only at its
own length). A claim in several parts (one per worker count, say) is reproduced when every part is,
not reproduced when any part is not, else inconclusive (:func:`combined`).

Test-set resolution: an accuracy p (percent) measured on n_test images has the 95% binomial
half-width 1.96 * sqrt(p (100 - p) / n_test) percentage points (:func:`binomial_resolution`); it is the
tolerance of a claim that a published accuracy is met, since the published figure is itself such a
measurement.

The verdict of each part is written into the results table whose rows fed it (a ``verdict`` column;
rows that feed no claim leave it empty): :func:`write_verdicts`. ``python -m reproduce.headlines``
decides every paper's claims from the committed tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd
from filelock import FileLock

from perfmodel.fileio import atomic_path
from reproduce.common import ReproduceError

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive at this scale"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
LEVEL = 0.95
VERDICT_COLUMN = "verdict"


@dataclass(frozen=True)
class Interval:
    """Mean and two-sided 95% Student-t interval of k readings, in the readings' unit (NaN ends for k = 1)."""

    mean: float
    lo: float
    hi: float
    k: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


def interval(readings: Sequence[float], level: float = LEVEL) -> Interval:
    """mean +- t((1 + level) / 2, k - 1) * s / sqrt(k) over the readings (same unit as the readings);
    k = 1 gives NaN ends. ValueError for no reading or a non-finite one."""
    from scipy.stats import t as student_t

    xs = [float(x) for x in readings]
    if not xs:
        raise ValueError("a verdict needs at least one reading")
    if any(not math.isfinite(x) for x in xs):
        raise ValueError(f"readings must be finite, got {xs}")
    k = len(xs)
    mean = sum(xs) / k
    if k == 1:
        return Interval(mean, math.nan, math.nan, 1)
    s = math.sqrt(sum((x - mean) ** 2 for x in xs) / (k - 1))
    half = float(student_t.ppf((1 + level) / 2, k - 1)) * s / math.sqrt(k)
    return Interval(mean, mean - half, mean + half, k)


def binomial_resolution(accuracy_pct: float, n_test: int) -> float:
    """1.96 * sqrt(p (100 - p) / n_test): the 95% binomial half-width, in percentage points, of an
    accuracy of p percent measured on n_test images."""
    if not 0 <= accuracy_pct <= 100 or n_test < 1:
        raise ValueError(f"accuracy must be in [0, 100] and n_test >= 1, got {accuracy_pct}, {n_test}")
    return 1.96 * math.sqrt(accuracy_pct * (100 - accuracy_pct) / n_test)


def decide(iv: Interval, lo: float | None, hi: float | None) -> str:
    """The verdict of an interval against the acceptance range [lo, hi] (None: that end is open)."""
    if lo is None and hi is None:
        raise ValueError("an acceptance range needs at least one end")
    if iv.k < 2:
        return INCONCLUSIVE
    inside = (lo is None or iv.lo >= lo) and (hi is None or iv.hi <= hi)
    outside = (lo is not None and iv.hi < lo) or (hi is not None and iv.lo > hi)
    return REPRODUCED if inside else NOT_REPRODUCED if outside else INCONCLUSIVE


def combined(verdicts: Sequence[str]) -> str:
    """One verdict for a claim of several parts: reproduced if all are, not reproduced if any is."""
    if not verdicts or any(v not in VERDICTS for v in verdicts):
        raise ValueError(f"verdicts must be a non-empty list of {VERDICTS}, got {list(verdicts)}")
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    return NOT_REPRODUCED if NOT_REPRODUCED in verdicts else INCONCLUSIVE


@dataclass(frozen=True)
class Claim:
    """One decidable part of a paper's headline: what the paper says, what we read per seed, and the
    acceptance range [lo, hi] of that reading with where it comes from."""

    paper: str
    claim: str  # the paper's statement, short
    published: str  # the published figure and setting
    reading: str  # what one seed contributes, with its unit
    lo: float | None
    hi: float | None
    acceptance: str  # the range in words and its source
    scale: str  # the scale of the rows read, and how it differs from the paper's
    command: str  # the command that remakes the rows
    over: str = "seeds"  # what the readings repeat over ("seeds", "rounds")

    def __post_init__(self) -> None:
        if self.lo is None and self.hi is None:
            raise ValueError(f"{self.paper}: claim {self.claim!r} needs an acceptance range")
        if self.lo is not None and self.hi is not None and self.lo > self.hi:
            raise ValueError(f"{self.paper}: acceptance range [{self.lo}, {self.hi}] is empty")


@dataclass(frozen=True)
class Verdict:
    """A claim decided on its readings; ``table`` (results-relative CSV path) and ``rows`` (its row
    positions) are the rows the readings came from."""

    claim: Claim
    readings: tuple[float, ...]
    table: str
    rows: tuple[int, ...] = field(default=())

    @property
    def interval(self) -> Interval:
        return interval(self.readings)

    @property
    def verdict(self) -> str:
        return decide(self.interval, self.claim.lo, self.claim.hi)

    def summary(self, digits: int = 2) -> str:
        """E.g. 'reproduced: 99.32 [99.30, 99.35] over 3 seeds; accepted: [99.23, 99.53]'."""
        iv = self.interval
        f = f"{{:.{digits}f}}"
        got = f.format(iv.mean) + (f" [{f.format(iv.lo)}, {f.format(iv.hi)}] over {iv.k} {self.claim.over}"
                                   if iv.k > 1 else " (one reading: no interval)")
        lo = "-inf" if self.claim.lo is None else f.format(self.claim.lo)
        hi = "inf" if self.claim.hi is None else f.format(self.claim.hi)
        return f"{self.verdict}: {got}; accepted: [{lo}, {hi}]"


def write_verdicts(results: Path, verdicts: Sequence[Verdict]) -> list[Path]:
    """Write each verdict's summary into the ``verdict`` column of the rows it read (parts that share
    a row are joined with ' | '; other rows get an empty cell), atomically and under the table's lock.
    The tables written."""
    by_table: dict[str, dict[int, list[str]]] = {}
    for v in verdicts:
        cells = by_table.setdefault(v.table, {})
        for r in v.rows:
            cells.setdefault(r, []).append(f"{v.claim.claim}: {v.summary()}")
    written = []
    for table, cells in by_table.items():
        path = Path(results) / table
        with FileLock(path.with_name(path.name + ".lock")):
            frame = pd.read_csv(path, keep_default_na=False)
            if cells and max(cells) >= len(frame):
                raise ReproduceError(f"{path} changed while its verdicts were decided; rerun")
            frame[VERDICT_COLUMN] = [" | ".join(cells.get(i, [])) for i in range(len(frame))]
            with atomic_path(path, suffix=".tmp") as tmp:
                frame.to_csv(tmp, index=False)
        written.append(path)
    return written


def read_table(results: Path, table: str) -> pd.DataFrame:
    """results/<table> (e.g. 'hermans2018/workers_sweep.csv'); ReproduceError in one line when missing."""
    path = Path(results) / table
    if not path.is_file():
        raise ReproduceError(f"results table {path} is missing; make it with dsgd-reproduce first")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ReproduceError(f"results file {path} is unreadable ({e})") from None


def need_rows(frame: pd.DataFrame, results: Path, table: str, what: str, why: str = "",
              scale: str = "small") -> pd.DataFrame:
    """``frame`` (a selection of results/<table>) when it holds a row; else ReproduceError in one line
    naming the paper, the file and the rows that are missing (``what``, ``why`` a hint), and the command
    that makes them at ``scale``."""
    if frame.empty:
        paper, name = Path(table).parent.name, Path(table).stem
        raise ReproduceError(f"{paper}: no {what} in {Path(results) / table}{why}; rerun python -m reproduce "
                             f"{paper} --scale {scale} --only {name}")
    return frame


def rows_at(results: Path, table: str, scale: str = "small") -> pd.DataFrame:
    """The rows of results/<table> at ``scale``, their row positions kept; ReproduceError in one line
    when the file has no scale column or no row at that scale (a smoke run's results, say)."""
    frame = read_table(results, table)
    if "scale" not in frame.columns:
        raise ReproduceError(f"results table {Path(results) / table} has no scale column; is it a results table?")
    have = sorted(set(frame.scale.astype(str)))
    smoke = ": a smoke run's results?" if have == ["smoke"] else ""
    why = f" (it holds only {', '.join(have)} rows{smoke})" if have else " (it holds a header and no rows)"
    return need_rows(frame[frame.scale.astype(str) == scale], results, table, f"rows at the {scale} scale", why,
                     scale)


def paired(frame: pd.DataFrame, by: str, a: str, b: str, value: str = "rerun_value",
           seed: str = "seed") -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Per seed present for both: value(by == a) - value(by == b); the differences (by seed) and the
    row positions they came from. ValueError when a seed has several rows of one side."""
    sides = {}
    for name in (a, b):
        part = frame[frame[by] == name]
        if part[seed].duplicated().any():
            raise ValueError(f"several rows of {by}={name!r} for one seed")
        sides[name] = part.set_index(seed)
    seeds = sorted(set(sides[a].index) & set(sides[b].index))
    diffs = tuple(float(sides[a].loc[s, value]) - float(sides[b].loc[s, value]) for s in seeds)
    rows = tuple(int(i) for i in frame.index[frame[by].isin((a, b)) & frame[seed].isin(seeds)])
    return diffs, rows
