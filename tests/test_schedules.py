"""Learning-rate schedules: the papers' warm-up from eta/N and step decays at chosen epochs."""

from __future__ import annotations

import pytest

from trainers.schedules import LRSchedule


def test_barkai_resnet20_warmup_and_decays():
    # eta 0.1, N = 8 workers: eta/N = 0.0125 ramped linearly to 0.1 over 5 epochs; /10 at 80, 120
    s = LRSchedule(base_lr=0.1, n_workers=8, warmup_epochs=5, milestones=(80, 120), gamma=0.1)
    assert s.lr_at(0.0) == pytest.approx(0.0125)
    assert s.lr_at(2.5) == pytest.approx(0.0125 + (0.1 - 0.0125) * 0.5)  # 0.05625
    assert s.lr_at(4.0) == pytest.approx(0.0125 + 0.0875 * 0.8)  # 0.0825
    assert s.lr_at(5.0) == pytest.approx(0.1)
    assert s.lr_at(79.99) == pytest.approx(0.1)
    assert s.lr_at(80.0) == pytest.approx(0.01)
    assert s.lr_at(119.5) == pytest.approx(0.01)
    assert s.lr_at(120.0) == pytest.approx(0.001)
    assert s.lr_at(159.0) == pytest.approx(0.001)


def test_wide_resnet_gamma_and_zhang_schedule():
    wrn = LRSchedule(base_lr=0.1, n_workers=16, warmup_epochs=5, milestones=(60, 120, 160), gamma=0.2)
    assert wrn.lr_at(0) == pytest.approx(0.1 / 16)
    assert wrn.lr_at(100) == pytest.approx(0.02)
    assert wrn.lr_at(170) == pytest.approx(0.1 * 0.2**3)  # 0.0008
    zhang = LRSchedule(base_lr=0.001, milestones=(120, 130))  # no warm-up in Zhang et al.
    assert zhang.lr_at(0) == 0.001 and zhang.lr_at(125) == pytest.approx(1e-4)
    assert zhang.lr_at(139.9) == pytest.approx(1e-5)


def test_single_worker_warmup_is_flat():
    s = LRSchedule(base_lr=0.05, n_workers=1, warmup_epochs=5)
    assert [s.lr_at(e) for e in (0, 1.3, 4.9, 7)] == pytest.approx([0.05] * 4)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"base_lr": 0.0}, "base_lr"),
        ({"base_lr": 0.1, "n_workers": 0}, "n_workers"),
        ({"base_lr": 0.1, "warmup_epochs": -1}, "warmup_epochs"),
        ({"base_lr": 0.1, "milestones": (120, 80)}, "milestones"),
        ({"base_lr": 0.1, "gamma": 0.0}, "gamma"),
        ({"base_lr": 0.1, "gamma": 1.5}, "gamma"),
    ],
)
def test_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=word):
        LRSchedule(**kwargs)


def test_bad_epoch():
    with pytest.raises(ValueError, match="epoch"):
        LRSchedule(base_lr=0.1).lr_at(-0.5)
