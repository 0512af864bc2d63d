"""What the reproduce scripts plan to run at each scale (no runs started)."""

from reproduce.hermans2018 import SMALL_F, _sweep_plan


def test_hermans_small_sweep_reuses_the_full_epoch_n100_runs_of_every_seed():
    plan = _sweep_plan("small", (0, 1, 2))
    reduced = [r for r in plan if r.workers != 100]
    full = [r for r in plan if r.workers == 100]
    assert len(reduced) == 3 * 3 * 3 and all(r.epochs_per_worker == SMALL_F and not r.reuse_only for r in reduced)
    assert sorted((r.rule, r.seed) for r in full) == sorted((rule, s) for s in (0, 1, 2)
                                                            for rule in ("gem", "downpour"))
    assert all(r.epochs_per_worker == 1.0 and r.reuse_only for r in full)
    # --with-n100 starts the missing ones instead of skipping them
    assert all(not r.reuse_only for r in _sweep_plan("small", (1,), with_n100=True))
    assert {r.name for r in _sweep_plan("small", (1,), with_n100=True) if r.workers == 100} == \
        {"gem_n100_f1_lr0.05_s1", "downpour_n100_f1_lr0.05_s1"}


def test_hermans_paper_sweep_is_the_papers_grid():
    plan = _sweep_plan("paper", (0, 1, 2))
    assert len(plan) == 3 * 5 * 3 and {r.workers for r in plan} == {5, 10, 20, 50, 100}
    assert all(r.epochs_per_worker == 1.0 and not r.reuse_only for r in plan)
