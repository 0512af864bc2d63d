"""perfmodel.memory: hand-derived byte counts, the ZeRO paper's example, and torch's measured peak on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.memory import (Activations, activation_bytes, blas_workspace_bytes, fits, gpu_capability,
                              gpu_memory_bytes, load_activations, memory_per_gpu, model_state_bytes,
                              strategy_buffers)
from perfmodel.preset_toml import PresetError
from perfmodel.specs import ComputeTime, SpecError, Strategy, Workload


def _wl(sizes=(600, 400)):
    return Workload("toy", tuple(sizes), {"cpu": ComputeTime("linear", t1_s=1.0)})


ACTS = Activations("toy", 100.0, 10.0, 0.0, "hand")


def test_model_state_fp32_and_mixed_adam():
    p, g, o = model_state_bytes(1000, [1], optimizer="adam", precision="fp32")
    assert (p[0], g[0], o[0]) == (4000, 4000, 8000)
    p, g, o = model_state_bytes(1000, [1], optimizer="adam", precision="mixed")
    assert (p[0], g[0], o[0]) == (2000, 2000, 12000)  # the ZeRO paper's K = 12
    # PyTorch's autocast: fp32 parameters + 16-bit weight copies, fp32 gradients, Adam's moments, no master
    p, g, o = model_state_bytes(1000, [1], optimizer="adam", precision="mixed", autocast=True)
    assert (p[0], g[0], o[0]) == (6000, 4000, 8000)
    assert model_state_bytes(1000, [1], optimizer="adam", precision="fp32", autocast=True)[0][0] == 4000
    p, g, o = model_state_bytes(1000, [1], optimizer="momentum")
    assert o[0] == 4000
    assert model_state_bytes(1000, [1], optimizer="sgd")[2][0] == 0


def test_zero_paper_example_7_5b_on_64_gpus():
    """Rajbhandari et al. SC20, Figure 1: 7.5B parameters, mixed-precision Adam, 64 GPUs:
    120 GB, 31.4 GB (P_os), 16.6 GB (P_os+g), 1.9 GB (P_os+g+p)."""
    psi = 7.5e9
    expect = {0: 120e9, 1: 31.4e9, 2: 16.6e9, 3: 1.9e9}
    for stage, gb in expect.items():
        total = sum(x[0] for x in model_state_bytes(psi, [64], optimizer="adam", precision="mixed", stage=stage))
        assert total == pytest.approx(gb, rel=0.02), stage


def test_activation_bytes_scale_with_batch_and_precision():
    assert activation_bytes(ACTS, 4)[()] == 4 * 110
    assert activation_bytes(ACTS, 4, "mixed")[()] == 2 * 110


def test_the_layer_by_layer_peak_replaces_the_upper_bound_where_the_inventory_has_it():
    peaked = Activations("toy", 100.0, 10.0, 0.0, "hand", peak_bytes_per_sample=95.0)
    assert activation_bytes(peaked, 4)[()] == 4 * 95 and activation_bytes(peaked, 4, "mixed")[()] == 2 * 95
    with pytest.raises(SpecError):
        Activations("toy", 100.0, 10.0, 0.0, "hand", peak_bytes_per_sample=-1.0)


def test_lenets_backward_peaks_at_its_first_pooling_layer():
    """LeNet (conv 20@5x5, pool, conv 50@5x5, pool, fc 500, relu, fc 10) on a 1x28x28 image, fp32 bytes per
    sample saved by each layer: conv1 its input 784 x 4 = 3136; pool1 its input 20x24x24 x 4 = 46080 and the
    int64 indices of its 20x12x12 output, 23040; conv2 its input 2880 x 4 = 11520; pool2 50x8x8 x 4 + 800 x 8 =
    19200; ip1 its input 3200; relu1 its output 2000 (ip2's input, the same storage). While pool1 runs backward,
    conv1's and pool1's saved tensors are alive (72256) with the gradient of pool1's output (11520) and the
    buffer beside its input (46080): 129856, more than all saved tensors at the start of backward (108176 + a
    few kB); the upper bound, every saved tensor plus the largest's buffer, is 154256."""
    acts = load_activations("lenet")
    assert acts.bytes_per_sample == 3136 + 46080 + 23040 + 11520 + 19200 + 3200 + 2000 == 108176
    assert acts.output_bytes_per_sample == 46080
    assert acts.peak_bytes_per_sample == 3136 + 69120 + 11520 + 46080 == 129856


def test_buffers_hand_counts():
    wl = _wl()
    assert strategy_buffers(wl, Strategy("ssgd", wire="fp16"), [4])[0] == 2 * 1000
    assert strategy_buffers(wl, Strategy("ssgd"), [1])[0] == 0  # one GPU exchanges nothing
    assert strategy_buffers(wl, Strategy("asgd"), [4])[0] == 4 * 1000
    # terngrad levels at 4 GPUs: the first tensor is ternarized (the last one is the classifier, fp32)
    # int8 codes 600 + packed 150 + int8 level sums 600
    tg = Strategy("terngrad", terngrad_fp32_last=True)
    wl3 = _wl((600, 300, 100))
    split_elems = 600  # classifier_tensors = 2: the last two stay fp32
    assert strategy_buffers(wl3, tg, [4])[0] == split_elems + split_elems / 4 + split_elems * 1


def test_memory_per_gpu_total_and_sharding():
    wl = _wl()
    m = memory_per_gpu(wl, ACTS, Strategy("ssgd"), [1, 4], 4, optimizer="momentum")
    # params 4000 + grads 4000 + momentum 4000 + activations 440 + largest-gradient temporary 4 x 600
    assert m.total[0] == 4000 + 4000 + 4000 + 440 + 2400
    assert m.total[1] == m.total[0] + 4000  # DDP's bucket copy of the fp32 gradients
    z3 = memory_per_gpu(wl, ACTS, Strategy("zero3"), [4], 4, optimizer="adam")
    parts = z3.parts(0)
    assert parts["parameters"] == 4000 / 4 + 2 * 4 * 600  # shard + the gathered tensor and the prefetched one
    assert parts["gradients"] == 1000 and parts["optimizer"] == 2000
    assert parts["temporaries"] == max(440 + 2400, 4000 / 4) - 440


def test_cublas_workspaces_by_compute_capability():
    # two workspaces (forward's handle, backward's): 2 x 32 MiB from Hopper on, 2 x (4096 x 2 + 16 x 8) KiB before
    assert blas_workspace_bytes("9.0") == blas_workspace_bytes("10.0") == 2 * 32 * 2**20 == 67108864
    assert blas_workspace_bytes("8.0") == blas_workspace_bytes("7.0") == 2 * (4096 * 2 + 16 * 8) * 1024 == 17039360
    assert blas_workspace_bytes(None) == 0.0
    assert (gpu_capability("h200"), gpu_capability("a100"), gpu_capability("v100")) == ("9.0", "8.0", "7.0")
    assert gpu_capability("mi300x") is None and gpu_capability("no-such-gpu") is None
    m = memory_per_gpu(_wl(), ACTS, Strategy("ssgd"), [1, 4], 4, optimizer="momentum", workspace_bytes=67108864)
    plain = memory_per_gpu(_wl(), ACTS, Strategy("ssgd"), [1, 4], 4, optimizer="momentum")
    assert (m.total - plain.total).tolist() == [67108864, 67108864] and m.parts(1)["workspaces"] == 67108864


def test_a_malformed_compute_capability_is_refused(tmp_path):
    (tmp_path / "gpu_memory.toml").write_text('[x]\ncompute_capability = 9.0\nmemory_bytes = 1e9\n')
    with pytest.raises(PresetError, match="compute_capability"):
        gpu_capability("x", tmp_path)


def test_gpt2_xl_adam_fp32_64_per_gpu_does_not_fit_a_v100():
    from perfmodel.library import load_model
    from perfmodel.presets import presets_dir

    lib = load_model("gpt2-xl", presets_dir())
    wl = Workload("gpt2-xl", lib.tensor_sizes, {"v100": ComputeTime("linear", t1_s=1.0)})
    acts = load_activations("gpt2-xl")
    cap, _ = gpu_memory_bytes("v100")
    assert cap == 16 * 2**30
    for s in ("ssgd", "zero3"):
        m = memory_per_gpu(wl, acts, Strategy(s), [8, 512], 64, optimizer="adam")
        assert not fits(m.total, cap).any()
    # the model state alone, 16 bytes per parameter, is 1.5x the V100's memory
    assert 16 * lib.parameters > cap


def test_bad_choices_raise():
    with pytest.raises(SpecError):
        model_state_bytes(10, [1], optimizer="lamb")
    with pytest.raises(SpecError):
        model_state_bytes(10, [1], precision="fp8")
    with pytest.raises(SpecError):
        Activations("x", -1.0, 0.0, 0.0, "")


@pytest.mark.parametrize("name,batches", [("lenet", (32, 128)),
                                           pytest.param("resnet20", (16, 64), marks=pytest.mark.slow)])  # 15-30 s
def test_estimate_within_15pct_of_torch_measured_peak(name, batches):
    pytest.importorskip("torch")
    from perfmodel.lab.profile.memory_peak import check

    acts = load_activations(name)
    for b in batches:
        for opt in ("momentum", "adam"):
            c = check(name, acts, b, opt)
            assert abs(c.error) <= 0.15, (name, b, opt, c.measured_bytes, c.estimated_bytes)
    # and the activation term grows with the batch as the measurement does
    lo, hi = (check(name, acts, b, "momentum") for b in batches)
    grow_est, grow_meas = hi.estimated_bytes - lo.estimated_bytes, hi.measured_bytes - lo.measured_bytes
    assert grow_est == pytest.approx(grow_meas, rel=0.15)


def test_activation_inventory_present_for_every_library_model():
    from perfmodel.library import model_names
    from perfmodel.presets import presets_dir

    for name in model_names(presets_dir()):
        a = load_activations(name)
        assert a is not None and a.bytes_per_sample > 0, name
    assert np.isfinite(load_activations("gpt2-xl").bytes_per_sample)


def test_transformer_activations_follow_korthikanti_in_fp32():
    """GPT-2 XL (48 layers, h 1600, 25 heads, vocab 50257, s 1024): per layer 66 s h + 9 a s^2 bytes per
    sample, plus the embedding output 4 s h and the logits with their log-softmax 8 s V."""
    s, h, a, v, layers = 1024, 1600, 25, 50257, 48
    expect = layers * (66 * s * h + 9 * a * s * s) + 4 * s * h + 8 * s * v
    acts = load_activations("gpt2-xl")
    assert acts.bytes_per_sample == expect
    assert acts.output_bytes_per_sample == 4 * s * v
    # the fp16 form of the same count is the paper's s h (34 + 5 a s / h) per layer
    fp16_layer = s * h * (34 + 5 * a * s / h)
    masks = 2 * s * h + a * s * s
    assert 66 * s * h + 9 * a * s * s == 2 * (fp16_layer - masks) + masks


@pytest.mark.parametrize("cluster,workspace", [("dgx1-v100", 17039360), ("hgx-h200", 67108864)])
def test_predict_and_plan_count_the_clusters_gpu_workspaces(cluster, workspace):
    from perfmodel.cluster_input import resolve_cluster
    from perfmodel.library import load_model
    from perfmodel.memory import with_memory
    from perfmodel.plan import Constraints, PlanInput, candidates, search, work_from
    from perfmodel.presets import presets_dir

    c = resolve_cluster(cluster)
    lib = load_model("resnet50", presets_dir())
    wl = Workload("resnet50", lib.tensor_sizes, {c.gpu: ComputeTime("linear", t1_s=0.1)})
    acts = load_activations("resnet50")
    plain = memory_per_gpu(wl, acts, Strategy("ssgd"), [8], 32, optimizer="momentum").total[0]
    recs, _ = with_memory([{"strategy": "ssgd", "gpus": 8, "batch_per_gpu": 32}], [], wl, c, [Strategy("ssgd")])
    assert recs[0]["memory_per_gpu_bytes"] == plain + workspace
    inp = PlanInput(work_from(samples=1e6), Constraints(gpus_max=8), acts, 80e9, batches=(32,),
                    workspace_bytes=blas_workspace_bytes(gpu_capability(c.gpu)))
    rows = [r for r in search(wl, c, candidates(c), inp) if r["gpus"] == 8]
    assert rows and all(r["memory"]["workspaces"] == workspace for r in rows)


def test_a_described_gpu_counts_the_workspaces_of_the_capability_it_is_given(tmp_path):
    # an unlisted GPU has no preset capability: none, 0 bytes; given 9.0, 2 x 32 MiB; given 8.6, 2 x 8.125 MiB
    from perfmodel.cluster_input import ClusterOptions, resolve_cluster
    from perfmodel.memory import cluster_workspace_bytes

    def custom(cap=None):
        return resolve_cluster("custom", ClusterOptions(gpu="gh", gpu_tflops="fp32=60", gpus_per_node=4,
                                                        network="ib-ndr", gpu_capability=cap))

    assert custom().gpu_compute_capability is None and cluster_workspace_bytes(custom()) == 0.0
    assert cluster_workspace_bytes(custom("9.0")) == 67108864
    assert cluster_workspace_bytes(custom("8.6")) == 17039360
    # over a preset: the given capability wins over gpu_memory.toml's (the h200's 9.0)
    h200 = resolve_cluster("hgx-h200")
    assert cluster_workspace_bytes(h200) == 67108864
    assert cluster_workspace_bytes(resolve_cluster("hgx-h200", ClusterOptions(gpu_capability="7.0"))) == 17039360
    # an inline [gpu] table in a cluster file carries it
    (tmp_path / "c.toml").write_text('gpus_per_node = 8\nintra = "nvswitch-h100"\nnetwork = "8xib-ndr"\n[gpu]\n'
                                     'name = "gh200"\npeak_flops = 67e12\nmemory_bytes = 96e9\n'
                                     'host = "pcie5"\ncompute_capability = "9.0"\n')
    assert cluster_workspace_bytes(resolve_cluster(str(tmp_path / "c.toml"))) == 67108864
    for bad in ("9", "nine", "9.0.1", ""):
        with pytest.raises((SpecError, PresetError), match="compute_capability"):
            custom(bad)
    with pytest.raises(SpecError, match="9.0"):
        from perfmodel.specs import Cluster, Link

        Cluster("c", 1, Link(1e-6, 1e9), Link(1e-6, 1e9), Link(1e-6, 1e9), gpu_compute_capability="x")


def test_the_peak_check_runs_native_mixed_precision_and_estimates_the_models_mixed_form():
    # precision "mixed": forward under torch.autocast(bfloat16) with fp32 parameters; the estimate is
    # perfmodel.memory's "mixed" (2 + 2 + 4 bytes of model state per parameter for momentum's 4)
    torch = pytest.importorskip("torch")
    from perfmodel.lab.profile import memory_peak as mp
    from perfmodel.library import load_model
    from perfmodel.presets import presets_dir

    seen = []
    real = mp.build_torch_model

    def spy(name):
        model, shape, classes = real(name)
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                m.register_forward_hook(lambda mod, i, o: seen.append(o.dtype))
        return model, shape, classes

    mp.build_torch_model = spy
    try:
        mp.training_step("lenet", 4, "momentum", "cpu", "mixed")()
        mp.training_step("lenet", 4, "momentum", "cpu", "fp32")()
    finally:
        mp.build_torch_model = real
    assert seen == [torch.bfloat16] * 2 + [torch.float32] * 2
    with pytest.raises(SpecError, match="precision"):
        mp.training_step("lenet", 4, "momentum", "cpu", "fp16x")
    acts = load_activations("lenet")
    mixed = mp.estimated_bytes("lenet", acts, 8, "momentum", None, "mixed")
    fp32 = mp.estimated_bytes("lenet", acts, 8, "momentum", None, "fp32")
    psi = 431080  # LeNet-5 of trainers.models: the parameters
    act32 = float(activation_bytes(acts, 8, "fp32"))
    # autocast's model state: 4 + 2 (weight copies) + 4 (fp32 gradients) + 4 (momentum) = 14 bytes per
    # parameter against fp32's 12; activations halved; the temporaries' gradient of the largest tensor 4 -> 2
    largest = max(load_model("lenet", presets_dir()).tensor_sizes)
    assert fp32 - mixed == pytest.approx(act32 / 2 + 2 * largest - 2 * psi)
    assert mixed == pytest.approx(14 * psi + act32 / 2 + 2 * largest)


def test_the_adopted_autocast_form_is_the_candidate_frozen_before_the_h200_run():
    """results/gpu/h200_memory_mixed_frozen_s26.txt froze the ZeRO form's "mixed" estimates and a candidate
    ("native" = mixed + 2 Psi) before the run that chose the candidate: the model now gives the candidate."""
    from pathlib import Path

    from perfmodel.lab.profile.memory_peak import estimated_bytes

    frozen = Path(__file__).resolve().parents[1] / "results" / "gpu" / "h200_memory_mixed_frozen_s26.txt"
    rows = [line.split() for line in frozen.read_text().splitlines() if line and not line.startswith(("#", "model"))]
    assert len(rows) == 44
    for name, batch, opt, _, native in rows:
        est = estimated_bytes(name, load_activations(name), int(batch), opt, "9.0", "mixed") / 2**20
        assert est == pytest.approx(float(native), abs=0.051), (name, batch, opt)
