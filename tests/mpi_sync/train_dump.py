"""Train with a synchronous algorithm under mpiexec, then dump every rank's live final state.

Usage: mpiexec -n K python tests/mpi_sync/train_dump.py DUMP_DIR [trainers run arguments...]
Writes DUMP_DIR/rank{r}.pt = {"model": state_dict, "optimizer": state_dict} for every rank r, read
by tests/test_sync_mpi.py (independently of the trainer's own checkpoint files).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from mpi4py import MPI

from trainers.comm import abort_on_error
from trainers.run import build_run_parser, config_from_args, make_parser
from trainers.faults import install_step_failure
from trainers.sync.loop import Trainer
from trainers.sync.runner import algorithm


def main() -> None:
    dump = Path(sys.argv[1])
    args = build_run_parser(make_parser("train_dump")).parse_args(sys.argv[2:])
    cfg = config_from_args(args)
    comm = MPI.COMM_WORLD
    torch.set_num_threads(cfg.threads)
    with abort_on_error(comm):
        trainer = Trainer(cfg, comm, algorithm(cfg.algo))
        install_step_failure(trainer)
        trainer.run()
        dump.mkdir(parents=True, exist_ok=True)
        torch.save({"model": trainer.model.state_dict(), "optimizer": trainer.optimizer.state_dict()},
                   dump / f"rank{comm.Get_rank()}.pt")


if __name__ == "__main__":
    main()
