"""Helpers the paper notebooks share: where results are, reading a table or saying it is missing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def results_dir() -> Path:
    return Path(os.environ.get("DSGD_RESULTS", ROOT / "results"))


def read_results(paper: str, table: str) -> pd.DataFrame | None:
    """results/<paper>/<table>.csv, or None (with a printed note saying how to make it)."""
    path = results_dir() / paper / f"{table}.csv"
    if not path.exists():
        print(f"No results yet: {path} is missing. Make it with `python -m reproduce.{paper} --only {table}`.")
        return None
    return pd.read_csv(path)


def seed_summary(frame: pd.DataFrame, by: list[str] | None = None, value: str = "rerun_value") -> pd.DataFrame:
    """Mean, standard deviation and count over seeds of `value` per setting `by`; with an `outcome`
    column, how many seeds ended each way (e.g. 'stable x3')."""
    by = by or ["epochs_per_worker", "workers", "rule"]
    agg = {"seeds": ("seed", "nunique"), "mean": (value, "mean"), "std": (value, "std"),
           "min": (value, "min"), "max": (value, "max")}
    if "outcome" in frame.columns:
        agg["outcomes"] = ("outcome", lambda o: ", ".join(f"{k} x{v}" for k, v in o.value_counts().items()))
    return frame.groupby(by).agg(**agg).round(2)
