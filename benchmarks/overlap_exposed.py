"""Exposed vs full communication time of SSGD with buckets launched during backprop, measured and modelled.

Usage::

    python benchmarks/overlap_exposed.py [--ranks 2] [--model resnet20] [--batch 32] [--steps 30]
        [--bucket-mb 0.25] [--backend gloo] [--repeats 2] [--launcher "srun --mpi=pmix"]

It runs ``trainers run --algo ssgd`` on synthetic data with ``--overlap on`` and ``--overlap off``
(alternating ``--repeats`` times, started by perfmodel.lab.launcher: ``--launcher``, ``$DSGD_LAUNCHER`` or
mpiexec), drops ``--warmup`` steps of each run, and prints rank 0's medians per step of

    t_step, t_compute            the step and its compute phases (seconds)
    t_comm_exposed               communication not hidden behind backprop (after backward ended)
    t_comm_full                  the time the channel was busy with the step's buckets

and the hidden fraction 1 - exposed / full, next to the model's (perfmodel.overlap.exposed_time) for
the same buckets: backward = BACKWARD_SHARE x the overlap-off run's compute time, each bucket's
communication time = the overlap-off run's t_comm_full split in proportion to the bucket's bytes, and
the buckets ready in proportion to the parameters produced (the model's fallback weights). ResNet-20's
1.1 MB gradient fits one 25 MiB bucket, which cannot overlap anything, hence the small default
``--bucket-mb``. On a shared CPU the ranks and gloo's communication thread compete for cores, which
limits what overlap can win; the figures are noisy there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--model", default="resnet20")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--steps", type=int, default=30, help="steps per run (warm-up included)")
    p.add_argument("--warmup", type=int, default=5, help="steps dropped at the start of each run")
    p.add_argument("--bucket-mb", type=float, default=0.25, help="bucket size in MiB")
    p.add_argument("--backend", default="gloo", choices=("gloo", "mpi"))
    p.add_argument("--repeats", type=int, default=2, help="alternations overlap on / off")
    p.add_argument("--launcher", default=None, help="launcher command (default $DSGD_LAUNCHER, then mpiexec)")
    p.add_argument("--hostfile", default=None, help="hostfile passed to the launcher")
    return p


def _run(args: argparse.Namespace, launcher, overlap: str, log: Path) -> list[dict]:
    train = [sys.executable, "-m", "trainers.run", "run", "--algo", "ssgd", "--model", args.model,
             "--dataset", "synthetic", "--synthetic-n", str(args.ranks * args.batch * args.steps),
             "--batch", str(args.batch), "--steps", str(args.steps), "--seed", "0", "--no-progress",
             "--eval-batch", str(args.batch), "--backend", args.backend, "--overlap", overlap,
             "--bucket-mb", str(args.bucket_mb), "--log", str(log)]
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    subprocess.run(launcher.command(args.ranks, train), env=env, check=True)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    buckets = rows[0]["algorithm"]["buckets"]
    return [dict(r, buckets=buckets) for r in rows if r.get("type") == "step"][args.warmup:]


def _model_hidden(args: argparse.Namespace, t_compute_off: float, t_comm_off: float) -> tuple[float, float]:
    """(model's exposed seconds, model's hidden fraction) for the trainer's buckets."""
    import numpy as np

    from perfmodel.overlap import BACKWARD_SHARE, Buckets, exposed_time
    from trainers.grad_buckets import bucket_plan
    from trainers.models import tensor_sizes

    numels = [n for _, n in tensor_sizes(args.model)]
    plan = bucket_plan(numels, max(int(args.bucket_mb * 2**20), 4))
    nbytes = np.array([4.0 * sum(numels[i] for i in g) for g in plan])
    produced = np.cumsum([sum(numels[i] for i in g) for g in plan]) / sum(numels)
    buckets = Buckets(nbytes, produced)
    full, exposed = exposed_time(buckets, BACKWARD_SHARE * t_compute_off,
                                 lambda n: t_comm_off * n / nbytes.sum())
    exposed_s, full_s = float(np.ravel(exposed)[0]), float(np.ravel(full)[0])
    return exposed_s, 1 - exposed_s / full_s


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if min(args.ranks, args.batch, args.steps, args.repeats) < 1 or not 0 <= args.warmup < args.steps \
            or args.bucket_mb <= 0:
        print("overlap_exposed: error: --ranks, --batch, --steps, --repeats must be >= 1, 0 <= --warmup < --steps, "
              "--bucket-mb > 0", file=sys.stderr)
        return 2
    from perfmodel.lab.launcher import resolve_launcher
    from perfmodel.specs import SpecError

    try:
        launcher = resolve_launcher(args.launcher, hostfile=args.hostfile)
    except SpecError as exc:
        print(f"overlap_exposed: error: {exc}", file=sys.stderr)
        return 2
    steps: dict[str, list[dict]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="overlap_exposed_") as tmp:
        for rep in range(args.repeats):
            for overlap in (("on", "off") if rep % 2 == 0 else ("off", "on")):
                steps[overlap] += _run(args, launcher, overlap, Path(tmp) / f"{overlap}{rep}.jsonl")
    med = {o: {k: statistics.median(s[k] for s in rows) for k in ("t_step", "t_compute", "t_comm_exposed",
                                                                   "t_comm_full")}
           for o, rows in steps.items()}
    buckets = steps["on"][0]["buckets"]
    model_exposed, model_hidden = _model_hidden(args, med["off"]["t_compute"], med["off"]["t_comm_full"])
    print(f"{args.model}, {args.ranks} ranks, batch {args.batch}/rank, {args.backend}, {buckets} buckets of "
          f"{args.bucket_mb} MiB, {args.repeats} x {args.steps - args.warmup} steps per setting (medians, ms)")
    print(f"{'overlap':8s}{'t_step':>10s}{'t_compute':>11s}{'exposed':>10s}{'full comm':>11s}{'hidden':>9s}")
    for o in ("on", "off"):
        m = med[o]
        hidden = 1 - m["t_comm_exposed"] / m["t_comm_full"] if m["t_comm_full"] > 0 else 0.0
        print(f"{o:8s}{1e3 * m['t_step']:10.2f}{1e3 * m['t_compute']:11.2f}{1e3 * m['t_comm_exposed']:10.2f}"
              f"{1e3 * m['t_comm_full']:11.2f}{hidden:9.1%}")
    print(f"{'model':8s}{'':21s}{1e3 * model_exposed:10.2f}{1e3 * med['off']['t_comm_full']:11.2f}{model_hidden:9.1%}"
          f"   (perfmodel.overlap from the overlap-off run's compute and comm)")
    print("JSON " + json.dumps({"model": args.model, "ranks": args.ranks, "batch": args.batch, "backend": args.backend,
                                "bucket_mb": args.bucket_mb, "buckets": buckets, "measured": med,
                                "model_exposed_s": model_exposed, "model_hidden_fraction": model_hidden}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
