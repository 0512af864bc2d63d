"""What the reproduce scripts plan to run at each scale (no runs started)."""

from reproduce.hermans2018 import SMALL_F, _sweep_plan


def test_hermans_small_sweep_reuses_the_full_epoch_n100_runs_of_every_seed():
    plan = _sweep_plan("small", (0, 1, 2))
    reduced = [r for r in plan if r.workers != 100]
    full = [r for r in plan if r.workers == 100]
    # 3 seeds x N in {5, 20, 50} x (GEM in 2 protocols, Downpour, adaptive staleness)
    assert len(reduced) == 3 * 3 * 4 and all(r.epochs_per_worker == SMALL_F and not r.reuse_only for r in reduced)
    assert {(r.rule, r.protocol) for r in reduced} == {("gem", "paper-clamp"), ("gem", "authors"),
                                                       ("downpour", "n/a"), ("adaptive-staleness", "n/a")}
    assert sorted((r.rule, r.protocol, r.seed) for r in full) == sorted(
        (rule, p, s) for s in (0, 1, 2)
        for rule, p in (("gem", "paper-clamp"), ("gem", "authors"), ("downpour", "n/a")))
    assert all(r.epochs_per_worker == 1.0 and r.reuse_only for r in full)
    # --with-n100 starts the missing ones instead of skipping them
    assert all(not r.reuse_only for r in _sweep_plan("small", (1,), with_n100=True))
    assert {r.name for r in _sweep_plan("small", (1,), with_n100=True) if r.workers == 100} == \
        {"gem-paper-clamp_n100_f1_lr0.05_s1", "gem-authors_n100_f1_lr0.05_s1", "downpour_n100_f1_lr0.05_s1"}


def test_hermans_paper_sweep_is_the_papers_grid():
    plan = _sweep_plan("paper", (0, 1, 2))
    assert len(plan) == 3 * 5 * 4 and {r.workers for r in plan} == {5, 10, 20, 50, 100}
    assert all(r.epochs_per_worker == 1.0 and not r.reuse_only for r in plan)
