"""The overlap term from its causes: interference in the bucket schedule, framework policies, options."""

import numpy as np
import pytest

from perfmodel.cli import main
from perfmodel.overlap import Buckets, exposed_time, make_buckets
from perfmodel.overlap_causes import CONCURRENT_SLOWDOWN, FRAMEWORK_POLICY, overlap_inputs
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload
from reproduce.published import build_strategy, framework_policy

GPU = Cluster("g", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9), gpu="x", peak_flops=1e13)
CPU = Cluster("c", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9))


def _const(values):
    v = np.asarray(values, dtype=float)
    return lambda nb: np.broadcast_to(v[:, None], (len(v), 1))


def test_interference_by_hand():
    # one bucket ready at half of a 1 s backward pass, 0.2 s alone, sigma = mu = 0.5: it runs 0.3 s
    # inside backprop and delays it by 0.3 x 0.5 / 1.5 = 0.1 s; exposed = the delay
    b = Buckets(np.array([1.0]), np.array([0.5]))
    total, exposed = exposed_time(b, np.array([1.0]), _const([0.2]), compute_slowdown=0.5, comm_slowdown=0.5)
    assert total[0] == pytest.approx(0.2) and exposed[0] == pytest.approx(0.1)
    # the same bucket at 0.9: 0.1 s of backprop left -> window min(0.3, 0.15) = 0.15; comm done 0.1, compute
    # delayed 0.05; the rest 0.1 s after backprop: finish = 0.9 + 0.15 + 0.1 = 1.15 -> exposed 0.15
    b = Buckets(np.array([1.0]), np.array([0.9]))
    _, exposed = exposed_time(b, np.array([1.0]), _const([0.2]), compute_slowdown=0.5, comm_slowdown=0.5)
    assert exposed[0] == pytest.approx(0.15)
    # without slowdowns: the ideal schedule (hidden entirely, then 0.1 s exposed)
    _, ideal = exposed_time(b, np.array([1.0]), _const([0.2]))
    assert ideal[0] == pytest.approx(0.1)
    # a collective entirely inside backprop costs sigma of itself when sigma = mu (the old constant's 1 - e)
    b = Buckets(np.array([1.0]), np.array([0.1]))
    _, exposed = exposed_time(b, np.array([10.0]), _const([0.2]), compute_slowdown=0.79, comm_slowdown=0.79)
    assert exposed[0] == pytest.approx(0.79 * 0.2)


def test_ddp_first_bucket_closes_at_its_own_size():
    # reverse order 400, 300, 200, 100 bytes: the first bucket closes at 300 (first 300), then 500-byte buckets
    b = make_buckets([100, 200, 300, 400], [1, 1, 1, 1], 500, first_bucket_bytes=300)
    np.testing.assert_allclose(b.nbytes, [400, 500, 100])
    np.testing.assert_allclose(b.ready_fraction, [0.25, 0.75, 1.0])
    with pytest.raises(SpecError):
        make_buckets([1], [1], 5, first_bucket_bytes=-1)
    assert FRAMEWORK_POLICY["pytorch-ddp"]["first_bucket_mb"] == 1.0
    assert FRAMEWORK_POLICY["horovod"] == {"bucket_mb": 64.0, "first_bucket_mb": 0.0, "cycle_time_s": 0.005,
                                           "bucket_copies": 2}


def test_inputs_per_setting():
    assert overlap_inputs(Strategy("ssgd"), GPU) == (CONCURRENT_SLOWDOWN, CONCURRENT_SLOWDOWN, 1.0)
    assert CONCURRENT_SLOWDOWN == pytest.approx(0.79)
    assert overlap_inputs(Strategy("ssgd"), CPU) == (0.0, 0.0, 0.21)
    assert overlap_inputs(Strategy("ssgd", overlap_compute_slowdown=0.3), GPU) == (0.3, 0.3, 1.0)
    assert overlap_inputs(Strategy("ssgd", overlap_compute_slowdown=0.3, overlap_comm_slowdown=0.1), CPU) == (0.3, 0.1, 1.0)
    assert overlap_inputs(Strategy("ssgd", overlap_efficiency=0.5, overlap_compute_slowdown=0.3), GPU) == (0, 0, 0.5)
    with pytest.raises(SpecError):
        Strategy("ssgd", overlap_comm_slowdown=-1)


def test_predict_hides_less_with_interference():
    wl = Workload("w", (1_000_000, 1_000, 3_000_000), {"x": ComputeTime("linear", t0_s=0.002, t1_s=0.001)})
    ideal = predict(wl, GPU, Strategy("ssgd", bucket_mb=1.0, overlap_compute_slowdown=0.0), [8], batch=32)
    default = predict(wl, GPU, Strategy("ssgd", bucket_mb=1.0), [8], batch=32)
    none = predict(wl, GPU, Strategy("ssgd", bucket_mb=1.0, overlap_efficiency=0.0), [8], batch=32)
    assert ideal.t_iter_s[0] < default.t_iter_s[0] < none.t_iter_s[0]
    assert default.extra["t_hidden_s"][0] > 0


def test_published_rows_follow_their_framework():
    row = {"scheme": "pytorch-ddp", "grad_wire": "fp32", "comm_overlap": "during-backward", "ps_servers": 0,
           "ps_placement": "", "nodes": 2}
    s = build_strategy(row)
    assert (s.bucket_mb, s.first_bucket_mb, s.overlap_efficiency) == (25.0, 1.0, None)
    old = build_strategy(row, mode="old")
    assert (old.first_bucket_mb, old.overlap_efficiency) == (0.0, 0.21)
    assert build_strategy(row, mode="none").overlap == 0.0
    assert framework_policy("tf-replicated-nccl")["bucket_mb"] < 1e-6
    tf = build_strategy(dict(row, scheme="horovod-nccl"))
    assert (tf.bucket_mb, tf.cycle_time_s) == (64.0, 0.005)


def test_cli_overlap_options(capsys):
    base = ["predict", "--cluster", "dgx1-v100", "--workload", "resnet50", "--gpus", "16", "--strategy", "ssgd",
            "--format", "json"]
    import json

    def run(*extra):
        assert main(base + list(extra)) == 0
        return json.loads(capsys.readouterr().out)[0]

    default = run()
    assert run("--overlap-slowdown", "0.79")["t_iter_s"] == pytest.approx(default["t_iter_s"])
    ideal = run("--overlap-slowdown", "0")
    assert ideal["t_iter_s"] <= default["t_iter_s"]
    assert run("--overlap-efficiency", "1", "--overlap-slowdown", "0.5")["t_iter_s"] == pytest.approx(ideal["t_iter_s"])
    for bad in ("-1", "a", "1,2,3"):
        rc = main(base + ["--overlap-slowdown", bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("perfmodel: error:")
