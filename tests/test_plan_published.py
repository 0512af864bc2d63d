"""The plan's ranking against data/published: two schemes measured on the same hardware, GPU count, model,
batch and precision (same source): does the plan put the measured-faster one first?

Each row is predicted from its own single-GPU rate (reproduce.published.predict_row, nothing fitted to the
multi-GPU numbers) and the pair is ranked by perfmodel.plan.rank on time to train. Measured on 176 pairs:
138 (78.4%) ranked as measured; the issue's goal of 90% is NOT met. The misses are DLPerf pairs of
different frameworks whose multi-GPU rate differs for reasons no communication model sees (input pipelines,
framework overheads), and four TF pairs measured within 1-6% of each other. The test pins the figure so a
change that worsens it fails.
"""

from __future__ import annotations

import collections
import itertools

import pytest

from perfmodel.plan import rank

pytest.importorskip("reproduce.published")
from reproduce.published import RUNS, load_runs, predict_row  # noqa: E402

KEY = ("system", "gpu", "gpus", "model", "batch_per_gpu", "precision", "accumulate", "data", "source")


def ranked_pairs() -> tuple[int, int]:
    groups = collections.defaultdict(list)
    for r in load_runs(RUNS):
        groups[tuple(r[k] for k in KEY)].append(r)
    good = total = 0
    for rows in groups.values():
        for a, b in itertools.combinations(rows, 2):
            if a["scheme"] == b["scheme"] or a["samples_per_s"] == b["samples_per_s"]:
                continue
            pa, pb = predict_row(a).predicted, predict_row(b).predicted
            if pa is None or pb is None:
                continue
            plan_rows = [{"id": r["id"], "time_to_train_s": 1e6 / p, "cost": None, "gpu_hours": r["gpus"] * 1e6 / p
                          / 3600, "gpus": r["gpus"]} for r, p in ((a, pa), (b, pb))]
            first = rank(plan_rows, "time")[0]["id"]
            faster = a["id"] if a["samples_per_s"] > b["samples_per_s"] else b["id"]
            good += first == faster
            total += 1
    return good, total


def test_plan_ranks_measured_faster_scheme_first():
    good, total = ranked_pairs()
    assert total == 176
    assert good / total >= 0.78  # measured 138 / 176 = 78.4%; the 90% is not reached
