"""Model validation: profile this machine, time real MPI runs, compare with `perfmodel validate`.

Tables (results/validation/<table>.csv):
  validate   one row per run: algorithm (ssgd, terngrad, daso), model, ranks; measured and predicted step
             time and throughput and their errors; the MAPE is in the notebook paper/validation.py.
Runs use synthetic data shaped like each model's input (timing does not depend on the pixel values),
1 torch thread per rank, fixed DASO B and W with no warm-up/cool-down phases. Scales: smoke = lenet
only, ranks 1 and 2, few steps; small = lenet and resnet20, ranks 1, 2, 4.
Commands it runs (each skipped when its output exists):
  perfmodel profile --workload M --batch ... --ranks 1,2[,4] --out results/validation/profile_M.json
  mpiexec -n K trainers run --algo A --model M --dataset synthetic --batch B --steps S --log runs/...jsonl
(a run is skipped when its log is complete and of the same configuration: reproduce/runs.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reproduce.common import ResultTable, parser, progress, run_tables, settings_text
from reproduce.runs import mpi_command, run_checked, run_command

PAPER = "validation"
SCALE = {
    "smoke": {"models": {"lenet": 32}, "ranks": (1, 2), "steps": 12, "profile_batches": "8,16,32",
              "comm_max": "4Mi", "skip": 3},
    "small": {"models": {"lenet": 64, "resnet20": 32}, "ranks": (1, 2, 4), "steps": 40,
              "profile_batches": "8,16,32,64,128", "comm_max": "64Mi", "skip": 5},
}
SCALE["paper"] = SCALE["small"]
ALGOS = ("ssgd", "terngrad", "daso")


def _run_args(algo: str, model: str, batch: int, ranks: int, steps: int, log: Path) -> list[str]:
    """`trainers run` flags of one validation run."""
    args = ["--algo", algo, "--model", model, "--dataset", "synthetic",
            "--synthetic-n", str(batch * ranks * (steps + 2)), "--batch", str(batch), "--steps", str(steps),
            "--lr", "0.01", "--momentum", "0.9", "--seed", "0", "--threads", "1", "--no-progress",
            "--log", str(log)]
    if algo == "daso":
        args += ["--ranks-per-node", str(min(ranks, 2)), "--daso-warmup-epochs", "0",
                 "--daso-cooldown-epochs", "0", "--daso-b", "2", "--daso-w", "1"]
    return args


def validate_table(args: argparse.Namespace, out: Path) -> None:
    from perfmodel.validate import validate

    sc = SCALE[args.scale]
    runs = out / "runs" / args.scale
    runs.mkdir(parents=True, exist_ok=True)
    table = ResultTable(out / "validate.csv", ("scale", "algo", "model", "ranks"))
    ranks_text = ",".join(str(r) for r in sc["ranks"])
    jobs = [(m, b, a, r) for m, b in sc["models"].items() for a in ALGOS for r in sc["ranks"]]
    profiles = {}
    for model in sc["models"]:
        prof = out / f"profile_{model}_{args.scale}.json"
        if not prof.exists():
            run_checked([sys.executable, "-m", "perfmodel.cli", "profile", "--workload", model, "--batch",
                         sc["profile_batches"], "--ranks", ranks_text, "--max-bytes", sc["comm_max"],
                         "--out", str(prof)], 900, f"validation profile of {model}")
        profiles[model] = str(prof)
    for model, batch, algo, ranks in progress(jobs, args, "validation runs"):
        if table.done(scale=args.scale, algo=algo, model=model, ranks=ranks):
            continue
        log = runs / f"{model}_{algo}_{ranks}.jsonl"
        want = {"algo": algo, "model": model, "batch": batch, "steps": sc["steps"], "dataset": "synthetic"}
        run_command(mpi_command(ranks, _run_args(algo, model, batch, ranks, sc["steps"], log)), log, want, 900,
                    f"validation {model} {algo} {ranks} ranks")
        (row,) = validate([str(log)], [profiles[model]], skip=sc["skip"])
        row.update({"scale": args.scale, "log": str(log.relative_to(out)),
                    "settings": settings_text({"batch_per_rank": batch, "steps": sc["steps"], "skip": sc["skip"],
                                               "dataset": "synthetic", "threads": 1,
                                               "daso": "B=2 W=1, ranks per node min(ranks, 2)"})})
        table.add(row)


TABLES = {"validate": validate_table}


def main(argv: list[str] | None = None) -> int:
    args = parser(PAPER, __doc__.splitlines()[0]).parse_args(argv)
    return run_tables(PAPER, TABLES, args)


if __name__ == "__main__":
    sys.exit(main())
