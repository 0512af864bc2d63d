"""trainers.validators, trainers.errors and trainers.faults: the checks every trainers configuration uses,
the one error class, and the test-only failure hooks (cases worked out by hand)."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
import torch

from trainers.checkpoint import CheckpointError
from trainers.data import DatasetError, DatasetMissing
from trainers.errors import DivergenceError, TrainerError, UsageError
from trainers.faults import install_step_failure, worker_hooks
from trainers.log import RunLogError
from trainers.validators import check_choice, check_int, check_milestones, check_number


def test_every_trainers_error_is_one_class_and_a_value_error() -> None:
    for cls in (UsageError, DivergenceError, DatasetError, DatasetMissing, CheckpointError, RunLogError):
        assert issubclass(cls, TrainerError)
    assert issubclass(TrainerError, ValueError)
    assert not issubclass(DivergenceError, UsageError)  # distinct exit statuses: 3 and 2


@pytest.mark.parametrize("value, lo, ok", [
    (3, 1, True), (1, 1, True), (0, 1, False), (-5, None, True), (np.int64(2), 1, True),
    (True, 0, False), (2.0, 1, False), ("2", 1, False), (None, 0, False),
])
def test_check_int(value: object, lo: int | None, ok: bool) -> None:
    if ok:
        check_int("k", value, lo)
    else:
        with pytest.raises(TrainerError, match=r"^k must be an integer"):
            check_int("k", value, lo)


def test_check_int_none_ok_and_message() -> None:
    check_int("k", None, 1, none_ok=True)
    with pytest.raises(TrainerError, match=r"^k must be an integer >= 1, got 0$"):
        check_int("k", 0, 1)


@pytest.mark.parametrize("value, kw, message", [
    (0.0, dict(lo=0.0), None),
    (0.0, dict(lo=0.0, lo_open=True), "x must be a finite number > 0.0, got 0.0"),
    (1.0, dict(lo=0.0, hi=1.0, hi_open=True), "x must be a finite number in [0.0, 1.0), got 1.0"),
    (1.0, dict(lo=0.0, hi=1.0, lo_open=True), None),
    (-0.5, dict(lo=0.0, hi=1.0, lo_open=True), "x must be a finite number in (0.0, 1.0], got -0.5"),
    (math.inf, dict(lo=0.0), "x must be a finite number >= 0.0, got inf"),
    (math.nan, dict(), "x must be a finite number, got nan"),
    (False, dict(), "x must be a finite number, got False"),
    (5, dict(hi=2), "x must be a finite number in (-inf, 2], got 5"),
])
def test_check_number(value: float, kw: dict, message: str | None) -> None:
    if message is None:
        check_number("x", value, **kw)
    else:
        with pytest.raises(TrainerError) as info:
            check_number("x", value, **kw)
        assert str(info.value) == message


def test_check_choice_and_milestones() -> None:
    check_choice("mode", "b", ("a", "b"))
    with pytest.raises(TrainerError, match=r"^mode must be one of a, b; got 'c'$"):
        check_choice("mode", "c", ("a", "b"))
    assert check_milestones("m", [80, 120.5]) == (80.0, 120.5)
    assert check_milestones("m", ()) == ()
    for bad in ([120, 80], [5, 5], [-1], [math.nan], ["x"]):
        with pytest.raises(TrainerError, match="m must be strictly increasing epochs >= 0"):
            check_milestones("m", bad)


def test_step_failure_hook_fires_on_its_rank_and_step_only() -> None:
    def trainer(rank: int, fail_at: int | None, fail_rank: int | None = None) -> types.SimpleNamespace:
        cfg = types.SimpleNamespace(fail_at_step=fail_at, fail_rank=fail_rank)
        return types.SimpleNamespace(cfg=cfg, rank=rank, world=4, before_step=[])

    quiet = trainer(3, None)
    install_step_failure(quiet)
    assert quiet.before_step == []  # nothing installed without --fail-at-step
    last = trainer(3, 2)  # default rank: the last (3 of 4)
    install_step_failure(last)
    (hook,) = last.before_step
    hook(last, 1)
    with pytest.raises(RuntimeError, match="injected failure at step 2 on rank 3"):
        hook(last, 2)
    other = trainer(1, 2)
    install_step_failure(other)
    other.before_step[0](other, 2)  # rank 1 is not the failing rank


def test_worker_hooks() -> None:
    assert worker_hooks(None, 0, "raise") == ([], [])
    before, after = worker_hooks(1, 3, "raise")
    assert after == []
    before[0](0, 3)  # another worker
    before[0](1, 2)  # an earlier gradient
    with pytest.raises(RuntimeError, match="worker 1: deliberate failure"):
        before[0](1, 3)
    before, after = worker_hooks(1, 3, "inf-grad")
    assert before == []
    g = torch.ones(4)
    after[0](1, 2, g)
    after[0](0, 3, g)
    assert torch.isfinite(g).all()
    after[0](1, 3, g)
    assert g.tolist() == [math.inf, 1.0, 1.0, 1.0]
