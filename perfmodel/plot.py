"""Throughput-versus-GPUs figure (seaborn), one line per strategy, log2 x axis."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def plot_throughput(records: list[dict], path: Path, title: str = "") -> Path:
    """Draw samples/s against GPUs from prediction records and save it atomically as ``path`` (PNG)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    df = pd.DataFrame.from_records(records)
    sns.set_theme(style="whitegrid")
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".png")
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=120)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
