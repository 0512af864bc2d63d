"""The gradient's copies into a framework's buckets and back (perfmodel.bucket_copy): hand-derived seconds, where
predict charges them (ssgd, more than one GPU, a GPU with a memory bandwidth, once per exchange) and where not,
and the published rows' framework policy."""

import json

import numpy as np
import pytest

from perfmodel.bucket_copy import bucket_copy_seconds
from perfmodel.cli import main
from perfmodel.launch_settings import launch_settings
from perfmodel.memory import strategy_buffers
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload
from reproduce.published import EFFECTS, build_strategy

B_MEM = 9.0e11  # a V100's 900 GB/s
GPU = Cluster("g", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9), gpu="x", peak_flops=1e13,
              gpu_memory_Bps=B_MEM)
CPU = Cluster("c", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9))
N = 5_000_000  # gradient elements
WL = Workload("w", (1_000_000, 4_000_000), {"x": ComputeTime("linear", t0_s=0.002, t1_s=0.001)})


def test_seconds_by_hand():
    # 2 copies, each reading and writing 1e6 fp32 elements: 2 x 2 x 1e6 x 4 = 1.6e7 bytes at 0.81 x 1e12 bytes/s
    assert bucket_copy_seconds(1e6, 4, 2, 1e12) == pytest.approx(1.6e7 / 0.81e12, rel=1e-12)
    # fp16 in the bucket halves it, one copy halves it again; no copy or no memory bandwidth: free
    assert bucket_copy_seconds(1e6, 2, 1, 1e12) == pytest.approx(4e6 / 0.81e12, rel=1e-12)
    assert bucket_copy_seconds(1e6, 4, 0, 1e12) == 0.0
    assert bucket_copy_seconds(1e6, 4, 2, None) == 0.0
    # BERT-large in fp32 on a V100, docs/model.md section 5.1: 7.4 ms
    assert bucket_copy_seconds(335e6, 4, 2, 9e11) * 1e3 == pytest.approx(7.35, abs=0.01)


def test_predict_charges_them_once_per_step_on_more_than_one_gpu():
    copies = predict(WL, GPU, Strategy("ssgd"), [1, 4, 16], batch=32)
    none = predict(WL, GPU, Strategy("ssgd", bucket_copies=0), [1, 4, 16], batch=32)
    t = 2 * 2 * N * 4 / (0.81 * B_MEM)
    np.testing.assert_allclose(copies.extra["t_copy_s"], [0.0, t, t], rtol=1e-12)
    np.testing.assert_allclose(copies.t_iter_s - none.t_iter_s, [0.0, t, t], rtol=1e-9, atol=1e-15)
    assert "t_copy_s" not in none.extra
    # fp16 on the wire: the buckets hold 2-byte elements (8 bytes per element for the two copies), and the
    # fp32 gradients are cast to fp16 and back apart (read 4 + write 2, read 2 + write 4: 12 bytes) -> 20 N
    half = predict(WL, GPU, Strategy("ssgd", wire="fp16"), [4], batch=32)
    assert half.extra["t_copy_s"][0] == pytest.approx(20 * N / (0.81 * B_MEM), rel=1e-12)
    # the copies convert (apex's flat fp16 buffer): 2 x (4 + 2) = 12 N; an fp16 model's gradients: 8 N
    in_copy = predict(WL, GPU, Strategy("ssgd", wire="fp16", wire_cast="in-copy"), [4], batch=32)
    assert in_copy.extra["t_copy_s"][0] == pytest.approx(12 * N / (0.81 * B_MEM), rel=1e-12)
    native = predict(WL, GPU, Strategy("ssgd", wire="bf16", wire_cast="none"), [4], batch=32)
    assert native.extra["t_copy_s"][0] == pytest.approx(t / 2, rel=1e-12)
    # with no buckets the separate casts remain: 12 N
    per_tensor = predict(WL, GPU, Strategy("ssgd", wire="fp16", bucket_copies=0), [4], batch=32)
    assert per_tensor.extra["t_copy_s"][0] == pytest.approx(12 * N / (0.81 * B_MEM), rel=1e-12)
    # an fp32 wire has nothing to cast, whatever the setting
    assert predict(WL, GPU, Strategy("ssgd", wire_cast="in-copy"), [4], batch=32).extra["t_copy_s"][0] == \
        pytest.approx(t, rel=1e-12)
    # four micro-batches per exchange: the copies are paid once per exchange, not per micro-batch
    acc = Workload("w", WL.tensor_sizes, WL.compute, accumulate=4)
    a_copies = predict(acc, GPU, Strategy("ssgd"), [4], batch=32)
    a_none = predict(acc, GPU, Strategy("ssgd", bucket_copies=0), [4], batch=32)
    assert a_copies.t_iter_s[0] - a_none.t_iter_s[0] == pytest.approx(t, rel=1e-9)


def test_not_charged_without_a_gpu_memory_bandwidth_or_on_the_papers_form_or_other_strategies():
    cpu = predict(WL, CPU, Strategy("ssgd"), [4], batch=32)
    assert "t_copy_s" not in cpu.extra
    assert cpu.t_iter_s[0] == predict(WL, CPU, Strategy("ssgd", bucket_copies=0), [4], batch=32).t_iter_s[0]
    paper = predict(WL, GPU, Strategy("ssgd", allreduce="paper"), [4], batch=32)
    assert "t_copy_s" not in paper.extra
    for name in ("terngrad", "sync-ps", "byteps", "zero1", "fsdp"):
        assert "t_copy_s" not in predict(WL, GPU, Strategy(name), [4], batch=32).extra, name


def test_dasos_node_local_ddp_copies_where_a_node_has_more_than_one_gpu():
    t = 2 * 2 * N * 4 / (0.81 * B_MEM)  # fp32 buckets, whatever the global sync's wire
    daso = predict(WL, GPU, Strategy("daso"), [1, 4, 8], batch=32)
    np.testing.assert_allclose(daso.extra["t_copy_s"], [0.0, t, t], rtol=1e-12)
    none = predict(WL, GPU, Strategy("daso", bucket_copies=0), [1, 4, 8], batch=32)
    np.testing.assert_allclose(daso.t_iter_s - none.t_iter_s, [0.0, t, t], rtol=1e-9, atol=1e-15)
    one_per_node = Cluster("g1", 1, GPU.intra, GPU.host, GPU.network, gpu="x", peak_flops=1e13, gpu_memory_Bps=B_MEM)
    np.testing.assert_allclose(predict(WL, one_per_node, Strategy("daso"), [4], batch=32).extra["t_copy_s"], [0.0])


def test_bad_counts_are_refused(capsys):
    for bad in (-1, 1.5, True):
        with pytest.raises(SpecError):
            Strategy("ssgd", bucket_copies=bad)
    with pytest.raises(SpecError):
        Strategy("ssgd", wire_cast="sometimes")
    base = ["predict", "--cluster", "dgx1-v100", "--workload", "bert-large", "--estimate", "mixed", "--gpus", "8",
            "--batch", "8", "--strategy", "ssgd"]
    assert main([*base, "--bucket-copies", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--bucket-copies must be >= 0" in err[0]
    assert main([*base, "--wire-cast", "sometimes"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--wire-cast" in err[0]
    assert main([*base, "--wire", "fp16", "--wire-cast", "none", "--format", "json"]) == 0
    native = json.loads(capsys.readouterr().out)[0]["t_copy_s"]
    assert main([*base, "--wire", "fp16", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["t_copy_s"] == pytest.approx(native * 20 / 8, rel=1e-9)
    # the column and the JSON key: BERT-large's 336,226,108 elements (fp32 on the wire) on a V100, 7.38 ms;
    # no column with 0 copies
    assert main([*base, "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)[0]
    assert rec["t_copy_s"] * 1e3 == pytest.approx(2 * 2 * 336_226_108 * 4 / (0.81 * 9e11) * 1e3, rel=1e-9)
    assert main(base) == 0
    assert "t_copy ms" in capsys.readouterr().out
    assert main([*base, "--bucket-copies", "0"]) == 0
    assert "t_copy ms" not in capsys.readouterr().out


def test_memory_and_launch_settings_follow_the_copies():
    # DDP's buckets are a second copy of the gradient unless the gradients are views into them
    assert strategy_buffers(WL, Strategy("ssgd"), [4])[0] == 4 * N
    assert strategy_buffers(WL, Strategy("ssgd", bucket_copies=0), [4])[0] == 0.0
    daso, daso_view = (strategy_buffers(WL, Strategy("daso", bucket_copies=c), [8])[0] for c in (2, 0))
    assert daso - daso_view == 4 * N
    kw = dict(gpus=8, gpus_per_node=8, batch_per_gpu=32, accumulate=1, model="resnet50", optimizer="sgd")
    assert launch_settings(Strategy("ssgd"), **kw)["ddp"]["gradient_as_bucket_view"] is False
    assert launch_settings(Strategy("ssgd", bucket_copies=0), **kw)["ddp"]["gradient_as_bucket_view"] is True


def test_published_rows_copy_as_their_framework_does():
    row = {"scheme": "pytorch-ddp", "grad_wire": "fp32", "comm_overlap": "during-backward", "ps_servers": 0,
           "ps_placement": "", "nodes": 2}
    copies = {s: build_strategy(dict(row, scheme=s)).bucket_copies
              for s in ("pytorch-ddp", "horovod-nccl", "nccl-allreduce", "tf-replicated", "tf-replicated-nccl")}
    assert copies == {"pytorch-ddp": 2, "horovod-nccl": 2, "nccl-allreduce": 2, "tf-replicated": 0,
                      "tf-replicated-nccl": 0}
    without = tuple(e for e in EFFECTS if e != "bucket-copies")
    assert build_strategy(row, effects=without).bucket_copies == 0
    # how fp32 gradients reach an fp16 wire: MXNet's fp16 model has none to cast, NVIDIA's PyTorch BERT converts
    # in its flat-buffer copies, Horovod's Compression.fp16 in TensorFlow casts apart
    amp = dict(row, grad_wire="fp16")
    casts = {(fw, s): build_strategy(dict(amp, framework=fw, scheme=s)).wire_cast
             for fw, s in (("MXNet (mxnet-20.12 NGC)", "horovod-nccl"), ("PyTorch (21.11 NGC)", "nccl-allreduce"),
                           ("TensorFlow 1 (20.06 NGC)", "horovod-nccl"))}
    assert list(casts.values()) == ["none", "in-copy", "separate"]
    assert build_strategy(dict(amp, framework="TensorFlow 2"), effects=without).wire_cast == "none"
