"""Collectives timed after the training step (perfmodel.profile.comm, timing "after-step"), with a
scripted transport: what is timed, in which order, and which span counts."""

import math

import pytest

from perfmodel.profile.comm import CommConfig, _time_calls, measure_op, op_timing
from perfmodel.profile.schema import AFTER_STEP_OPS, COMM_OPS


class Scripted:
    """Rank 0 of a job on one clock: a step takes ``steps[i]`` seconds here, the call after it
    ``calls[i]``; ``others[i]`` are the other ranks' (entry, exit) of call i. span_all reduces over
    them and this rank. Records the order of barriers, steps and calls."""

    def __init__(self, steps, calls, others, rank=0):
        self.now, self.steps, self.calls, self.others, self.rank = 0.0, list(steps), list(calls), list(others), rank
        self.n_steps, self.n_calls, self.log = 0, 0, []

    def clock(self):
        return self.now

    def barrier(self):
        self.log.append("barrier")

    def sync(self):
        pass

    def step(self):
        self.log.append("step")
        self.now += self.steps[self.n_steps]
        self.n_steps += 1

    def fn(self):
        self.log.append("call")
        self.now += self.calls[self.n_calls] if self.n_calls < len(self.calls) else 0.0
        self.n_calls += 1

    def span_all(self, entry, leave):
        spans = [s for s in [(entry, leave), *self.others[self.n_calls - 1]] if not math.isnan(s[0])]
        return max(x for _, x in spans) - max(e for e, _ in spans)

    def max_all(self, x):
        return x

    def clock_offset(self):
        return 0.0

    def prepare(self, op, nbytes):
        return self.fn

    def node_leaders(self):
        return [0]


def test_each_call_follows_a_barrier_and_the_step_and_counts_from_the_last_entry_to_the_last_exit():
    # call 1: this rank steps 10 ms (enters at 10 ms) and leaves at 15 ms; the others entered at 12 and
    # 11 ms and left at 16 and 15.5 ms: last entry 12, last exit 16: 4 ms (this rank's own 5 ms holds a
    # 2 ms wait for the slowest step). Call 2 starts at 15 ms: this rank enters at 17, leaves at 18; the
    # others (17.5, 18.5), (16, 19): 1.5 ms. The mean per call: 2.75 ms
    t = Scripted([10e-3, 2e-3], [5e-3, 1e-3], [[(12e-3, 16e-3), (11e-3, 15.5e-3)],
                                               [(17.5e-3, 18.5e-3), (16e-3, 19e-3)]])
    got = _time_calls(t, t.fn, 2, "after-step", step=t.step)
    assert got == pytest.approx((4e-3 + 1.5e-3) / 2, rel=1e-12)
    assert t.log == ["barrier", "step", "call"] * 2
    # the clock offset moves this rank's stamps onto rank 0's clock: 3 ms later, this rank is the last
    # both in and out of call 1 (13 and 18 ms): 5 ms
    t3 = Scripted([10e-3], [5e-3], [[(12e-3, 16e-3), (11e-3, 15.5e-3)]])
    assert _time_calls(t3, t3.fn, 1, "after-step", step=t3.step, offset=3e-3) == pytest.approx(5e-3, rel=1e-12)
    # timed after a barrier, no step runs between the calls
    b = Scripted([], [5e-3, 1e-3, 4e-3], [])
    assert _time_calls(b, b.fn, 3, "barrier") == pytest.approx(10e-3 / 3, rel=1e-12)
    assert b.log == ["barrier", "call"] * 3


def test_a_rank_off_the_group_does_not_count():
    # DASO's global group: a rank off it returns at once; only the group's spans count
    t = Scripted([1e-3], [0.0], [[(2e-3, 7e-3), (3e-3, 6e-3)]], rank=1)
    assert _time_calls(t, t.fn, 1, "after-step", step=t.step, takes_part=False) == pytest.approx(4e-3)


def test_after_step_times_collectives_one_call_per_run_and_the_others_after_a_barrier():
    cfg = CommConfig(sizes=(8,), ops=("allreduce", "pingpong"), repeats=4, min_repeats=3, warmup=2,
                     timing="after-step", workload="lenet", batches=(8,))
    # 2 warm-up calls (untimed), then 4 runs of one call each after a 1 ms step: the call takes 2 ms
    # here and the other rank entered and left with this one
    calls = [0.0, 0.0] + [2e-3] * 4
    others = [[]] * 2 + [[(1e-3 * (3 * k + 1), 1e-3 * (3 * k + 3))] for k in range(4)]
    t = Scripted([1e-3] * 4, calls, others)
    samples, iters = measure_op(t, "allreduce", 8, cfg, step=t.step)
    assert iters == 1 and samples == pytest.approx([2e-3] * 4)
    assert t.log.count("step") == 4 and t.log[:3] == ["barrier", "call", "call"]
    assert op_timing("allreduce", "after-step") == "after-step"
    # the ping-pong (two ranks) and the parameter server's exchange (its throughput) keep the barrier
    assert op_timing("pingpong", "after-step") == op_timing("ps", "after-step") == "barrier"
    assert set(AFTER_STEP_OPS) == set(COMM_OPS) - {"pingpong", "ps"}
    assert op_timing("allreduce", "back-to-back") == "back-to-back"


@pytest.mark.parametrize("kwargs", [{}, {"backend": "gloo", "workload": "lenet", "batches": (8,)}])
def test_after_step_needs_a_model_on_mpi(kwargs):
    with pytest.raises(ValueError, match="needs the mpi backend and a model"):
        CommConfig(sizes=(8,), timing="after-step", **kwargs)
