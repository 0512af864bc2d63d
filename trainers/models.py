"""The registry of the papers' networks (trainers.nets: plain ``torch.nn``, no torchvision).

Every model returns logits (no softmax). Parameter counts are pinned by the tests against the
published figures; ``tensor_sizes`` gives the per-tensor gradient sizes that the performance model
reads (it builds on the ``meta`` device, so it allocates nothing and answers in milliseconds).

CLI::

    python -m trainers.models list
    python -m trainers.models export-tensors OUTDIR [--models lenet,resnet20]

Example::

    >>> from trainers.models import build_model, tensor_sizes
    >>> model = build_model("lenet")
    >>> sum(n for _, n in tensor_sizes("lenet"))
    431080
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from trainers.nets.cifar_resnets import resnet20, wrn_16_4
from trainers.nets.imagenet import alexnet, googlenet, resnet50, vgg_a
from trainers.nets.small_cnns import cifar10_quick, cifarnet, gem_cnn, lenet

__all__ = [
    "ModelInfo",
    "MODELS",
    "build_model",
    "model_names",
    "input_shape",
    "tensor_sizes",
    "tensors_record",
    "export_tensors",
    "main",
]


# --------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class ModelInfo:
    """A registered network: its builder, input shape (C, H, W) in pixels, classes, source."""

    name: str
    builder: Callable[[int], nn.Module]
    input_shape: tuple[int, int, int]
    num_classes: int
    dataset: str
    source: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must be a non-empty string")
        if (len(self.input_shape) != 3
                or not all(isinstance(v, int) and v > 0 for v in self.input_shape)):
            raise ValueError(f"input_shape must be three positive ints (C, H, W), "
                             f"got {self.input_shape!r}")
        if not isinstance(self.num_classes, int) or self.num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {self.num_classes!r}")
        if not callable(self.builder):
            raise ValueError("builder must be callable(num_classes) -> nn.Module")


_ENTRIES = (
    ModelInfo("lenet", lenet, (1, 28, 28), 10, "mnist",
              "Caffe LeNet, BVLC/caffe examples/mnist/lenet_train_test.prototxt, as named by "
              "TernGrad (Wen et al. 2017, sec. 4.1; the LeNet docstring of wenwei202/terngrad "
              "inception/slim/models.py). 431,080 parameters. Note: TernGrad's TF port pads its "
              "convolutions SAME, which would give 1,256,080."),
    ModelInfo("gem-cnn", gem_cnn, (1, 28, 28), 10, "mnist",
              "GEM MNIST CNN, Hermans & Louppe 2018 (hermans2018_gem), as restored in "
              "docs/algorithms.md section 4. 163,790 parameters."),
    ModelInfo("cifarnet", cifarnet, (3, 24, 24), 10, "cifar10",
              "TernGrad CifarNet (Wen et al. 2017, sec. 4.1) = cifar10_alexnet in "
              "wenwei202/terngrad inception/slim/models.py (the TensorFlow CIFAR-10 tutorial "
              "net) on 24x24 crops (run_multi_gpus_cifar10.sh IMAGE_SIZE=24). 1,068,298 "
              "parameters; 1,756,426 on uncropped 32x32 input."),
    ModelInfo("cifar10-quick", cifar10_quick, (3, 32, 32), 10, "cifar10",
              "Caffe cifar10_quick, BVLC/caffe examples/cifar10/cifar10_quick_train_test.prototxt; "
              "Zhang et al. 2016 use a CIFAR-10 net that 'closely mimics' the Caffe example. "
              "145,578 parameters."),
    ModelInfo("resnet20", resnet20, (3, 32, 32), 10, "cifar10",
              "He et al. 2016, Deep Residual Learning, sec. 4.2: ResNet-20 (n=3), option A "
              "identity shortcuts; used by Barkai et al. 2020. 269,722 parameters (0.27M)."),
    ModelInfo("wrn-16-4", wrn_16_4, (3, 32, 32), 10, "cifar10",
              "Zagoruyko & Komodakis 2016, Wide Residual Networks: WRN-16-4, no dropout "
              "(paper: 2.7M); used by Barkai et al. 2020. 2,748,890 parameters for 10 classes."),
    ModelInfo("alexnet", alexnet, (3, 224, 224), 1000, "imagenet",
              "Single-tower AlexNet (Krizhevsky 2014, 'One weird trick'), torchvision.models."
              "alexnet layout; TernGrad and Zhang et al. 2016 ImageNet model. 61,100,840 "
              "parameters."),
    ModelInfo("vgg-a", vgg_a, (3, 224, 224), 1000, "imagenet",
              "Simonyan & Zisserman 2014, VGG configuration A (VGG-11), no BN, torchvision vgg11 "
              "layout; TernGrad 'VggNet-A' (sec. 5). 132,863,336 parameters."),
    ModelInfo("googlenet", googlenet, (3, 224, 224), 1000, "imagenet",
              "Szegedy et al. 2015 Inception v1 without auxiliary heads, in the TF-slim "
              "inception_v1 form TernGrad ran (BN on every conv, 3x3 kernels in the '5x5' branch; "
              "= torchvision googlenet(aux_logits=False)). 6,624,904 parameters; the paper's "
              "original form has about 7.0M."),
    ModelInfo("resnet50", resnet50, (3, 224, 224), 1000, "imagenet",
              "He et al. 2016 ResNet-50, torchvision layout (stride on the 3x3 conv); DASO "
              "(Coquelin et al. 2021) and Barkai et al. 2020. 25,557,032 parameters."),
)

MODELS: dict[str, ModelInfo] = {info.name: info for info in _ENTRIES}


def model_names() -> list[str]:
    """Names of the registered models, in registry order."""
    return list(MODELS)


def _info(name: str) -> ModelInfo:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(MODELS)}") from None


def build_model(name: str, num_classes: int | None = None) -> nn.Module:
    """Build the registered network `name` (fresh random weights, float32, CPU).

    num_classes overrides the registry's class count (e.g. 100 for CIFAR-100).
    Raises ValueError naming the known models for an unknown name.
    """
    info = _info(name)
    if num_classes is None:
        num_classes = info.num_classes
    if not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
    return info.builder(num_classes)


def input_shape(name: str) -> tuple[int, int, int]:
    """Input shape (channels, height, width) in pixels that the model `name` expects."""
    return _info(name).input_shape


def tensor_sizes(name: str, num_classes: int | None = None) -> list[tuple[str, int]]:
    """(parameter name, number of elements) in `model.named_parameters()` order.

    Built on the meta device: no memory is allocated and no weights are initialised for real.
    """
    with torch.device("meta"):
        model = build_model(name, num_classes)
    return [(pname, int(p.numel())) for pname, p in model.named_parameters()]


# --------------------------------------------------------------------------- export CLI

def tensors_record(name: str) -> dict:
    """The JSON record of `name` written by export-tensors."""
    sizes = tensor_sizes(name)
    return {
        "workload": name,
        "parameters": sum(n for _, n in sizes),
        "tensors": [[pname, n] for pname, n in sizes],
        "source": _info(name).source,
    }


def _dumps_record(record: dict) -> str:
    """JSON text with one tensor per line (readable diffs)."""
    head = {k: v for k, v in record.items() if k != "tensors"}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    rows = ",\n".join(f"    {json.dumps(t)}" for t in record["tensors"])
    return "{\n" + "\n".join(lines) + '\n  "tensors": [\n' + rows + "\n  ]\n}\n"


def export_tensors(outdir: str | os.PathLike, names: list[str] | None = None) -> list[Path]:
    """Write OUTDIR/<name>.json for each model (all by default), atomically; return the paths."""
    from perfmodel.fileio import atomic_write_text

    names = model_names() if names is None else names
    for name in names:
        _info(name)  # validate all names before writing anything
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        path = out / f"{name}.json"
        atomic_write_text(path, _dumps_record(tensors_record(name)))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """`python -m trainers.models list | export-tensors OUTDIR [--models a,b]`."""
    parser = argparse.ArgumentParser(prog="python -m trainers.models",
                                     description="The papers' networks.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="name, parameters, input shape, dataset of every model")
    exp = sub.add_parser("export-tensors", help="write OUTDIR/<name>.json tensor-size files")
    exp.add_argument("outdir")
    exp.add_argument("--models", default=None, help="comma-separated names (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "list":
            for name in model_names():
                total = sum(n for _, n in tensor_sizes(name))
                info = MODELS[name]
                print(f"{name:14s} {total:>12,d}  {'x'.join(map(str, info.input_shape)):>11s}"
                      f"  {info.dataset}")
        else:
            names = None if args.models is None else [s.strip() for s in args.models.split(",")
                                                      if s.strip()]
            for path in export_tensors(args.outdir, names):
                print(path)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
