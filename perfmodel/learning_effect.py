"""What a scheme that changes the update did to learning in this project's reproductions (results/).

SSGD, the synchronous parameter servers, BytePS and ZeRO/FSDP compute the SSGD update: no effect (None).
For the others, the test-accuracy difference in points against SSGD at the same settings, read from the
reruns' CSVs (mean over the rows that pair up):
    terngrad  results/wen2017/fig3_mnist.csv (LeNet, MNIST; TernGrad - fp32 at the same optimizer,
              workers and epoch) and results/wen2017/table1_cifarnet.csv (CifarNet on a CIFAR-10 subset,
              the last step of each workers x seed run)
    daso      results/coquelin2021/small_runs.csv (LeNet, MNIST, 4 ranks; DASO - SSGD at the last epoch
              both reached)
    asgd      results/barkai2020/tables4_6.csv has no SSGD run at its settings: the ASGD accuracy per
              worker count is given instead (accuracy_diff_pts None)
The settings are the reduced reruns' (docs of reproduce/): a sign of the effect, not the papers' figures.
An installed package has no results/ beside its presets: every update-changing scheme then says "not
measured here".
"""

from __future__ import annotations

import csv
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from .presets import presets_dir


def results_dir() -> Path:
    """The repository's results/ (next to data/)."""
    return presets_dir().parent.parent / "results"


def _read(path: Path) -> list[dict]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, csv.Error):
        return []


def _float(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def pair_differences(rows: list[dict], scheme_col: str, scheme: str, base: str, keys: tuple[str, ...]) -> list[float]:
    """scheme - base accuracy for every key tuple both have (test_accuracy rows)."""
    acc: dict[tuple, dict[str, float]] = defaultdict(dict)
    for r in rows:
        v = _float(r.get("rerun_value"))
        if r.get("metric") == "test_accuracy" and v is not None and r.get(scheme_col) in (scheme, base):
            acc[tuple(r.get(k) for k in keys)][r[scheme_col]] = v
    return [d[scheme] - d[base] for d in acc.values() if scheme in d and base in d]


def _last_per_run(rows: list[dict], step_col: str, run_keys: tuple[str, ...]) -> list[dict]:
    best: dict[tuple, dict] = {}
    for r in rows:
        k = tuple(r.get(c) for c in run_keys)
        if k not in best or (_float(r.get(step_col)) or 0) > (_float(best[k].get(step_col)) or 0):
            best[k] = r
    return list(best.values())


@lru_cache(maxsize=None)
def effects(root: str | None = None) -> dict[str, dict]:
    """{strategy: {"summary", "accuracy_diff_pts", "source"}} from the results CSVs present."""
    res = Path(root) if root else results_dir()
    out: dict[str, dict] = {}
    mnist = pair_differences(_read(res / "wen2017" / "fig3_mnist.csv"), "gradients", "TernGrad", "fp32",
                             ("optimizer", "workers", "epoch", "seed"))
    cifar_rows = _last_per_run(_read(res / "wen2017" / "table1_cifarnet.csv"), "step", ("gradients", "workers", "seed"))
    cifar = pair_differences(cifar_rows, "gradients", "TernGrad", "fp32", ("workers", "seed"))
    if mnist or cifar:
        parts = []
        if mnist:
            parts.append(f"{sum(mnist) / len(mnist):+.2f} pts on LeNet/MNIST ({len(mnist)} pairs)")
        if cifar:
            parts.append(f"{sum(cifar) / len(cifar):+.2f} pts on CifarNet/CIFAR-10 subset ({len(cifar)} pairs)")
        allp = mnist + cifar
        out["terngrad"] = {"summary": "vs SSGD: " + "; ".join(parts), "accuracy_diff_pts": sum(allp) / len(allp),
                           "source": "results/wen2017/fig3_mnist.csv, results/wen2017/table1_cifarnet.csv"}
    rows = [r for r in _read(res / "coquelin2021" / "small_runs.csv") if r.get("algo") in ("daso", "ssgd")]
    if rows:
        last = min(max(int(r["epoch"]) for r in rows if r["algo"] == a and r["metric"] == "test_accuracy")
                   for a in ("daso", "ssgd"))
        diff = pair_differences([r for r in rows if r["epoch"] == str(last)], "algo", "daso", "ssgd", ("epoch",))
        if diff:
            out["daso"] = {"summary": f"vs SSGD: {diff[0]:+.2f} pts on LeNet/MNIST at epoch {last}",
                           "accuracy_diff_pts": diff[0], "source": "results/coquelin2021/small_runs.csv"}
    by_w: dict[int, list[float]] = defaultdict(list)
    for r in _read(res / "barkai2020" / "tables4_6.csv"):
        v = _float(r.get("rerun_value"))
        if r.get("method") == "asgd" and v is not None:
            by_w[int(r["workers"])].append(v)
    if by_w:
        text = ", ".join(f"{sum(v) / len(v):.1f}% at {w}" for w, v in sorted(by_w.items()))
        out["asgd"] = {"summary": f"no SSGD pair; accuracy falls with workers: {text} (cifar10-quick, subset)",
                       "accuracy_diff_pts": None, "source": "results/barkai2020/tables4_6.csv"}
    return out


def effect_for(strategy: str) -> dict | None:
    """The measured effect of ``strategy`` on learning; None for schemes computing the SSGD update, a
    "not measured" entry for update-changing ones without results."""
    if strategy in ("ssgd", "sync-ps", "byteps", "zero1", "zero2", "zero3", "fsdp"):
        return None
    return effects().get(strategy, {"summary": "changes the update; not measured here", "accuracy_diff_pts": None,
                                     "source": ""})
