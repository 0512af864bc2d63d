"""What the validation tables (reproduce.validation, reproduce.scale_out) share: the `trainers run`
flags of one validation run, and whether this host can emulate a cluster for the emulated tables."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run_args(algo: str, model: str, batch: int, ranks: int, steps: int, log: Path, accumulate: int = 1) -> list[str]:
    """`trainers run` flags of one validation run (``accumulate`` micro-batches of ``batch`` per step;
    enough synthetic samples that no epoch ends inside the run)."""
    args = ["--algo", algo, "--model", model, "--dataset", "synthetic",
            "--synthetic-n", str(batch * accumulate * ranks * (steps + 2)), "--batch", str(batch),
            "--steps", str(steps), "--lr", "0.01", "--momentum", "0.9", "--seed", "0", "--threads", "1",
            "--no-progress", "--log", str(log)]
    if accumulate > 1:
        args += ["--accumulate", str(accumulate)]
    if algo == "daso":
        args += ["--ranks-per-node", str(min(ranks, 2)), "--daso-warmup-epochs", "0",
                 "--daso-cooldown-epochs", "0", "--daso-b", "2", "--daso-w", "1"]
    return args


def can_emulate(args: argparse.Namespace, table: str) -> bool:
    """Whether this host can emulate a cluster (perfmodel.lab.emulate.check_host). If not: the error when the
    table was asked for by name (--only), else a line on stderr and False (the table is skipped)."""
    from perfmodel.lab.emulate import EmulateError, check_host

    try:
        check_host()
    except EmulateError as e:
        if args.only and table in args.only:
            raise
        print(f"reproduce/validation: {table} table skipped: {e}", file=sys.stderr)
        return False
    return True
