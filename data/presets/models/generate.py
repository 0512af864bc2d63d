"""Write the model library (data/presets/models/<name>.json) from the real architectures.

    pip install torchvision transformers      # only for this script; the JSON files are committed
    PYTHONPATH=. python data/presets/models/generate.py [--only resnet18,gpt2-small]

Every model is built with random initialisation on PyTorch's meta device (no weights downloaded, no
memory allocated) and run forward once on a batch of two samples (train mode) under torch.utils.flop_counter.FlopCounterMode.
Each parameter tensor gets the FLOPs of the module that owns it as its weight ("weight"), counted for
that module alone (its total less its submodules'), 0 for biases and norm parameters; FlopCounterMode
counts matmuls, convolutions and attention (2 FLOPs per multiply-add) and nothing elementwise.
Tied weights (GPT-2's and BERT's output embedding) get the FLOPs of every module that uses them.
FLOPs that belong to no weight (attention score/value matmuls) appear only in ``forward_flops``,
except in nn.MultiheadAttention (torchvision's ViT), whose own FLOPs, attention included, go to its
in_proj_weight.

Inputs (one sample): ImageNet models one 3x224x224 image (inception-v3: 3x299x299,
efficientnet-b4: 3x380x380); the papers'
networks their own input shape (trainers.models.input_shape); BERT one sequence of 128 tokens
(pre-training phase 1 length, Devlin et al. 2019 sec. A.2) with the masked-LM and next-sentence
heads (BertForPreTraining); GPT-2 one sequence of 1024 tokens (its context length) with the LM head.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

OUT = Path(__file__).resolve().parent
IMAGENET = (3, 224, 224)
# models trained at another resolution: inception-v3 at 299 (Szegedy et al. 2016); efficientnet-b4 at 380
# (Tan & Le 2019, Table 1 lists B4's resolution; torchvision's efficientnet_b4 weights use crop 380)
INPUT_SHAPE = {"inception-v3": (3, 299, 299), "efficientnet-b4": (3, 380, 380)}

# library name -> torchvision constructor name (input 3x224x224 unless said)
TORCHVISION = {
    "resnet18": "resnet18", "resnet34": "resnet34", "resnet101": "resnet101", "resnet152": "resnet152",
    "resnext50-32x4d": "resnext50_32x4d", "wide-resnet50-2": "wide_resnet50_2",
    "vgg11": "vgg11", "vgg13": "vgg13", "vgg16": "vgg16", "vgg19": "vgg19", "vgg16-bn": "vgg16_bn",
    "inception-v3": "inception_v3", "densenet121": "densenet121", "densenet169": "densenet169",
    "densenet201": "densenet201", "mobilenet-v2": "mobilenet_v2", "mobilenet-v3-large": "mobilenet_v3_large",
    "efficientnet-b0": "efficientnet_b0", "efficientnet-b4": "efficientnet_b4",
    "shufflenet-v2-x1-0": "shufflenet_v2_x1_0",
    "squeezenet1-0": "squeezenet1_0", "vit-b-16": "vit_b_16", "convnext-tiny": "convnext_tiny",
}
# the papers' networks (trainers.models); alexnet, googlenet and resnet50 there are the torchvision layouts
PAPERS = ("lenet", "gem-cnn", "cifarnet", "cifar10-quick", "resnet20", "wrn-16-4", "alexnet", "vgg-a",
          "googlenet", "resnet50")
BERT = {"bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
        "bert-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)}
GPT2 = {"gpt2-small": dict(n_embd=768, n_layer=12, n_head=12), "gpt2-medium": dict(n_embd=1024, n_layer=24, n_head=16),
        "gpt2-large": dict(n_embd=1280, n_layer=36, n_head=20), "gpt2-xl": dict(n_embd=1600, n_layer=48, n_head=25)}
BERT_SEQ, GPT2_SEQ = 128, 1024
SAMPLES = 2


def _import_torchvision():
    try:
        import torchvision  # noqa: F401
    except RuntimeError:
        # a torchvision wheel built for another torch fails to register its C++ ops at import; the model
        # constructors are pure Python and need none of them
        for mod in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[mod]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
        import torchvision  # noqa: F401
    from torchvision import models

    return models


def tensor_flops(model: torch.nn.Module, *inputs) -> tuple[list[list], float]:
    """[[name, elements, forward FLOPs on it], ...] and the whole forward pass's FLOPs, one sample."""
    model.train()
    with FlopCounterMode(display=False) as counter:
        model(*inputs)
    # the inputs hold SAMPLES samples (train-mode batch norm needs more than one); FLOPs are per sample
    counts = {k: sum(v.values()) / SAMPLES for k, v in counter.get_flop_counts().items()}
    total = float(counts.get("Global", 0))
    root = type(model).__name__
    canonical = {id(p): name for name, p in model.named_parameters()}
    flops = {name: 0.0 for name in canonical.values()}
    for fqn, module in model.named_modules(remove_duplicate=False):
        key = f"{root}.{fqn}" if fqn else root
        own = counts.get(key, 0) - sum(counts.get(f"{key}.{c}", 0) for c, _ in module.named_children())
        weight = module._parameters.get("weight")
        if weight is None:  # nn.MultiheadAttention: in_proj_weight (its attention matmuls ride on it)
            weight = next((p for n, p in module._parameters.items() if n.endswith("weight") and p is not None), None)
        if weight is not None and own > 0:
            flops[canonical[id(weight)]] += float(own)
    rows = [[name, int(p.numel()), flops[name]] for name, p in model.named_parameters()]
    return rows, total


def record(name: str, model: torch.nn.Module, inputs: tuple, input_text: str, source: str) -> dict:
    rows, total = tensor_flops(model, *inputs)
    return {"model": name, "parameters": sum(r[1] for r in rows), "forward_flops": total,
            "input": input_text, "source": source, "tensors": rows}


def build(name: str) -> dict:
    gen = "data/presets/models/generate.py"
    if name in PAPERS:
        from trainers import models as tm

        with torch.device("meta"):
            model = tm.build_model(name)
        shape = tm.input_shape(name)
        x = torch.empty(SAMPLES, *shape, device="meta")
        return record(name, model, (x,), f"one {'x'.join(map(str, shape))} image",
                      f"{tm.MODELS[name].source} Built with trainers.models.build_model; FLOPs by {gen}.")
    if name in TORCHVISION:
        models = _import_torchvision()
        import torchvision

        ctor = TORCHVISION[name]
        with torch.device("meta"):
            model = getattr(models, ctor)(weights=None)
        shape = INPUT_SHAPE.get(name, IMAGENET)
        x = torch.empty(SAMPLES, *shape, device="meta")
        extra = " with the auxiliary classifier (its default; trained with it)" if name == "inception-v3" else ""
        return record(name, model, (x,), f"one {'x'.join(map(str, shape))} image",
                      f"torchvision {torchvision.__version__} models.{ctor}(weights=None){extra}, 1000 classes; "
                      f"FLOPs by {gen}.")
    import transformers

    ids = None
    if name in BERT:
        cfg = transformers.BertConfig(vocab_size=30522, **BERT[name], attn_implementation="eager")
        with torch.device("meta"):
            model = transformers.BertForPreTraining(cfg)
        ids = torch.zeros(SAMPLES, BERT_SEQ, dtype=torch.long, device="meta")
        return record(name, model, (ids,), f"one sequence of {BERT_SEQ} tokens",
                      f"transformers {transformers.__version__} BertForPreTraining(BertConfig(vocab_size=30522, "
                      f"{', '.join(f'{k}={v}' for k, v in BERT[name].items())})): BERT-{name.split('-')[1]} "
                      f"(Devlin et al. 2019) with masked-LM and next-sentence heads, output embedding tied to "
                      f"the input one; FLOPs by {gen}.")
    if name in GPT2:
        cfg = transformers.GPT2Config(vocab_size=50257, n_positions=1024, **GPT2[name], attn_implementation="eager")
        with torch.device("meta"):
            model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.zeros(SAMPLES, GPT2_SEQ, dtype=torch.long, device="meta")
        return record(name, model, (ids,), f"one sequence of {GPT2_SEQ} tokens",
                      f"transformers {transformers.__version__} GPT2LMHeadModel(GPT2Config(vocab_size=50257, "
                      f"n_positions=1024, {', '.join(f'{k}={v}' for k, v in GPT2[name].items())})): GPT-2 "
                      f"{name.split('-')[1]} (Radford et al. 2019), LM head tied to the token embedding; "
                      f"FLOPs by {gen}.")
    raise SystemExit(f"unknown model {name!r}")


def dumps(rec: dict) -> str:
    head = {k: v for k, v in rec.items() if k != "tensors"}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    rows = ",\n".join(f"    {json.dumps(t)}" for t in rec["tensors"])
    return "{\n" + "\n".join(lines) + '\n  "tensors": [\n' + rows + "\n  ]\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma list of library names (default: all)")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or [*PAPERS, *TORCHVISION, *BERT, *GPT2]
    for name in names:
        rec = build(name)
        (OUT / f"{name}.json").write_text(dumps(rec))
        print(f"{name:20s} {rec['parameters']:>13,d} parameters {rec['forward_flops'] / 1e9:10.2f} GFLOP/sample "
              f"({sum(t[2] for t in rec['tensors']) / rec['forward_flops']:.1%} on weights)")


if __name__ == "__main__":
    main()
