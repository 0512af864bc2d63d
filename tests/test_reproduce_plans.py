"""What the reproduce scripts plan to run at each scale (no runs started)."""

import pytest

from reproduce.hermans2018 import N100_F, SMALL_F, _sweep_plan, main as hermans_main

GEM3 = {("gem", "paper"), ("gem", "paper-clamp"), ("gem", "authors")}


def test_hermans_small_sweep_reuses_the_full_epoch_n100_runs_of_every_seed():
    plan = _sweep_plan("small", (0, 1, 2))
    reduced = [r for r in plan if r.workers != 100]
    n100 = [r for r in plan if r.workers == 100 and r.epochs_per_worker == N100_F]
    full = [r for r in plan if r.workers == 100 and r.epochs_per_worker == 1.0]
    assert len(plan) == len(reduced) + len(n100) + len(full)
    # 3 seeds x N in {5, 20, 50} x (GEM in 3 protocols, Downpour, adaptive staleness)
    assert len(reduced) == 3 * 3 * 5 and all(r.epochs_per_worker == SMALL_F and not r.reuse_only for r in reduced)
    assert {(r.rule, r.protocol) for r in reduced} == GEM3 | {("downpour", "n/a"), ("adaptive-staleness", "n/a")}
    # N=100 at the reduced length: the 3 GEM protocols, then Downpour, for every seed, all started
    assert 0 < N100_F < 1.0 and not any(r.reuse_only for r in n100)
    assert sorted((r.rule, r.protocol, r.seed) for r in n100) == sorted(
        (rule, p, s) for s in (0, 1, 2) for rule, p in GEM3 | {("downpour", "n/a")})
    assert [r.protocol for r in n100 if r.seed == 0] == ["paper", "authors", "paper-clamp", "n/a"]
    assert sorted((r.rule, r.protocol, r.seed) for r in full) == sorted(
        (rule, p, s) for s in (0, 1, 2) for rule, p in GEM3 | {("downpour", "n/a")})
    assert all(r.reuse_only for r in full)
    # --with-n100 starts the missing ones instead of skipping them
    assert all(not r.reuse_only for r in _sweep_plan("small", (1,), with_n100=True))
    assert {r.name for r in _sweep_plan("small", (1,), with_n100=True) if r.workers == 100 and
            r.epochs_per_worker == 1.0} == {"gem-paper_n100_f1_lr0.05_s1", "gem-paper-clamp_n100_f1_lr0.05_s1",
                                            "gem-authors_n100_f1_lr0.05_s1", "downpour_n100_f1_lr0.05_s1"}


def test_hermans_workers_option_is_checked_in_one_line(capsys):
    for bad in ("0", "x", "5,-1", ""):
        with pytest.raises(SystemExit) as e:
            hermans_main(["--scale", "small", "--workers", bad])
        assert e.value.code == 2
        assert "workers must be" in capsys.readouterr().err


def test_hermans_paper_sweep_is_the_papers_grid():
    plan = _sweep_plan("paper", (0, 1, 2))
    assert len(plan) == 3 * 5 * 5 and {r.workers for r in plan} == {5, 10, 20, 50, 100}
    assert all(r.epochs_per_worker == 1.0 and not r.reuse_only for r in plan)
