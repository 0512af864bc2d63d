"""perfmodel.pair_confidence: how often the model ranked two published schemes as measured, by the gap it
predicted between them, and the line `perfmodel plan` prints from it."""

import pytest

from perfmodel.cli import main
from perfmodel.pair_confidence import (GapBin, GapTable, load_gap_table, pair_confidence_path, predicted_gap_pct,
                                       rival_note)
from perfmodel.specs import SpecError
from reproduce import published_pair_gaps as ppg

TABLE = GapTable((GapBin(0.0, 100, 60), GapBin(10.0, 50, 45)), "by hand")


def row(strategy, label, gpus, rate):
    return {"strategy": strategy, "label": label, "gpus": gpus, "samples_per_s": rate}


def test_the_rival_is_the_best_other_strategy_on_as_many_gpus():
    ranked = [row("ssgd", "ssgd nccl fp16 25MiB", 64, 1000.0), row("ssgd", "ssgd ring fp16 25MiB", 64, 999.0),
              row("byteps", "byteps fp16", 32, 990.0), row("sync-ps", "sync-ps 8 servers", 64, 950.0),
              row("byteps", "byteps fp16", 64, 900.0)]
    note = rival_note(ranked, TABLE)  # 1000 / 950 - 1 = 5.26%: the first bin, 60 of 100
    assert note.startswith("the best plan of another strategy on 64 GPUs, sync-ps 8 servers, is predicted 5.3% apart")
    assert "of 100 published scheme pairs predicted 0-10% apart" in note and "in 60 (60%)" in note
    assert "treat the two as a tie" in note
    far = rival_note([ranked[0], row("byteps", "byteps fp16", 64, 800.0)], TABLE)  # 25%: the open bin, 45 of 50
    assert "of 50 published scheme pairs predicted 10% or more apart" in far and "(90%): a gap the model" in far


def test_no_rival_no_note():
    assert rival_note([row("ssgd", "one GPU", 1, 100.0), row("byteps", "b", 1, 90.0)], TABLE) is None
    assert rival_note([row("ssgd", "a", 8, 100.0), row("ssgd", "b", 8, 90.0), row("byteps", "c", 4, 80.0)],
                      TABLE) is None
    assert rival_note([], TABLE) is None


def test_gap_and_table_checks(tmp_path):
    assert predicted_gap_pct(110.0, 100.0) == pytest.approx(10.0)
    with pytest.raises(SpecError):
        predicted_gap_pct(90.0, 100.0)
    with pytest.raises(SpecError, match="right <= pairs"):
        GapBin(0.0, 3, 4)
    with pytest.raises(SpecError, match="start at lo_pct = 0"):
        GapTable((GapBin(5.0, 3, 2),), "")
    cases = {"needs \\[\\[bin\\]\\]": "source = 'x'\n", "unknown key 'hi_pct'": "[[bin]]\nlo_pct = 0.0\nhi_pct = 1\n",
             "is missing": None}
    for i, (why, text) in enumerate(cases.items()):
        path = tmp_path / f"pc{i}.toml"
        if text is not None:
            path.write_text(text)
        with pytest.raises(SpecError, match=why):
            load_gap_table(path)


def test_the_committed_table_is_the_generators_and_its_counts_hold_by_an_independent_rule():
    ps = ppg.judged_pairs()
    assert ppg.toml_text(ps) == pair_confidence_path().read_text()
    t = load_gap_table()
    assert [b.lo_pct for b in t.bins] == list(ppg.GAP_EDGES) and sum(b.pairs for b in t.bins) == len(ps) == 430
    # right, counted without perfmodel.plan.rank: the predicted order of the two rates is the measured order
    for b, (lo, n, right) in zip(t.bins, ppg.gap_bins(ps)):
        edges = [x.lo_pct for x in t.bins] + [float("inf")]
        hi = edges[edges.index(b.lo_pct) + 1]
        group = [p for p in ps if lo <= ppg.gap_pct(p) < hi]
        same_order = sum((p.predicted_a > p.predicted_b) == (p.a["samples_per_s"] > p.b["samples_per_s"])
                         for p in group)
        assert (b.pairs, b.right) == (n, right) == (len(group), same_order)
    # the finding the note rests on: under a 20% predicted gap the ranking is little better than a coin
    near = [b for b in t.bins if b.lo_pct < 20]
    assert all(0.5 < b.right / b.pairs < 0.65 for b in near) and t.bins[-1].right / t.bins[-1].pairs > 0.85


def test_plan_prints_it(capsys):
    args = ["plan", "--workload", "resnet50", "--epochs", "1", "--dataset-size", "1281167", "--gpus-max", "64",
            "--top", "2", "--cluster", "terngrad-ethernet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "# note: the best plan of another strategy on 64 GPUs, terngrad ps, is predicted 28.6% apart" in out
    assert "of 116 published scheme pairs predicted 20% or more apart" in out
    assert main([*args[:-4], "--strategy", "ssgd", "--top", "2", "--cluster", "terngrad-ethernet"]) == 0
    assert "the best plan of another strategy" not in capsys.readouterr().out  # ssgd alone: no rival
