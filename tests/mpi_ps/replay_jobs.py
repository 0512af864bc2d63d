"""Run several parameter-server jobs, one after the other, in one MPI job (saves start-up time).

Usage: mpiexec -n K python tests/mpi_ps/replay_jobs.py JOBS.json   (PYTHONPATH = repo root)
JOBS.json: a list of {"config": AsyncConfig fields, "replay_order": path or null, "save_params": path,
"log": path or null, "delays": optional override}. Every job uses all K ranks (K - 1 workers).
"""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from trainers.asynchronous.ps import run_ps
from trainers.config import AsyncConfig, PSOptions


def main() -> None:
    jobs = json.loads(open(sys.argv[1]).read())
    for job in jobs:
        cfg = AsyncConfig(**{**job["config"], "log": job.get("log")})
        opt = PSOptions(replay_order=job.get("replay_order"), save_params=job["save_params"], worker_timeout=60.0)
        result = run_ps(cfg, MPI.COMM_WORLD, opt)
        if result is not None:
            print(json.dumps({"job": job["save_params"], "gradients": result.summary["gradients"]}), flush=True)


if __name__ == "__main__":
    main()
