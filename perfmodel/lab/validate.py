"""Measured versus predicted: run logs of the MPI trainers against `perfmodel predict` fed by a profile.

One predictor: for each run log, the measured step time is the median ``t_step`` of its steps after
``skip`` warm-up steps (step lines without a positive finite t_step and samples are left out, with a
note; fewer than 3 usable ones is an error); the prediction is what the `perfmodel predict` command that
describes the run prints (``predict_commands``: the run's strategy options at its rank count and per-rank
batch, on the profile, the link between nodes and the layout the caller describes, ``Scenario``),
computed by that command's own code (perfmodel.predict_cli.predict_result,
perfmodel.lab.profile.predictor) and printed beside it, so the validated number is the number a user
gets. How the profile feeds the model (compute on the ranks that share a machine's cores, the link read
at the exchange's message, the codec, the step after an exchange, the server's update) is
perfmodel.lab.profile.predictor's docstring.
DASO steps are grouped by the (B, W) the trainer logged for them and each group predicted on its own
(a step line without an integer B and W is left out with the note above).
Bytes per step (trainers.log): measured = the median ``bytes_sent`` of the steps, predicted = the
model's ``bytes_per_gpu``; the two count the same thing, so they agree up to rounding.
Parameter-server runs (trainers/ps.py: rank 0 serves, ranks 1..W work; asgd and every rule whose
exchange is one push and one pull) are predicted by the model's asgd strategy (docs/model.md section
5.4) on W workers, over the profile's one-way ping-pong link (point-to-point Send/Recv, not the
ring-inverted Allreduce): a worker's step is its compute plus its exchange as it times it (push, the wait
for the server, pull), the throughput the samples/s the server applies; bytes per step are one
exchange's payloads, push + pull. The worker does not run the optimizer step, the server does while the
worker waits: the profile's optimizer-step time moves from predicted compute to communication.
Each component (compute, communication, compression, step) is compared as the trainer times it:
TernGrad's Allgather and ps exchanges decode inside their comm phase, so the predicted decoding moves
from compression to communication. Every row carries the error of each component (``*_error_pct``).
"""

from __future__ import annotations

import json
import math
import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..compression import encode_seconds, ps_aggregate_seconds, resolve_level_lanes, ternary_split
from .profile.schema import ModelInfo, ProfileError as ProfileErrorBase
from .run_header import ValidateError, check_config, count, finite_number as _number
from ..specs import (TERNGRAD_ALLGATHER, TERNGRAD_LEVELS, TERNGRAD_PS, Cluster, Link, SpecError, Strategy,
                    Workload)


@dataclass(frozen=True)
class RunMeasurement:
    """What one run log measured (seconds; samples/s)."""

    path: str
    algo: str
    model: str
    ranks: int
    batch: int
    threads: int
    steps: int
    t_step_s: float
    t_compute_s: float
    t_comm_s: float
    t_compress_s: float
    throughput: float
    config: dict
    phase_steps: dict  # (B, W) -> count for DASO, {} otherwise
    bytes_per_step: float = 0.0  # median bytes_sent (bytes per step, trainers.log) of rank 0
    backend: str = "mpi"  # the run's gradient transport (header "backend"; logs without one ran on MPI)
    workers: int = 0  # parameter server: the W workers (ranks = W + 1); 0 for synchronous runs
    load_avg: tuple[float, ...] = ()  # the machine's 1-minute load average at the run's start and end
    dropped: int = 0  # step lines after the warm-up left out as unusable (``_usable``)

    @property
    def accumulate(self) -> int:
        """Micro-batches of ``batch`` per step (`trainers run --accumulate`; 1 in logs written before it)."""
        return int(self.config.get("accumulate") or 1)


def _median(values: list[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if values else float("nan")


def _phase_of(step: dict) -> tuple[int, int] | None:
    """DASO: the (B, W) a step line was run with (keys B and W, as trainers/sync/daso.py writes them, or
    daso_b and daso_w); None when either is missing, null or not an integer B >= 1, W >= 0."""
    b, w = step.get("daso_b", step.get("B")), step.get("daso_w", step.get("W"))
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (b, w)) or b < 1 or w < 0:
        return None
    return b, w


def _cycle_medians(steps: list[dict], keys: tuple[str, ...]) -> tuple[dict[str, float], dict]:
    """DASO: per phase (B, W), the median over windows of B consecutive steps of the window's mean.

    A window of B consecutive steps of one phase holds exactly one global sync and one merge, so its
    mean is the phase's step time with the sync cost in it (a per-step median would drop the sync
    steps). Phases are weighted by their step counts; a phase shorter than B counts its steps' mean.
    Returns the per-step times for `keys` and the step count per phase."""
    runs: list[tuple[tuple[int, int], list[dict]]] = []
    for s in steps:  # consecutive runs of one phase
        ph = _phase_of(s)
        if runs and runs[-1][0] == ph:
            runs[-1][1].append(s)
        else:
            runs.append((ph, [s]))
    windows: dict[tuple[int, int], list[list[dict]]] = {}
    counts: dict[tuple[int, int], int] = {}
    for ph, chunk in runs:
        b = max(1, ph[0])
        full = [chunk[i:i + b] for i in range(0, len(chunk) - b + 1, b)]
        windows.setdefault(ph, []).extend(full or [chunk])
        counts[ph] = counts.get(ph, 0) + len(chunk)
    total = sum(counts.values())
    out = {}
    for k in keys:
        out[k] = sum(counts[ph] * _median([float(np.mean([s.get(k, 0.0) for s in w])) for w in ws])
                     for ph, ws in windows.items()) / total
    return out, counts


def measure_run(path: str | os.PathLike, skip: int = 5) -> RunMeasurement:
    """Read a run log and take the median step times after ``skip`` steps (seconds).

    Synchronous algorithms: medians over steps. DASO: medians over cycles of B steps, so that the
    steps that pay the global sync count (see _cycle_medians)."""
    from trainers.log import RunLogError, read_run_log  # pure-Python reader, no torch

    try:
        log = read_run_log(path)
    except RunLogError as e:
        raise ValidateError(str(e)) from None
    head = log.header
    cfg = check_config(head.get("config") or {}, f"run log {path}")
    algo = head.get("algo") or cfg.get("algo")
    if not isinstance(algo, str) or "model" not in cfg or "batch" not in cfg:
        raise ValidateError(f"run log {path}: header lacks algo, config.model or config.batch")
    steps = log.steps[skip:] if len(log.steps) > skip else []
    if len(steps) < 3:
        raise ValidateError(f"run log {path}: {len(log.steps)} steps, need more than skip={skip} + 2")
    ps = "master_rule" in head
    usable = [s for s in steps if _usable(s, ("t_comm",) if ps else ()) and (algo != "daso" or _phase_of(s))]
    if len(usable) < 3:
        raise ValidateError(f"run log {path}: {len(usable)} of the {len(steps)} step lines after the warm-up "
                            f"have a positive finite t_step and samples and finite times"
                            f"{' and a DASO phase (B, W)' if algo == 'daso' else ''}, need 3")
    dropped, steps = len(steps) - len(usable), usable
    ranks = count(head, "ranks", 1, f"run log {path}")
    if ps:
        return replace(_measure_ps(path, head, algo, cfg, steps, ranks), load_avg=_loads(log), dropped=dropped)
    keys = ("t_step", "t_compute", "t_comm", "t_compress")
    phases: dict = {}
    if algo == "daso":
        t, phases = _cycle_medians(steps, keys)
    else:
        t = {k: _median([s.get(k, 0.0) for s in steps]) for k in keys}
    samples = _median([s["samples"] for s in steps])
    sent = _median([float(s.get("bytes_sent", 0.0)) for s in steps])
    return RunMeasurement(str(path), algo, cfg["model"], ranks, int(cfg["batch"]), int(cfg.get("threads", 1)),
                          len(steps), t["t_step"], t["t_compute"], t["t_comm"], t["t_compress"],
                          samples / t["t_step"], cfg, phases, sent, str(head.get("backend", "mpi")),
                          load_avg=_loads(log), dropped=dropped)


#: the numbers of a step line besides t_step and samples: absent, or finite and >= 0
_STEP_PARTS = ("t_compute", "t_comm", "t_compress", "t_idle", "bytes_sent", "bytes_exchanged")


def _usable(step: dict, nullable: tuple[str, ...] = ()) -> bool:
    """Whether a step line can be measured: t_step and samples positive and finite, its other numbers
    absent or finite and >= 0 (null is how the trainers write a non-finite number; the keys in
    ``nullable`` may be null, e.g. the parameter server's t_comm of a window without an exchange)."""
    if not (_number(step.get("t_step"), True) and _number(step.get("samples"), True)):
        return False
    return all(k not in step or _number(step[k]) or (k in nullable and step[k] is None) for k in _STEP_PARTS)


def dropped_note(run: RunMeasurement) -> str | None:
    """One line when step lines after the warm-up were left out as unusable (``_usable``); None if none."""
    if not run.dropped:
        return None
    return (f"{run.dropped} of {run.steps + run.dropped} step lines after the warm-up left out: t_step or "
            f"samples missing, null (non-finite), zero or negative, or a time not finite"
            + (", or the DASO phase (B, W) missing, null or not an integer" if run.algo == "daso" else ""))


def _loads(log) -> tuple[float, ...]:
    """The load averages a run log carries (header, then its summaries): () in logs written before."""
    vals = [log.header.get("load_avg")] + [r.get("load_avg") for r in log.summaries]
    return tuple(float(v) for v in vals if isinstance(v, (int, float)))


def load_note(run: RunMeasurement, profile, cores: int) -> str | None:
    """One line when other work loaded the machine differently during the run than before the profile's
    measurements (1-minute load averages before each started, more than half the cores apart); None
    when they agree or either was not recorded."""
    before = [c.load_avg[0] for c in profile.comm if c.load_avg]
    if not run.load_avg or not before:
        return None
    run_load, prof_load = run.load_avg[0], min(before)
    if abs(run_load - prof_load) <= 0.5 * cores:
        return None
    return (f"load: the machine's load average was {run_load:.1f} when the run started and {prof_load:.1f} "
            f"before the profile's runs, on {cores} cores: other work shared the cores differently")


def _measure_ps(path: str | os.PathLike, head: dict, algo: str, cfg: dict, steps: list[dict],
                ranks: int) -> RunMeasurement:
    """A parameter-server run log (trainers/ps.py, one line per gradient window): medians over the lines
    whose window reported a worker exchange of the workers' compute, exchange (t_comm) and step
    (compute + idle + exchange); throughput = the samples the server applied over its time; bytes per
    step = the median payload bytes of one exchange (bytes_exchanged, push + pull)."""
    if head.get("simulated"):
        raise ValidateError(f"run log {path}: a simulated parameter-server run (trainers simulate); "
                            f"validate a real MPI run (trainers run --algo {algo})")
    exchange = head.get("exchange")
    if exchange != "push-pull":
        why = ("was written before the parameter server logged its workers' exchange times; rerun it"
               if exchange is None else f"exchanges {exchange!r}, where the model's asgd strategy has one "
                                        f"push and one pull per gradient")
        raise ValidateError(f"run log {path}: {algo} {why}")
    timed = [s for s in steps if s.get("t_comm") is not None and "t_compute" in s]
    if len(timed) < 3:
        raise ValidateError(f"run log {path}: {len(timed)} step lines with a worker compute and exchange time "
                            f"after the warm-up, need 3")
    t_compute = _median([s["t_compute"] for s in timed])
    t_comm = _median([s["t_comm"] for s in timed])
    t_step = _median([s["t_compute"] + s.get("t_idle", 0.0) + s["t_comm"] for s in timed])
    applied_s = sum(float(s["t_step"]) * count(s, "gradients", 1, f"run log {path}: a step's")
                    for s in steps)  # server seconds
    if not applied_s > 0:
        raise ValidateError(f"run log {path}: the server logged no time for its gradients (t_step)")
    throughput = sum(float(s["samples"]) for s in steps) / applied_s
    sent = _median([float(s.get("bytes_exchanged", 0.0)) for s in steps])
    return RunMeasurement(str(path), algo, cfg["model"], ranks, int(cfg["batch"]),
                          int(cfg.get("threads", 1)), len(steps), t_step, t_compute, t_comm, 0.0, throughput,
                          cfg, {}, sent, workers=count(head, "workers", max(ranks - 1, 1), f"run log {path}"))


def run_strategy_args(run: RunMeasurement) -> list[tuple[list[str], int]]:
    """The `perfmodel predict` strategy options that describe a run's steps, each with its step count
    (one entry; DASO: one per (B, W) phase the trainer logged).

    SSGD and DASO with --overlap on (run logs that say so) start each bucket's allreduce during backprop
    (trainers/grad_buckets.py): the model computes the hidden share from the same buckets
    (``--bucket-mb``); without it, and in older logs, nothing is hidden (``--overlap 0``). TernGrad: the
    run's exchange, lanes (resolved on its backend), fp32 threshold and classifier; logs written before
    the exchange option existed used the allgather exchange, before the lanes option int8 lanes. The
    parameter server: asgd with one server, one push and one pull per gradient."""
    cfg = run.config
    if run.workers:
        return [(["--strategy", "asgd", "--ps-servers", "1"], run.steps)]
    overlap = ["--bucket-mb", f"{float(cfg.get('bucket_mb', 25.0)):g}"] if cfg.get("overlap") else ["--overlap", "0"]
    if run.algo == "ssgd":
        return [(["--strategy", "ssgd", *overlap], run.steps)]
    if run.algo == "terngrad":
        lanes = resolve_level_lanes(str(cfg.get("tern_lanes", "int8")), run.backend)
        # the field's name before it was terngrad_exchange was tern_exchange (committed logs keep it)
        exchange = cfg.get("terngrad_exchange", cfg.get("tern_exchange", TERNGRAD_ALLGATHER))
        args = ["--strategy", "terngrad", "--terngrad-exchange", str(exchange),
                "--terngrad-lanes", lanes, "--terngrad-min-elems", str(int(cfg.get("tern_min_elems", 1)))]
        if not bool(cfg.get("tern_fp32_last", True)):
            args.append("--terngrad-ternarize-last")
        return [(args, run.steps)]
    if run.algo == "daso":
        phases = run.phase_steps or {(int(cfg.get("daso_b") or 1), int(cfg.get("daso_w") or 0)): run.steps}
        return [(["--strategy", "daso", "--daso-b", str(b), "--daso-w", str(w), *overlap], n)
                for (b, w), n in sorted(phases.items())]
    raise ValidateError(f"run log {run.path}: algo {run.algo!r} is not one the model validates "
                        f"(ssgd, terngrad, daso, and parameter-server runs)")


@dataclass(frozen=True)
class Scenario:
    """What `perfmodel validate` is told beside a run log: the profile, the link between nodes (none: the
    profile's own MPI runs) and how the run's ranks sat on machines (perfmodel.lab.profile.predictor.Layout:
    gpus_per_node None = DASO's ranks per node, else 1; nodes_per_host None = all without a link, 1
    with one; cores None = the profile's; kernel_ms_per_mb None = the link profile's measurement, if any)."""

    profile: str
    link: tuple[str, ...] = ()
    gpus_per_node: int | None = None
    nodes_per_host: int | None = None
    cores: int | None = None
    kernel_ms_per_mb: float | None = None


def predict_commands(run: RunMeasurement, scenario: Scenario) -> list[tuple[list[str], int]]:
    """The `perfmodel predict` arguments (after ``perfmodel``) that give the prediction of ``run``, each
    with the steps it covers: the run's strategy options at its rank count (the parameter server: its
    workers) and per-rank batch, on the scenario's profile, link and layout."""
    cfg = run.config
    gpn = scenario.gpus_per_node
    if gpn is None:
        gpn = int(cfg.get("ranks_per_node") or 1) if run.algo == "daso" else 1
    base = ["predict", "--profile", scenario.profile]
    for link in scenario.link:
        base += ["--link-from", link]
    base += ["--gpus", str(run.workers or run.ranks), "--batch", str(run.batch), "--gpus-per-node", str(gpn)]
    if run.accumulate > 1:
        base += ["--accumulate", str(run.accumulate)]
    if scenario.nodes_per_host is not None:
        base += ["--nodes-per-host", "all" if scenario.nodes_per_host == 0 else str(scenario.nodes_per_host)]
    if scenario.cores is not None:
        base += ["--cores", str(scenario.cores)]
    if scenario.kernel_ms_per_mb is not None:
        base += ["--kernel-ms-per-mb", repr(float(scenario.kernel_ms_per_mb))]
    return [(base + args, n) for args, n in run_strategy_args(run)]


def command_text(argv: list[str]) -> str:
    """The shell command of a `perfmodel predict` argv."""
    return "perfmodel " + shlex.join(argv)


def decode_in_comm(workload: Workload, strategy: Strategy, ranks: int) -> float:
    """Seconds of TernGrad decoding the trainer times as communication, where the model counts them as
    compression (perfmodel.scaling, t_compress_s): the Allgather exchange unpacks and sums every rank's
    copy inside its comm phase (trainers.exchanges.allgather: W decodes); the ps exchange sums the
    pushed codes of its shard and unpacks the gathered aggregates there (trainers.exchanges.ps: 2
    decodes of all ternary elements, or its own measured work: ps_aggregate_seconds). 0 for the
    levels exchange (its sum is the Allreduce's) and for other strategies."""
    copies = _DECODES_IN_COMM[strategy.terngrad_exchange](ranks) if strategy.name == "terngrad" else 0
    if not copies:
        return 0.0
    split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
    if strategy.terngrad_exchange == TERNGRAD_PS and strategy.terngrad_ps_aggregate_elems_per_s > 0:
        return float(ps_aggregate_seconds(split.ternary_elems, ranks, strategy.terngrad_ps_aggregate_elems_per_s))
    return copies * encode_seconds(split.ternary_elems, strategy.terngrad_decode_elems_per_s)


#: per TernGrad exchange, the decodes of all ternary elements its comm phase does on ``ranks`` ranks
_DECODES_IN_COMM = {TERNGRAD_LEVELS: lambda ranks: 0, TERNGRAD_PS: lambda ranks: 2,
                    TERNGRAD_ALLGATHER: lambda ranks: ranks}


def trainer_view(record: dict, point, ranks: int) -> dict[str, float]:
    """A predicted record's step split as the trainer times it: the wait for the slowest rank
    (t_straggler_s) is spent in the first collective, so it moves from compute to communication; the
    comm phase is the communication left after backward (t_comm_s less t_hidden_s); TernGrad's Allgather
    and ps exchanges decode inside their comm phase (``decode_in_comm``). The parameter server's worker:
    its compute, and the rest of its step as communication (its exchange and any wait for a saturated
    server)."""
    if point.strategy.name == "asgd":
        return {"t_step_s": record["t_iter_s"], "t_compute_s": record["t_compute_s"],
                "t_comm_s": record["t_iter_s"] - record["t_compute_s"], "t_compress_s": 0.0,
                "bytes_per_step": record["bytes_per_gpu"]}
    wait = record["t_straggler_s"]
    decode = decode_in_comm(point.workload, point.strategy, ranks)
    return {"t_step_s": record["t_iter_s"], "t_compute_s": record["t_compute_s"] - wait,
            "t_comm_s": record["t_comm_s"] - record.get("t_hidden_s", 0.0) + decode + wait,
            "t_compress_s": record.get("t_compress_s", 0.0) - decode, "bytes_per_step": record["bytes_per_gpu"]}


def predict_run(run: RunMeasurement, scenario: Scenario) -> dict:
    """The prediction of one run by `perfmodel predict` itself (perfmodel.predict_cli.predict_result on the
    commands of ``predict_commands``): step time, its trainer-view components, throughput, bytes per step,
    the commands and the notes on what the prediction extrapolates; step-count-weighted over DASO's
    phases. The throughput is the run's samples per step over the step (asgd: the server's aggregate
    rate as the model caps it)."""
    from ..cli_guard import CLIError
    from ..predict_cli import predict_parser, predict_result

    parser = predict_parser()
    totals = {"t_step_s": 0.0, "t_compute_s": 0.0, "t_comm_s": 0.0, "t_compress_s": 0.0, "bytes_per_step": 0.0}
    commands, notes, steps, computing = [], [], 0, 1
    server = thr = 0.0
    for argv, n in predict_commands(run, scenario):
        try:
            result = predict_result(parser.parse_args(argv))
        except (CLIError, SpecError, ProfileErrorBase) as e:
            raise ValidateError(f"run log {run.path}: {e}") from None
        (record,), (point,) = result.records, result.points
        view = trainer_view(record, point, run.workers or run.ranks)
        for k in totals:
            totals[k] += n * view[k]
        server += n * record.get("server_utilization", 0.0)
        computing = point.computing_ranks
        thr += n * record["throughput"]
        steps += n
        commands.append(command_text(argv))
        notes.extend(x for x in result.notes if x not in notes)
    out = {k: v / steps for k, v in totals.items()}
    samples = run.batch * run.accumulate * (run.workers or run.ranks)  # per step
    out.update(throughput=thr / steps if run.workers else samples / out["t_step_s"], commands=commands,
               notes=notes, server_utilization=server / steps, computing_ranks=computing)
    return out


def validate(logs: list[str], profiles: list[str], *, skip: int = 5, cores: int | None = None,
             link: tuple[str, ...] = (), gpus_per_node: int | None = None,
             nodes_per_host: int | None = None, kernel_ms_per_mb: float | None = None) -> list[dict]:
    """One row per run: measured and predicted step time and throughput, their errors (%), and the
    `perfmodel predict` command that gives the prediction (``predict_command``).

    skip: warm-up steps left out of each run (>= 0); cores: cores of one machine (>= 1), None for the
    profile's; link, gpus_per_node, nodes_per_host, kernel_ms_per_mb: the cluster description (``Scenario``)."""
    from .profile.profile_file import load_profile

    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise ValidateError(f"skip must be an integer >= 0 (warm-up steps left out of each run), got {skip!r}")
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise ValidateError(f"cores must be None or an integer >= 1, got {cores!r}")
    if kernel_ms_per_mb is not None and not (math.isfinite(kernel_ms_per_mb) and kernel_ms_per_mb >= 0):
        raise ValidateError(f"kernel_ms_per_mb must be None or >= 0 and finite, got {kernel_ms_per_mb!r}")

    by_model = {}
    for path in profiles:
        prof = load_profile(path)
        if prof.model is None or prof.compute is None:
            raise ValidateError(f"profile {path} has no compute measurements of a model")
        by_model[prof.model.name] = (str(path), prof)
    rows = []
    for path in logs:
        run = measure_run(path, skip)
        found = by_model.get(run.model)
        if found is None:
            raise ValidateError(f"run log {path} trained {run.model!r}; no --profile of that model "
                                f"(profiled: {', '.join(sorted(by_model)) or 'none'})")
        if run.workers and run.workers < 2:
            raise ValidateError(f"run log {run.path}: {run.workers} worker(s); the model's asgd strategy "
                                f"communicates from 2 workers on (on one it is a single-GPU run)")
        prof_path, prof = found
        ncores = cores if cores is not None else (prof.machine.cpu_affinity or os.cpu_count() or 1)
        scenario = Scenario(prof_path, tuple(str(x) for x in link), gpus_per_node, nodes_per_host, ncores,
                            kernel_ms_per_mb)
        pred = predict_run(run, scenario)
        pred["notes"].extend(filter(None, (dropped_note(run), load_note(run, prof, ncores))))
        rows.append(_row(path, run, pred))
    return rows


def validate_allreduce_choice(forced: str | os.PathLike, chosen: str | os.PathLike, ranks: int) -> list[dict]:
    """The model's ``ompi`` allreduce (perfmodel.ompi_tuned: the algorithm Open MPI's tuned component
    picks for the size) against MPI_Allreduce timed under Open MPI's own choice, one rank per node.

    forced: a profile whose MPI Allreduce at ``ranks`` ranks ran the forced ring
    (perfmodel.mpi_algorithms.FORCED), which gives the link the model charges: its latency is the
    ring's time for messages up to 1 KiB (median over those sizes) over its 2(p-1) steps, and at each
    size n the bandwidth that makes the ring formula on that latency give the forced ring's measured time
    at n (``OpProfile.time_at``; so the ring is reproduced and the other algorithms get a per-step latency, not a line's
    intercept); chosen: a profile of the same cluster timed without forcing an algorithm. One row per
    size the chosen profile measured: Open MPI's algorithm, measured and predicted seconds and the
    error, and the forced ring's time with its error (how much the choice changes the time)."""
    from ..collectives import cluster_allreduce
    from ..ompi_tuned import allreduce_runs
    from .profile.profile_file import load_profile

    fp, cp = load_profile(forced), load_profile(chosen)
    run, ring_run = cp.comm_for("mpi", ranks=ranks), fp.comm_for("mpi", ranks=ranks)
    if run is None or "allreduce" not in run.ops or ring_run is None or "allreduce" not in ring_run.ops:
        raise ValidateError(f"profiles {forced} and {chosen} need MPI Allreduce timings at {ranks} ranks")
    op, ring_op = run.ops["allreduce"], ring_run.ops["allreduce"]
    steps = 2.0 * (ranks - 1)
    small = [t for n, t in zip(ring_op.sizes_bytes, ring_op.median_s) if n <= 1024]
    if not small:
        raise ValidateError(f"profile {forced}: no Allreduce of 1 KiB or less to read the latency from")
    alpha = float(np.median(small)) / steps
    free = Link(latency_s=0.0, bandwidth_Bps=float("inf"), source="CPU ranks: no device copy")
    rows = []
    for n, measured in zip(op.sizes_bytes, op.median_s):
        wire = ring_op.time_at(float(n)) - steps * alpha  # the ring's bandwidth term at n, as measured
        bw = steps / ranks * n / wire if wire > 0 else float("inf")
        link = Link(latency_s=alpha, bandwidth_Bps=bw, source=f"{forced}: forced ring Allreduce at {ranks} ranks")
        cl = Cluster(name="local", gpus_per_node=1, intra=link, host=free, network=link, gpu="cpu")
        predicted = float(cluster_allreduce("ompi", float(n), ranks, cl))
        ring = float(cluster_allreduce("ring", float(n), ranks, cl))
        rows.append({"ranks": ranks, "bytes": int(n), "algorithm": str(allreduce_runs(ranks, int(n))),
                     "measured_s": float(measured), "predicted_s": predicted,
                     "error_pct": error_pct(float(measured), predicted), "ring_s": ring,
                     "ring_error_pct": error_pct(float(measured), ring)})
    return rows


def _row(path: str, run: RunMeasurement, pred: dict) -> dict:
    """One validation row: measured and predicted components, their errors; a parameter-server row adds
    its workers and the predicted server utilization (exchanges/s over the server's cap)."""
    row = {
        "run": Path(path).name, "algo": run.algo, "model": run.model, "ranks": run.ranks, "batch": run.batch,
        "steps": run.steps, "measured_step_s": run.t_step_s, "predicted_step_s": pred["t_step_s"],
        "measured_compute_s": run.t_compute_s, "predicted_compute_s": pred["t_compute_s"],
        "measured_comm_s": run.t_comm_s, "predicted_comm_s": pred["t_comm_s"],
        "measured_compress_s": run.t_compress_s, "predicted_compress_s": pred["t_compress_s"],
        "measured_throughput": run.throughput, "predicted_throughput": pred["throughput"],
        "measured_bytes_per_step": run.bytes_per_step, "predicted_bytes_per_step": pred["bytes_per_step"],
        "step_error_pct": 100 * (pred["t_step_s"] - run.t_step_s) / run.t_step_s,
        "throughput_error_pct": 100 * (pred["throughput"] - run.throughput) / run.throughput,
        "computing_ranks": pred["computing_ranks"], "predict_command": " ; ".join(pred["commands"]),
        "notes": " | ".join(pred["notes"]),
    }
    if run.workers:
        row.update(workers=run.workers, predicted_server_utilization=pred["server_utilization"])
    row.update(component_errors(row))
    return row


COMPONENTS = ("compute", "comm", "compress", "step")


def error_pct(measured: float, predicted: float) -> float | None:
    """(predicted - measured) / measured in percent; None when nothing was measured (measured 0)."""
    return 100 * (predicted - measured) / measured if measured > 0 else None


def component_errors(row: dict) -> dict:
    """The error (%) of each component of a row's step: ``<component>_error_pct`` for compute,
    communication, compression and step time (None where the run measured 0 seconds of it)."""
    return {f"{c}_error_pct": error_pct(row[f"measured_{c}_s"], row[f"predicted_{c}_s"]) for c in COMPONENTS}


def mape(rows: list[dict], key: str = "step_error_pct") -> float:
    """Mean absolute percentage error over runs (rows where the error is None are left out)."""
    vals = [abs(r[key]) for r in rows if r.get(key) is not None]
    return float(np.mean(vals)) if vals else float("nan")


def median_ape(rows: list[dict], key: str = "comm_error_pct") -> float:
    """Median absolute percentage error over runs (rows where the error is None are left out)."""
    vals = [abs(r[key]) for r in rows if r.get(key) is not None]
    return float(np.median(vals)) if vals else float("nan")


def format_rows(rows: list[dict]) -> str:
    """A terminal table: per run, then the overall MAPE."""
    head = f"{'run':28s} {'algo':8s} {'model':9s} {'ranks':>5s} {'batch':>5s} {'meas ms':>9s} {'pred ms':>9s} " \
           f"{'err':>7s} {'meas/s':>9s} {'pred/s':>9s} {'err':>7s} {'meas B/step':>12s} {'pred B/step':>12s}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['run'][:28]:28s} {r['algo']:8s} {r['model']:9s} {r['ranks']:5d} {r['batch']:5d} "
                     f"{r['measured_step_s'] * 1e3:9.2f} {r['predicted_step_s'] * 1e3:9.2f} "
                     f"{r['step_error_pct']:+6.1f}% {r['measured_throughput']:9.0f} "
                     f"{r['predicted_throughput']:9.0f} {r['throughput_error_pct']:+6.1f}% "
                     f"{r['measured_bytes_per_step']:12.0f} {r['predicted_bytes_per_step']:12.0f}")
        lines.append(f"  predicted by: {r['predict_command']}")
    lines.append(f"MAPE over {len(rows)} runs: step time {mape(rows):.1f}%, "
                 f"throughput {mape(rows, 'throughput_error_pct'):.1f}%, communication "
                 f"{mape(rows, 'comm_error_pct'):.1f}% (median {median_ape(rows, 'comm_error_pct'):.1f}%)")
    return "\n".join(lines)


def _strict(value):
    """``value`` with every non-finite float (at any depth) as None: strict JSON has no NaN or Infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def rows_json(rows: list[dict]) -> str:
    """The rows and the MAPEs as strict JSON (a number that is not finite is null)."""
    return json.dumps(_strict({"runs": rows, "mape_step_pct": mape(rows),
                               "mape_throughput_pct": mape(rows, "throughput_error_pct")}), indent=1, allow_nan=False)


def run_strategies(run: RunMeasurement) -> list[tuple[Strategy, int, int]]:
    """(Strategy, ranks per node, steps) of each `perfmodel predict` command that describes ``run``, as
    the command line builds them (before a profile fills in what it measured)."""
    from ..predict_cli import predict_parser
    from ..predict_options import build_strategies

    parser = predict_parser()
    out = []
    for argv, n in predict_commands(run, Scenario("-")):
        args = parser.parse_args(argv)
        args.wire = args.wire or "fp32"  # as predict without a workload file
        (strategy,) = build_strategies(args)
        out.append((strategy, int(args.gpus_per_node or 1), n))
    return out


def run_read_sizes(run: RunMeasurement, model: Workload | ModelInfo) -> dict[str, float]:
    """The message size (bytes) at which the prediction of ``run`` reads each profiled operation
    (perfmodel.lab.profile.predictor.read_sizes for the strategy its `perfmodel predict` command builds)."""
    from .profile.predictor import read_sizes

    out: dict[str, float] = {}
    for strategy, per_node, _ in run_strategies(run):
        out.update(read_sizes(strategy, run.workers or run.ranks, per_node, model))
    return out
