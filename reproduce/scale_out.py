"""Out of sample: profile one node and one link, freeze every prediction, then run the emulated cluster.

The ``scale-out`` table of ``python -m reproduce.validation`` (root; perfmodel.lab.emulate). For each remake:

1. profile one node (this machine; its ranks on shared memory under the emulated runs' MPI settings):
   compute at 1..R ranks at once, the codec loop, the node's own Allreduce; `perfmodel profile`;
2. profile the link between two emulated nodes at each rate: `perfmodel profile --link` (2 ranks, one
   per node), each operation also timed at the message sizes the planned runs send (they follow from the
   model and the layouts alone, no run is read), and the training step on both ranks right after an
   Allreduce over the link of what each planned run sends per rank (the slowdown a network exchange
   leaves to the step after it: perfmodel.lab.profile.predictor), and the kernel's network CPU time
   per byte sent between the nodes (perfmodel.lab.profile.kernel_load; remakes 0-2 of the committed
   table were made before it was measured);
3. write every row's prediction to ``scale_out_predictions_<scale>_r<remake>.json`` with the code's
   revision and the profiles' sha256, before the first training run starts: the `perfmodel predict`
   command of each planned run (perfmodel.lab.validate.predict_commands on the run's planned configuration)
   and what it printed;
4. run every layout (nodes x ranks per node) at every rate, and write one row per run to
   ``scale_out.csv``: what the run measured against the frozen prediction. A row whose run was configured
   otherwise than planned, or whose prediction no longer recomputes identically, is refused.

Layouts are split before any change to the model: DEVELOPMENT (2x1, 3x1) may be looked at to choose a
term; TEST (4x1, 2x2) is judged, never tuned on. Nothing is measured on more than two nodes; every row
with more nodes or ranks than a profile measured is an extrapolation. The emulated nodes share this
machine's 2 cores (``--nodes-per-host all``): 4 ranks on 2 cores are oversubscribed 2x, as the one-node
profile's 4-rank run is, so the compute each rank gets is measured, not assumed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from perfmodel.specs import DEFAULT_TERNGRAD_EXCHANGE
from reproduce.common import ResultTable, atomic_path, progress, settings_text
from reproduce.runs import mpi_command, run_checked, run_command
from reproduce.validation_recompute import relative_to_root as _rel

#: Layouts (nodes, ranks per node) of the development and the test set, declared before the model changed.
DEVELOPMENT = ((2, 1), (3, 1))
TEST = ((4, 1), (2, 2))
#: Rates: communication is 49-97% of a LeNet step at batch 8 on these links (the emulated table).
RATES = ("250mbit", "100mbit")
SCALE = {
    "smoke": {"model": "lenet", "batch": 8, "steps": 12, "skip": 3, "rates": ("250mbit",),
              "profile_batches": "8,16", "node_ranks": "1,2,4", "comm_max": "512Ki", "comm_repeats": 3,
              "compute_repeats": 3,
              "layouts": {(2, 1): ("ssgd", "terngrad:levels"), (4, 1): ("ssgd",), (2, 2): ("daso",)}},
    "small": {"model": "lenet", "batch": 8, "steps": 30, "skip": 5, "rates": RATES,
              "profile_batches": "4,8,16", "node_ranks": "1,2,3,4", "comm_max": "4Mi", "comm_repeats": 9,
              "compute_repeats": 30,
              "layouts": {(2, 1): ("ssgd", "terngrad:levels", "terngrad:ps", "terngrad:allgather"),
                          (3, 1): ("ssgd", "terngrad:levels", "terngrad:ps", "terngrad:allgather", "asgd"),
                          (4, 1): ("ssgd", "terngrad:levels", "terngrad:ps", "terngrad:allgather", "asgd"),
                          (2, 2): ("ssgd", "terngrad:levels", "terngrad:ps", "terngrad:allgather", "daso")}},
}
SCALE["paper"] = SCALE["small"]
KEY = ("scale", "remake", "algo", "exchange", "model", "nodes", "ranks_per_node", "rate")
LINK_OPS = "pingpong,allreduce,iallreduce,allgather,alltoall,ps"


def layout_set(nodes: int, rpn: int) -> str:
    """"development" or "test" (DEVELOPMENT, TEST)."""
    return "development" if (nodes, rpn) in DEVELOPMENT else "test"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def revision() -> str:
    """The checkout's commit, "+dirty" when files differ from it; "unknown" outside a git checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def _jobs(sc: dict) -> list[tuple[str, str, int, int, str]]:
    """(algo, exchange, nodes, ranks per node, rate) of every planned run."""
    out = []
    for rate in sc["rates"]:
        for (nodes, rpn), algos in sc["layouts"].items():
            for item in algos:
                algo, _, ex = item.partition(":")
                out.append((algo, ex, nodes, rpn, rate))
    return out


def _train_args(algo: str, ex: str, rpn: int, ranks: int, sc: dict, log: Path) -> list[str]:
    from reproduce.validation_runs import run_args

    args = run_args(algo, sc["model"], sc["batch"], ranks, sc["steps"], log)
    if algo == "daso":
        args[args.index("--ranks-per-node") + 1] = str(rpn)
    if ex:
        args += ["--terngrad-exchange", ex]
    return args


def planned_run(algo: str, ex: str, nodes: int, rpn: int, sc: dict):
    """The RunMeasurement a planned run's log will give, as far as its prediction reads it (its
    configuration, ranks, batch and steps; no times): what the frozen prediction is made from."""
    from perfmodel.lab.validate import RunMeasurement

    ranks = nodes * rpn
    cfg = {"algo": algo, "model": sc["model"], "batch": sc["batch"], "overlap": True, "bucket_mb": 25.0,
           "terngrad_exchange": ex or DEFAULT_TERNGRAD_EXCHANGE, "tern_lanes": "auto", "tern_min_elems": 1, "tern_fp32_last": True,
           "ranks_per_node": rpn if algo == "daso" else 1, "daso_b": 2 if algo == "daso" else None,
           "daso_w": 1 if algo == "daso" else None, "threads": 1}
    return RunMeasurement("planned", algo, sc["model"], ranks, sc["batch"], 1, sc["steps"] - sc["skip"], 1.0, 0.0,
                          0.0, 0.0, 1.0, cfg, {}, 0.0, "mpi", ranks - 1 if algo == "asgd" else 0)


def _node_args() -> list[str]:
    """mpiexec arguments of the one-node profile: the emulated runs' settings on one machine (shared
    memory, ranks yield the shared cores, the forced ring algorithms)."""
    from perfmodel.lab.emulate import shared_machine_args
    from perfmodel.mpi_algorithms import mca_args

    return [*shared_machine_args(), "--mca", "btl", "self,sm", *mca_args()]


def _read_sizes(sc: dict) -> dict[str, list[int]]:
    """op -> the sizes (bytes) the planned runs' predictions read the link at."""
    from perfmodel.lab.profile.compute import load_workload_model
    from perfmodel.lab.validate import run_read_sizes

    info = load_workload_model(sc["model"])[1]
    sizes: dict[str, set[int]] = {}
    for algo, ex, nodes, rpn, _ in _jobs(sc):
        for op, nbytes in run_read_sizes(planned_run(algo, ex, nodes, rpn, sc), info).items():
            sizes.setdefault(op, set()).add(int(nbytes))
    return {op: sorted(v) for op, v in sorted(sizes.items())}


def _after_sizes(sc: dict, ranks: int | None = None) -> list[int]:
    """The Allreduce sizes after which a profile times the concurrent step: what each planned synchronous
    run's prediction reads it at (perfmodel.lab.profile.predictor.after_exchange_bytes of the model's bytes
    per step, on the run's ranks; ``ranks`` 2: on the link's two ranks, where an Allreduce of n sends n),
    from the model and the layouts alone."""
    import numpy as np

    from perfmodel.lab.profile.compute import load_workload_model
    from perfmodel.lab.profile.predictor import after_exchange_bytes
    from perfmodel.scaling import predict
    from perfmodel.specs import Cluster, ComputeTime, Link, Workload
    from perfmodel.lab.validate import run_strategies

    info = load_workload_model(sc["model"])[1]
    wl = Workload(name=info.name, tensor_sizes=tuple(info.tensor_sizes), tensor_names=tuple(info.tensor_names),
                  classifier_tensors=info.classifier_tensors, compute={"cpu": ComputeTime("linear", 1e-3, 1e-4)})
    link = Link(latency_s=1e-5, bandwidth_Bps=1e8)
    out = set()
    for algo, ex, nodes, rpn, _ in _jobs(sc):
        run = planned_run(algo, ex, nodes, rpn, sc)
        if run.workers:
            continue
        for strategy, gpn, _ in run_strategies(run):
            cl = Cluster("plan", gpn, link, Link(0.0, float("inf")), link, gpu="cpu")
            sent = float(np.asarray(predict(wl, cl, strategy, [run.ranks], batch=run.batch).bytes_per_gpu)[0])
            out.add(-(-int(after_exchange_bytes(sent, ranks or run.ranks)) // 4) * 4)
    return sorted(out)


def _profiles(out: Path, scale: str, sc: dict, remake: int) -> tuple[Path, dict[str, Path]]:
    """The one-node profile and each rate's link profile of one remake, made unless they exist."""
    from perfmodel.lab.emulate import EmulatedCluster, EmulationSpec, parse_rate

    node = out / f"profile_scaleout_node_{sc['model']}_{scale}_r{remake}.json"
    if not node.exists():
        run_checked([sys.executable, "-m", "perfmodel.cli", "profile", "--workload", sc["model"],
                     "--batch", sc["profile_batches"], "--ranks", sc["node_ranks"], "--max-bytes", sc["comm_max"],
                     "--ops", "allreduce,iallreduce", "--compute-after", ",".join(map(str, _after_sizes(sc))),
                     "--comm-repeats", str(sc["comm_repeats"]), "--repeats", str(sc["compute_repeats"]),
                     "--mpiexec-args", " ".join(_node_args()), "--quiet", "--out", str(node)],
                    1800, "scale-out: profile of one node")
    links = {}
    sizes = _read_sizes(sc)
    at = [f"{op}={','.join(map(str, v))}" for op, v in sizes.items() if op in LINK_OPS.split(",")]
    for rate in sc["rates"]:
        link = out / f"profile_scaleout_link_2x1_{rate}_{scale}_r{remake}.json"
        if not link.exists():
            with EmulatedCluster(EmulationSpec(nodes=2, ranks_per_node=1, rate_bps=parse_rate(rate))) as cl:
                run_checked([sys.executable, "-m", "perfmodel.cli", "profile", "--link", "--workload", sc["model"],
                             "--batch", sc["profile_batches"], "--repeats", str(sc["compute_repeats"]),
                             "--compute-after", ",".join(map(str, _after_sizes(sc, 2))),
                             "--max-bytes", sc["comm_max"], "--comm-repeats", str(sc["comm_repeats"]),
                             "--ops", LINK_OPS, *(a for item in at for a in ("--extra-sizes", item)),
                             "--mpiexec-args", " ".join(cl.mpiexec_args()), "--quiet", "--out", str(link)],
                            900, f"scale-out: profile of the link at {rate}")
        links[rate] = link
    return node, links


def freeze_predictions(path: Path, sc: dict, node: Path, links: dict[str, Path]) -> dict:
    """Every planned run's prediction, written to ``path`` (atomically) unless it exists; the frozen set."""
    from perfmodel.lab.validate import Scenario, predict_run

    def rows(cores) -> dict:
        return {f"{algo}|{ex}|{nodes}x{rpn}|{rate}": predict_run(
                    planned_run(algo, ex, nodes, rpn, sc),
                    Scenario(str(node), (str(links[rate]),), rpn if algo != "asgd" else 1, 0, cores))
                for algo, ex, nodes, rpn, rate in _jobs(sc)}

    return freeze_once(path, node, links, rows)


def read_frozen(path: Path) -> dict:
    """A frozen set of predictions as write_frozen wrote it."""
    return json.loads(path.read_text())


def freeze_once(path: Path, node: Path, links: dict[str, Path], rows_of) -> dict:
    """The frozen set at ``path``; where there is none yet, ``rows_of(cores)`` (the node profile's CPU
    affinity) makes its rows and write_frozen writes them. A frozen set is never recomputed."""
    from perfmodel.lab.profile.profile_file import load_profile

    if path.exists():
        return read_frozen(path)
    return write_frozen(path, node, links, rows_of(load_profile(node).machine.cpu_affinity))


def judged_row(log: Path, node: Path, link: Path, pred: dict, label: str, *, skip: int,
               gpus_per_node: int = 1) -> dict:
    """The validate row of a finished run against its node and link profiles, after checking that the
    frozen prediction ``pred`` recomputes from them to 1e-12 (ValidateError naming ``label`` if not:
    the code or a profile changed since it was frozen)."""
    from perfmodel.lab.validate import ValidateError, validate

    (row,) = validate([str(log)], [str(node)], skip=skip, link=(str(link),), gpus_per_node=gpus_per_node,
                      nodes_per_host=0, cores=None)
    if abs(row["predicted_step_s"] - pred["t_step_s"]) > 1e-12 * pred["t_step_s"]:
        raise ValidateError(f"{label}: the frozen prediction {pred['t_step_s']:.6g} s does not recompute "
                            f"({row['predicted_step_s']:.6g} s): code or profile changed")
    return row


def check_provenance(row: dict, frozen: dict, pred: dict, rate: str, started: float, log: Path, out: Path,
                     node: Path, link: Path) -> dict:
    """The columns an emulated check's row (reproduce.overlap_check, reproduce.accumulation_check) carries
    after its settings: when and from what its prediction was frozen, when the run started, its files,
    and the share of the measured step its communication took."""
    return {"predicted_at": frozen["predicted_at"], "started_at": started, "revision": frozen["revision"],
            "node_profile_sha256": frozen["node_profile_sha256"], "link_sha256": frozen["links"][rate]["sha256"],
            "predict_command": pred["commands"][0], "log": str(log.relative_to(out)), "profile": node.name,
            "link": link.name, "comm_share": row["measured_comm_s"] / row["measured_step_s"]}


def write_frozen(path: Path, node: Path, links: dict[str, Path], rows: dict) -> dict:
    """Write frozen predictions ``rows`` to ``path`` (atomically) with the time, the code's revision and the
    profiles' paths and sha256; the frozen set. Each row's ``commands`` name the profiles relative to the
    checkout, so they rerun from any clone."""
    for pred in rows.values():
        commands = []
        for c in pred["commands"]:
            for p in (node, *links.values()):
                c = c.replace(str(p), _rel(p))
            commands.append(c)
        pred["commands"] = commands
    frozen = {"predicted_at": _now(), "revision": revision(), "node_profile": _rel(node),
              "node_profile_sha256": _sha256(node),
              "links": {r: {"path": _rel(p), "sha256": _sha256(p)} for r, p in links.items()}, "rows": rows}
    with atomic_path(path, suffix=".tmp") as tmp:
        Path(tmp).write_text(json.dumps(frozen, indent=1))
    return frozen


def scale_out_table(args: argparse.Namespace, out: Path) -> None:
    """Profile one node and the 2x1 link, freeze the predictions, run the layouts (module docstring)."""
    from perfmodel.lab.emulate import EmulatedCluster, EmulationSpec, parse_rate
    from reproduce.validation_runs import can_emulate

    if not can_emulate(args, "scale-out"):
        return
    sc = SCALE[args.scale]
    table = ResultTable(out / "scale_out.csv", KEY)
    for remake in range(getattr(args, "remakes", 1) or 1):
        todo = [j for j in _jobs(sc) if not table.done(scale=args.scale, remake=remake, algo=j[0], exchange=j[1],
                                                        model=sc["model"], nodes=j[2], ranks_per_node=j[3], rate=j[4])]
        if not todo:
            continue
        out.mkdir(parents=True, exist_ok=True)
        node, links = _profiles(out, args.scale, sc, remake)
        frozen = freeze_predictions(out / f"scale_out_predictions_{args.scale}_r{remake}.json", sc, node, links)
        runs = out / "runs" / f"scale_out_{args.scale}_r{remake}"
        runs.mkdir(parents=True, exist_ok=True)
        groups: dict[tuple[int, int, str], list] = {}
        for j in todo:
            groups.setdefault((j[2], j[3], j[4]), []).append(j)
        bar = progress(None, args, f"scale-out runs (remake {remake})", total=len(todo))
        for (nodes, rpn, rate), jobs in groups.items():
            ranks = nodes * rpn
            done = []
            with EmulatedCluster(EmulationSpec(nodes=nodes, ranks_per_node=rpn, rate_bps=parse_rate(rate))) as cl:
                for algo, ex, *_ in jobs:
                    log = runs / f"{sc['model']}_{nodes}x{rpn}_{rate}_{algo}{'_' + ex if ex else ''}.jsonl"
                    want = {"algo": algo, "model": sc["model"], "batch": sc["batch"], "steps": sc["steps"],
                            "dataset": "synthetic"}
                    started = _now()
                    run_command(mpi_command(ranks, _train_args(algo, ex, rpn, ranks, sc, log),
                                            extra=cl.mpiexec_args()),
                                log, want, 900, f"scale-out {nodes}x{rpn} {rate} {algo} {ex}".rstrip())
                    done.append((algo, ex, log, started))
            for algo, ex, log, started in done:
                key = f"{algo}|{ex}|{nodes}x{rpn}|{rate}"
                pred = frozen["rows"][key]
                row = judged_row(log, node, links[rate], pred, f"scale-out {key}", skip=sc["skip"],
                                 gpus_per_node=rpn if algo != "asgd" else 1)
                row.update({"scale": args.scale, "remake": remake, "exchange": ex, "nodes": nodes,
                            "ranks_per_node": rpn, "rate": rate, "rate_bps": parse_rate(rate),
                            "set": layout_set(nodes, rpn), "profile_nodes": 1,
                            "profile_ranks_per_node": max(int(x) for x in sc["node_ranks"].split(",")),
                            "link_nodes": 2, "link_ranks_per_node": 1,
                            "predicted_at": frozen["predicted_at"], "started_at": started,
                            "revision": frozen["revision"], "node_profile_sha256": frozen["node_profile_sha256"],
                            "link_sha256": frozen["links"][rate]["sha256"],
                            "predict_command": " ; ".join(pred["commands"]),
                            "log": str(log.relative_to(out)),
                            "comm_share": row["measured_comm_s"] / row["measured_step_s"],
                            "profile": node.name, "link": links[rate].name,
                            "settings": settings_text({"batch_per_rank": sc["batch"], "steps": sc["steps"],
                                                       "skip": sc["skip"], "dataset": "synthetic", "threads": 1,
                                                       "daso": "B=2 W=1" if algo == "daso" else ""})})
                table.add(row)
                bar.update(1)
        bar.close()
    print_medians(out / "scale_out.csv", args.scale)


def medians(frame, scale: str | None = None) -> list[str]:
    """Lines of the table's medians: per set and layout, signed and absolute step errors and the
    communication's, per remake and over all."""
    import numpy as np

    if scale is not None:
        frame = frame[frame["scale"] == scale]
    lines = []
    for (remake, which), part in [((r, "all"), g) for r, g in frame.groupby("remake")] + [(("all", "all"), frame)]:
        step, comm = part["step_error_pct"].astype(float), part["comm_error_pct"].astype(float)
        lines.append(f"remake {remake}: {len(part)} runs, step |error| median {np.median(step.abs()):.1f}%, signed "
                     f"{np.median(step):+.1f}%, communication |error| median {np.median(comm.abs()):.1f}%")
    for (s, nodes, rpn), part in frame.groupby(["set", "nodes", "ranks_per_node"]):
        step = part["step_error_pct"].astype(float)
        lines.append(f"  {s:11s} {nodes}x{rpn}: {len(part):3d} runs, step |error| median {np.median(step.abs()):5.1f}%, "
                     f"signed {np.median(step):+6.1f}%")
    for s, part in frame.groupby("set"):
        step = part["step_error_pct"].astype(float)
        lines.append(f"{s}: {len(part)} runs, step |error| median {np.median(step.abs()):.1f}%, signed "
                     f"{np.median(step):+.1f}%")
    return lines


def print_medians(path: Path, scale: str) -> None:
    import pandas as pd

    if path.exists():
        frame = pd.read_csv(path)
        if len(frame[frame["scale"] == scale]):
            print("\n".join(medians(frame, scale)))


def layout_table(frame) -> str:
    """A markdown table of the step, compute and communication errors per layout, per set and over all
    (median absolute error, signed median in brackets), and over the rows beyond the profiles (more than
    the link's 2 ranks)."""
    import numpy as np

    def cell(x) -> str:
        x = x.astype(float).dropna()
        return f"{np.median(np.abs(x)):.1f}% ({np.median(x):+.1f}%)" if len(x) else "-"

    lines = ["| rows | set | runs | step | compute | communication |", "|---|---|---:|---:|---:|---:|"]

    def add(name, which, part):
        lines.append(f"| {name} | {which} | {len(part)} | {cell(part['step_error_pct'])} | "
                     f"{cell(part['compute_error_pct'])} | {cell(part['comm_error_pct'])} |")
    for (nodes, rpn), part in frame.groupby(["nodes", "ranks_per_node"]):
        add(f"{nodes}x{rpn}", layout_set(int(nodes), int(rpn)), part)
    for which, part in frame.groupby("set"):
        add(which, "", part)
    add("beyond the profiles (3x1, 4x1, 2x2)", "", frame[frame["nodes"] * frame["ranks_per_node"] > 2])
    add("all", "", frame)
    for remake, part in frame.groupby("remake"):
        add(f"remake {remake}", "", part)
    return "\n".join(lines)


PHASES = ("compute", "comm", "compress")


def phase_shortfall(frame):
    """Where a step's error sits: per scheme (algo, and TernGrad's exchange) and layout, the median over
    runs of measured minus predicted seconds of the step, of each phase (PHASES), and of the rest of the
    step ("outside": step minus the phases), and the median signed step error (percent). Positive: the
    run took longer than predicted. A DataFrame indexed by (scheme, layout). The measured columns are
    medians over a run's steps, and medians do not add: "outside" holds the trainer's time in no phase
    (its batch and bookkeeping, a median of 0.23-0.27 ms a step per layout in the committed logs' t_idle)
    and the difference between the step's median and the sum of its phases' medians."""
    import pandas as pd

    f = frame.copy()
    exchange = f["exchange"] if "exchange" in f else pd.Series("", index=f.index)
    f["scheme"] = f["algo"] + exchange.fillna("").map(lambda e: f" {e}" if e else "")
    f["layout"] = f["nodes"].astype(int).astype(str) + "x" + f["ranks_per_node"].astype(int).astype(str)
    diff = {p: f[f"measured_{p}_s"].astype(float) - f[f"predicted_{p}_s"].astype(float) for p in ("step", *PHASES)}
    out = pd.DataFrame({"step_s": diff["step"], **{f"{p}_s": diff[p] for p in PHASES},
                        "outside_s": diff["step"] - sum(diff[p] for p in PHASES),
                        "step_error_pct": f["step_error_pct"].astype(float),
                        "scheme": f["scheme"], "layout": f["layout"]})
    g = out.groupby(["scheme", "layout"])
    med = g.median()
    med.insert(0, "runs", g.size())
    return med


ERROR_COLUMNS = ("step", "compute", "comm", "compress")


def with_kernel_cost(frame, out: Path, ms_per_mb: float):
    """``frame`` with every row predicted again by `perfmodel validate` on its own log and profiles
    (under ``out``) with the kernel's network CPU cost set to ``ms_per_mb`` (0: the kernel's share of the
    cores off, perfmodel.lab.profile.kernel_share; the ablation against the same runs)."""
    from perfmodel.lab.validate import validate

    f = frame.copy()
    for i, row in f.iterrows():
        algo = row["algo"]
        (new,) = validate([str(out / row["log"])], [str(out / row["profile"])],
                          skip=int(SCALE[row["scale"]]["skip"]), link=(str(out / row["link"]),),
                          gpus_per_node=1 if algo == "asgd" else int(row["ranks_per_node"]),
                          nodes_per_host=0, cores=None, kernel_ms_per_mb=ms_per_mb)
        for c in ERROR_COLUMNS:
            f.loc[i, f"predicted_{c}_s"] = new[f"predicted_{c}_s"]
            f.loc[i, f"{c}_error_pct"] = new[f"{c}_error_pct"]
    return f


def parse_remakes(text: str) -> list[int]:
    """Remake numbers from "3-5" or "0,2" (ValueError with the text on anything else)."""
    out: list[int] = []
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        try:
            a, b = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"--remakes: expected A-B or A,B,..., got {text!r}") from None
        if a < 0 or b < a:
            raise ValueError(f"--remakes: expected A-B with 0 <= A <= B, got {item.strip()!r}")
        out.extend(range(a, b + 1))
    return sorted(set(out))


#: the columns the printed tables read (--by-phase and --kernel-ms-per-mb read theirs too)
COLUMNS = ("scale", "remake", "set", "nodes", "ranks_per_node", "step_error_pct", "compute_error_pct",
           "comm_error_pct")
PHASE_COLUMNS = ("algo", *(f"{m}_{p}_s" for p in ("step", *PHASES) for m in ("measured", "predicted")))
KERNEL_COLUMNS = ("algo", "log", "profile", "link")


def selected_rows(args: argparse.Namespace):
    """The rows of the scale-out table ``args.table`` at --scale (and --remakes); ValueError in one line
    when it cannot be read, lacks a column the output reads, or has no such row."""
    import pandas as pd

    frame = pd.read_csv(args.table)
    need = COLUMNS + (PHASE_COLUMNS if args.by_phase else ()) + \
        (KERNEL_COLUMNS if args.kernel_ms_per_mb is not None else ())
    missing = [c for c in dict.fromkeys(need) if c not in frame.columns]
    if missing:
        raise ValueError(f"{args.table} is not a scale-out table: it lacks the column(s) {', '.join(missing)}")
    frame = frame[frame["scale"] == args.scale]
    if frame.empty:
        raise ValueError(f"no rows at the {args.scale} scale in {args.table}")
    if args.remakes is not None:
        frame = frame[frame["remake"].isin(parse_remakes(args.remakes))]
        if frame.empty:
            raise ValueError(f"no rows of remakes {args.remakes} in {args.table}")
    return frame


def main(argv: list[str] | None = None) -> int:
    """Print a scale-out table's medians and its markdown table per layout (--by-phase: where the step's
    error sits, per scheme and layout, in milliseconds)."""
    from perfmodel.cli_guard import OneLineParser

    ap = OneLineParser(prog="python -m reproduce.scale_out", description=main.__doc__)  # errors: one line
    ap.add_argument("table", nargs="?", default=str(Path(__file__).resolve().parents[1] / "results" / "validation"
                                                    / "scale_out.csv"))
    ap.add_argument("--scale", choices=tuple(SCALE), default="small", help="the rows of this scale (default small)")
    ap.add_argument("--remakes", default=None, metavar="A-B|A,B,...",
                    help="only these remakes (e.g. 3-5: the remakes predicted with the kernel's share of the cores)")
    ap.add_argument("--kernel-ms-per-mb", type=float, default=None, metavar="X",
                    help="every row predicted again with this kernel network CPU cost (validate --kernel-ms-per-mb "
                         "X on the row's own log and profiles; 0: the kernel's share of the cores off, the ablation)")
    ap.add_argument("--by-phase", action="store_true",
                    help="also the median measured - predicted milliseconds of the step and of each phase, per "
                         "scheme and layout")
    try:
        args = ap.parse_args(argv)
        frame = selected_rows(args)
    except (OSError, ValueError) as e:
        print(f"reproduce/scale_out: error: {e}", file=sys.stderr)
        return 2
    if args.kernel_ms_per_mb is not None:
        from perfmodel.lab.validate import ValidateError

        try:
            frame = with_kernel_cost(frame, Path(args.table).resolve().parent, args.kernel_ms_per_mb)
        except (OSError, ValueError, ValidateError) as e:
            print(f"reproduce/scale_out: error: {e}", file=sys.stderr)
            return 2
        print(f"predicted again with --kernel-ms-per-mb {args.kernel_ms_per_mb:g} (not the frozen predictions):")
    print("\n".join(medians(frame)))
    print(layout_table(frame))
    if args.by_phase:
        ms = phase_shortfall(frame)
        cols = [c for c in ms.columns if c.endswith("_s")]
        ms[cols] = ms[cols] * 1e3
        print("measured - predicted (ms), median per scheme and layout; outside: the step's median less its "
              "phases' medians (the time in no phase, and medians that do not add)")
        print(ms.rename(columns=lambda c: c.replace("_s", " ms") if c.endswith("_s") else c)
              .round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
