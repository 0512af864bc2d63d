"""trainers.models: parameter counts against published / hand-derived figures, forward shapes,
architecture details that pin the variant, and the committed tensor-size JSONs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from trainers import models
from trainers.nets import cifar_resnets, layers, small_cnns
from trainers.models import (MODELS, ModelInfo, build_model, input_shape, model_names,
                             tensor_sizes, tensors_record)

REPO = Path(__file__).resolve().parents[1]
TENSORS_DIR = REPO / "data" / "presets" / "tensors"
NAMES = ["lenet", "gem-cnn", "cifarnet", "cifar10-quick", "resnet20", "wrn-16-4", "alexnet",
         "vgg-a", "googlenet", "resnet50"]
SMALL = NAMES[:6]
IMAGENET = NAMES[6:]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ---------------------------------------------------------------- hand-derived counts

def conv(cin: int, cout: int, k: int, bias: bool = True) -> int:
    return cin * cout * k * k + (cout if bias else 0)


def fc(i: int, o: int) -> int:
    return i * o + o


def bn(c: int) -> int:
    return 2 * c


def _resnet20() -> int:
    total = conv(3, 16, 3, False) + bn(16) + fc(64, 10)
    cin = 16
    for cout in (16, 32, 64):
        for _ in range(3):
            total += conv(cin, cout, 3, False) + bn(cout) + conv(cout, cout, 3, False) + bn(cout)
            cin = cout  # option A: the shortcut has no parameters
    return total


def _wrn(depth: int, k: int, classes: int) -> int:
    n = (depth - 4) // 6
    total, cin = conv(3, 16, 3, False), 16
    for cout in (16 * k, 32 * k, 64 * k):
        for _ in range(n):
            total += bn(cin) + conv(cin, cout, 3, False) + bn(cout) + conv(cout, cout, 3, False)
            total += conv(cin, cout, 1, False) if cin != cout else 0
            cin = cout
    return total + bn(cin) + fc(cin, classes)


def _vgg_a() -> int:
    chans = [3, 64, 128, 256, 256, 512, 512, 512, 512]
    convs = sum(conv(a, b, 3) for a, b in zip(chans[:-1], chans[1:]))
    return convs + fc(512 * 7 * 7, 4096) + fc(4096, 4096) + fc(4096, 1000)


def _alexnet() -> int:
    return (conv(3, 64, 11) + conv(64, 192, 5) + conv(192, 384, 3) + conv(384, 256, 3)
            + conv(256, 256, 3) + fc(9216, 4096) + fc(4096, 4096) + fc(4096, 1000))


HAND = {
    "lenet": conv(1, 20, 5) + conv(20, 50, 5) + fc(50 * 4 * 4, 500) + fc(500, 10),
    "gem-cnn": conv(1, 10, 5) + conv(10, 20, 5) + fc(320, 300) + fc(300, 200) + fc(200, 10),
    # 24x24 input, two stride-2 SAME pools -> 6x6x64
    "cifarnet": conv(3, 64, 5) + conv(64, 64, 5) + fc(6 * 6 * 64, 384) + fc(384, 192)
    + fc(192, 10),
    # Caffe ceil-mode pools 32 -> 16 -> 8 -> 4
    "cifar10-quick": conv(3, 32, 5) + conv(32, 32, 5) + conv(32, 64, 5) + fc(64 * 4 * 4, 64)
    + fc(64, 10),
    "resnet20": _resnet20(),
    "wrn-16-4": _wrn(16, 4, 10),
    "alexnet": _alexnet(),
    "vgg-a": _vgg_a(),
}

# Published exact figures for the same architectures.
PUBLISHED = {
    "lenet": 431_080,         # Caffe LeNet; Han et al. 2016 (Deep Compression) Table 2: 431K
    "gem-cnn": 163_790,       # layer list of docs/algorithms.md section 4
    "cifarnet": 1_068_298,    # TensorFlow CIFAR-10 tutorial: "1,068,298 learnable parameters"
    "cifar10-quick": 145_578,  # Caffe cifar10_quick prototxt
    "resnet20": 269_722,      # He et al. 2016 Table 6: 0.27M (option A)
    "wrn-16-4": 2_748_890,    # Zagoruyko & Komodakis 2016: 2.7M
    "alexnet": 61_100_840,    # torchvision model docs (AlexNet_Weights num_params)
    "vgg-a": 132_863_336,     # torchvision model docs (VGG11_Weights num_params)
    "googlenet": 6_624_904,   # torchvision model docs (GoogLeNet_Weights num_params)
    "resnet50": 25_557_032,   # torchvision model docs (ResNet50_Weights num_params)
}
# Rounded figures printed in the papers: (value, tolerance).
PAPER_ROUNDED = {
    "resnet20": (0.27e6, 0.005e6),
    "wrn-16-4": (2.7e6, 0.05e6),
}


def test_registry_names_exact():
    assert model_names() == NAMES
    assert list(MODELS) == NAMES
    for name, info in MODELS.items():
        assert info.name == name
        assert info.source.strip()
        assert info.dataset in {"mnist", "cifar10", "imagenet"}


@pytest.mark.parametrize("name", NAMES)
def test_parameter_count_matches_published(name):
    total = sum(n for _, n in tensor_sizes(name))
    assert total == PUBLISHED[name]
    if name in HAND:
        assert total == HAND[name]
    if name in PAPER_ROUNDED:
        value, tol = PAPER_ROUNDED[name]
        assert abs(total - value) <= tol


@pytest.mark.parametrize("name", SMALL)
def test_small_forward_backward(name):
    torch.manual_seed(0)
    model = build_model(name).train()
    x = torch.randn(2, *input_shape(name))
    y = model(x)
    assert y.shape == (2, MODELS[name].num_classes)
    assert torch.isfinite(y).all()
    y.square().sum().backward()
    # every parameter receives a gradient (fused gradient buffers rely on this)
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert missing == []
    # meta-device sizes agree with the real build
    assert [(n, p.numel()) for n, p in model.named_parameters()] == tensor_sizes(name)


@pytest.mark.parametrize("name", IMAGENET)
def test_imagenet_forward_batch1(name):
    torch.manual_seed(0)
    model = build_model(name).eval()
    assert input_shape(name) == (3, 224, 224)
    with torch.no_grad():
        y = model(torch.randn(1, 3, 224, 224))
    assert y.shape == (1, 1000)
    assert torch.isfinite(y).all()
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[name]
    assert [(n, p.numel()) for n, p in model.named_parameters()] == tensor_sizes(name)


def _weight_layers(model: nn.Module, skip: tuple[str, ...] = ()) -> int:
    return sum(1 for n, m in model.named_modules()
               if isinstance(m, (nn.Conv2d, nn.Linear)) and not any(s in n for s in skip))


def test_depths_match_names():
    with torch.device("meta"):
        assert _weight_layers(build_model("resnet20")) == 20
        assert _weight_layers(build_model("resnet50"), skip=("downsample",)) == 50
        assert _weight_layers(build_model("vgg-a")) == 11
        assert _weight_layers(build_model("lenet")) == 4
        # WRN-16-4: conv1 + 3 groups x 2 blocks x 2 convs + fc, and three 1x1 shortcut convs
        wrn = build_model("wrn-16-4")
    assert _weight_layers(wrn, skip=("shortcut",)) == 14
    assert sum(1 for n, _ in wrn.named_modules() if n.endswith("shortcut")) == 3


def test_resnet20_option_a_shortcut_is_parameter_free_and_exact():
    names = [n for n, _ in tensor_sizes("resnet20")]
    assert not any("shortcut" in n or "downsample" in n for n in names)
    block = cifar_resnets._CifarBasicBlock(16, 32, 2)
    x = torch.randn(2, 16, 8, 8)
    s = block._shortcut(x)
    assert s.shape == (2, 32, 4, 4)
    assert torch.equal(s[:, 8:24], x[:, :, ::2, ::2])
    assert s[:, :8].abs().sum() == 0 and s[:, 24:].abs().sum() == 0


def test_googlenet_is_slim_variant_without_aux_heads():
    with torch.device("meta"):
        model = build_model("googlenet")
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 57  # 3 stem + 9 inception modules x 6
    assert all(c.kernel_size != (5, 5) for c in convs)
    assert all(c.bias is None for c in convs)
    assert not any("aux" in n for n, _ in model.named_modules())
    feats = model.features(torch.empty(1, 3, 224, 224, device="meta"))
    assert tuple(feats.shape) == (1, 1024, 7, 7)


def test_num_classes_override():
    assert sum(n for _, n in tensor_sizes("wrn-16-4", 100)) == _wrn(16, 4, 100)
    assert _wrn(16, 4, 100) - _wrn(16, 4, 10) == 90 * 256 + 90
    y = build_model("resnet20", num_classes=100)(torch.randn(2, 3, 32, 32))
    assert y.shape == (2, 100)
    with pytest.raises(ValueError, match="num_classes"):
        build_model("lenet", num_classes=0)


def test_unknown_model_lists_known_names():
    with pytest.raises(ValueError) as exc:
        build_model("lenet5")
    for name in NAMES:
        assert name in str(exc.value)
    with pytest.raises(ValueError):
        input_shape("nope")


def test_model_info_frozen_and_validated():
    info = MODELS["lenet"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.num_classes = 3
    with pytest.raises(ValueError, match="input_shape"):
        ModelInfo("x", small_cnns.lenet, (28, 28), 10, "mnist", "s")
    with pytest.raises(ValueError, match="num_classes"):
        ModelInfo("x", small_cnns.lenet, (1, 28, 28), 0, "mnist", "s")


def test_cifarnet_on_uncropped_32x32():
    model = small_cnns.cifarnet(10, image_size=32)
    assert sum(p.numel() for p in model.parameters()) == (
        conv(3, 64, 5) + conv(64, 64, 5) + fc(8 * 8 * 64, 384) + fc(384, 192) + fc(192, 10))
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def _tf_same_maxpool_reference(x: np.ndarray, k: int, s: int) -> np.ndarray:
    """TensorFlow SAME max pooling written out: pad_before = total // 2, rest after."""
    h, w = x.shape[-2:]
    oh, ow = -(-h // s), -(-w // s)
    ph = max((oh - 1) * s + k - h, 0) // 2
    pw = max((ow - 1) * s + k - w, 0) // 2
    out = np.empty(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - ph, j * s - pw
            win = x[..., max(r0, 0):min(r0 + k, h), max(c0, 0):min(c0 + k, w)]
            out[..., i, j] = win.max(axis=(-2, -1))
    return out


@pytest.mark.parametrize("size", [24, 12, 7, 5])
def test_tf_same_maxpool_matches_reference(size):
    x = torch.randn(2, 3, size, size)
    got = layers.TFSameMaxPool(3, 2)(x).numpy()
    np.testing.assert_array_equal(got, _tf_same_maxpool_reference(x.numpy(), 3, 2))


def test_cifarnet_lrn_is_tensorflow_lrn():
    """tf.nn.lrn(depth_radius=4, bias=1, alpha=0.001/9, beta=0.75) written out per channel."""
    x = torch.randn(2, 64, 3, 3)
    lrn = small_cnns.cifarnet().lrn1
    xs = x.numpy().astype(np.float64)
    ref = np.empty_like(xs)
    for d in range(64):
        sq = (xs[:, max(d - 4, 0):d + 5] ** 2).sum(axis=1)
        ref[:, d] = xs[:, d] / (1.0 + (0.001 / 9.0) * sq) ** 0.75
    np.testing.assert_allclose(lrn(x).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_cifar10_quick_caffe_pool_sizes():
    model = build_model("cifar10-quick")
    sizes = []
    hooks = [getattr(model, p).register_forward_hook(lambda m, i, o: sizes.append(o.shape[-1]))
             for p in ("pool1", "pool2", "pool3")]
    model(torch.randn(1, 3, 32, 32))
    for h in hooks:
        h.remove()
    assert sizes == [16, 8, 4]
    # no ReLU between ip1 and ip2, as in the prototxt
    names = [n for n, _ in model.named_children()]
    assert names[names.index("ip1") + 1] == "ip2"


def test_tensor_sizes_order_and_names():
    sizes = tensor_sizes("lenet")
    assert sizes == [("conv1.weight", 500), ("conv1.bias", 20), ("conv2.weight", 25000),
                     ("conv2.bias", 50), ("ip1.weight", 400000), ("ip1.bias", 500),
                     ("ip2.weight", 5000), ("ip2.bias", 10)]
    # torchvision-compatible names for the ImageNet models
    assert tensor_sizes("resnet50")[-2:] == [("fc.weight", 2048000), ("fc.bias", 1000)]
    assert tensor_sizes("alexnet")[0] == ("features.0.weight", 64 * 3 * 11 * 11)


# ---------------------------------------------------------------- committed JSONs and CLI

def test_committed_tensor_jsons_match_models():
    files = sorted(p.stem for p in TENSORS_DIR.glob("*.json"))
    assert files == sorted(NAMES)
    for name in NAMES:
        record = json.loads((TENSORS_DIR / f"{name}.json").read_text())
        assert set(record) == {"workload", "parameters", "tensors", "source"}
        assert record == tensors_record(name)
        assert record["parameters"] == sum(n for _, n in record["tensors"]) == PUBLISHED[name]


def test_export_cli_writes_identical_files(tmp_path, capsys):
    assert models.main(["export-tensors", str(tmp_path), "--models", "lenet,resnet20"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet.json", "resnet20.json"]
    for name in ("lenet", "resnet20"):
        assert (tmp_path / f"{name}.json").read_bytes() == \
            (TENSORS_DIR / f"{name}.json").read_bytes()
    out = tmp_path / "bad"
    assert models.main(["export-tensors", str(out), "--models", "lenet,nope"]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and "lenet" in err
