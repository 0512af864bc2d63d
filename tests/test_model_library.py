"""The model library: files consistent with themselves, with the papers' tensor files, and with FLOPs
computed by hand; the generator reproduces a committed file."""

import json

import pytest

from perfmodel import presets
from perfmodel.library import LibraryError, load_model, model_names, normalize, read_model

ROOT = presets.presets_dir()
REQUIRED = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vgg11", "vgg16", "vgg19", "alexnet",
            "inception-v3", "googlenet", "densenet121", "mobilenet-v2", "efficientnet-b0", "bert-base", "bert-large",
            "gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl", "lenet", "gem-cnn", "cifarnet", "cifar10-quick",
            "resnet20", "wrn-16-4", "vgg-a")
# published parameter counts (torchvision docs' model tables; Hugging Face model cards; BERT paper)
PUBLISHED = {"resnet18": 11_689_512, "resnet152": 60_192_808, "vgg16": 138_357_544, "inception-v3": 27_161_264,
             "densenet121": 7_978_856, "mobilenet-v2": 3_504_872, "efficientnet-b0": 5_288_548,
             "gpt2-small": 124_439_808, "gpt2-xl": 1_557_611_200}


def test_library_has_the_asked_for_networks():
    names = model_names(ROOT)
    for name in REQUIRED:
        assert name in names
    assert normalize("Inception_V3") == "inception-v3"
    assert load_model("Inception_V3", ROOT).name == "inception-v3"
    with pytest.raises(LibraryError, match="unknown model 'resnet9'"):
        load_model("resnet9", ROOT)


@pytest.mark.parametrize("name", model_names(ROOT))
def test_every_model_file_is_consistent(name):
    m = load_model(name, ROOT)
    assert m.name == name and m.parameters == sum(m.tensor_sizes)
    assert all(f >= 0 for f in m.tensor_flops)
    # biases and normalisation parameters carry no FLOPs; the weights' share never exceeds the whole pass
    for t, f in zip(m.tensor_names, m.tensor_flops):
        if t.endswith(".bias") or ".bn" in t or "norm" in t.lower():
            assert f == 0, (t, f)
    assert 0 < sum(m.tensor_flops) <= m.forward_flops * (1 + 1e-12)
    if name in PUBLISHED:
        assert m.parameters == PUBLISHED[name]


@pytest.mark.parametrize("name", presets.workload_names())
def test_papers_networks_match_the_preset_tensor_files(name):
    """Two independent exports of the same networks (trainers.models export-tensors and the library
    generator) agree tensor by tensor, and the preset workload carries the library's FLOPs."""
    data = json.loads((ROOT / "tensors" / f"{name}.json").read_text())
    m = load_model(name, ROOT)
    assert [tuple(t) for t in data["tensors"]] == list(zip(m.tensor_names, m.tensor_sizes))
    assert presets.load_workload(name).tensor_flops == m.tensor_flops


def test_flops_by_hand():
    lenet = dict(zip(load_model("lenet", ROOT).tensor_names, load_model("lenet", ROOT).tensor_flops))
    assert lenet["conv1.weight"] == 2 * 20 * 24 * 24 * (1 * 5 * 5)  # 20 maps of 24x24, 5x5x1 kernels
    assert lenet["conv2.weight"] == 2 * 50 * 8 * 8 * (20 * 5 * 5)
    assert lenet["ip1.weight"] == 2 * 800 * 500
    assert lenet["ip2.weight"] == 2 * 500 * 10
    r18 = load_model("resnet18", ROOT)
    assert dict(zip(r18.tensor_names, r18.tensor_flops))["fc.weight"] == 2 * 512 * 1000
    assert dict(zip(r18.tensor_names, r18.tensor_flops))["conv1.weight"] == 2 * 64 * 112 * 112 * 3 * 7 * 7
    # GPT-2's LM head is tied to the token embedding: 1024 tokens x 768 x 50257 vocabulary, 2 FLOPs each
    g = load_model("gpt2-small", ROOT)
    assert dict(zip(g.tensor_names, g.tensor_flops))["transformer.wte.weight"] == 2 * 1024 * 768 * 50257
    # BERT-base: a 768x768 query projection over 128 tokens
    b = load_model("bert-base", ROOT)
    assert dict(zip(b.tensor_names, b.tensor_flops))["bert.encoder.layer.0.attention.self.query.weight"] == \
        2 * 128 * 768 * 768


def test_malformed_model_file_names_file_and_key(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"model": "m", "forward_flops": 1.0, "input": "x", "tensors": [["w", 4, -1]]}))
    with pytest.raises(LibraryError, match=r"m.json: tensors\[0\] must be"):
        read_model(path)
    path.write_text(json.dumps({"model": "m", "input": "x", "tensors": []}))
    with pytest.raises(LibraryError, match="missing key 'forward_flops'"):
        read_model(path)


def test_generator_reproduces_a_committed_file():
    """The JSON is generated, not typed: rebuilding two papers' networks gives the committed records."""
    pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", ROOT / "models" / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name in ("lenet", "resnet20"):
        assert gen.dumps(gen.build(name)) == (ROOT / "models" / f"{name}.json").read_text()
