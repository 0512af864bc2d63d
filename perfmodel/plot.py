"""Figures (seaborn): throughput versus GPUs, and predicted versus measured throughput."""

from __future__ import annotations

import os
from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid")
    return plt, sns


FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
"""The figure formats --plot writes, by the file name's suffix."""


def figure_format(path: str | os.PathLike) -> str:
    """The format a figure at ``path`` is written in (its suffix: .png, .pdf, .svg); SpecError for a folder
    or another suffix."""
    from .specs import SpecError

    path = Path(path)
    if path.is_dir():
        raise SpecError(f"{path} is a folder; give a file name ending in .png, .pdf or .svg")
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SpecError(f"{path}: give a file name ending in .png, .pdf or .svg (the format it is written in)")
    return fmt


def plot_file(text: str) -> str:
    """argparse type of --plot: the file name, refused at parse time unless figure_format takes it."""
    import argparse

    from .specs import SpecError

    try:
        figure_format(text)
    except SpecError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Save a figure atomically (a temporary file, then a rename) in the format its suffix names, and close it."""
    import matplotlib.pyplot as plt

    from .fileio import atomic_path

    path = Path(path)
    try:
        fmt = figure_format(path)
        with atomic_path(path, suffix=path.suffix) as tmp:
            fig.savefig(tmp, format=fmt, dpi=120)
    finally:
        plt.close(fig)
    return path


def plot_throughput(records: list[dict], path: Path, title: str = "") -> Path:
    """Samples/s against GPUs from prediction records, one line per strategy, log2 x axis."""
    import matplotlib.ticker
    import pandas as pd

    plt, sns = _pyplot()
    df = pd.DataFrame.from_records(records)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sns.lineplot(data=df, x="gpus", y="throughput", hue="strategy", marker="o", ax=ax)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_yscale("log")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("throughput (samples/s)")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_validation(rows: list[dict], path: Path, title: str = "") -> Path:
    """Predicted against measured samples/s, one point per run, with the y = x line."""
    import pandas as pd

    plt, sns = _pyplot()
    df = pd.DataFrame.from_records(rows)
    fig, ax = plt.subplots(figsize=(5.5, 5))
    sns.scatterplot(data=df, x="measured_throughput", y="predicted_throughput", hue="algo", style="model",
                    s=70, ax=ax)
    lo = float(min(df.measured_throughput.min(), df.predicted_throughput.min())) * 0.8
    hi = float(max(df.measured_throughput.max(), df.predicted_throughput.max())) * 1.2
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--")
    ax.set(xscale="log", yscale="log", xlabel="measured samples/s", ylabel="predicted samples/s")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, path)
