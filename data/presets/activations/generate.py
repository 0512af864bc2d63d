"""Write data/presets/activations.json: what autograd keeps for backward, per sample, for each library model.

    PYTHONPATH=. python data/presets/activations/generate.py [--only resnet18,lenet] [--torchvision DIR]

CNNs are built for real on the CPU (random initialisation, train mode: torchvision's constructors, the
same ones data/presets/models/generate.py uses, and trainers.models for the papers' networks) and run
forward on batches of 2 and 4 samples (train-mode batch norm needs two) under
torch.autograd.graph.saved_tensors_hooks: every tensor
autograd saves for backward is counted once (by storage), parameters excluded. Per sample = half the batch-4
total less the batch-2 total, so saved tensors that do not grow with the batch (batch-norm statistics)
drop out; ``layers`` splits the per-sample bytes over the model's top-level children (the module whose
forward was running when the tensor was saved). Also recorded: ``output_bytes_per_sample``, the largest
single saved tensor per sample (the gradient buffer backward allocates next to it). fp32 throughout.

Transformers (BERT, GPT-2; transformers is not installed here) use the per-layer count of Korthikanti
et al., "Reducing Activation Recomputation in Large Transformer Models" (MLSys 2023), sec. 4.1: a layer
stores s b h (34 + 5 a s / h) bytes with 2-byte activations and 1-byte dropout masks. Of those, the masks
are 2 s b h + a s^2 b bytes, so in fp32 (4-byte activations, the same masks) a layer stores
s b h 66 + 9 a s^2 b bytes; plus the embedding output (s h) and the LM head's logits and their
log-softmax (2 s V) in fp32.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "activations.json"
_spec = importlib.util.spec_from_file_location("models_generate", HERE.parent / "models" / "generate.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

# transformer shapes: (layers, hidden, heads, vocab, sequence length of the library's FLOPs)
TRANSFORMERS = {
    "bert-base": (12, 768, 12, 30522, gen.BERT_SEQ), "bert-large": (24, 1024, 16, 30522, gen.BERT_SEQ),
    "gpt2-small": (12, 768, 12, 50257, gen.GPT2_SEQ), "gpt2-medium": (24, 1024, 16, 50257, gen.GPT2_SEQ),
    "gpt2-large": (36, 1280, 20, 50257, gen.GPT2_SEQ), "gpt2-xl": (48, 1600, 25, 50257, gen.GPT2_SEQ),
}
KORTHIKANTI = ("Korthikanti et al. 2023 (arXiv 2205.05198) sec. 4.1, per layer s b h (34 + 5 a s / h) bytes at "
               "2-byte activations; fp32 with 1-byte dropout masks: s h (66) + 9 a s^2 bytes per sample, plus "
               "the embedding output s h and logits + log-softmax 2 s V, 4 bytes each")


def transformer_record(name: str) -> dict:
    layers, h, a, vocab, s = TRANSFORMERS[name]
    per_layer = 66 * s * h + 9 * a * s * s
    total = layers * per_layer + 4 * s * h + 4 * 2 * s * vocab
    return {"bytes_per_sample": total, "output_bytes_per_sample": 4 * s * vocab, "fixed_bytes": 0,
            "layers": [["embeddings", 4 * s * h], [f"{layers} layers", layers * per_layer],
                       ["lm head logits + log-softmax", 8 * s * vocab]],
            "input": f"one sequence of {s} tokens", "source": KORTHIKANTI}


def build(name: str) -> tuple[torch.nn.Module, tuple[int, ...], str]:
    if name in gen.PAPERS:
        from trainers import models as tm

        torch.manual_seed(0)
        return tm.build_model(name), tm.input_shape(name), "trainers.models.build_model"
    models = gen._import_torchvision()
    import torchvision

    return (getattr(models, gen.TORCHVISION[name])(weights=None), gen.INPUT_SHAPE.get(name, gen.IMAGENET),
            f"torchvision {torchvision.__version__} models.{gen.TORCHVISION[name]}(weights=None)")


def saved_bytes(model: torch.nn.Module, shape: tuple[int, ...], batch: int) -> tuple[int, dict, int, int]:
    """(bytes autograd saves, {top-level child: bytes}, largest saved tensor's bytes, backward's peak) for one
    forward. The peak is the most backward holds at once, layer by layer: while top-level child k runs its
    backward, the tensors saved by k and the children before it are still alive (autograd frees a node's saved
    tensors once its backward has run), beside the gradient of k's output and the gradient buffer allocated next to
    k's largest saved tensor; the peak is the largest such sum over the children in forward order."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: set[int] = set()
    per_child: dict[str, int] = {}
    big_child: dict[str, int] = {}
    out_child: dict[str, int] = {}
    current = ["(root)"]
    largest = [0]

    def pack(t):
        st = t.untyped_storage()
        key = st.data_ptr()
        if key and key not in params and key not in seen:
            seen.add(key)
            per_child[current[0]] = per_child.get(current[0], 0) + st.nbytes()
            big_child[current[0]] = max(big_child.get(current[0], 0), st.nbytes())
            largest[0] = max(largest[0], st.nbytes())
        return t

    def out_bytes(out) -> int:
        if isinstance(out, torch.Tensor):
            return out.numel() * out.element_size()
        if isinstance(out, (tuple, list)):
            return sum(out_bytes(o) for o in out)
        return 0

    hooks = []
    for cname, child in model.named_children():
        hooks.append(child.register_forward_pre_hook(lambda m, i, n=cname: current.__setitem__(0, n)))
        hooks.append(child.register_forward_hook(
            lambda m, i, o, n=cname: out_child.__setitem__(n, out_child.get(n, 0) + out_bytes(o))))
    model.train()
    x = torch.randn(batch, *shape)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    for hk in hooks:
        hk.remove()
    del out
    peak, alive = 0, 0
    for name in per_child:  # forward order: the order in which the children first saved a tensor
        alive += per_child[name]
        peak = max(peak, alive + out_child.get(name, 0) + big_child.get(name, 0))
    return sum(per_child.values()), per_child, largest[0], peak


def cnn_record(name: str) -> dict:
    model, shape, what = build(name)
    two, c2, big2, peak2 = saved_bytes(model, shape, 2)
    four, c4, big4, peak4 = saved_bytes(model, shape, 4)
    layers = [[k, (c4.get(k, 0) - c2.get(k, 0)) // 2] for k in c4]
    return {"bytes_per_sample": (four - two) // 2, "output_bytes_per_sample": (big4 - big2) // 2,
            "peak_bytes_per_sample": (peak4 - peak2) // 2, "fixed_bytes": 2 * two - four,
            "layers": layers, "input": f"one {'x'.join(map(str, shape))} image",
            "source": f"{what}, train mode; autograd's saved tensors, (batch 4 - batch 2) / 2 "
                      f"(data/presets/activations/generate.py)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    names = [n for n in args.only.split(",") if n] or [*gen.PAPERS, *gen.TORCHVISION, *TRANSFORMERS]
    for name in names:
        rec = transformer_record(name) if name in TRANSFORMERS else cnn_record(name)
        old[name] = rec
        print(f"{name:20s} {rec['bytes_per_sample'] / 2**20:10.2f} MiB/sample", flush=True)
        tmp = OUT.with_suffix(".tmp")
        tmp.write_text(json.dumps(dict(sorted(old.items())), indent=1) + "\n")
        tmp.replace(OUT)


if __name__ == "__main__":
    sys.exit(main())
