"""The plan's figure: time to train against cost (GPU-hours without a price), the Pareto front marked."""

from __future__ import annotations

from pathlib import Path

from .plot import _pyplot, save_figure


def plot_plan(rows: list[dict], front: list[dict], path: Path, title: str = "") -> Path:
    """Every searched row (feasible ones dark, infeasible light) and the Pareto front as a line (PNG)."""
    plt, _ = _pyplot()
    priced = any(r["cost"] is not None for r in rows)
    y = (lambda r: r["cost"]) if priced else (lambda r: r["gpu_hours"])  # noqa: E731
    fig, ax = plt.subplots(figsize=(7, 5))
    ok = [r for r in rows if not r["violates"]]
    bad = [r for r in rows if r["violates"]]
    ax.scatter([r["time_to_train_s"] / 3600 for r in bad], [y(r) for r in bad], s=8, color="0.8",
               label="breaks a constraint")
    ax.scatter([r["time_to_train_s"] / 3600 for r in ok], [y(r) for r in ok], s=10, color="C0", label="feasible")
    ax.plot([r["time_to_train_s"] / 3600 for r in front], [y(r) for r in front], "o-", color="C3",
            label="Pareto front")
    for r in front[:8]:
        ax.annotate(f"{r['label']} x{r['gpus']}", (r["time_to_train_s"] / 3600, y(r)), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time to train (h)")
    ax.set_ylabel("cost" if priced else "GPU-hours")
    ax.set_title(title)
    ax.legend()
    return save_figure(fig, path)
