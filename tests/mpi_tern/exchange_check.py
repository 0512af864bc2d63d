"""Under mpiexec: each TernGrad exchange object (trainers.exchanges) against a float reference every
rank computes alone (the counter-based stream lets any rank recompute any rank's codes), and its bytes
against a hand count. Prints one JSON line per exchange on rank 0; exits 1 on a mismatch."""

from __future__ import annotations

import json
import sys

import numpy as np
import torch
from mpi4py import MPI

from trainers.compress import encode_codes, level_dtype, packed_nbytes
from trainers.exchanges import EXCHANGES, exchange_class
from trainers.level_lanes import lanes_nbytes

SIZES = [37, 1000, 5, 2003]  # uneven tensors: shards and packed blocks do not line up
BUCKET_BYTES = 4 * 1100  # levels: buckets of 37 + 1000 + 5 and of 2003 (a tensor over the cap alone)


def gradient(rank: int) -> np.ndarray:
    return np.random.default_rng(100 + rank).standard_normal(sum(SIZES)).astype(np.float32)


def ring(nbytes: int, p: int) -> float:
    return 2 * (p - 1) / p * nbytes


def main() -> int:
    world = MPI.COMM_WORLD
    p, rank = world.Get_size(), world.Get_rank()
    starts = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int64)
    n = int(starts[-1])
    scalers = np.array([0.5, 1.0, 3.0, 2.0])
    key = lambda r: 1000 + r  # noqa: E731
    counter = 77
    # float reference: sum over ranks of s_k * t_{r,k} / p, every rank's codes recomputed here (each
    # tensor's codes are elements starts[k].. of the rank's stream, whatever the exchange's buckets)
    ref_sum = sum(encode_codes(gradient(r), starts, scalers, key(r), counter).astype(np.int64) for r in range(p))
    seg_s = np.repeat(scalers, SIZES)
    reference = ref_sum * seg_s / p
    bits = int(2 * p).bit_length()
    shard = -(-(-(-n // p)) // 8) * 8
    cases = [("levels", 8, ring(1042 * level_dtype(p).itemsize, p) + ring(2003 * level_dtype(p).itemsize, p)),
             ("ps", 8, float((p - 1) * (shard // 4 + shard * bits // 8))),
             ("allgather", 8, float((p - 1) * sum(packed_nbytes(s) for s in SIZES)))]
    if 2 * p + 1 <= 16:  # 4-bit lanes (2..7 ranks): the SWAR sum as a user-defined MPI op
        cases.insert(1, ("levels-lanes4", 4, ring(lanes_nbytes(1042), p) + ring(lanes_nbytes(2003), p)))
    assert [c for c, _, _ in cases if "-" not in c] == list(EXCHANGES)
    ok = True
    for label, lane_bits, expect_sent in cases:
        ex = exchange_class(label.split("-")[0])(world, [(s,) for s in SIZES], key=key(rank),
                                                 bucket_bytes=BUCKET_BYTES, lane_bits=lane_bits)
        for v, a, b in zip(ex.views, starts[:-1], starts[1:]):
            v.copy_(torch.from_numpy(gradient(rank)[a:b]))
        sent = 0.0
        for part in range(ex.parts):
            ex.encode(part, scalers, counter)
            sent += ex.exchange(part)
            ex.decode(part, scalers)
        got = torch.cat([v.reshape(-1) for v in ex.views]).numpy().astype(np.float64)
        # float32 s * sum / p against the exact value: within its roundings
        exact = bool(np.all(np.abs(got - reference) <= 3 * 2.0**-24 * np.abs(reference)))
        levels = np.round(got * p / seg_s).astype(np.int64)
        exact &= bool(np.array_equal(levels, ref_sum))
        ok &= exact and sent == expect_sent and ex.wire_bytes() == sent
        if rank == 0:
            print(json.dumps({"exchange": label, "ranks": p, "parts": ex.parts, "exact": exact, "bytes": sent,
                              "expected_bytes": expect_sent, "max_abs_sum": int(np.abs(levels).max())}), flush=True)
    ok = world.allreduce(ok, op=MPI.LAND)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
