"""Model validation: profile this machine, time real MPI runs, compare with `perfmodel validate`.

Tables (results/validation/<table>.csv):
  validate   one row per run: algorithm (ssgd, terngrad, daso; asgd, the parameter server, from 3 ranks:
             rank 0 serves, the others work), model, ranks; measured and predicted step time and
             throughput and their errors; the MAPE is in the notebook paper/validation.py.
  emulated   the same on emulated clusters (perfmodel.lab.emulate: nodes x ranks per node, two link rates),
             each with a profile made on it, every component's error (emulated.csv).
  ompi-choice  MPI_Allreduce under Open MPI's own algorithm choice on emulated nodes, over message sizes,
             against the model's ``--allreduce ompi`` on the forced-ring profile's link (emulated_ompi.csv;
             small scale only).
  scale-out  out of sample (reproduce/scale_out.py): one node and one 2x1 link profiled, every prediction
             frozen before the runs, then 2x1, 3x1, 4x1 and 2x2 emulated at two rates (scale_out.csv);
             run only when named: --only scale-out [--remakes 3].
The validate and emulated tables are in-sample: each run is predicted from a profile taken on the same
nodes, ranks, rate and message sizes.
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

from perfmodel.specs import TERNGRAD_EXCHANGES
from reproduce.common import ResultTable, parser, progress, run_tables, settings_text
from reproduce.runs import mpi_command, run_checked, run_command
from reproduce.validation_runs import can_emulate, run_args
from trainers.sync import SYNC_ALGORITHMS  # the package's registry; imports no torch

PAPER = "validation"
SCALE = {
    "smoke": {"models": {"lenet": 32}, "ranks": (1, 2), "steps": 12, "profile_batches": "8,16,32",
              "comm_max": "4Mi", "skip": 3},
    "small": {"models": {"lenet": 64, "resnet20": 32}, "ranks": (1, 2, 4), "steps": 40,
              "profile_batches": "8,16,32,64,128", "comm_max": "64Mi", "skip": 5},
}
SCALE["paper"] = SCALE["small"]
ALGOS = (*SYNC_ALGORITHMS, "asgd")  # every synchronous trainer and the parameter server
#: asgd runs a parameter server on rank 0: the model's asgd communicates from 2 workers on (on one it is
#: a single-GPU run), so its runs need 3 ranks or more
MIN_RANKS = {"asgd": 3}


def validate_table(args: argparse.Namespace, out: Path) -> None:
    from perfmodel.lab.validate import validate

    sc = SCALE[args.scale]
    runs = out / "runs" / args.scale
    runs.mkdir(parents=True, exist_ok=True)
    table = ResultTable(out / "validate.csv", ("scale", "algo", "model", "ranks"))
    ranks_text = ",".join(str(r) for r in sc["ranks"])
    jobs = [(m, b, a, r) for m, b in sc["models"].items() for a in ALGOS for r in sc["ranks"]
            if r >= MIN_RANKS.get(a, 1)]
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
        run_command(mpi_command(ranks, run_args(algo, model, batch, ranks, sc["steps"], log)), log, want, 900,
                    f"validation {model} {algo} {ranks} ranks")
        (row,) = validate([str(log)], [profiles[model]], skip=sc["skip"])
        row.update({"scale": args.scale, "log": str(log.relative_to(out)),
                    "settings": settings_text({"batch_per_rank": batch, "steps": sc["steps"], "skip": sc["skip"],
                                               "dataset": "synthetic", "threads": 1,
                                               "daso": "B=2 W=1, ranks per node min(ranks, 2)"})})
        table.add(row)


# ---------------------------------------------------------------- emulated cluster (perfmodel.lab.emulate)

#: Link rates of the emulated table, a decade below the papers' 1 and 10 Gbit/s Ethernet: the 2 cores
#: here also do every rank's compute and the kernel's TCP work for all the links. Measured on 2026-11-23
#: (2 nodes x 1 rank, ring Allreduce of 1.72 MB, 16 KiB token bucket): at 250 Mbit/s 58.4-58.7 ms in
#: every repetition (wire: 57.5 ms at 29.9 MB/s of TCP payload); at 1 Gbit/s 15.6-20.7 ms, the blocking
#: ring moving 83-117 MB/s from one set of 12 calls to the next, so the CPU, not the link, set the time.
EMU_RATES = ("250mbit", "100mbit")
EMU_SCALE = {
    # (nodes, ranks per node) per algorithm; DASO needs 2 or more ranks per node; asgd's server is rank
    # 0 with a node of its own (one rank per node: every worker reaches it over the shaped link)
    "smoke": {"model": "lenet", "batch": 8, "steps": 12, "skip": 3, "profile_batches": "8,16",
              "comm_max": "512Ki", "comm_repeats": 3, "compute_repeats": 3,
              "layouts": {"ssgd": [(2, 1)], "terngrad": [(2, 1)], "daso": [(2, 2)], "asgd": [(3, 1)]}},
    "small": {"model": "lenet", "batch": 8, "steps": 30, "skip": 5, "profile_batches": "4,8,16",
              "comm_max": "4Mi", "comm_repeats": 9, "compute_repeats": 30, "ompi_layouts": [2, 4],
              "layouts": {"ssgd": [(2, 1), (2, 2), (4, 1)], "terngrad": [(2, 1), (2, 2), (4, 1)],
                          "daso": [(2, 2)], "asgd": [(3, 1), (4, 1)]}},
}
EMU_SCALE["paper"] = EMU_SCALE["small"]


def _emu_jobs(sc: dict) -> list[tuple[str, str, int, int, str]]:
    """(algo, exchange, nodes, ranks per node, rate) of every emulated run, grouped by cluster."""
    jobs = []
    for rate in EMU_RATES:
        for algo, layouts in sc["layouts"].items():
            for nodes, rpn in layouts:
                for ex in (TERNGRAD_EXCHANGES if algo == "terngrad" else ("",)):
                    jobs.append((algo, ex, nodes, rpn, rate))
    return sorted(jobs, key=lambda j: (j[4], j[2], j[3]))


def emulated_table(args: argparse.Namespace, out: Path) -> None:
    """Runs on an emulated cluster (perfmodel.lab.emulate): per (nodes, ranks per node, rate) each
    algorithm's run, then one profile of its links made on it (each operation also timed at the
    message sizes the runs are read at), against which every run is validated."""
    from perfmodel.lab.emulate import EmulatedCluster, EmulationSpec, parse_rate
    from perfmodel.lab.validate import validate

    if not can_emulate(args, "emulated"):
        return
    sc = EMU_SCALE[args.scale]
    model, batch = sc["model"], sc["batch"]
    runs = out / "runs" / f"emulated_{args.scale}"
    runs.mkdir(parents=True, exist_ok=True)
    table = ResultTable(out / "emulated.csv", ("scale", "algo", "exchange", "model", "nodes", "ranks_per_node",
                                              "rate"))
    todo = [j for j in _emu_jobs(sc) if not table.done(scale=args.scale, algo=j[0], exchange=j[1], model=model,
                                                         nodes=j[2], ranks_per_node=j[3], rate=j[4])]
    groups: dict[tuple[int, int, str], list] = {}
    for j in todo:
        groups.setdefault((j[2], j[3], j[4]), []).append(j)
    bar = progress(None, args, "emulated runs", total=len(todo))
    for (nodes, rpn, rate), jobs in groups.items():
        name = f"{model}_{nodes}x{rpn}_{rate}"
        ranks = nodes * rpn
        with EmulatedCluster(EmulationSpec(nodes=nodes, ranks_per_node=rpn, rate_bps=parse_rate(rate))) as cl:
            extra = cl.mpiexec_args()
            logs = []
            for algo, ex, *_ in jobs:  # the runs first: the profile then times each link at their sizes
                log = runs / f"{name}_{algo}{'_' + ex if ex else ''}.jsonl"
                targs = run_args(algo, model, batch, ranks, sc["steps"], log)
                if algo == "daso":
                    targs[targs.index("--ranks-per-node") + 1] = str(rpn)
                if ex:
                    targs += ["--terngrad-exchange", ex]
                want = {"algo": algo, "model": model, "batch": batch, "steps": sc["steps"], "dataset": "synthetic"}
                run_command(mpi_command(ranks, targs, extra=extra), log, want, 900,
                            f"emulated {name} {algo} {ex}".rstrip())
                logs.append((algo, ex, log))
            prof = _emulated_profile(out, args.scale, sc, nodes, rpn, rate, extra)
        for algo, ex, log in logs:
            (row,) = validate([str(log)], [str(prof)], skip=sc["skip"])
            row.update({"scale": args.scale, "exchange": ex, "nodes": nodes, "ranks_per_node": rpn,
                        "rate": rate, "rate_bps": parse_rate(rate), "log": str(log.relative_to(out)),
                        "comm_share": row["measured_comm_s"] / row["measured_step_s"],
                        "profile": prof.name,
                        "settings": settings_text({"batch_per_rank": batch, "steps": sc["steps"],
                                                   "skip": sc["skip"], "dataset": "synthetic", "threads": 1,
                                                   "mpi": " ".join(extra[extra.index("--map-by"):]),
                                                   "daso": "B=2 W=1" if algo == "daso" else ""})})
            table.add(row)
            bar.update(1)
    bar.close()


def _cluster_runs(runs: Path, name: str, skip: int) -> list:
    """The complete run logs of one emulated cluster (``runs``/``name``_*.jsonl), measured
    (perfmodel.lab.validate.measure_run); unfinished or foreign logs are left out."""
    from perfmodel.lab.validate import ValidateError, measure_run

    out = []
    for log in sorted(runs.glob(f"{name}_*.jsonl")):
        try:
            out.append(measure_run(str(log), skip))
        except ValidateError:  # an unfinished or foreign log: nothing to time for it
            continue
    return out


def _read_sizes(runs: list, model: str) -> dict[str, list[int]]:
    """op -> the sizes (bytes) at which perfmodel.lab.validate reads it for these runs
    (perfmodel.lab.validate.run_read_sizes)."""
    from perfmodel.lab.profile.compute import load_workload_model
    from perfmodel.lab.validate import run_read_sizes

    info = load_workload_model(model)[1] if runs else None
    sizes: dict[str, set[int]] = {}
    for run in runs:
        for op, nbytes in run_read_sizes(run, info).items():
            sizes.setdefault(op, set()).add(int(nbytes))
    return {op: sorted(v) for op, v in sorted(sizes.items())}


def _compute_after(runs: list) -> list[int]:
    """The Allreduce sizes (bytes) after which the profile times the concurrent step, so that validate
    reads it at each synchronous run's bytes per step (perfmodel.lab.profile.predictor.after_exchange_bytes) without
    interpolating; parameter-server runs are not read there."""
    from perfmodel.lab.profile.predictor import after_exchange_bytes

    return sorted({-(-int(after_exchange_bytes(r.bytes_per_step, r.ranks)) // 4) * 4
                   for r in runs if not r.workers and r.ranks > 1 and r.bytes_per_step > 0})


def _emulated_profile(out: Path, scale: str, sc: dict, nodes: int, rpn: int, rate: str, extra: list[str]) -> Path:
    """The profile of one emulated cluster (its links under the forced algorithms, ``extra``), made
    on it unless it exists, each operation also timed at the sizes its complete runs are read at."""
    model = sc["model"]
    name = f"{model}_{nodes}x{rpn}_{rate}"
    prof = out / f"profile_emulated_{name}_{scale}.json"
    if not prof.exists():
        ranks_list = ",".join(str(r) for r in sorted({1, rpn, nodes * rpn}))
        # TernGrad's Allgather and ps exchanges run Allgather and Alltoall, the parameter server its
        # push/pull exchange, DASO's global sync its Iallreduce on one rank per node: time them where they run
        algos = {j[0] for j in _emu_jobs(sc) if j[2:5] == (nodes, rpn, rate)}
        ops = ("pingpong,allreduce,iallreduce" + (",allgather,alltoall" if "terngrad" in algos else "")
               + (",ps" if "asgd" in algos else "") + (",global_iallreduce" if "daso" in algos else ""))
        runs = _cluster_runs(out / "runs" / f"emulated_{scale}", name, sc["skip"])
        at = [f"{op}={','.join(map(str, sizes))}" for op, sizes in _read_sizes(runs, model).items()
              if op in ops.split(",")]
        after = ",".join(map(str, _compute_after(runs))) or "none"
        run_checked([sys.executable, "-m", "perfmodel.cli", "profile", "--workload", model,
                     "--batch", sc["profile_batches"], "--ranks", ranks_list, "--max-bytes", sc["comm_max"],
                     "--compute-after", after,
                     "--comm-repeats", str(sc["comm_repeats"]), "--repeats", str(sc["compute_repeats"]),
                     "--ops", ops, *(a for item in at for a in ("--extra-sizes", item)),
                     "--mpiexec-args", " ".join(extra), "--quiet", "--out", str(prof)],
                    900, f"emulated profile {name}")
    return prof


def ompi_choice_table(args: argparse.Namespace, out: Path) -> None:
    """Open MPI's own Allreduce algorithm choice (perfmodel.ompi_tuned, ``--allreduce ompi``) on the
    emulated clusters with one rank per node: MPI_Allreduce timed over message sizes without forcing
    an algorithm, against the model's ``ompi`` allreduce on the link of the forced-ring profile."""
    from perfmodel.lab.emulate import EmulatedCluster, EmulationSpec, parse_rate
    from perfmodel.lab.validate import validate_allreduce_choice

    sc = EMU_SCALE[args.scale]
    layouts = sc.get("ompi_layouts", [])
    if not layouts or not can_emulate(args, "ompi-choice"):
        return
    table = ResultTable(out / "emulated_ompi.csv", ("scale", "nodes", "rate", "bytes"))
    for rate in EMU_RATES:
        for nodes in layouts:
            if table.done(scale=args.scale, nodes=nodes, rate=rate, bytes=8):
                continue
            name = f"{sc['model']}_{nodes}x1_{rate}"
            with EmulatedCluster(EmulationSpec(nodes=nodes, ranks_per_node=1, rate_bps=parse_rate(rate))) as cl:
                forced = _emulated_profile(out, args.scale, sc, nodes, 1, rate, cl.mpiexec_args())
                chosen = out / f"profile_emulated_{name}_ompi_{args.scale}.json"
                if not chosen.exists():
                    run_checked([sys.executable, "-m", "perfmodel.cli", "profile", "--no-compute", "--ranks",
                                 str(nodes), "--max-bytes", sc["comm_max"], "--comm-repeats",
                                 str(sc["comm_repeats"]), "--ops", "allreduce", "--mpiexec-args",
                                 " ".join(cl.mpiexec_args(forced=False)), "--quiet", "--out", str(chosen)],
                                900, f"emulated profile {name}, Open MPI's own algorithms")
            rows = validate_allreduce_choice(forced, chosen, nodes)
            for row in sorted(rows, key=lambda r: r["bytes"] == 8):  # the 8 B row last: it marks the set done
                row.update({"scale": args.scale, "nodes": nodes, "rate": rate, "profile": forced.name,
                            "chosen_profile": chosen.name})
                table.add(row)


def _scale_out(args: argparse.Namespace, out: Path) -> None:
    from reproduce.scale_out import scale_out_table

    scale_out_table(args, out)


TABLES = {"validate": validate_table, "emulated": emulated_table, "ompi-choice": ompi_choice_table,
          "scale-out": _scale_out}
#: Run when --only does not name tables: the out-of-sample table takes its own command (minutes of runs).
DEFAULT_TABLES = "validate,emulated,ompi-choice"


def main(argv: list[str] | None = None) -> int:
    p = parser(PAPER, __doc__.splitlines()[0])
    p.add_argument("--remakes", type=int, default=1,
                   help="scale-out: remakes of the whole table (profiles, frozen predictions, runs), rows keyed by "
                        "remake 0..N-1 (default 1)")
    args = p.parse_args(argv)
    if args.remakes < 1:
        print(f"reproduce/{PAPER}: error: --remakes must be >= 1, got {args.remakes}", file=sys.stderr)
        return 2
    args.only = DEFAULT_TABLES if args.only is None else args.only  # --only , names none: refused
    return run_tables(PAPER, TABLES, args)


if __name__ == "__main__":
    sys.exit(main())
