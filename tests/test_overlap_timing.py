"""Measured overlap slowdowns: the inversion of perfmodel.overlap's concurrency model by hand and against
the model's own code, the profile's OverlapTiming, and the predictor charging what was measured."""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

from perfmodel.cli import main
from perfmodel.lab.profile.profile_file import load_profile, save_profile
from perfmodel.lab.profile.schema import ConcurrentCompute, OverlapTiming
from perfmodel.overlap import Buckets, exposed_time
from perfmodel.overlap_causes import SLOWDOWN_MAX, solve_slowdowns
from perfmodel.specs import SpecError
from tests.test_predictor import PROFILE


def test_solve_by_hand_when_the_collective_ends_first():
    # backprop 10 s alone, the collective 2 s; together the collective ends at 3 (mu = 0.5) and backprop
    # at 11: the 3 s window cost backprop 1 s = 3 sigma / (1 + sigma) -> sigma = 0.5
    assert solve_slowdowns(10.0, 2.0, 11.0, 3.0) == pytest.approx((0.5, 0.5))


def test_solve_by_hand_when_backprop_ends_first():
    # backprop 2 s alone ends at 3 together: sigma = 0.5; the 10 s collective did 3 / (1 + mu) of its
    # work in that window and the rest alone: ends at 3 + 10 - 1.5 = 11.5 for mu = 1
    assert solve_slowdowns(2.0, 10.0, 3.0, 11.5) == pytest.approx((0.5, 1.0))


def test_a_collective_that_made_no_progress_during_backprop_hides_nothing():
    sigma, mu = solve_slowdowns(2.0, 10.0, 2.0, 12.0)  # it started only when backprop ended
    assert (sigma, mu) == (0.0, SLOWDOWN_MAX)
    # faster than alone is noise: clamped at 0
    assert solve_slowdowns(10.0, 2.0, 9.5, 1.9) == (0.0, 0.0)
    with pytest.raises(SpecError, match="> 0 and finite"):
        solve_slowdowns(1.0, 0.0, 1.0, 1.0)


@pytest.mark.parametrize("t_b,c,sigma,mu", [(0.5, 0.1, 0.3, 0.7), (0.2, 0.5, 0.4, 1.5), (1.0, 0.4, 0.79, 0.79),
                                            (0.1, 0.3, 0.0, 0.2)])
def test_solve_inverts_perfmodel_overlap_schedule(t_b, c, sigma, mu):
    """One bucket ready as backprop starts: perfmodel.overlap.exposed_time gives the exposed seconds,
    from which the end of backprop (collective first) or of the collective (backprop first) follows;
    solve_slowdowns recovers the slowdown that end time depends on."""
    buckets = Buckets(nbytes=np.array([1.0]), ready_fraction=np.array([0.0]))
    _, exposed = exposed_time(buckets, np.array([t_b]), lambda n: np.full(n.shape, c),
                              compute_slowdown=sigma, comm_slowdown=mu)
    exposed = float(exposed[0])
    if c * (1 + mu) <= t_b * (1 + sigma):  # the collective ends first, at c (1 + mu)
        got, _ = solve_slowdowns(t_b, c, t_b + exposed, c * (1 + mu))
        assert got == pytest.approx(sigma, abs=1e-12)
    else:  # backprop ends first, at t_b (1 + sigma)
        _, got = solve_slowdowns(t_b, c, t_b * (1 + sigma), t_b + exposed)
        assert got == pytest.approx(mu, rel=1e-12)


TIMING = OverlapTiming(nbytes=1_724_320, batches=(8, 32), compute_s=(0.004, 0.016), comm_s=(0.050, 0.050),
                       both_compute_s=(0.006, 0.020), both_comm_s=(0.060, 0.064), repeats=5)


def test_overlap_timing_validates_and_reads_the_nearest_batch():
    # batch 8: backprop ends first, at 6 ms (4 alone): sigma 0.5; the 50 ms collective ended at 60, so it
    # did 6 + 50 - 60 = -4 ms of its work while backprop ran: nothing -> mu at its cap
    assert TIMING.slowdowns(8) == pytest.approx((0.5, SLOWDOWN_MAX))
    # batch 32: sigma 0.25; done = 20 + 50 - 64 = 6 ms in a 20 ms window -> mu = 20 / 6 - 1
    assert TIMING.slowdowns(30) == pytest.approx((0.25, 20 / 6 - 1))
    assert TIMING.slowdowns(20) == TIMING.slowdowns(8)  # a tie goes to the smaller batch
    with pytest.raises(ValueError, match="both_comm_s has 1 values"):
        dataclasses.replace(TIMING, both_comm_s=(0.06,))
    with pytest.raises(ValueError, match="finite and > 0"):
        dataclasses.replace(TIMING, comm_s=(0.05, float("nan")))


def _with_timing(tmp_path, timing):
    """The committed LeNet profile with ``timing`` on its 2-rank concurrent run."""
    prof = load_profile(PROFILE)
    comm = tuple(dataclasses.replace(c, compute=dataclasses.replace(c.compute, overlap=timing))
                 if c.ranks == 2 and c.compute is not None else c for c in prof.comm)
    path = tmp_path / "profile.json"
    save_profile(dataclasses.replace(prof, comm=comm), path)
    assert load_profile(path).comm_for("mpi", ranks=2).compute.overlap == timing  # round trip
    return str(path)


def _json(*args: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["predict", *args, "--format", "json"]) == 0
    (rec,) = json.loads(out.getvalue())
    return rec


def test_the_predictor_charges_the_measured_slowdowns(tmp_path):
    """Two ranks on the profile's machine: the step with small buckets equals the one predicted with
    --overlap-slowdown set to what the timing gives at the batch; without a timing the CPU constant."""
    path = _with_timing(tmp_path, TIMING)
    common = ["--gpus", "2", "--batch", "32", "--strategy", "ssgd", "--bucket-mb", "0.1", "--stragglers", "none"]
    sigma, mu = TIMING.slowdowns(32)
    measured = _json("--profile", path, *common)
    given = _json("--profile", path, *common, "--overlap-slowdown", f"{sigma!r},{mu!r}")
    assert measured["t_iter_s"] == pytest.approx(given["t_iter_s"], rel=1e-12)
    constant = _json("--profile", PROFILE, *common)
    assert constant["t_iter_s"] != pytest.approx(measured["t_iter_s"], rel=1e-6)
    # what the user sets wins: an explicit slowdown, an efficiency or --overlap
    other = _json("--profile", path, *common, "--overlap-slowdown", "0")
    assert other["t_iter_s"] < measured["t_iter_s"]
    assert _json("--profile", path, *common, "--overlap-efficiency", "0.21")["t_iter_s"] == \
        pytest.approx(constant["t_iter_s"], rel=1e-12)
    assert _json("--profile", path, *common, "--overlap", "0")["t_iter_s"] == \
        pytest.approx(_json("--profile", PROFILE, *common, "--overlap", "0")["t_iter_s"], rel=1e-12)


def test_concurrent_compute_keeps_profiles_without_a_timing():
    cc = ConcurrentCompute(batches=(8,), mean_s=(0.01,), max_s=(0.01,), cv=(0.0,), repeats=3)
    assert cc.overlap is None


def test_more_ranks_than_timed_take_the_largest_timing_and_say_so(tmp_path):
    path = _with_timing(tmp_path, TIMING)  # timed on the 2-rank run only; the profile has 1, 2 and 4 ranks
    common = ["--gpus", "4", "--batch", "32", "--strategy", "ssgd", "--bucket-mb", "0.1", "--stragglers", "none"]
    sigma, mu = TIMING.slowdowns(32)
    assert _json("--profile", path, *common)["t_iter_s"] == pytest.approx(
        _json("--profile", path, *common, "--overlap-slowdown", f"{sigma!r},{mu!r}")["t_iter_s"], rel=1e-12)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["predict", "--profile", path, *common]) == 0
    assert "# overlap: the slowdowns (sigma 0.25, mu 2.33) were timed at batch 32 on 2 ranks at once; used at " \
           "batch 32 for 4 GPUs" in out.getvalue()
