"""Compute hooks on CPU: phase timings, the t_c(b) fit, model loading, and `profile` without MPI."""

import collections
import statistics
import sys
import textwrap
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from perfmodel.lab.profile.cli import main as profile_main  # noqa: E402
from perfmodel.lab.profile.compute import load_callable_model, load_workload_model, profile_compute  # noqa: E402
from perfmodel.lab.profile.profile_file import load_profile  # noqa: E402
from perfmodel.lab.profile.schema import ProfileError  # noqa: E402
from perfmodel.lab.profile.to_specs import profile_workload  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def nets(tmp_path, monkeypatch):
    """A module `tinynets` with model factories, importable as --model tinynets:mlp."""
    (tmp_path / "tinynets.py").write_text(textwrap.dedent("""
        import torch
        def mlp():
            return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                       torch.nn.Linear(32, 5))
        def wide():
            return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                       torch.nn.Linear(512, 10))
        def not_a_module():
            return 42
        def image_out():
            return torch.nn.Identity()
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("tinynets", None)
    return "tinynets"


def test_phases_add_up_and_fit_describes_the_medians(nets):
    model, info = load_callable_model(f"{nets}:mlp", (1, 8, 8))
    assert info.num_classes == 5 and info.parameters == 64 * 32 + 32 + 32 * 5 + 5
    cp = profile_compute(model, info.input_shape, info.num_classes, [8, 4, 16, 4], warmup=1, repeats=5,
                         device="cpu", threads=1)
    assert [r.batch for r in cp.rows] == [4, 8, 16]
    assert (cp.device, cp.key, cp.threads, cp.copy, cp.t_cg) == ("cpu", "cpu", 1, None, 0.0)
    for r in cp.rows:
        # each sample's total is the sum of its three phases
        assert r.total.min_s >= r.forward.min_s + r.backward.min_s + r.step.min_s - 1e-12
        assert r.total.max_s <= r.forward.max_s + r.backward.max_s + r.step.max_s + 1e-12
        assert r.total.n == 5 and r.forward.median_s > 0 and r.backward.median_s > 0
    med = np.array([r.total.median_s for r in cp.rows])
    fitted = cp.fit(np.array([4, 8, 16]))
    assert np.max(np.abs(fitted - med) / med) == pytest.approx(cp.fit.max_rel_err, rel=1e-9)
    assert cp.fit.slope >= 0 and cp.fit.intercept >= 0


def test_step_time_agrees_with_a_plain_timing_loop(nets):
    """Independent path: time the same SGD step with one perf_counter pair per step, before and after
    the profile (the machine's other work may change between them: the profile's median must fall
    within 35% of the plain loop's range)."""
    model, info = load_callable_model(f"{nets}:wide", (1, 28, 28))
    batch = 128
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))

    def plain() -> float:
        times = []
        for i in range(18):
            t0 = time.perf_counter()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if i >= 3:
                times.append(time.perf_counter() - t0)
        return statistics.median(times)

    before = plain()
    cp = profile_compute(model, info.input_shape, info.num_classes, [batch // 2, batch], warmup=3, repeats=15,
                         device="cpu", threads=1)
    after = plain()
    ours = cp.rows[-1].total.median_s
    assert 0.65 * min(before, after) <= ours <= 1.35 * max(before, after)


def test_workload_model_lenet():
    pytest.importorskip("trainers.models")
    model, info = load_workload_model("lenet")
    assert info.parameters == 431080 and info.input_shape == (1, 28, 28) and info.num_classes == 10
    assert info.classifier_tensors == 2
    with pytest.raises(ProfileError, match="unknown workload 'lenet9'; choose from .*lenet"):
        load_workload_model("lenet9")


@pytest.mark.parametrize("spec,shape,match", [("nocolon", (1, 8, 8), "package.module:callable"),
                                              ("tinynets:mlp", None, "--input-shape"),
                                              ("tinynets:absent", (1, 8, 8), "cannot load"),
                                              ("tinynets:not_a_module", (1, 8, 8), "not a torch.nn.Module"),
                                              ("tinynets:image_out", (1, 8, 8), "must output"),
                                              ("tinynets:mlp", (3, 5, 5), "fails on input shape")])
def test_bad_model_specs(nets, spec, shape, match):
    with pytest.raises(ProfileError, match=match) as info:
        load_callable_model(spec, shape)
    assert "\n" not in str(info.value)


def test_profile_command_without_mpi(nets, tmp_path, capsys):
    out = tmp_path / "prof.json"
    rc = profile_main(["profile", "--model", f"{nets}:mlp", "--input-shape", "1,8,8", "--batch", "4,8",
                       "--ranks", "1", "--repeats", "3", "--warmup", "1", "--out", str(out), "--quiet"])
    assert rc == 0
    prof = load_profile(out)
    assert [r.batch for r in prof.compute.rows] == [4, 8]
    assert len(prof.comm) == 1 and prof.comm[0].ranks == 1 and prof.comm[0].ops == {}
    assert prof.machine.cpu_cores >= 1 and prof.machine.torch_version == torch.__version__
    assert prof.model.name == f"{nets}:mlp"
    wl = profile_workload(prof)
    assert wl.compute["cpu"].t1_s == prof.compute.fit.slope or wl.compute["cpu"].kind == "table"


@pytest.mark.parametrize("argv,match", [(["--batch", "4"], "at least 2 batch sizes"),
                                        (["--batch", "4,x"], "comma-separated integers"),
                                        (["--ranks", "0"], "positive integers"),
                                        (["--ops", "allreduce,gather"], "unknown operation 'gather'"),
                                        (["--min-bytes", "5", "--max-bytes", "7"], "no power of two"),
                                        (["--extra-sizes", "allreduce"], "use OP=SIZE"),
                                        (["--ops", "allreduce", "--extra-sizes", "alltoall=8"],
                                         "which --ops does not time"),
                                        (["--compute-after", "1Mi,x"], "--compute-after: bad size 'x'"),
                                        (["--compute-after", "0"], "--compute-after: sizes must be positive"),
                                        (["--compute-after", "grad,none"], "bad size 'none'")])
def test_profile_command_bad_arguments_exit_2(nets, tmp_path, capsys, argv, match):
    rc = profile_main(["profile", "--model", f"{nets}:mlp", "--input-shape", "1,8,8", "--ranks", "1",
                       "--out", str(tmp_path / "p.json"), "--quiet", *argv])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("perfmodel: error: ") and match in err[0]
    assert not (tmp_path / "p.json").exists()


def test_terngrad_codec_is_timed_on_the_ternary_tensors():
    from perfmodel.lab.profile.compute import time_terngrad_codec
    from trainers.compress import TernGradCodec

    named = [("conv.weight", 500), ("conv.bias", 20), ("fc.weight", 300), ("fc.bias", 10)]
    codec = time_terngrad_codec(named, repeats=3, workers=2)
    plan = TernGradCodec().plan(named)  # the trainer's defaults: the last layer stays fp32
    assert codec.elements == sum(n for (_, n), t in zip(named, plan) if t) == 520
    enc, dec, conv, agg = codec.rates()
    # the conversion to the float mean is timed inside the decoding, and apart: the per-copy decode
    # rate leaves it out, and it is charged once per step
    assert 0 < codec.convert.median_s <= codec.decode.median_s
    assert enc == pytest.approx(520 / codec.encode.median_s) and conv == pytest.approx(520 / codec.convert.median_s)
    assert dec == pytest.approx(2 * 520 / (codec.decode.median_s - codec.convert.median_s))
    # profiles made before the conversion was timed: decode per copy includes its share of it, none apart
    from dataclasses import replace
    # the ps exchange's own work at 2 workers: shards of ceil(520 / 2) = 260 -> 264 elements (a multiple of 8)
    assert codec.aggregate_elements == 2 * 264 and agg == pytest.approx(528 / codec.aggregate.median_s)
    old = replace(codec, convert=None, aggregate=None, aggregate_elements=0)
    assert old.rates() == (pytest.approx(enc), pytest.approx(2 * 520 / codec.decode.median_s), 0.0, 0.0)
    with pytest.raises(ValueError, match="go together"):
        replace(codec, aggregate=None)


def test_terngrad_codec_reads_the_gradients_backward_writes_in_the_trainers_order():
    # with the model's parameters, the ternarized ones (all but the last layer) get their gradients as
    # views of one buffer in their order, as the trainers' buckets; between (the backward) runs first in
    # each round, then the scalers, then after_scalers (their Allreduce), the encoding, then before_decode
    # before the decoding and before the ps exchange's own work: 2 + 3 rounds
    import torch

    from perfmodel.lab.profile.compute import time_terngrad_codec

    net = torch.nn.Sequential(torch.nn.Linear(20, 25), torch.nn.Linear(25, 10))
    named = [(k, p.numel()) for k, p in net.named_parameters()]
    calls = []

    def backward():
        calls.append("backward")
        net.zero_grad(set_to_none=False)
        net(torch.ones(2, 20)).sum().backward()
        # what backward wrote there: d(sum of outputs)/d(first layer's bias), 2 samples
        written.append(torch.allclose(net[0].bias.grad, 2 * net[1].weight.detach().sum(dim=0)))

    written = []

    codec = time_terngrad_codec(named, repeats=3, workers=2, between=backward, params=list(net.parameters()),
                                after_scalers=lambda: calls.append("scalers' allreduce"),
                                before_decode=lambda: calls.append("exchange"))
    assert codec.elements == 20 * 25 + 25
    assert calls == ["backward", "scalers' allreduce", "exchange", "exchange"] * 5
    w, b = net[0].weight.grad, net[0].bias.grad
    assert w.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # one buffer
    assert b.storage_offset() == w.storage_offset() + w.numel()  # in the parameters' order
    assert written == [True] * 5
    # then the exchange object decoded the mean into the same gradients, as in the trainer: with every
    # rank sending the same codes, s * t with t in {-1, 0, 1}
    assert set(np.unique(np.sign(b.numpy()))) <= {-1.0, 0.0, 1.0} and len(np.unique(np.abs(b.numpy()))) <= 2
    assert net[1].weight.grad.untyped_storage().data_ptr() != w.untyped_storage().data_ptr()  # fp32 layer apart


def test_codec_sync_wait_is_the_exchange_in_the_loop_less_after_a_barrier(monkeypatch):
    # a clock that only the exchange moves: 4 ms a call inside the codec's loop, 1 ms right after the
    # barrier; this rank's 3 ms excess averaged with another rank's 1 ms gives 2 ms
    import types

    import perfmodel.lab.profile.compute as compute

    now, after_barrier, calls = [0.0], [False], []
    monkeypatch.setattr(compute, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))

    def barrier():
        after_barrier[0] = True

    def exchange(loop_s=4e-3):
        now[0] += 1e-3 if after_barrier[0] else loop_s
        calls.append("after barrier" if after_barrier[0] else "in loop")
        after_barrier[0] = False

    named = [("conv.weight", 500), ("conv.bias", 20), ("fc.weight", 300), ("fc.bias", 10)]
    codec = compute.time_terngrad_codec(named, repeats=3, workers=2, before_decode=exchange, barrier=barrier,
                                        mean_over_ranks=lambda x: (x + 1e-3) / 2)
    assert codec.sync_wait_s == pytest.approx(2e-3, abs=1e-12)
    # first its own time, 3 + 2 calls after a barrier, then two calls in each of 3 + 2 rounds
    assert calls == ["after barrier"] * 5 + ["in loop"] * 10
    # faster in the loop than on its own: no wait, never a negative one
    fast = compute.time_terngrad_codec(named, repeats=3, workers=2, before_decode=lambda: exchange(0.5e-3),
                                       barrier=barrier, mean_over_ranks=lambda x: x)
    assert fast.sync_wait_s == 0.0
    # without a barrier (one process): not measured
    assert compute.time_terngrad_codec(named, repeats=3, workers=2, before_decode=exchange).sync_wait_s is None


class _TwinRanks:
    """A stand-in for an mpi4py communicator: rank 0 of two, the other rank's times ``factor`` x ours."""

    def __init__(self, factor):
        self.factor = factor

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 2

    def Barrier(self):
        pass

    def gather(self, times, root=0):
        return [times, self.factor * times]

    def Allreduce(self, send, recv):
        self.allreduced = getattr(self, "allreduced", []) + [send.size]
        recv[:] = 2 * send

    def allreduce(self, x):
        return 2 * x  # the other rank measured the same


def test_concurrent_timing_after_an_allreduce_of_each_size(nets):
    from perfmodel.lab.profile.compute import concurrent_compute

    model, info = load_callable_model(f"{nets}:mlp", (1, 8, 8))
    comm = _TwinRanks(1.5)
    cc = concurrent_compute(comm, model, info.input_shape, info.num_classes, [4, 8], warmup=1, repeats=3,
                            after_bytes=[1000, 10])
    # sizes rounded up to whole float32 elements and sorted; each round times the step after the barrier
    # alone and after each size's Allreduce, at each batch size: (1 + 3 rounds) x 2 batches calls per size
    assert cc.after_bytes == (12, 1000)
    calls = collections.Counter(comm.allreduced)
    assert calls[3] == calls[250] == 8
    # then the codec: the packed codes' Allreduce (the first layer's 64 x 32 + 32 elements, 2 bits each:
    # 520 B) on its own after a barrier, 3 + 2 times; then each of 3 + 2 rounds after the scalers'
    # Allreduce (4 tensors: 4 floats), its decoding and the ps exchange's own work each after the codes'
    assert calls[4] == 5 and calls[130] == 5 + 10 and sum(calls.values()) == 36
    assert cc.codec.elements == 64 * 32 + 32 and cc.codec.workers == 2
    assert cc.codec.sync_wait_s is not None and cc.codec.sync_wait_s >= 0
    assert len(cc.after_mean_s) == 2 and all(len(r) == 2 and min(r) > 0 for r in cc.after_mean_s)
    assert cc.after(4, 0) == cc.mean_s[0] and cc.after(4, 1000) == cc.after_mean_s[1][0]
    with pytest.raises(ProfileError, match="positive"):
        concurrent_compute(comm, model, info.input_shape, info.num_classes, [4], after_bytes=[0])


@pytest.mark.parametrize("factor", [1.0, 1.2])
def test_concurrent_timing_spread_is_between_the_ranks_of_a_round(nets, factor):
    from perfmodel.lab.profile.compute import concurrent_compute

    model, info = load_callable_model(f"{nets}:mlp", (1, 8, 8))
    cc = concurrent_compute(_TwinRanks(factor), model, info.input_shape, info.num_classes, [4, 8], warmup=1,
                            repeats=5)
    assert cc.batches == (4, 8) and cc.repeats == 5
    for m, x, cv in zip(cc.mean_s, cc.max_s, cc.cv):
        # the other rank is factor x this one in every round: mean (1 + f)/2 t, slowest f t
        assert x / m == pytest.approx(2 * factor / (1 + factor), rel=1e-9)
        # identical ranks wait for nobody, however much the rounds differ from each other; at 1.2x the
        # spread between the two ranks of a round is (f - 1)/2 t over the mean (1 + f)/2 t (rms over rounds)
        if factor == 1.0:
            assert cv == 0.0
        else:
            # rms over the 5 rounds of t_r over their mean: at least 1 (equal rounds), at most sqrt(5)
            base = (factor - 1) / (1 + factor)
            assert base * (1 - 1e-9) <= cv <= base * np.sqrt(5) * (1 + 1e-9)
