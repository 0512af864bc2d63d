"""StepTimer: exact phase accounting on a fake clock, misuse errors, and its real overhead."""

import pytest

from trainers.timers import PHASES, StepTimer, overhead_per_step


class FakeClock:
    """A clock that returns 0, then advances by the next scripted delta at every read."""

    def __init__(self):
        self.now = 0.0
        self.reads = 0

    def __call__(self):
        self.reads += 1
        return self.now

    def advance(self, dt):
        self.now += dt


def test_phases_partition_the_step_exactly():
    clock = FakeClock()
    records = []
    timer = StepTimer(sink=records.append, clock=clock)
    timer.start()
    clock.advance(0.5)  # untimed (e.g. data loading): counts as idle
    with timer.phase("compute"):
        clock.advance(3.0)
    with timer.phase("compress"):
        clock.advance(0.25)
    with timer.phase("comm"):
        clock.advance(2.0)
    with timer.phase("idle"):
        clock.advance(1.0)
    with timer.phase("compute"):  # a second compute span in the same step adds up
        clock.advance(1.0)
    rec = timer.end_step(step=0, loss=1.5)
    assert rec == {"t_compute": 4.0, "t_comm": 2.0, "t_compress": 0.25, "t_idle": 1.5, "t_untimed": 0.5,
                   "t_step": 7.75, "step": 0, "loss": 1.5}
    assert records == [rec]
    assert rec["t_compute"] + rec["t_comm"] + rec["t_compress"] + rec["t_idle"] == rec["t_step"]


def test_steps_are_contiguous_and_totals_accumulate():
    clock = FakeClock()
    timer = StepTimer(clock=clock)
    for k in range(3):
        with timer.phase("compute"):
            clock.advance(1.0)
        clock.advance(0.5)  # between phases
        with timer.phase("comm"):
            clock.advance(0.25 * (k + 1))
        rec = timer.end_step(step=k)
        assert rec["t_step"] == pytest.approx(1.5 + 0.25 * (k + 1) + (0.125 if k else 0.0))
        clock.advance(0.125)  # after end_step: belongs to the next step (untimed)
    assert timer.steps == 3
    assert timer.totals["t_compute"] == 3.0
    assert timer.totals["t_comm"] == pytest.approx(0.25 + 0.5 + 0.75)
    # steps 2 and 3 start at the previous end_step, so they include the 0.125 s gap as untimed
    assert timer.totals["t_untimed"] == pytest.approx(3 * 0.5 + 2 * 0.125)
    assert timer.totals["t_step"] == pytest.approx(clock.now - 0.125)


def test_first_step_starts_at_the_first_phase_without_start():
    clock = FakeClock()
    timer = StepTimer(clock=clock)
    clock.advance(100.0)  # set-up time before training is not part of step 0
    with timer.phase("compute"):
        clock.advance(2.0)
    assert timer.end_step()["t_step"] == 2.0


def test_sync_runs_at_every_boundary():
    calls = []
    timer = StepTimer(clock=FakeClock(), sync=lambda: calls.append(1))
    with timer.phase("compute"):
        pass
    with timer.phase("comm"):
        pass
    timer.end_step()
    assert len(calls) == 5  # enter + exit per phase, and end_step


def test_misuse_is_refused():
    timer = StepTimer()
    with pytest.raises(ValueError, match="unknown phase 'backward'; choose from compute, comm, compress, idle"):
        timer.phase("backward")
    with timer.phase("compute"):
        with pytest.raises(RuntimeError, match="must not nest"):
            with timer.phase("comm"):
                pass
        with pytest.raises(RuntimeError, match="end_step inside phase 'compute'"):
            timer.end_step()
    assert timer.end_step()["t_compute"] >= 0.0  # the timer is usable after the refusals


def test_exception_inside_a_phase_still_closes_it():
    clock = FakeClock()
    timer = StepTimer(clock=clock)
    with pytest.raises(KeyError):
        with timer.phase("comm"):
            clock.advance(1.0)
            raise KeyError("boom")
    assert timer.end_step()["t_comm"] == 1.0


def test_reset_forgets_everything():
    clock = FakeClock()
    timer = StepTimer(clock=clock)
    with timer.phase("compute"):
        clock.advance(1.0)
    timer.end_step()
    timer.reset()
    assert timer.steps == 0 and all(v == 0.0 for v in timer.totals.values())
    assert set(timer.totals) == {f"t_{p}" for p in PHASES} | {"t_untimed", "t_step"}


def test_overhead_measurement_drives_the_timer_it_is_given():
    """overhead_per_step runs 4 phases + end_step per step on the real clock. How small that is, is a
    speed goal: benchmarks/timer_overhead.py measures it beside a LeNet step, not this test."""
    n = 2000
    timer = StepTimer()
    per_step = overhead_per_step(n, rounds=3, timer=timer)
    assert per_step > 0.0 and timer.steps == 3 * n
    assert all(timer.totals[f"t_{p}"] > 0.0 for p in ("compute", "comm"))


def test_records_go_straight_into_the_run_log(tmp_path):
    """The record keys are the run log's step keys: a RunLog can be the sink."""
    log_mod = pytest.importorskip("trainers.log")
    clock = FakeClock()
    with log_mod.RunLog(tmp_path / "run.jsonl", {"algo": "test"}) as log:
        timer = StepTimer(sink=lambda rec: log.step(**rec), clock=clock)
        for k in range(2):
            with timer.phase("compute"):
                clock.advance(0.5)
            with timer.phase("comm"):
                clock.advance(0.25)
            timer.end_step(step=k, loss=1.0)
    steps = log_mod.read_run_log(tmp_path / "run.jsonl").steps
    assert [s["step"] for s in steps] == [0, 1]
    assert {"t_compute", "t_comm", "t_compress", "t_idle", "t_step"} <= set(steps[0]) & set(log_mod.STEP_KEYS)
    assert steps[1]["t_compute"] == 0.5 and steps[1]["t_step"] == 0.75
