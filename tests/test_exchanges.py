"""TernGrad's exchange objects (trainers.exchanges) without MPI: the registry against the model's
names, each object's encode -> exchange -> decode on a stand-in for W ranks that all send the same
codes (the sum is then W times one rank's codes, so the mean is s * codes), and the bytes on the wire
against hand counts and against the model's prediction (perfmodel.scaling)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from perfmodel import wire
from perfmodel.scaling import predict
from perfmodel.specs import (DEFAULT_TERNGRAD_EXCHANGE, TERNGRAD_EXCHANGES, Cluster, ComputeTime, Link, Strategy,
                             Workload)
from trainers.compress import encode_codes
from trainers.exchanges import DEFAULT_EXCHANGE, EXCHANGES, exchange_class
from trainers.run import RunConfig

SIZES = [37, 1000, 5, 2003]  # 3045 elements; uneven: shards and packed blocks do not line up


class Ranks:
    """mpi4py-style Allgather and Alltoall of ``size`` ranks run as threads of this process (one
    ``comm(rank)`` each): every rank's buffers meet in shared slots between two barriers."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.slots: list = [None] * size
        self.barrier = threading.Barrier(size, timeout=60)

    def comm(self, rank: int) -> "_RankComm":
        return _RankComm(self, rank)


class _RankComm:
    def __init__(self, ranks: Ranks, rank: int) -> None:
        self.ranks, self.rank = ranks, rank

    def Get_size(self) -> int:  # noqa: N802
        return self.ranks.size

    def Get_rank(self) -> int:  # noqa: N802
        return self.rank

    def _meet(self, mine, take) -> None:
        self.ranks.slots[self.rank] = np.array(mine, copy=True)
        self.ranks.barrier.wait()
        take(list(self.ranks.slots))
        self.ranks.barrier.wait()

    def Allgather(self, send, recv) -> None:  # noqa: N802
        self._meet(send, lambda all_: recv.__setitem__(..., np.stack(all_).reshape(recv.shape)))

    def Alltoall(self, send, recv) -> None:  # noqa: N802
        w = self.ranks.size
        self._meet(send, lambda all_: recv.__setitem__(
            ..., np.stack([a.reshape(w, -1)[self.rank] for a in all_]).reshape(recv.shape)))


def _make(name: str, world: int, lane_bits: int = 8, bucket_bytes: int = 4 * 1100, comm=None):
    return exchange_class(name)(comm or Ranks(world).comm(0), [(n,) for n in SIZES], key=7,
                                bucket_bytes=bucket_bytes, lane_bits=lane_bits)


def test_registry_is_the_models_names_and_one_default():
    assert tuple(EXCHANGES) == TERNGRAD_EXCHANGES
    for name in EXCHANGES:
        assert exchange_class(name).name == name
    assert DEFAULT_EXCHANGE == DEFAULT_TERNGRAD_EXCHANGE == Strategy("terngrad").terngrad_exchange
    assert RunConfig.__dataclass_fields__["terngrad_exchange"].default == DEFAULT_EXCHANGE
    with pytest.raises(ValueError, match="unknown TernGrad exchange 'ring'"):
        exchange_class("ring")


@pytest.mark.parametrize("name,world", [("ps", 3), ("ps", 4), ("allgather", 3), ("levels", 1)])
def test_decoded_mean_is_the_float_mean_of_every_ranks_codes(name, world):
    # W ranks as threads, each with its own gradient and key; the reference recomputes every rank's
    # codes from the counter-based stream (the whole gradient at once: the same words)
    ranks = Ranks(world)
    grads = [np.random.default_rng(r).standard_normal(sum(SIZES)).astype(np.float32) for r in range(world)]
    shared = np.array([0.5, 1.0, 3.0, 2.0])
    starts = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int64)
    out, sent = [None] * world, [0.0] * world
    errors = [None] * world

    def rank(r: int) -> None:
        try:
            run(r)
        except Exception as e:  # noqa: BLE001 - reported by the test's thread
            errors[r] = e
            ranks.barrier.abort()

    def run(r: int) -> None:
        ex = exchange_class(name)(ranks.comm(r), [(n,) for n in SIZES], key=100 + r, bucket_bytes=4 * 1100,
                                  lane_bits=8)
        for v, a, b in zip(ex.views, starts[:-1], starts[1:]):
            v.copy_(torch.from_numpy(grads[r][a:b]))
        for part in range(ex.parts):
            ex.encode(part, shared, 11)
            sent[r] += ex.exchange(part)
            ex.decode(part, shared)
        assert sent[r] == ex.wire_bytes()
        out[r] = torch.cat([v.reshape(-1) for v in ex.views]).numpy().astype(np.float64)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    total = sum(encode_codes(grads[r], starts, shared, 100 + r, 11).astype(np.int64) for r in range(world))
    expected = total * np.repeat(shared, SIZES) / world
    assert not [e for e in errors if e is not None], errors
    assert world == 1 or np.abs(total).max() >= 2  # sums of several ranks' codes: several levels
    for r in range(world):  # every rank decodes the same mean, within float32 rounding
        np.testing.assert_allclose(out[r], expected, rtol=3 * 2.0**-24, atol=0)
        assert np.array_equal(out[r], out[0])
    assert len(set(sent)) == 1


def test_parts_follow_the_buckets():
    assert _make("levels", 4).parts == 2  # 37 + 1000 + 5 elements, then 2003 alone (over the cap)
    assert _make("levels", 4, bucket_bytes=2**20).parts == 1
    assert _make("ps", 4).parts == _make("allgather", 4).parts == 1  # one flat buffer


def test_wire_bytes_by_hand():
    # levels: int8 sums, a ring Allreduce per bucket: 2 (W-1)/W of 1042 + 2003 bytes
    assert _make("levels", 4).wire_bytes() == pytest.approx(1.5 * 3045)
    # 4-bit lanes: ceil(1042 / 2) + ceil(2003 / 2) = 521 + 1002 bytes
    assert _make("levels", 4, lane_bits=4).wire_bytes() == pytest.approx(1.5 * 1523)
    # ps at W = 4: shard ceil(3045 / 4) = 762 -> 768; push 768 / 4 = 192 to each peer, pull 768 x 4 bits
    # (9 levels) = 384: 3 x 576
    assert _make("ps", 4).wire_bytes() == 3 * (192 + 384) == 1728
    # allgather at W = 3: ceil(n_k / 4) = 10 + 250 + 2 + 501 = 763 bytes, two copies sent on the ring
    assert _make("allgather", 3).wire_bytes() == 2 * 763
    assert _make("ps", 1).wire_bytes() == _make("allgather", 1).wire_bytes() == 0.0


@pytest.mark.parametrize("name", TERNGRAD_EXCHANGES)
@pytest.mark.parametrize("world", [2, 3, 5, 8])
def test_objects_send_the_models_bytes(name, world):
    # the model's bytes per GPU for an all-ternary workload without fp32 tensors, less its scalers'
    # ring Allreduce, are the object's bytes (one bucket: the model charges one Allreduce for levels)
    wl = Workload("w", tuple(SIZES), {"g": ComputeTime("linear", t1_s=1e-3)})
    cl = Cluster("c", 1, Link(1e-6, 1e9), Link(1e-6, 1e9), Link(1e-6, 1e9))
    strategy = Strategy("terngrad", allreduce="ring", terngrad_exchange=name, terngrad_fp32_last=False)
    (bytes_per_gpu,) = predict(wl, cl, strategy, [world], batch=32).bytes_per_gpu
    scalers = wire.ring_allreduce_bytes(4 * len(SIZES), world)
    assert bytes_per_gpu - scalers == pytest.approx(_make(name, world, bucket_bytes=2**20).wire_bytes(), rel=1e-12)


def test_wire_ints_agree_with_the_models_arrays():
    ws = np.arange(1, 700)
    for n in (1, 7, 8, 3045, 10**6 + 3):
        assert [wire.ps_shard_elems(n, int(w)) for w in ws] == list(wire.ps_shard_elems(n, ws))
        push, pull = wire.ps_blocks(n, ws)
        assert [wire.ps_blocks(n, int(w)) for w in ws] == list(zip(push, pull))
        assert [wire.ps_sent_bytes(n, int(w)) for w in ws] == list(wire.ps_sent_bytes(n, ws))
    assert [wire.aggregate_bits(int(w)) for w in ws] == list(wire.aggregate_bits(ws))
    assert [wire.ring_allreduce_bytes(100, int(w)) for w in ws] == list(wire.ring_allreduce_bytes(100, ws))
    assert wire.packed_nbytes(0) == 0 and wire.packed_nbytes(5) == 2
    with pytest.raises(ValueError):
        wire.packed_nbytes(-1)
