"""The five papers' published numbers (data/paper_tables/<paper>.csv): load, validate, look up.

Every row is one number a paper prints, with where it is printed (`source`). Values keep the paper's
units: percent stays percent (`unit` says which). See data/paper_tables/README.md for the columns.

Example:
    >>> from reproduce.paper_tables import published_value
    >>> published_value("wen2017", table="Table 1", method="TernGrad", workers=2, metric="test_accuracy")
    85.64
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import pandas as pd

def _tables_dir() -> Path:
    """data/paper_tables: the copy installed with the package (reproduce/_paper_tables, package data of a
    regular install), else the source tree's."""
    here = Path(__file__).resolve().parent
    installed = here / "_paper_tables"
    return installed if installed.is_dir() else here.parent / "data" / "paper_tables"


TABLES_DIR = _tables_dir()

#: paper key -> title of the paper (the key is also the CSV's file name)
PAPERS: dict[str, str] = {
    "zhang2016": "Staleness-aware Async-SGD for Distributed Deep Learning",
    "wen2017": "TernGrad: Ternary Gradients to Reduce Communication in Distributed Deep Learning",
    "barkai2020": "Gap-Aware Mitigation of Gradient Staleness",
    "hermans2018": "Gradient Energy Matching for Distributed Asynchronous Gradient Descent",
    "coquelin2021": "Accelerating Neural Network Training with Distributed Asynchronous and Selective "
                    "Optimization (DASO)",
}

COLUMNS: tuple[str, ...] = ("paper", "table", "model", "dataset", "workers", "method", "batch", "setting",
                            "metric", "value", "spread", "unit", "source", "note")
#: columns that may never be empty
REQUIRED: tuple[str, ...] = ("paper", "table", "metric", "value", "source")
#: a row is identified by these columns; no two rows of a table may share them
KEY: tuple[str, ...] = ("paper", "table", "setting", "method", "workers", "metric")
INT_COLUMNS: tuple[str, ...] = ("workers", "batch")
FLOAT_COLUMNS: tuple[str, ...] = ("value", "spread")
#: the largest worker count or batch a table holds: exact in a float, well inside pandas' Int64
INT_MAX = 2**53
TEXT_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if c not in INT_COLUMNS + FLOAT_COLUMNS)


class NotPublished(LookupError, ValueError):
    """No row of a paper's table matches what a script looks up: a LookupError for the scripts that try
    another setting, and a ValueError, so that a table edited into lacking a row the scripts read is one
    line of bad input (reproduce.common.run_tables), not a traceback."""


def _check_paper(paper: str) -> None:
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {paper!r}")


def _numeric(raw: pd.Series, name: str, path: Path, integer: bool) -> pd.Series:
    """Parse a text column to numbers; empty cells become missing. Raises ValueError on bad cells."""
    out = []
    for line, cell in zip(raw.index, raw):
        if cell == "":
            out.append(pd.NA if integer else math.nan)
            continue
        try:
            x = float(cell)
        except ValueError:
            raise ValueError(f"{path.name} line {line + 2}: column {name!r} must be numeric, got {cell!r}") from None
        if not math.isfinite(x):
            raise ValueError(f"{path.name} line {line + 2}: column {name!r} must be finite, got {cell!r}")
        if integer:
            if x != int(x) or not 1 <= x <= INT_MAX:  # Int64 holds up to 2^63 - 1 (1e300 overflowed it)
                raise ValueError(f"{path.name} line {line + 2}: column {name!r} must be a positive integer "
                                 f"up to 2**53, got {cell!r}")
            x = int(x)
        out.append(x)
    return pd.Series(out, index=raw.index, dtype="Int64" if integer else "float64", name=name)


def read_table(path: Path, paper: str) -> pd.DataFrame:
    """Read and validate one paper's CSV at `path`; raises ValueError naming the file, line and column."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    if tuple(raw.columns) != COLUMNS:
        missing = [c for c in COLUMNS if c not in raw.columns]
        extra = [c for c in raw.columns if c not in COLUMNS]
        raise ValueError(f"{path.name}: columns must be {list(COLUMNS)} in this order "
                         f"(missing {missing}, unexpected {extra})")
    if raw.empty:
        raise ValueError(f"{path.name}: no rows")
    for col in REQUIRED:
        empty = raw.index[raw[col].str.strip() == ""]
        if len(empty):
            raise ValueError(f"{path.name} line {empty[0] + 2}: column {col!r} must not be empty")
    wrong = raw.index[raw["paper"] != paper]
    if len(wrong):
        raise ValueError(f"{path.name} line {wrong[0] + 2}: column 'paper' must be {paper!r}, "
                         f"got {raw.loc[wrong[0], 'paper']!r}")
    df = raw.copy()
    for col in INT_COLUMNS:
        df[col] = _numeric(raw[col], col, path, integer=True)
    for col in FLOAT_COLUMNS:
        df[col] = _numeric(raw[col], col, path, integer=False)
    negative = df.index[df["spread"] < 0]
    if len(negative):
        raise ValueError(f"{path.name} line {negative[0] + 2}: column 'spread' must be >= 0")
    dup = raw.duplicated(list(KEY), keep=False)
    if dup.any():
        first = raw.index[dup][0]
        raise ValueError(f"{path.name} line {first + 2}: duplicate key {dict(raw.loc[first, list(KEY)])}")
    return df


@lru_cache(maxsize=None)
def _load(paper: str, tables_dir: Path) -> pd.DataFrame:
    return read_table(tables_dir / f"{paper}.csv", paper)


def load_table(paper: str, tables_dir: Path | None = None) -> pd.DataFrame:
    """All published numbers of `paper` (a key of PAPERS) as a validated DataFrame.

    Text columns hold str ('' when not applicable); `workers`, `batch` are nullable Int64; `value`,
    `spread` are float (spread NaN where the paper prints none). Units as in the `unit` column.
    """
    _check_paper(paper)
    return _load(paper, Path(tables_dir) if tables_dir is not None else TABLES_DIR).copy()


def load_all(tables_dir: Path | None = None) -> pd.DataFrame:
    """The five papers' tables stacked into one DataFrame (same columns as load_table)."""
    return pd.concat([load_table(p, tables_dir) for p in PAPERS], ignore_index=True)


def published(paper: str, **setting: object) -> pd.DataFrame:
    """Rows of `paper` whose columns equal every keyword given, e.g. workers=32, method="GA".

    A keyword set to None or "" selects rows where that column is empty. Raises ValueError for a
    keyword that is not a column and LookupError when no row matches.
    """
    df = load_table(paper)
    unknown = sorted(set(setting) - set(COLUMNS))
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; allowed: {list(COLUMNS)}")
    mask = pd.Series(True, index=df.index)
    for col, want in setting.items():
        if col in INT_COLUMNS + FLOAT_COLUMNS:
            if want is None or want == "":
                mask &= df[col].isna()
            else:
                mask &= (df[col] == float(want)).fillna(False).astype(bool)
        else:
            mask &= df[col] == ("" if want is None else str(want))
    rows = df[mask].reset_index(drop=True)
    if rows.empty:
        raise NotPublished(f"no published number in {paper} matches {setting} ({TABLES_DIR / (paper + '.csv')} "
                           f"lacks the row the script reads)")
    return rows


def published_value(paper: str, **setting: object) -> float:
    """The single published value matching `setting` (see published); LookupError unless exactly one."""
    rows = published(paper, **setting)
    if len(rows) != 1:
        raise LookupError(f"{len(rows)} published numbers in {paper} match {setting}; add columns to narrow it")
    return float(rows.loc[0, "value"])
