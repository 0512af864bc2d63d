"""MNIST and CIFAR-10/100 readers with checksums (a synthetic dataset: trainers.synthetic_data; sharding
and batching: trainers.batching).

Files are read in their official formats (MNIST: the four idx ``.gz`` files; CIFAR: the
"python version" pickles) and verified: MNIST against the official gzip md5s; CIFAR per batch
file where the official md5 is knowable. A CIFAR folder with fewer images than the official one
(for instance the shared offline subset) is detected, its structure verified, and labelled as a
subset in ``Dataset.info`` instead of failing.

Where the files are looked for (first match wins):
  1. the ``root`` argument, 2. the ``DSGD_DATA_ROOT`` environment variable,
  3. ``data/datasets`` in the repository;
and inside the root a few known sub-folders (``mnist/``, ``MNIST/raw/``, ``cifar-10-batches-py/``,
``cifar10-subset/cifar-10-batches-py/``, ... and ``*/cifar-10-batches-py``).

Example::

    >>> ds = load_dataset("mnist", root="../shared/datasets")
    >>> ds.info.checksum   # "official"

CLI::

    python -m trainers.data download mnist [--root DIR]
    python -m trainers.data info cifar10 [--root DIR] [--test]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import os
import pickle
import shutil
import sys
import tarfile
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from trainers.errors import TrainerError

__all__ = [
    "DatasetError",
    "DatasetMissing",
    "DatasetSpec",
    "DatasetInfo",
    "Dataset",
    "DATASETS",
    "ENV_ROOT",
    "data_root",
    "load_dataset",
    "download",
    "md5sum",
    "main",
]

ENV_ROOT = "DSGD_DATA_ROOT"
_REPO_DEFAULT = Path(__file__).resolve().parents[1] / "data" / "datasets"


class DatasetError(TrainerError):
    """A dataset is missing, corrupt or truncated. The message is one line naming the path(s).
    Missing files raise the subclass DatasetMissing; anything else is a damaged file."""


class DatasetMissing(DatasetError):
    """The dataset's files (or some of them) are not where they are searched for."""


# --------------------------------------------------------------------------- specs

@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset's files live, what they must hash to, and how to normalise it.

    files: {"train": ((filename, official md5, images in that file), ...), "test": (...)}.
    sizes: {"train": images in the official split, "test": ...}.
    mean/std: per channel, for pixels scaled to [0, 1].
    """

    name: str
    num_classes: int
    shape: tuple[int, int, int]
    subdirs: tuple[str, ...]
    files: dict[str, tuple[tuple[str, str, int], ...]]
    sizes: dict[str, int]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    urls: tuple[str, ...]
    archive: tuple[str, str] | None  # (archive filename, md5) for CIFAR; None for MNIST
    reader: str
    source: str

    def __post_init__(self) -> None:
        if self.reader not in ("mnist", "cifar"):
            raise ValueError(f"reader must be 'mnist' or 'cifar', got {self.reader!r}")
        if len(self.mean) != self.shape[0] or len(self.std) != self.shape[0]:
            raise ValueError(f"mean and std need one value per channel ({self.shape[0]})")
        if any(s <= 0 for s in self.std):
            raise ValueError(f"std must be positive, got {self.std}")
        if set(self.files) != {"train", "test"} or set(self.sizes) != {"train", "test"}:
            raise ValueError("files and sizes must have exactly the keys 'train' and 'test'")

    def size(self, train: bool) -> int:
        """Number of images in the official split."""
        return self.sizes["train" if train else "test"]


_CIFAR10_BATCH_MD5 = (
    ("data_batch_1", "c99cafc152244af753f735de768cd75f"),
    ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
    ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"),
    ("data_batch_4", "634d18415352ddfa80567beed471001a"),
    ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"),
)

DATASETS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec(
        name="mnist", num_classes=10, shape=(1, 28, 28),
        subdirs=("mnist", "MNIST/raw", "MNIST", "."),
        files={
            "train": (("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", 60000),
                      ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432", 60000)),
            "test": (("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3", 10000),
                     ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c", 10000)),
        },
        sizes={"train": 60000, "test": 10000},
        mean=(0.1307,), std=(0.3081,),
        urls=("https://ossci-datasets.s3.amazonaws.com/mnist/",
              "http://yann.lecun.com/exdb/mnist/"),
        archive=None, reader="mnist",
        source="LeCun et al., http://yann.lecun.com/exdb/mnist/ (gzip md5s as published with "
               "torchvision and shared/datasets/README.md); mean/std of the training set",
    ),
    "cifar10": DatasetSpec(
        name="cifar10", num_classes=10, shape=(3, 32, 32),
        subdirs=("cifar-10-batches-py", "cifar10/cifar-10-batches-py",
                 "cifar10-subset/cifar-10-batches-py", "CIFAR10/cifar-10-batches-py"),
        files={
            "train": tuple((f, md5, 10000) for f, md5 in _CIFAR10_BATCH_MD5),
            "test": (("test_batch", "40351d587109b95175f43aff81a1287e", 10000),),
        },
        sizes={"train": 50000, "test": 10000},
        mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616),
        urls=("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
        archive=("cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a"),
        reader="cifar",
        source="Krizhevsky 2009, https://www.cs.toronto.edu/~kriz/cifar.html (python version); "
               "per-channel mean/std of the 50,000 training images",
    ),
    "cifar100": DatasetSpec(
        name="cifar100", num_classes=100, shape=(3, 32, 32),
        subdirs=("cifar-100-python", "cifar100/cifar-100-python", "CIFAR100/cifar-100-python"),
        files={
            "train": (("train", "16019d7e3df5f24257cddd939b257f8d", 50000),),
            "test": (("test", "f0ef6b0ae62326f3e7ffdfab6717acfc", 10000),),
        },
        sizes={"train": 50000, "test": 10000},
        mean=(0.5071, 0.4865, 0.4409), std=(0.2673, 0.2564, 0.2762),
        urls=("https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",),
        archive=("cifar-100-python.tar.gz", "eb9058c3a382ffc7106e4002c42a8d85"),
        reader="cifar",
        source="Krizhevsky 2009, https://www.cs.toronto.edu/~kriz/cifar.html (python version); "
               "per-channel mean/std of the 50,000 training images (fine labels)",
    ),
}

# md5s of partial CIFAR files whose content is documented: the shared offline copy described in
# shared/datasets/README.md (first 4,000 train / 1,000 test images of the originals).
KNOWN_SUBSET_MD5: dict[str, str] = {
    "42e63b6c650ef38c94713853b9741226": "data_batch_1, first 4,000 images (shared offline subset)",
    "3cef2dc2bfabc0e219192d2d84536d6a": "test_batch, first 1,000 images (shared offline subset)",
}


# --------------------------------------------------------------------------- dataset object

@dataclass(frozen=True)
class DatasetInfo:
    """What was loaded. n: images; subset: fewer than the official split (results on it are
    not comparable with full-dataset numbers); checksum: 'official' (every file matched the
    official md5), 'known-subset' (matched a documented partial copy), 'structure-only'
    (partial copy, structure verified), 'unverified' (verify=False) or 'synthetic'."""

    name: str
    split: str
    n: int
    official_n: int
    subset: bool
    num_classes: int
    shape: tuple[int, int, int]
    path: str
    checksum: str
    classes: tuple[str, ...] = ()
    files: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        """Short label for tables and plots, e.g. 'cifar10 train (SUBSET 4000/50000)'."""
        tag = f" (SUBSET {self.n}/{self.official_n})" if self.subset else ""
        return f"{self.name} {self.split}{tag}"


class Dataset(torch.utils.data.Dataset):
    """Images kept as uint8 (N, C, H, W) and int64 labels; items come out normalised float32.

    ``ds[i]`` -> (image (C, H, W) float32, label); ``ds[index_tensor]`` -> a batch.
    """

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, mean: Sequence[float],
                 std: Sequence[float], info: DatasetInfo) -> None:
        if images.dtype != torch.uint8 or images.dim() != 4:
            raise ValueError(f"images must be a uint8 (N, C, H, W) tensor, got "
                             f"{images.dtype} {tuple(images.shape)}")
        if labels.shape != (images.shape[0],):
            raise ValueError(f"labels must have shape ({images.shape[0]},), "
                             f"got {tuple(labels.shape)}")
        self.images = images
        self.labels = labels.to(torch.int64)
        c = images.shape[1]
        self.mean = torch.tensor(mean, dtype=torch.float32).view(c, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).view(c, 1, 1)
        self.info = info

    def __len__(self) -> int:
        return self.images.shape[0]

    def to(self, device: torch.device | str) -> "Dataset":
        """This dataset with its images, labels and normalisation held on ``device`` (one copy now, none
        per batch): a GPU trainer then indexes, normalises and crops each batch on the GPU, as fast GPU
        trainers keep small datasets (MNIST, CIFAR-10: 47 and 154 MB of uint8 pixels) on the device."""
        out = copy.copy(self)
        out.images, out.labels = self.images.to(device), self.labels.to(device)
        out.mean, out.std = self.mean.to(device), self.std.to(device)
        return out

    def normalize(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 pixels (..., C, H, W) -> float32 (x/255 - mean) / std."""
        return (images.to(torch.float32).div_(255.0) - self.mean) / self.std

    def __getitem__(self, index):
        return self.normalize(self.images[index]), self.labels[index]

    def __repr__(self) -> str:
        return f"Dataset({self.info.label}, n={len(self)}, checksum={self.info.checksum})"


# --------------------------------------------------------------------------- paths

def data_root(root: str | os.PathLike | None = None) -> Path:
    """The dataset root, an absolute path: `root` if given, else $DSGD_DATA_ROOT, else
    <repo>/data/datasets. A relative `root` or $DSGD_DATA_ROOT (e.g. ../shared/datasets) is taken
    against the current directory, once, here: callers pass the absolute path on (run-log headers,
    the ranks of a job, the reproduce scripts' subprocesses)."""
    if root is not None:
        return Path(os.path.abspath(Path(root).expanduser()))
    env = os.environ.get(ENV_ROOT)
    return Path(os.path.abspath(Path(env).expanduser())) if env else _REPO_DEFAULT


def _spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS)} "
                         f"(and synthetic(model) for synthetic data)") from None


def _candidate_dirs(spec: DatasetSpec, root: Path) -> list[Path]:
    dirs = [root / sub if sub != "." else root for sub in spec.subdirs]
    leaf = spec.subdirs[0]
    if "/" not in leaf and root.is_dir():  # one level of search: root/*/<leaf>
        dirs += sorted(p for p in root.glob(f"*/{leaf}") if p not in dirs)
    return dirs


def _find_dir(spec: DatasetSpec, root: Path, split: str) -> tuple[Path, list[str]]:
    """First candidate folder holding at least one file of the split; also the files present."""
    wanted = [f for f, _, _ in spec.files[split]]
    candidates = _candidate_dirs(spec, root)
    for d in candidates:
        present = [f for f in wanted if (d / f).is_file()]
        if present:
            return d, present
    hint = (f"run `python -m trainers.data download {spec.name} --root {root}` on a machine "
            f"that is online, or copy the files from {spec.urls[0]}"
            + (f" (extract {spec.archive[0]})" if spec.archive else "")
            + f"; or point {ENV_ROOT} / root= at a folder that has them")
    searched = ", ".join(str(d) for d in candidates[:6])
    raise DatasetMissing(f"{spec.name} {split} files {', '.join(wanted)} not found under {root} "
                       f"(searched {searched}); {hint}")


def md5sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex md5 of a file, read in 1 MiB chunks."""
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- MNIST

_IDX_DTYPES = {0x08: np.uint8}


def _read_idx_gz(path: Path) -> np.ndarray:
    """Parse a gzip'd idx file (big-endian header: magic 0x0000TTDD, DD dims of uint32)."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{path}: not a complete gzip file ({exc}); the file is truncated "
                           f"or corrupt, delete it and download it again") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise DatasetError(f"{path}: not an idx file of uint8 (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    dims = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(dims, dtype=np.int64))
    if len(raw) != expected:
        raise DatasetError(f"{path}: idx payload has {len(raw)} bytes, header {dims} says "
                           f"{expected}; the file is truncated or corrupt")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _read_mnist(spec: DatasetSpec, root: Path, split: str, verify: bool):
    folder, present = _find_dir(spec, root, split)
    (img_name, img_md5, n), (lbl_name, lbl_md5, _) = spec.files[split]
    missing = [f for f in (img_name, lbl_name) if f not in present]
    if missing:
        raise DatasetMissing(f"{spec.name} {split}: {', '.join(str(folder / f) for f in missing)} "
                           f"missing; download it from {spec.urls[0]}")
    checksum = "unverified"
    if verify:
        for fname, want in ((img_name, img_md5), (lbl_name, lbl_md5)):
            got = md5sum(folder / fname)
            if got != want:
                raise DatasetError(f"{folder / fname}: md5 {got} is not the official {want}; "
                                   f"the file is truncated, corrupt or not the original")
        checksum = "official"
    images = _read_idx_gz(folder / img_name)
    labels = _read_idx_gz(folder / lbl_name)
    if images.ndim != 3 or images.shape[1:] != spec.shape[1:] or labels.ndim != 1:
        raise DatasetError(f"{folder / img_name}: shape {images.shape} is not (N, 28, 28)")
    if labels.shape[0] != images.shape[0]:
        raise DatasetError(f"{folder}: {images.shape[0]} images but {labels.shape[0]} labels")
    if labels.size and labels.max() >= spec.num_classes:
        raise DatasetError(f"{folder / lbl_name}: label {labels.max()} out of range 0..9")
    images = images[:, None, :, :].copy()  # frombuffer arrays are read-only
    classes = tuple(str(i) for i in range(10))
    return images, labels, folder, checksum, classes, (img_name, lbl_name)


# --------------------------------------------------------------------------- CIFAR

def _ndarray_reconstruct():
    try:  # numpy >= 2
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core.multiarray import _reconstruct
    return _reconstruct


class _SafeUnpickler(pickle.Unpickler):
    """Unpickler that only builds numpy arrays and plain containers (no arbitrary code)."""

    _ALLOWED = {
        ("numpy", "ndarray"): lambda: np.ndarray,
        ("numpy", "dtype"): lambda: np.dtype,
        ("numpy.core.multiarray", "_reconstruct"): _ndarray_reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _ndarray_reconstruct,
        ("_codecs", "encode"): lambda: __import__("codecs").encode,
    }

    def find_class(self, module: str, name: str):
        try:
            return self._ALLOWED[(module, name)]()
        except KeyError:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed") from None


def _unpickle(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            obj = _SafeUnpickler(f, encoding="bytes").load()
    except Exception as exc:  # EOFError, UnpicklingError, ValueError, ... on a damaged file
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise DatasetError(f"{path}: cannot unpickle ({type(exc).__name__}: {msg}); the file "
                           f"is truncated or corrupt, delete it and download it again") from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{path}: expected a pickled dict, got {type(obj).__name__}")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _cifar_labels_key(spec: DatasetSpec) -> str:
    return "fine_labels" if spec.num_classes == 100 else "labels"


def _read_cifar_file(spec: DatasetSpec, path: Path) -> tuple[np.ndarray, np.ndarray]:
    d = _unpickle(path)
    key = _cifar_labels_key(spec)
    if "data" not in d or key not in d:
        raise DatasetError(f"{path}: missing key 'data' or {key!r} (keys: {sorted(d)})")
    data, labels = d["data"], np.asarray(d[key])
    c, h, w = spec.shape
    if (not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2
            or data.shape[1] != c * h * w):
        raise DatasetError(f"{path}: 'data' must be uint8 (N, {c * h * w}), got "
                           f"{getattr(data, 'dtype', type(data).__name__)} "
                           f"{getattr(data, 'shape', '')}")
    if labels.shape != (data.shape[0],):
        raise DatasetError(f"{path}: {data.shape[0]} images but {labels.shape} labels")
    if labels.size and (labels.min() < 0 or labels.max() >= spec.num_classes):
        raise DatasetError(f"{path}: labels outside 0..{spec.num_classes - 1}")
    return data.reshape(-1, c, h, w), labels.astype(np.int64)


def _read_cifar_meta(spec: DatasetSpec, folder: Path) -> tuple[str, ...]:
    name = "meta" if spec.num_classes == 100 else "batches.meta"
    key = "fine_label_names" if spec.num_classes == 100 else "label_names"
    path = folder / name
    if not path.is_file():
        return ()
    names = _unpickle(path).get(key, [])
    names = tuple(n.decode() if isinstance(n, bytes) else str(n) for n in names)
    if len(names) != spec.num_classes:
        raise DatasetError(f"{path}: {key} has {len(names)} names, expected {spec.num_classes}")
    return names


def _read_cifar(spec: DatasetSpec, root: Path, split: str, verify: bool):
    folder, present = _find_dir(spec, root, split)
    images, labels, statuses = [], [], []
    for fname, official_md5, official_n in spec.files[split]:
        if fname not in present:
            continue
        path = folder / fname
        digest = md5sum(path) if verify else ""
        x, y = _read_cifar_file(spec, path)
        if not verify:
            statuses.append("unverified")
        elif digest == official_md5:
            statuses.append("official")
        elif digest in KNOWN_SUBSET_MD5:
            statuses.append("known-subset")
        elif x.shape[0] < official_n:
            statuses.append("structure-only")
        else:
            raise DatasetError(f"{path}: md5 {digest} is not the official {official_md5} although "
                               f"the file holds all {official_n} images; the file is corrupt or "
                               f"not the original (load with verify=False to accept it)")
        images.append(x)
        labels.append(y)
    order = ("unverified", "structure-only", "known-subset", "official")
    checksum = min(statuses, key=order.index)
    classes = _read_cifar_meta(spec, folder)
    return (np.concatenate(images), np.concatenate(labels), folder, checksum, classes,
            tuple(present))


_READERS: dict[str, Callable] = {"mnist": _read_mnist, "cifar": _read_cifar}


def load_dataset(name: str, root: str | os.PathLike | None = None, train: bool = True, *,
                 verify: bool = True) -> Dataset:
    """Load the train (or test) split of mnist / cifar10 / cifar100 from the official files.

    root: folder to search (see module doc); verify: check md5s (see DatasetInfo.checksum).
    Raises DatasetError (a ValueError) with one line naming the path when files are missing,
    truncated or corrupt, and ValueError for an unknown name.
    """
    spec = _spec(name)
    base = data_root(root)
    split = "train" if train else "test"
    images, labels, folder, checksum, classes, files = _READERS[spec.reader](
        spec, base, split, verify)
    n, official_n = int(images.shape[0]), spec.size(train)
    info = DatasetInfo(name=spec.name, split=split, n=n, official_n=official_n,
                       subset=n < official_n, num_classes=spec.num_classes, shape=spec.shape,
                       path=str(folder), checksum=checksum, classes=classes, files=files)
    return Dataset(torch.from_numpy(np.ascontiguousarray(images)),
                   torch.from_numpy(np.ascontiguousarray(labels, dtype=np.int64)),
                   spec.mean, spec.std, info)


# --------------------------------------------------------------------------- download

def _fetch(url: str, dest: Path, md5: str, timeout: float = 60.0) -> None:
    """Download url to dest through a temporary file; keep it only if the md5 matches."""
    from perfmodel.fileio import atomic_path

    with atomic_path(dest, suffix=".part") as tmp:
        with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, out)
        got = md5sum(tmp)
        if got != md5:
            raise DatasetError(f"{url}: downloaded md5 {got} is not the official {md5}")


def download(name: str, root: str | os.PathLike | None = None) -> Path:
    """Download and verify the official files of `name` into root; return the dataset folder.

    Needs network access (not used by the tests). Files already present with the right md5
    are kept. CIFAR archives are extracted next to themselves (cifar-10-batches-py/ etc.).
    """
    spec = _spec(name)
    base = data_root(root)
    if spec.reader == "mnist":
        folder = base / spec.subdirs[0]
        folder.mkdir(parents=True, exist_ok=True)
        for fname, md5, _ in spec.files["train"] + spec.files["test"]:
            dest = folder / fname
            if dest.is_file() and md5sum(dest) == md5:
                continue
            errors = []
            for mirror in spec.urls:
                try:
                    _fetch(mirror + fname, dest, md5)
                    break
                except (OSError, DatasetError) as exc:
                    errors.append(f"{mirror}{fname}: {exc}")
            else:
                raise DatasetError(f"could not download {fname} into {folder}: "
                                   + "; ".join(errors))
        return folder
    archive_name, archive_md5 = spec.archive
    base.mkdir(parents=True, exist_ok=True)
    archive = base / archive_name
    if not (archive.is_file() and md5sum(archive) == archive_md5):
        try:
            _fetch(spec.urls[0], archive, archive_md5)
        except OSError as exc:
            raise DatasetError(f"could not download {spec.urls[0]} into {base}: {exc}") from None
    with tarfile.open(archive, "r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(base, filter="data")
        else:  # pragma: no cover - Python without extraction filters
            tar.extractall(base)
    return base / spec.subdirs[0]


# --------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    """`python -m trainers.data download NAME [--root DIR]` | `info NAME [--root DIR] [--test]`."""
    parser = argparse.ArgumentParser(prog="python -m trainers.data",
                                     description="MNIST / CIFAR files: download and inspect.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for cmd, text in (("download", "download and verify the official files"),
                      ("info", "load a split and print what was found")):
        p = sub.add_parser(cmd, help=text)
        p.add_argument("name", choices=sorted(DATASETS))
        p.add_argument("--root", default=None,
                       help=f"dataset root (default ${ENV_ROOT} or data/datasets)")
        if cmd == "info":
            p.add_argument("--test", action="store_true", help="the test split")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "download":
            print(download(args.name, args.root))
        else:
            ds = load_dataset(args.name, args.root, train=not args.test)
            i = ds.info
            print(f"{i.label}: n={i.n} checksum={i.checksum} path={i.path} "
                  f"labels={int(ds.labels.min())}..{int(ds.labels.max())}")
    except (DatasetError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
