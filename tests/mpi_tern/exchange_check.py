"""Under mpiexec: each TernGrad exchange (trainers.comm) against a float reference every rank computes
alone (the counter-based stream lets any rank recompute any rank's codes). Prints one JSON line per
exchange on rank 0; exits 1 on a mismatch."""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

from trainers import comm as tcomm
from trainers.compress import encode_codes, encode_packed, level_dtype, packed_nbytes
from trainers.level_lanes import lanes_nbytes, pack_lanes4, unpack_lanes4

SIZES = [37, 1000, 5, 2003]  # uneven tensors: shards and packed blocks do not line up


def gradient(rank: int) -> np.ndarray:
    return np.random.default_rng(100 + rank).standard_normal(sum(SIZES)).astype(np.float32)


def main() -> int:
    world = MPI.COMM_WORLD
    p, rank = world.Get_size(), world.Get_rank()
    starts = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int64)
    n = int(starts[-1])
    scalers = np.array([0.5, 1.0, 3.0, 2.0])
    key = lambda r: 1000 + r  # noqa: E731
    counter = 77
    # float reference: sum over ranks of s_k * t_{r,k} / p, every rank's codes recomputed here
    ref_sum = sum(encode_codes(gradient(r), starts, scalers, key(r), counter).astype(np.int64) for r in range(p))
    g = gradient(rank)
    ok = True
    results = {}
    # levels: integer Allreduce on int8/int16
    codes = encode_codes(g, starts, scalers, key(rank), counter, np.empty(n, dtype=level_dtype(p)))
    sent = tcomm.allreduce_levels(world, codes)
    results["levels"] = (codes.astype(np.int64), sent, tcomm.ring_allreduce_bytes(n * level_dtype(p).itemsize, p))
    # levels in 4-bit lanes (2..7 ranks): the SWAR sum as a user-defined MPI op, n odd (a half-used byte)
    if 2 * p + 1 <= 16:
        codes = encode_codes(g, starts, scalers, key(rank), counter, np.empty(n, dtype=np.int8))
        lanes = pack_lanes4(codes)
        sent = tcomm.allreduce_lanes4(world, lanes)
        results["levels-lanes4"] = (unpack_lanes4(lanes, n).astype(np.int64), sent,
                                    tcomm.ring_allreduce_bytes(lanes_nbytes(n), p))
    # ps: sharded parameter server
    shard = tcomm.ps_shard_elems(n, p)
    push = encode_packed(g, starts, scalers, key(rank), counter, np.empty(p * shard // 4, dtype=np.uint8))
    sums = np.empty(p * shard, dtype=np.int32)
    sent = tcomm.ps_levels_sum(world, push, shard, sums)
    bits = int(2 * p).bit_length()
    results["ps"] = (sums[:n].astype(np.int64), sent, (p - 1) * (shard // 4 + shard * bits // 8))
    if np.any(sums[n:] != 0):
        ok = False
    # allgather: every rank's packed tensors
    blocks = [encode_packed(g[starts[k]:starts[k + 1]], np.array([0, SIZES[k]]), scalers[k:k + 1], key(rank),
                            counter + int(starts[k])) for k in range(len(SIZES))]
    send = np.concatenate(blocks)
    out = np.empty(n, dtype=np.int32)
    sent = tcomm.allgather_packed_sum(world, send, SIZES, out)
    results["allgather"] = (out.astype(np.int64), sent, (p - 1) * sum(packed_nbytes(s) for s in SIZES))
    seg_s = np.repeat(scalers, SIZES)
    reference = (ref_sum.astype(np.float32) * seg_s.astype(np.float32)) / np.float32(p)
    for name, (got, sent, expect_sent) in results.items():
        mean = (got.astype(np.float32) * seg_s.astype(np.float32)) / np.float32(p)
        exact = bool(np.array_equal(got, ref_sum)) and bool(np.array_equal(mean, reference))
        ok &= exact and sent == expect_sent
        if rank == 0:
            print(json.dumps({"exchange": name, "ranks": p, "exact": exact, "bytes": sent,
                              "expected_bytes": expect_sent, "max_abs_sum": int(np.abs(got).max())}), flush=True)
    ok = world.allreduce(ok, op=MPI.LAND)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
