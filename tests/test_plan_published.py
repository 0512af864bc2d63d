"""The plan's ranking against data/published: two schemes measured on the same hardware, GPU count, model,
batch and precision (same source): does the plan put the measured-faster one first?

Each row is predicted from its own single-GPU rate (reproduce.published.predict_row, nothing fitted to the
multi-GPU numbers) and the pair is ranked by perfmodel.plan.rank on time to train
(reproduce.published_pairs). The split of the pairs was declared before any change for issue 28: a pair
is a development pair when both its rows have half = dev in runs.csv, held out otherwise. The figures
pinned below are in docs/plan.md section 6; the issue's goal is 90%.
"""

from __future__ import annotations

import pytest

pytest.importorskip("reproduce.published")
from reproduce.published import RUNS, load_runs  # noqa: E402
from reproduce.published_pairs import (TIE_PCT, Pair, groups, pairs, repeat_spread_pct,  # noqa: E402
                                       tally)


@pytest.fixture(scope="module")
def all_pairs() -> list[Pair]:
    return pairs(load_runs(RUNS))


def test_pair_split_is_the_declared_one(all_pairs):
    g = groups(all_pairs)
    assert len(g["all"]) == 176
    assert len(g["dev"]) == 24 and len(g["held-out"]) == 152 and len(g["both held-out"]) == 57
    for p in g["dev"]:
        assert p.a["half"] == p.b["half"] == "dev"
    assert all("held-out" in (p.a["half"], p.b["half"]) for p in g["held-out"])


def test_tie_threshold_is_the_spread_of_published_repeats():
    # 7 runs at 2 x 8 GPUs: 5826.49 .. 5974.30 images/s (the widest of the four settings in the excerpt)
    assert repeat_spread_pct() == pytest.approx((5974.30 / 5826.49 - 1) * 100, abs=1e-9)
    assert TIE_PCT == round(repeat_spread_pct(), 1)


def _row(i: str, rate: float, h: str = "dev") -> dict:
    return {"id": i, "samples_per_s": rate, "gpus": 8, "half": h}


def test_pair_is_right_when_the_prediction_orders_it_as_measured():
    right = Pair(_row("a", 100.0), _row("b", 110.0), predicted_a=90.0, predicted_b=95.0)
    wrong = Pair(_row("a", 100.0), _row("b", 110.0), predicted_a=96.0, predicted_b=95.0)
    assert right.faster == right.first == "b" and right.right
    assert wrong.first == "a" and not wrong.right
    assert wrong.gap_pct == pytest.approx(10.0)
    close = Pair(_row("a", 100.0), _row("b", 102.0, "held-out"), predicted_a=96.0, predicted_b=95.0)
    assert close.tie and not close.right and close.half == "held-out"
    t = tally([right, wrong, close])
    assert t == {"pairs": 3, "right": 1, "tied_misses": 1, "right_or_tie": 2}


# measured (docs/plan.md section 6): pairs, right, right or tie per group; the 90% is reached only
# by the 24 development pairs counted with ties (22/24); a change that ranks fewer pairs right fails
FIGURES = {"all": (176, 138, 148), "dev": (24, 20, 22), "held-out": (152, 118, 126), "both held-out": (57, 45, 46)}


@pytest.mark.parametrize("group", list(FIGURES))
def test_plan_ranks_measured_faster_scheme_first(all_pairs, group):
    pairs_n, right, right_or_tie = FIGURES[group]
    t = tally(groups(all_pairs)[group])
    assert t["pairs"] == pairs_n
    assert t["right"] >= right and t["right_or_tie"] >= right_or_tie


def test_missing_runs_file_is_one_line(capsys, tmp_path):
    from reproduce.published_pairs import main

    assert main(["--runs", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("published_pairs: error:")
