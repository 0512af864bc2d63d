"""The model library: per-tensor gradient sizes and forward FLOPs of common networks.

One JSON file per model in data/presets/models/ (written by data/presets/models/generate.py from the
real torchvision, transformers and trainers.models constructors; see data/presets/README.md):

    {"model": "resnet18", "parameters": 11689512, "forward_flops": 3.63e9,
     "input": "one 3x224x224 image", "source": "...",
     "tensors": [["conv1.weight", 9408, 236027904], ["bn1.weight", 64, 0], ...]}

Each tensor row is [name, elements, forward FLOPs per sample charged to it]: a layer's FLOPs (as
torch.utils.flop_counter counts them: 2 per multiply-add of matmuls and convolutions) on its weight
tensor, 0 on biases and norm parameters. ``forward_flops`` is the whole forward pass per sample,
including FLOPs no parameter owns (attention score and value matmuls).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .specs import SpecError


class LibraryError(SpecError):
    """A library model is unknown, or its file is missing or malformed."""


@dataclass(frozen=True)
class LibraryModel:
    """One network of the library: tensor names, sizes (elements) and forward FLOPs per sample."""

    name: str
    tensor_names: tuple[str, ...]
    tensor_sizes: tuple[int, ...]
    tensor_flops: tuple[float, ...]
    forward_flops: float
    input: str
    source: str

    @property
    def parameters(self) -> int:
        return int(sum(self.tensor_sizes))


def library_dir(presets_root: Path) -> Path:
    return presets_root / "models"


def normalize(name: str) -> str:
    """Library names are lower case with hyphens: "Inception_V3" -> "inception-v3"."""
    return name.strip().lower().replace("_", "-")


def model_names(presets_root: Path) -> list[str]:
    """Names of every library model."""
    d = library_dir(presets_root)
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def read_model(path: Path) -> LibraryModel:
    """A library model file; malformed content raises LibraryError naming the file and the key."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LibraryError(f"model file {path} is missing") from None
    except ValueError as e:
        raise LibraryError(f"model file {path} is malformed: {e}") from None
    for key in ("model", "tensors", "forward_flops", "input"):
        if key not in data:
            raise LibraryError(f"model file {path}: missing key {key!r}")
    names, sizes, flops = [], [], []
    for i, row in enumerate(data["tensors"]):
        if (not isinstance(row, list) or len(row) != 3 or not isinstance(row[0], str)
                or isinstance(row[1], bool) or not isinstance(row[1], int) or row[1] < 1
                or isinstance(row[2], bool) or not isinstance(row[2], (int, float)) or row[2] < 0):
            raise LibraryError(f"model file {path}: tensors[{i}] must be [name, elements > 0, flops >= 0], "
                               f"got {row!r}")
        names.append(row[0])
        sizes.append(int(row[1]))
        flops.append(float(row[2]))
    if "parameters" in data and data["parameters"] != sum(sizes):
        raise LibraryError(f"model file {path}: parameters {data['parameters']} != sum of tensors {sum(sizes)}")
    return LibraryModel(str(data["model"]), tuple(names), tuple(sizes), tuple(flops), float(data["forward_flops"]),
                        str(data["input"]), str(data.get("source", "")))


def load_model(name: str, presets_root: Path) -> LibraryModel:
    """The library model ``name`` (case and _/- insensitive)."""
    key = normalize(name)
    path = library_dir(presets_root) / f"{key}.json"
    if not path.exists():
        raise LibraryError(f"unknown model {name!r}; library: {', '.join(model_names(presets_root))}")
    return read_model(path)
