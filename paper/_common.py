"""Helpers the paper notebooks share: where results are, reading a table at the report's one scale
(paper/_scales.py) or saying it is missing, and how tables and figures look in the rendered HTML.

Importing this module also sets the reports' presentation, so that every notebook reads the same way
in a browser without repeating it:
- tables (pandas DataFrames shown with ``display``) print a dash for a missing value, with a note
  under the table, no running row index, and numbers to four significant digits;
- figures are tidied when shown (``plt.show``): seaborn's "name = value" facet titles become the
  values alone, set smaller so neighbours do not overlap; legends move outside the plotted data; log
  axes get plain labels (1, 4, 16 ...; 1k, 10k ...) at a readable spacing and no minor labels.
"""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _scales import report_scale, rows_of_scale  # noqa: E402  (needs ROOT on the path)

#: what a missing value reads as in a table, and the note printed under a table that has one
MISSING = "–"
MISSING_NOTE = f"{MISSING} : no value (the paper prints none for this row, or the run did not measure it)"


SMOKE_SEEN: list[str] = []  # the tables read so far that hold smoke-scale rows


def results_dir() -> Path:
    return Path(os.environ.get("DSGD_RESULTS", ROOT / "results"))


def read_results(paper: str, table: str) -> pd.DataFrame | None:
    """The rows of results/<paper>/<table>.csv at the report's scale (and the model's rows), or None
    with a printed note saying how to make them."""
    path = results_dir() / paper / f"{table}.csv"
    if not path.exists():
        print(f"No results yet: {path} is missing. Make it with `dsgd-reproduce {paper} --only {table}`.")
        return None
    frame = pd.read_csv(path)
    scale = report_scale(results_dir() / paper)
    kept = rows_of_scale(frame, scale)
    if kept.empty and not frame.empty:
        print(f"No {scale}-scale rows in {path}. Make them with `dsgd-reproduce {paper} --scale {scale} "
              f"--only {table}`, or render another scale (paper/render.py --scale).")
        return None
    if "scale" in kept.columns and (kept["scale"].astype(str) == "smoke").any():
        SMOKE_SEEN.append(f"{paper}/{table}")
    return kept


def seed_summary(frame: pd.DataFrame, by: list[str] | None = None, value: str = "rerun_value") -> pd.DataFrame:
    """Mean, standard deviation and count over seeds of `value` per setting `by`; with an `outcome`
    column, how many seeds ended each way (e.g. 'stable x3')."""
    by = by or ["epochs_per_worker", "workers", "rule"]
    agg = {"seeds": ("seed", "nunique"), "mean": (value, "mean"), "std": (value, "std"),
           "min": (value, "min"), "max": (value, "max")}
    if "outcome" in frame.columns:
        agg["outcomes"] = ("outcome", lambda o: ", ".join(f"{k} x{v}" for k, v in o.value_counts().items()))
    return frame.groupby(by).agg(**agg).round(2)


# ------------------------------------------------------------------------------------------ tables

def _number(x) -> str:
    if x is None or x is pd.NA or x is pd.NaT:
        return MISSING
    if isinstance(x, float):
        if not math.isfinite(x):
            return MISSING if math.isnan(x) else str(x)
        return f"{x:.4g}" if abs(x) < 1e6 else f"{x:.3e}"
    return str(x)


def table_html(frame: pd.DataFrame) -> str:
    """A DataFrame as report HTML: a dash (and a note below) for missing values, no default row index."""
    plain_index = isinstance(frame.index, pd.RangeIndex) or (
        frame.index.dtype.kind == "i" and frame.index.name is None and frame.index.nlevels == 1)
    shown = frame.map(_number)  # every cell as text: NaN, None and pandas' <NA> all read as the dash
    html = shown.to_html(index=not plain_index, classes="report-table", border=0, max_rows=200)
    if frame.isna().to_numpy().any():
        html += f'<p style="font-size:0.85em;color:#555;margin-top:0.2em">{MISSING_NOTE}</p>'
    return html


def _register_table_format() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


# ----------------------------------------------------------------------------------------- figures

def _compact(v: float, _pos=None) -> str:
    """1, 4, 512, 2048, 10k, 1.5M: tick labels that fit under a narrow facet."""
    if v <= 0:
        return ""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if v >= scale:
            unit = 1e3 if suffix == "k" else scale
            return f"{v / unit:.3g}{suffix}"
    return f"{v:.4g}"


def _tidy_log_axis(axis, scale) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    base = getattr(scale, "base", 10)
    lo, hi = sorted(v for v in axis.get_view_interval())
    decades = math.log(max(hi, 1e-300) / max(lo, 1e-300), base) if lo > 0 else 10
    if base == 10 and decades < 2.5:  # short range: label 1, 2, 5 x 10^k so there are enough labels
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    else:
        axis.set_major_locator(LogLocator(base=base, numticks=6))
    axis.set_major_formatter(FuncFormatter(_compact))
    axis.set_minor_formatter(NullFormatter())


_FACET = re.compile(r"[\w .()/-]+? = ")


def _facet_title(title: str) -> str:
    """seaborn's "row = a | col = b" -> "a · b"; a single "batch = 4" -> "batch 4" (a bare number says
    nothing), a single "workload = alexnet" -> "alexnet"."""
    parts = [p.strip() for p in title.split(" | ")]
    if len(parts) == 1:
        name, _, value = parts[0].partition(" = ")
        try:
            float(value)
        except ValueError:
            return value
        return f"{name} {value}"
    return " · ".join(_FACET.sub("", p) for p in parts)


def tidy_figure(fig) -> None:
    """Short facet titles, legends outside the data, readable log ticks (see the module docstring)."""
    axes = fig.get_axes()
    for ax in axes:
        title = ax.get_title()
        if " = " in title:
            ax.set_title(_facet_title(title), fontsize=9)
        for axis, scale in ((ax.xaxis, ax.xaxis.get_scale()), (ax.yaxis, ax.yaxis.get_scale())):
            if scale == "log":
                _tidy_log_axis(axis, axis._scale)
        leg = ax.get_legend()
        if leg is not None:
            leg.set_loc("upper left")
            leg.set_bbox_to_anchor((1.01, 1.0), transform=ax.transAxes)
    for leg in fig.legends:  # seaborn's figure-level legend: right of every facet
        leg.set_loc("center left")
        leg.set_bbox_to_anchor((1.0, 0.5), transform=fig.transFigure)
    if axes:
        _fit_titles(fig, axes)
        try:
            fig.tight_layout()
        except (ValueError, RuntimeError):
            pass


def _fit_titles(fig, axes) -> None:
    """Wrap an axes title that is wider than its axes, so neighbouring titles never run into each other."""
    import textwrap

    for ax in axes:
        title = ax.title
        text = title.get_text()
        if not text:
            continue
        width_px = ax.get_window_extent().width
        char_px = title.get_fontsize() * fig.dpi / 72 * 0.55  # average glyph width of the sans-serif font
        per_line = max(12, int(width_px / char_px))
        if len(text) > per_line and "\n" not in text:
            title.set_text("\n".join(textwrap.wrap(text, per_line)))


def _install_show_hook() -> None:
    import matplotlib.pyplot as plt

    if getattr(plt.show, "_dsgd_tidy", False):
        return
    show = plt.show

    def tidy_show(*args, **kwargs):
        for num in plt.get_fignums():
            fig = plt.figure(num)
            tidy_figure(fig)
            if SMOKE_SEEN:  # a figure drawn after smoke-scale results were read says so in its title
                from reproduce.common import SMOKE_BANNER

                fig.suptitle(SMOKE_BANNER, color="firebrick", fontsize=10, y=1.0, va="bottom")
        return show(*args, **kwargs)

    tidy_show._dsgd_tidy = True
    plt.show = tidy_show


_register_table_format()
_install_show_hook()
