"""Which scale a paper report shows: one scale per report, never a mix.

The scale is chosen explicitly (``paper/render.py --scale``, which sets ``$DSGD_SCALE`` for the
notebook), else it is the largest scale with rows in results/<paper>/ (smoke < small < paper). Rows the
performance model computes (scale "model") are the same at every scale and go with each. A table without
a scale column (the published runs) is shown whole.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from reproduce.common import MODEL_SCALE, SCALES

ENV = "DSGD_SCALE"


def scales_present(folder: Path) -> list[str]:
    """The run scales (smoke, small, paper; not "model") with rows in folder/*.csv, smallest first."""
    found: set[str] = set()
    for path in sorted(Path(folder).glob("*.csv")):
        try:
            head = pd.read_csv(path, nrows=0)
            if "scale" in head.columns:
                found |= set(pd.read_csv(path, usecols=["scale"], keep_default_na=False).scale.astype(str))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError):
            continue  # an unreadable table is named when the notebook reads it
    return [s for s in SCALES if s in found]


def choose_scale(folder: Path, wanted: str | None = None) -> str | None:
    """`wanted` if given (one of SCALES), else the largest scale present in `folder`; None when it holds
    no scaled rows (only model rows, or no tables)."""
    if wanted is not None:
        if wanted not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {wanted!r}")
        return wanted
    present = scales_present(folder)
    return present[-1] if present else None


def report_scale(folder: Path) -> str | None:
    """The scale this report shows: ``$DSGD_SCALE`` if set, else the largest present in `folder`."""
    return choose_scale(folder, os.environ.get(ENV) or None)


def rows_of_scale(frame: pd.DataFrame, scale: str | None) -> pd.DataFrame:
    """The rows of `frame` at `scale` and the model's rows (all rows when it has no scale column or
    `scale` is None), with a fresh index."""
    if scale is None or "scale" not in frame.columns:
        return frame
    return frame[frame.scale.astype(str).isin([scale, MODEL_SCALE])].reset_index(drop=True)
