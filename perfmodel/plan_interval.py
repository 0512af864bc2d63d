"""The plan's interval: how far the model's throughput has been from measured ones, as a range.

results/published/predictions.csv (written by `python -m reproduce.published`) holds the model's error on
every published multi-GPU throughput, e = predicted / measured - 1, each row predicted from nominal
hardware and the same source's single-GPU rate. For the strategies those rows exercise (ssgd: NCCL, DDP,
Horovod and TF replicated rows; sync-ps: TF parameter-server rows; no byteps rows yet) the interval of a
predicted rate R is [R / (1 + e90), R / (1 + e10)], e10 and e90 the 10th and 90th percentiles of e over
that strategy's rows: 80% of the published runs fell inside it. Other strategies have none (None).
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np

from .learning_effect import results_dir

#: published scheme -> the strategy perfmodel predicts it with (reproduce.published.build_strategy)
SCHEME_STRATEGY = {"nccl-allreduce": "ssgd", "pytorch-ddp": "ssgd", "horovod-nccl": "ssgd", "horovod-mpi": "ssgd",
                   "horovod-mpi-cuda-aware": "ssgd", "tf-replicated-nccl": "ssgd", "tf-replicated": "ssgd",
                   "mxnet-kvstore-device": "ssgd", "tf-ps-cpu": "sync-ps", "tf-ps-gpu": "sync-ps",
                   "tf-distributed-replicated": "sync-ps", "mxnet-dist-device-sync": "sync-ps", "byteps": "byteps"}


@lru_cache(maxsize=None)
def error_quantiles(root: str | None = None) -> dict[str, tuple[float, float, int]]:
    """{strategy: (e10, e90, rows)} from the published predictions; empty when the file is absent."""
    path = (results_dir() if root is None else Path(root)) / "published" / "predictions.csv"
    errs: dict[str, list[float]] = {}
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                s = SCHEME_STRATEGY.get(r.get("scheme", ""))
                try:
                    e = float(r["error_pct"]) / 100.0
                except (KeyError, TypeError, ValueError):
                    continue
                if s is not None and r.get("expressible") == "1":
                    errs.setdefault(s, []).append(e)
    except (OSError, csv.Error):
        return {}
    return {s: (float(np.percentile(v, 10)), float(np.percentile(v, 90)), len(v)) for s, v in errs.items() if len(v) >= 10}


def interval(strategy: str, samples_per_s: float, samples: float) -> dict | None:
    """{"samples_per_s": [lo, hi], "time_to_train_s": [lo, hi], "basis": text} or None."""
    q = error_quantiles().get(strategy)
    if q is None:
        return None
    e10, e90, n = q
    lo, hi = samples_per_s / (1 + e90), samples_per_s / (1 + e10)
    return {"samples_per_s": [lo, hi], "time_to_train_s": [samples / hi, samples / lo],
            "basis": f"10th-90th percentile of the model's error on {n} published {strategy} runs "
                     f"({e10:+.1%} .. {e90:+.1%}, results/published/predictions.csv)"}
