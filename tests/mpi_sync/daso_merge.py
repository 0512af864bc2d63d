"""DASO's global-sync arithmetic on set parameter values, through the real MPI path.

Usage: mpiexec -n 4 python tests/mpi_sync/daso_merge.py OUT_DIR
2 pretend nodes x 2 ranks (ranks 0, 1 | 2, 3); the group of local rank 0 (ranks 0 and 2) syncs.
Every rank r fills its parameters with SENT[r], starts a non-blocking sync (S = WAITED batches),
refills them with LOCAL[r], merges (DASO._finish: merge + broadcast to the node) and saves the flat
parameters; then fills them with SENT[r] again and runs a blocking bf16 and a blocking fp32 sync.
Writes OUT_DIR/rank{r}.pt = {"merged", "bf16", "fp32", "bytes_start", "bytes_bf16", "bytes_fp32"}.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from mpi4py import MPI

from trainers.comm import abort_on_error
from trainers.run import build_run_parser, config_from_args, make_parser
from trainers.sync.daso import DASO
from trainers.sync.loop import Trainer

SENT = (1.0, 100.0, 3.0, 300.0)  # ranks 1 and 3 are not in the sending group: their values never travel
LOCAL = (10.0, 1000.0, 30.0, 3000.0)
WAITED = 3
ODD = 1.0 + 2.0**-10  # not a bf16 value: shows whether the blocking sync went as bf16


def main() -> None:
    out = Path(sys.argv[1])
    args = build_run_parser(make_parser("daso_merge")).parse_args(
        ["--algo", "daso", "--ranks-per-node", "2", "--model", "lenet", "--dataset", "synthetic",
         "--synthetic-n", "64", "--batch", "4", "--steps", "1", "--no-progress"])
    comm = MPI.COMM_WORLD
    r = comm.Get_rank()
    torch.set_num_threads(1)
    with abort_on_error(comm):
        daso = Trainer(config_from_args(args), comm, DASO).algo
        daso.flat.fill_(SENT[r])
        bytes_start = daso._start(0, due=WAITED, waited=WAITED)
        daso.flat.fill_(LOCAL[r])
        daso._finish(daso.pending.pop())
        merged = daso.flat.clone()
        result = {"merged": merged, "bytes_start": bytes_start}
        for wire in ("bf16", "fp32"):
            daso.flat.fill_(SENT[r] * ODD)
            result[f"bytes_{wire}"] = daso._blocking(0, wire)
            result[wire] = daso.flat.clone()
        out.mkdir(parents=True, exist_ok=True)
        torch.save(result, out / f"rank{r}.pt")


if __name__ == "__main__":
    main()
