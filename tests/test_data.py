"""trainers.data: real MNIST / CIFAR files (skipped where absent), checksums, damaged files,
root resolution, synthetic data, sharding, batching, cropping and the offline download path."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers import data
from trainers.batching import batches, crop_flip, shard_indices
from trainers.data import DATASETS, ENV_ROOT, DatasetError, load_dataset, md5sum
from trainers.synthetic_data import synthetic

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"  # ../shared beside the checkout
MNIST_DIR = SHARED / "mnist"
CIFAR_DIR = SHARED / "cifar10-subset" / "cifar-10-batches-py"
need_mnist = pytest.mark.skipif(not (MNIST_DIR / "train-images-idx3-ubyte.gz").is_file(),
                                reason="shared MNIST files absent")
need_cifar = pytest.mark.skipif(not (CIFAR_DIR / "data_batch_1").is_file(),
                                reason="shared CIFAR-10 subset absent")

# ../shared/datasets/README.md
README_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


@pytest.fixture(scope="module")
def mnist_train():
    return load_dataset("mnist", SHARED, train=True)


@pytest.fixture(scope="module")
def cifar_train():
    return load_dataset("cifar10", SHARED, train=True)


def _link_mnist(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for f in README_MD5:
        (dest / f).symlink_to(MNIST_DIR / f)
    return dest


# ---------------------------------------------------------------- MNIST

@need_mnist
def test_mnist_md5_function_matches_readme():
    for fname, want in README_MD5.items():
        assert md5sum(MNIST_DIR / fname) == want
        assert hashlib.md5((MNIST_DIR / fname).read_bytes()).hexdigest() == want


@need_mnist
def test_mnist_train_and_test(mnist_train):
    test = load_dataset("mnist", SHARED, train=False)
    for ds, n in ((mnist_train, 60000), (test, 10000)):
        assert len(ds) == ds.info.n == ds.info.official_n == n
        assert ds.images.shape == (n, 1, 28, 28) and ds.images.dtype == torch.uint8
        assert ds.labels.dtype == torch.int64
        assert ds.labels.min() == 0 and ds.labels.max() == 9
        assert len(torch.unique(ds.labels)) == 10
        assert not ds.info.subset and ds.info.checksum == "official"
        assert ds.info.path == str(MNIST_DIR)
    # the well-known first labels of the official files
    assert mnist_train.labels[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert test.labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    # class counts of the training set (LeCun's page / torchvision)
    assert np.bincount(mnist_train.labels.numpy()).tolist() == [
        5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]


@need_mnist
def test_mnist_normalisation_constants(mnist_train):
    x = mnist_train.normalize(mnist_train.images)
    assert abs(x.mean().item()) < 2e-3
    assert abs(x.std().item() - 1.0) < 2e-3
    img, label = mnist_train[0]
    assert img.shape == (1, 28, 28) and img.dtype == torch.float32 and int(label) == 5
    raw = mnist_train.images[0, 0, 14, 14].item()
    assert img[0, 14, 14].item() == pytest.approx((raw / 255 - 0.1307) / 0.3081, rel=1e-6)


@need_mnist
def test_mnist_truncated_copy_raises(tmp_path):
    for f in README_MD5:
        shutil.copy(MNIST_DIR / f, tmp_path / f)
    target = tmp_path / "train-images-idx3-ubyte.gz"
    raw = target.read_bytes()
    target.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DatasetError) as exc:
        load_dataset("mnist", tmp_path)
    msg = str(exc.value)
    assert str(target) in msg and "md5" in msg and "\n" not in msg
    assert not isinstance(exc.value, data.DatasetMissing)  # damaged, not missing
    # without checksums the damage is still found, by the gzip / idx reader
    with pytest.raises(DatasetError, match="truncated") as exc:
        load_dataset("mnist", tmp_path, verify=False)
    assert str(target) in str(exc.value) and "\n" not in str(exc.value)
    # the test split is intact and still loads
    assert len(load_dataset("mnist", tmp_path, train=False)) == 10000


def test_idx_header_payload_mismatch(tmp_path):
    header = bytes([0, 0, 8, 3]) + np.array([2, 28, 28], dtype=">u4").tobytes()
    path = tmp_path / "x.gz"
    with gzip.open(path, "wb") as f:
        f.write(header + bytes(28 * 28))  # one image, the header says two
    with pytest.raises(DatasetError, match="truncated"):
        data._read_idx_gz(path)
    with gzip.open(path, "wb") as f:
        f.write(header + bytes(2 * 28 * 28))
    assert data._read_idx_gz(path).shape == (2, 28, 28)


@need_mnist
def test_mnist_torchvision_layout_is_found(tmp_path):
    _link_mnist(tmp_path / "MNIST" / "raw")
    ds = load_dataset("mnist", tmp_path, train=False)
    assert ds.info.path == str(tmp_path / "MNIST" / "raw") and len(ds) == 10000


# ---------------------------------------------------------------- CIFAR

@need_cifar
def test_cifar_subset_detected_and_labelled(cifar_train):
    test = load_dataset("cifar10", SHARED, train=False)
    for ds, n, full in ((cifar_train, 4000, 50000), (test, 1000, 10000)):
        assert len(ds) == ds.info.n == n
        assert ds.info.official_n == full and ds.info.subset
        assert "SUBSET" in ds.info.label and f"{n}/{full}" in ds.info.label
        assert ds.info.checksum == "known-subset"
        assert ds.images.shape == (n, 3, 32, 32) and ds.images.dtype == torch.uint8
        assert ds.labels.min() == 0 and ds.labels.max() == 9
        assert len(torch.unique(ds.labels)) == 10
        assert ds.info.path == str(CIFAR_DIR)
    assert cifar_train.info.classes[:3] == ("airplane", "automobile", "bird")
    # first labels of the official data_batch_1 (the README says the order is kept)
    assert cifar_train.labels[:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3]
    assert md5sum(CIFAR_DIR / "data_batch_1") != DATASETS["cifar10"].files["train"][0][1]


@need_cifar
def test_cifar_pixels_channel_major_and_normalised(cifar_train):
    with open(CIFAR_DIR / "data_batch_1", "rb") as f:
        raw = pickle.load(f, encoding="bytes")
    row = raw[b"data"][7]  # 1024 red, 1024 green, 1024 blue values, row-major 32x32
    np.testing.assert_array_equal(cifar_train.images[7].numpy().reshape(-1), row)
    x = cifar_train.normalize(cifar_train.images)
    # the constants are the full training set's; a 4,000-image subset is within a few percent
    assert x.mean(dim=(0, 2, 3)).abs().max() < 0.05
    assert (x.std(dim=(0, 2, 3)) - 1).abs().max() < 0.05


def _write_batch(path: Path, images: np.ndarray, labels: list[int]) -> None:
    with open(path, "wb") as f:
        pickle.dump({b"batch_label": b"test", b"labels": labels, b"data": images,
                     b"filenames": [b"x"] * len(labels)}, f, protocol=2)


@need_cifar
def test_cifar_unknown_partial_copy_is_structure_checked(tmp_path, cifar_train):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    shutil.copy(CIFAR_DIR / "batches.meta", folder / "batches.meta")
    imgs = cifar_train.images[:100].numpy().reshape(100, -1)
    _write_batch(folder / "data_batch_3", imgs, cifar_train.labels[:100].tolist())
    ds = load_dataset("cifar10", tmp_path)
    assert len(ds) == 100 and ds.info.subset and ds.info.checksum == "structure-only"
    assert ds.info.files == ("data_batch_3",)
    assert torch.equal(ds.images, cifar_train.images[:100])


def test_cifar_full_size_file_with_wrong_md5_is_rejected(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    _write_batch(folder / "test_batch", rng.integers(0, 256, (10000, 3072), dtype=np.uint8),
                 rng.integers(0, 10, 10000).tolist())
    with pytest.raises(DatasetError, match="not the official") as exc:
        load_dataset("cifar10", tmp_path, train=False)
    assert str(folder / "test_batch") in str(exc.value)
    ds = load_dataset("cifar10", tmp_path, train=False, verify=False)
    assert len(ds) == 10000 and not ds.info.subset and ds.info.checksum == "unverified"


@need_cifar
def test_cifar_truncated_copy_raises_one_line(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    raw = (CIFAR_DIR / "data_batch_1").read_bytes()
    (folder / "data_batch_1").write_bytes(raw[: len(raw) // 3])
    with pytest.raises(DatasetError) as exc:
        load_dataset("cifar10", tmp_path)
    msg = str(exc.value)
    assert str(folder / "data_batch_1") in msg and "truncated" in msg and "\n" not in msg


def test_cifar_rejects_pickled_code(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Evil()}, protocol=2))
    with pytest.raises(DatasetError, match="not allowed"):
        load_dataset("cifar10", tmp_path, train=False)
    assert not marker.exists()


@need_cifar
def test_cifar_bad_structure(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    _write_batch(folder / "test_batch", np.zeros((5, 100), dtype=np.uint8), [0] * 5)
    with pytest.raises(DatasetError, match="uint8"):
        load_dataset("cifar10", tmp_path, train=False)
    _write_batch(folder / "test_batch", np.zeros((5, 3072), dtype=np.uint8), [0, 1, 2, 3, 10])
    with pytest.raises(DatasetError, match="labels outside"):
        load_dataset("cifar10", tmp_path, train=False)


# ---------------------------------------------------------------- roots and names

def test_missing_root_names_path_and_remedy(tmp_path):
    root = tmp_path / "nowhere"
    with pytest.raises(DatasetError) as exc:
        load_dataset("mnist", root)
    msg = str(exc.value)
    assert isinstance(exc.value, ValueError) and isinstance(exc.value, data.DatasetMissing)
    assert str(root) in msg and "train-images-idx3-ubyte.gz" in msg
    assert "download" in msg and ENV_ROOT in msg and "\n" not in msg
    with pytest.raises(DatasetError, match="cifar-10-batches-py"):
        load_dataset("cifar10", root)


def test_unknown_dataset_lists_known():
    with pytest.raises(ValueError) as exc:
        load_dataset("imagenet")
    assert not isinstance(exc.value, DatasetError)
    for name in DATASETS:
        assert name in str(exc.value)


@need_mnist
def test_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_ROOT, str(SHARED))
    assert data.data_root() == SHARED
    assert len(load_dataset("mnist", train=False)) == 10000
    with pytest.raises(DatasetError, match=str(tmp_path)):  # explicit root wins over env
        load_dataset("mnist", tmp_path, train=False)
    monkeypatch.delenv(ENV_ROOT)
    assert data.data_root() == Path(data.__file__).resolve().parents[1] / "data" / "datasets"
    assert data.data_root(tmp_path) == tmp_path
    # relative roots are taken against the current directory and made absolute (".." folded)
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert data.data_root("../b") == tmp_path / "b"
    monkeypatch.setenv(ENV_ROOT, "../shared/datasets")
    assert data.data_root() == tmp_path / "shared" / "datasets"


@need_cifar
def test_cifar_found_by_subfolder_search(tmp_path):
    (tmp_path / "anything").mkdir()
    (tmp_path / "anything" / "cifar-10-batches-py").symlink_to(CIFAR_DIR)
    ds = load_dataset("cifar10", tmp_path, train=False)
    assert len(ds) == 1000 and ds.info.path == str(tmp_path / "anything" / "cifar-10-batches-py")


# ---------------------------------------------------------------- download (offline, file://)

@need_mnist
def test_download_verifies_and_falls_back_to_next_mirror(tmp_path, monkeypatch):
    bad = tmp_path / "badmirror"
    bad.mkdir()
    for f in README_MD5:
        (bad / f).write_bytes(b"not mnist")
    spec = dataclasses.replace(DATASETS["mnist"],
                               urls=(bad.as_uri() + "/", MNIST_DIR.as_uri() + "/"))
    monkeypatch.setitem(DATASETS, "mnist", spec)
    folder = data.download("mnist", tmp_path / "root")
    assert folder == tmp_path / "root" / "mnist"
    for f, want in README_MD5.items():
        assert md5sum(folder / f) == want
    assert not list(folder.glob(".*part"))
    assert len(load_dataset("mnist", tmp_path / "root", train=False)) == 10000

    monkeypatch.setitem(DATASETS, "mnist", dataclasses.replace(spec, urls=(bad.as_uri() + "/",)))
    with pytest.raises(DatasetError, match="md5"):
        data.download("mnist", tmp_path / "other")


@need_cifar
def test_download_extracts_verified_archive(tmp_path, monkeypatch):
    import tarfile
    src = tmp_path / "src"
    src.mkdir()
    archive = src / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(CIFAR_DIR / "test_batch", arcname="cifar-10-batches-py/test_batch")
    spec = dataclasses.replace(DATASETS["cifar10"], urls=(archive.as_uri(),),
                               archive=("cifar-10-python.tar.gz", md5sum(archive)))
    monkeypatch.setitem(DATASETS, "cifar10", spec)
    folder = data.download("cifar10", tmp_path / "root")
    assert folder == tmp_path / "root" / "cifar-10-batches-py"
    assert len(load_dataset("cifar10", tmp_path / "root", train=False)) == 1000


# ---------------------------------------------------------------- synthetic

def test_synthetic_deterministic_shaped_and_learnable():
    a = synthetic("cifar10-quick", n=600, seed=3)
    b = synthetic("cifar10-quick", n=600, seed=3)
    c = synthetic("cifar10-quick", n=600, seed=4)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, c.images)
    assert a.images.shape == (600, 3, 32, 32) and a.info.checksum == "synthetic"
    assert a.labels.min() >= 0 and a.labels.max() <= 9
    assert synthetic("lenet", n=4).images.shape == (4, 1, 28, 28)
    assert synthetic("alexnet", n=2).info.num_classes == 1000
    # a nearest-class-mean classifier fitted on train classifies the test split
    test = synthetic("cifar10-quick", n=300, seed=3, train=False)
    assert not torch.equal(test.images[:10], a.images[:10])
    xa, xt = a.normalize(a.images).flatten(1), test.normalize(test.images).flatten(1)
    means = torch.stack([xa[a.labels == k].mean(0) for k in range(10)])
    pred = torch.cdist(xt, means).argmin(1)
    assert (pred == test.labels).float().mean() > 0.95


def test_synthetic_normalisation_is_standard():
    ds = synthetic((2, 16, 16), n=2000, num_classes=50, seed=1)
    x = ds.normalize(ds.images)
    assert abs(x.mean().item()) < 0.03
    assert abs(x.std().item() - 1.0) < 0.03


def test_synthetic_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n must"):
        synthetic("lenet", n=0)
    with pytest.raises(ValueError, match="shape"):
        synthetic((28, 28))
    with pytest.raises(ValueError, match="unknown model"):
        synthetic("lenet5")


# ---------------------------------------------------------------- sharding and batching

def test_shards_disjoint_equal_covering_and_seeded():
    n, world = 1003, 4
    shards = [shard_indices(n, r, world, seed=7, epoch=0) for r in range(world)]
    assert [len(s) for s in shards] == [n // world] * world
    allidx = np.concatenate(shards)
    assert allidx.dtype == np.int64
    assert len(np.unique(allidx)) == len(allidx) == world * (n // world)  # disjoint
    assert allidx.min() >= 0 and allidx.max() < n
    # the union plus the dropped remainder is exactly range(n)
    perm = np.random.default_rng([7, 0]).permutation(n)
    assert np.array_equal(np.sort(np.concatenate([allidx, perm[world * (n // world):]])),
                          np.arange(n))
    again = [shard_indices(n, r, world, seed=7, epoch=0) for r in range(world)]
    assert all(np.array_equal(a, b) for a, b in zip(shards, again))
    other_epoch = shard_indices(n, 0, world, seed=7, epoch=1)
    other_seed = shard_indices(n, 0, world, seed=8, epoch=0)
    assert not np.array_equal(shards[0], other_epoch)
    assert not np.array_equal(shards[0], other_seed)
    assert np.array_equal(np.sort(shard_indices(10, 0, 1, 0, 0)), np.arange(10))


@pytest.mark.parametrize("args", [(10, 4, 4, 0, 0), (10, -1, 2, 0, 0), (10, 0, 0, 0, 0),
                                  (3, 0, 4, 0, 0), (10, 0, 2, -1, 0), (10, 0, 2, 0, 1.5)])
def test_shard_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        shard_indices(*args)


def test_batches_cover_indices_in_order():
    ds = synthetic("lenet", n=50, seed=0)
    idx = shard_indices(50, 1, 2, seed=0, epoch=0)  # 25 indices
    got = list(batches(ds, idx, 8))
    assert [len(y) for _, y in got] == [8, 8, 8, 1]
    x = torch.cat([b[0] for b in got])
    y = torch.cat([b[1] for b in got])
    assert torch.equal(y, ds.labels[torch.as_tensor(idx)])
    assert torch.allclose(x, ds.normalize(ds.images[torch.as_tensor(idx)]))
    assert x.dtype == torch.float32 and x.shape == (25, 1, 28, 28)
    assert [len(y) for _, y in batches(ds, idx, 8, drop_last=True)] == [8, 8, 8]
    with pytest.raises(ValueError, match="batch_size"):
        next(batches(ds, idx, 0))


def test_crop_flip():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).view(2, 3, 8, 8)
    assert torch.equal(crop_flip(x, 4), x[:, :, 2:6, 2:6])
    g = torch.Generator().manual_seed(0)
    out = crop_flip(x, 5, generator=g, flip=True)
    again = crop_flip(x, 5, generator=torch.Generator().manual_seed(0), flip=True)
    assert out.shape == (2, 3, 5, 5) and torch.equal(out, again)
    windows = [x[:, :, r:r + 5, c:c + 5] for r in range(4) for c in range(4)]
    for i in range(2):  # every output is some window of its own image, maybe mirrored
        assert any(torch.equal(out[i], w[i]) or torch.equal(out[i], w[i].flip(-1))
                   for w in windows)
    padded = crop_flip(x, 8, pad=2, generator=g)
    assert padded.shape == (2, 3, 8, 8)
    with pytest.raises(ValueError, match="size"):
        crop_flip(x, 9)
