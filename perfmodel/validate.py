"""Measured versus predicted: run logs of the MPI trainers against the model fed by a profile.

For each run log: the measured step time is the median ``t_step`` of its steps after ``skip`` warm-up
steps; the prediction is ``scaling.predict`` for the run's strategy, rank count and per-rank batch on
the "local" cluster of the profile whose model is the run's model (the MPI link measured at the run's
rank count when the profile has it, read off the operation and at the message size the run's exchange
uses: ``exchange_message``; TernGrad's Allgather and Alltoall on their own profiled links at their
blocks: ``exchange_blocks``; DASO's global sync on the Iallreduce timed on one rank per node:
``global_sync_message``). Compute: where the profile timed the training step on all the run's
ranks at once (perfmodel.profile.schema.ConcurrentCompute), its mean per rank, and its spread as the
model's stragglers (the wait for the slowest rank counts as communication, where the trainer's ranks
spend it); where the profile also timed that step right after Allreduces, the mean after the
exchange that sends what the run's strategy sends per step (``after_exchange_bytes``: a trainer
computes between two exchanges, with the caches the exchange left), and TernGrad's codec as timed
there (encoding after a step and the scalers' Allreduce, decoding after the codes' Allreduce);
otherwise the one-process time, stretched by ranks x threads / cores when runs on one CPU machine
have more busy threads than cores (encoding and decoding are always stretched so).
DASO steps are grouped by the (B, W) the trainer logged for them and each group predicted on its own.
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
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .compression import (aggregate_bits, dense_bytes, encode_seconds, levels_lane_bits, ps_aggregate_seconds,
                          ps_shard_elems, resolve_level_lanes, ternary_split)
from .scaling import predict
from .specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload, daso_strategy_fields

if TYPE_CHECKING:
    from .profile.schema import ConcurrentCompute, ModelInfo


class ValidateError(ValueError):
    """A run log or profile cannot be validated."""


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


def _median(values: list[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if values else float("nan")


def _phase_of(step: dict) -> tuple[int, int]:
    return int(step.get("daso_b", step.get("B", 1))), int(step.get("daso_w", step.get("W", 0)))


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
    cfg = head.get("config") or {}
    algo = head.get("algo") or cfg.get("algo")
    if algo is None or "model" not in cfg or "batch" not in cfg:
        raise ValidateError(f"run log {path}: header lacks algo, config.model or config.batch")
    steps = log.steps[skip:] if len(log.steps) > skip else []
    if len(steps) < 3:
        raise ValidateError(f"run log {path}: {len(log.steps)} steps, need more than skip={skip} + 2")
    ranks = int(head.get("ranks", 1))
    if "master_rule" in head:
        return _measure_ps(path, head, algo, cfg, steps)
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
                          samples / t["t_step"], cfg, phases, sent, str(head.get("backend", "mpi")))


def _measure_ps(path: str | os.PathLike, head: dict, algo: str, cfg: dict, steps: list[dict]) -> RunMeasurement:
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
    timed = [s for s in steps if s.get("t_comm") is not None]
    if len(timed) < 3:
        raise ValidateError(f"run log {path}: {len(timed)} step lines with a worker exchange time after the "
                            f"warm-up, need 3")
    t_compute = _median([s["t_compute"] for s in timed])
    t_comm = _median([s["t_comm"] for s in timed])
    t_step = _median([s["t_compute"] + s.get("t_idle", 0.0) + s["t_comm"] for s in timed])
    applied_s = sum(float(s["t_step"]) * int(s.get("gradients", 1)) for s in steps)  # server seconds
    if not applied_s > 0:
        raise ValidateError(f"run log {path}: the server logged no time for its gradients (t_step)")
    throughput = sum(float(s["samples"]) for s in steps) / applied_s
    sent = _median([float(s.get("bytes_exchanged", 0.0)) for s in steps])
    return RunMeasurement(str(path), algo, cfg["model"], int(head.get("ranks", 1)), int(cfg["batch"]),
                          int(cfg.get("threads", 1)), len(steps), t_step, t_compute, t_comm, 0.0, throughput,
                          cfg, {}, sent, workers=int(head.get("workers", int(head.get("ranks", 1)) - 1)))


def _less(ct: ComputeTime, seconds: float) -> ComputeTime:
    """ct less a constant number of seconds per step (never below 1 us)."""
    if seconds == 0.0:
        return ct
    if ct.kind == "linear":
        return replace(ct, t0_s=max(ct.t0_s - seconds, 0.0))
    return replace(ct, times_s=tuple(max(t - seconds, 1e-6) for t in ct.times_s))


def _stretched(ct: ComputeTime, factor: float) -> ComputeTime:
    if factor == 1.0:
        return ct
    if ct.kind == "linear":
        return replace(ct, t0_s=ct.t0_s * factor, t1_s=ct.t1_s * factor)
    return replace(ct, times_s=tuple(t * factor for t in ct.times_s))


def run_strategies(run: RunMeasurement, codec_rates: tuple[float, ...] = (0.0, 0.0, 0.0),
                   daso: dict | None = None) -> list[tuple[Strategy, int]]:
    """The model strategies (with step counts) that describe a run's steps.

    codec_rates: TernGrad (encode, decode, convert[, ps aggregate]) elements/s from the profile, 0 when
    not measured.
    daso: DASO's non-blocking sync on the profiled machine (perfmodel.profile.schema.profile_daso: progress and
    the iallreduce/allreduce factor).
    """
    cfg = run.config
    if run.workers:  # the parameter server: one push and one pull per gradient, nothing hidden
        return [(Strategy("asgd", overlap=0.0, ps_servers=1), run.steps)]
    # SSGD with --overlap on (run logs that say so) starts each bucket's allreduce during backprop
    # (trainers/grad_buckets.py): the model computes the hidden share from the same buckets; without
    # it (and in older logs) the trainer allreduces after backward: nothing is hidden
    if run.algo == "ssgd":
        if cfg.get("overlap"):
            return [(Strategy("ssgd", allreduce="ring", overlap=None,
                              bucket_mb=float(cfg.get("bucket_mb", 25.0))), run.steps)]
        return [(Strategy("ssgd", allreduce="ring", overlap=0.0), run.steps)]
    if run.algo == "terngrad":
        # logs written before the exchange option existed used the allgather exchange
        return [(Strategy("terngrad", allreduce="ring", overlap=0.0,
                          terngrad_exchange=str(cfg.get("tern_exchange", "allgather")),
                          # logs written before the lanes option summed int8 lanes
                          terngrad_lanes=resolve_level_lanes(str(cfg.get("tern_lanes", "int8")), run.backend),
                          terngrad_min_elems=int(cfg.get("tern_min_elems", 1)),
                          terngrad_fp32_last=bool(cfg.get("tern_fp32_last", True)),
                          terngrad_encode_elems_per_s=codec_rates[0],
                          terngrad_decode_elems_per_s=codec_rates[1],
                          terngrad_convert_elems_per_s=codec_rates[2],
                          terngrad_ps_aggregate_elems_per_s=codec_rates[3] if len(codec_rates) > 3 else 0.0),
                 run.steps)]
    if run.algo == "daso":
        phases = run.phase_steps or {(int(cfg.get("daso_b") or 1), int(cfg.get("daso_w") or 0)): run.steps}
        fields = daso_strategy_fields(daso)
        # --overlap on: DASO's node-local buckets start during backprop, as the model's DASO assumes
        overlap = {"overlap": None, "bucket_mb": float(cfg.get("bucket_mb", 25.0))} if cfg.get("overlap") \
            else {"overlap": 0.0}
        return [(Strategy("daso", allreduce="ring", daso_B=b, daso_W=w, **overlap, **fields), n)
                for (b, w), n in sorted(phases.items())]
    raise ValidateError(f"run log {run.path}: algo {run.algo!r} is not one the model validates "
                        f"(ssgd, terngrad, daso, and parameter-server runs)")


def _decode_in_comm(workload: Workload, strategy: Strategy, ranks: int) -> float:
    """Seconds of TernGrad decoding the trainer times as communication, where the model counts them as
    compression (perfmodel.scaling, t_compress_s): the Allgather exchange unpacks and sums every rank's
    copy inside its comm phase (trainers.comm.allgather_packed_sum: W decodes); the ps exchange sums
    the pushed codes of its shard and unpacks the gathered aggregates there (trainers.comm.ps_levels_sum:
    2 decodes of all ternary elements, or its own measured work: ps_aggregate_seconds). 0 for the
    levels exchange (its sum is the Allreduce's) and for other strategies."""
    if strategy.name != "terngrad" or strategy.terngrad_exchange not in ("allgather", "ps"):
        return 0.0
    split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
    if strategy.terngrad_exchange == "ps" and strategy.terngrad_ps_aggregate_elems_per_s > 0:
        return float(ps_aggregate_seconds(split.ternary_elems, ranks, strategy.terngrad_ps_aggregate_elems_per_s))
    copies = ranks if strategy.terngrad_exchange == "allgather" else 2
    return copies * encode_seconds(split.ternary_elems, strategy.terngrad_decode_elems_per_s)


def predict_run(run: RunMeasurement, workload: Workload, cluster: Cluster, cores: int,
                codec_rates: tuple[float, ...] = (0.0, 0.0, 0.0), daso: dict | None = None,
                intra: Link | None = None, concurrent: ConcurrentCompute | None = None) -> dict:
    """Predicted step time and throughput of one run (step-count-weighted over DASO phases).

    intra: the link between the ranks of one node for DASO's node-local steps (the profile's MPI
    allreduce at ranks-per-node ranks on one node, ring-inverted); None: the cluster's network link.
    concurrent: the training step timed on the run's ranks at once (the profile's MPI run at
    run.ranks ranks): its mean is the compute time, not stretched, and its spread (cv) the model's
    stragglers; the wait for the slowest rank that the model adds (t_straggler_s) is time the
    trainer's ranks spend in their first collective, so it counts as communication here. Where it was
    also timed after Allreduces, each strategy's compute is the step after the Allreduce that sends
    the strategy's predicted bytes per rank (``after_exchange_bytes``); where its codec was timed too,
    its rates, not stretched, replace ``codec_rates``, and the cost of its synchronization points in
    the codec's loop (CodecTimes.sync_wait_s) is the strategy's sync_wait_s."""
    share = max(1.0, run.ranks * run.threads / cores)
    sync_wait = 0.0  # the codec's synchronization points, where measured in its loop on the run's ranks
    if concurrent is not None and concurrent.codec is not None:  # timed on the run's ranks at once
        codec_rates = concurrent.codec.rates()
        sync_wait = concurrent.codec.sync_wait_s or 0.0
    else:
        codec_rates = tuple(r / share for r in codec_rates)  # encoding is CPU work too
    gpu = next(iter(workload.compute))
    straggler_cv = 0.0
    if concurrent is not None:
        wl = replace(workload, compute={gpu: ComputeTime.table(
            dict(zip(concurrent.batches, concurrent.mean_s)),
            source=f"training step on {run.ranks} ranks at once")})
        straggler_cv = concurrent.at(run.batch)[2]
    else:
        wl = replace(workload, compute={gpu: _stretched(workload.compute[gpu], share)})
    rpn = int(run.config.get("ranks_per_node", 1)) if run.algo == "daso" else 1
    cl = replace(cluster, gpus_per_node=rpn, intra=intra if intra is not None and rpn > 1 else cluster.network,
                 gpu=gpu)
    t_iter = t_comp = t_comm = t_compress = sent = 0.0
    total = 0
    for strategy, n in run_strategies(run, codec_rates, daso):
        strategy = replace(strategy, straggler_cv=straggler_cv, sync_wait_s=sync_wait)
        try:
            p = predict(wl, cl, strategy, [run.ranks], scaling="weak", batch=run.batch)
            if concurrent is not None and concurrent.after_bytes:
                nbytes = after_exchange_bytes(float(p.bytes_per_gpu[0]), run.ranks)
                after = replace(wl, compute={gpu: ComputeTime.table(
                    {b: concurrent.after(b, nbytes) for b in concurrent.batches},
                    source=f"training step on {run.ranks} ranks at once after an Allreduce of {nbytes:.0f} B")})
                p = predict(after, cl, strategy, [run.ranks], scaling="weak", batch=run.batch)
        except SpecError as e:
            raise ValidateError(f"run log {run.path}: {e}") from None
        wait = float(p.extra["t_straggler_s"][0])
        t_iter += n * float(p.t_iter_s[0])
        t_comp += n * (float(p.t_compute_s[0]) - wait)
        decode = _decode_in_comm(wl, strategy, run.ranks)
        # the trainer's comm phase is the communication left after backward: the model's exposed part
        t_comm += n * (float(p.t_comm_s[0] - p.extra.get("t_hidden_s", [0.0])[0]) + decode + wait)
        t_compress += n * (float(p.extra.get("t_compress_s", [0.0])[0]) - decode)
        sent += n * float(p.bytes_per_gpu[0])
        total += n
    t_iter, t_comp, t_comm, t_compress = t_iter / total, t_comp / total, t_comm / total, t_compress / total
    return {"t_step_s": t_iter, "t_compute_s": t_comp, "t_comm_s": t_comm, "t_compress_s": t_compress,
            "throughput": run.ranks * run.batch / t_iter, "core_share": share, "bytes_per_step": sent / total}


def predict_ps_run(run: RunMeasurement, workload: Workload, cluster: Cluster, cores: int,
                   apply_s: float = 0.0) -> dict:
    """Predicted worker step (seconds) and server throughput (samples/s) of a parameter-server run: the
    model's asgd strategy on W = run.workers workers, one per node, over ``cluster.network`` (the
    profile's ping-pong link), the server's time per exchange on its own link where the cluster has one
    (``Cluster.network_for("ps")``: the profile's parameter-server exchange). Only the workers compute:
    compute is stretched by W x threads / cores when that exceeds 1. apply_s: seconds the server spends
    applying a gradient while its worker waits (the optimizer step the profile timed): the model's
    ps_update_s, taken off the worker's compute, so that it counts as communication and as server time
    per exchange. The predicted communication is the step less compute: the exchange plus any wait for
    a saturated server."""
    if run.workers < 2:
        raise ValidateError(f"run log {run.path}: {run.workers} worker(s); the model's asgd strategy "
                            f"communicates from 2 workers on (on one it is a single-GPU run)")
    share = max(1.0, run.workers * run.threads / cores)
    gpu = next(iter(workload.compute))
    # the worker's step less the update, which the server applies (ps_update_s) while the worker waits
    wl = replace(workload, compute={gpu: _less(_stretched(workload.compute[gpu], share), apply_s)})
    cl = replace(cluster, gpus_per_node=1, gpu=gpu)
    ((strategy, _),) = run_strategies(run)
    try:
        p = predict(wl, cl, replace(strategy, ps_update_s=apply_s), [run.workers], scaling="weak", batch=run.batch)
    except SpecError as e:
        raise ValidateError(f"run log {run.path}: {e}") from None
    t_step = float(p.t_iter_s[0])
    t_compute = float(p.t_compute_s[0])
    return {"t_step_s": t_step, "t_compute_s": t_compute, "t_comm_s": t_step - t_compute, "t_compress_s": 0.0,
            "throughput": float(p.throughput[0]), "core_share": share, "bytes_per_step": float(p.bytes_per_gpu[0]),
            "server_utilization": float(p.extra["server_utilization"][0])}


def _optimizer_step_s(prof) -> float:
    """The profile's optimizer-step time (median over its batch sizes; seconds), 0 when not measured."""
    return _median([r.step.median_s for r in prof.compute.rows]) if prof.compute.rows else 0.0


def validate(logs: list[str], profiles: list[str], *, skip: int = 5, cores: int | None = None) -> list[dict]:
    """One row per run: measured and predicted step time and throughput, and their errors (%).

    skip: warm-up steps left out of each run (>= 0); cores: cores the runs shared (>= 1), None for
    the profile's."""
    from .profile.schema import load_profile, profile_cluster, profile_daso, profile_links, profile_workload

    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise ValidateError(f"skip must be an integer >= 0 (warm-up steps left out of each run), got {skip!r}")
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise ValidateError(f"cores must be None or an integer >= 1, got {cores!r}")

    by_model = {}
    for path in profiles:
        prof = load_profile(path)
        if prof.model is None or prof.compute is None:
            raise ValidateError(f"profile {path} has no compute measurements of a model")
        by_model[prof.model.name] = prof
    rows = []
    for path in logs:
        run = measure_run(path, skip)
        prof = by_model.get(run.model)
        if prof is None:
            raise ValidateError(f"run log {path} trained {run.model!r}; no --profile of that model "
                                f"(profiled: {', '.join(sorted(by_model)) or 'none'})")
        ncores = cores if cores is not None else (prof.machine.cpu_affinity or os.cpu_count() or 1)
        workload = profile_workload(prof)
        if run.workers:  # point-to-point Send/Recv: the ping-pong link at the run's rank count, and
            # the server's time per exchange from the profile's "ps" exchange there, where it has one
            cluster = profile_cluster(prof, network_from="pingpong", ranks=run.ranks,
                                      op_bytes=read_sizes(run, workload))
            rows.append(_row(path, run, predict_ps_run(run, workload, cluster, ncores, _optimizer_step_s(prof))))
            continue
        exact = prof.comm_for("mpi", ranks=run.ranks)  # the profile's MPI run at the run's rank count
        if run.ranks > 1:
            op, nbytes = exchange_message(run, workload)
            measured = exact or prof.comm_for("mpi")
            op = op if measured is not None and op in measured.ops else "allreduce"
            cluster = profile_cluster(prof, ranks=run.ranks, network_from=op, nbytes=nbytes,
                                      op_bytes={**exchange_blocks(run, workload), **global_sync_message(run, workload)})
        else:
            cluster = profile_cluster(prof)
        codec = prof.compute.codec
        rpn = int(run.config.get("ranks_per_node") or 1)
        intra = None
        if run.algo == "daso" and rpn > 1 and prof.comm_for("mpi", ranks=rpn) is not None:
            intra = profile_links(prof, ranks=rpn)["network"]  # the profile's run on one node's ranks
        pred = predict_run(run, workload, cluster, ncores,
                           codec.rates() if codec is not None else (0.0, 0.0, 0.0), profile_daso(prof), intra,
                           exact.compute if exact is not None else None)
        rows.append(_row(path, run, pred))
    return rows


def after_exchange_bytes(sent_bytes: float, ranks: int) -> float:
    """The Allreduce message (bytes) whose ring sends ``sent_bytes`` from each of ``ranks`` ranks,
    sent p / (2 (p - 1)): what the profile's step after an Allreduce (ConcurrentCompute.after) is read
    at for a strategy that sends sent_bytes per rank and step (SSGD: its gradient). 0 for one rank."""
    return sent_bytes * ranks / (2.0 * (ranks - 1)) if ranks > 1 else 0.0


def read_sizes(run: RunMeasurement, model: Workload | ModelInfo) -> dict[str, float]:
    """The message size (bytes) at which ``validate`` reads each profiled operation for ``run``: the
    network link's operation (``exchange_message``), the blocks of its Allgather and Alltoall
    (``exchange_blocks``), DASO's Iallreduce at the gradient's bytes (perfmodel.profile.schema
    nonblocking_factor) and its global group's (``global_sync_message``), or the parameter server's
    push ("ps": the fp32 gradient). Timing these operations at exactly these sizes (``perfmodel
    profile --extra-sizes``) leaves nothing to interpolate. model: the run's Workload, or the profiled
    ModelInfo (tensor sizes are all it needs). {} for one rank."""
    if run.workers:
        return {"ps": dense_bytes(model, "fp32")}
    if run.ranks < 2:
        return {}
    op, nbytes = exchange_message(run, model)
    sizes = {op: nbytes, **exchange_blocks(run, model), **global_sync_message(run, model)}
    if run.algo == "daso":  # DASO's non-blocking factor: iallreduce over allreduce at the gradient's bytes
        sizes["iallreduce"] = nbytes
    return sizes


def global_sync_message(run: RunMeasurement, workload: Workload | ModelInfo) -> dict[str, float]:
    """DASO's cycling-phase global sync with several ranks per node: {"global_iallreduce": the fp32
    parameters' bytes}, the Iallreduce that one rank of each node runs (trainers/sync/daso.py), so that
    the model charges it on the link measured on that group (Cluster.network_ops) where the profile has
    it. {} for the other runs."""
    rpn = int(run.config.get("ranks_per_node") or 1)
    if run.algo != "daso" or rpn < 2 or run.ranks // rpn < 2:
        return {}
    return {"global_iallreduce": 4.0 * sum(workload.tensor_sizes)}


def exchange_message(run: RunMeasurement, workload: Workload | ModelInfo) -> tuple[str, float]:
    """The profiled operation whose fit is the run's network link, and the bytes of the message its
    exchange sends (the piecewise fit's bandwidth is read at that size: perfmodel.profile.schema
    profile_links). SSGD and TernGrad: the "iallreduce" fit, the same ring as the blocking Allreduce
    (perfmodel.mpi_algorithms forces both), timed one call at a time; SSGD's overlapped buckets run it
    (trainers.grad_buckets), and on the emulated links the blocking ring, timed the same way, ran
    1.4-1.6x slower than the wire at some sizes (2 nodes at 250 Mbit/s: 128 KiB, 256 KiB, 4 MiB; at 100
    Mbit/s from 1 MiB, with a 16 KiB token bucket; with the shallow bucket of perfmodel.emulate still at
    256 KiB and 4 MiB) where the trainers' own blocking Allreduce ran at the wire (TernGrad levels, 233 KB
    at 250 Mbit/s: 8.0 ms, wire 7.8 ms), and the non-blocking ring at every size. SSGD: at one bucket;
    TernGrad: at its codes' size (lanes of levels_lane_bits for levels, 2-bit packed for ps and
    allgather). DASO (its own blocking/non-blocking factor, perfmodel.profile.schema.profile_daso):
    the "allreduce" fit at the gradient's fp32 bytes. A profile without the operation: "allreduce"."""
    grad = 4.0 * sum(workload.tensor_sizes)
    cfg = run.config
    if run.algo == "ssgd":
        return "iallreduce", min(grad, float(cfg.get("bucket_mb", 25.0)) * 2**20)
    if run.algo == "terngrad":
        (strategy, _), = run_strategies(run)
        split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
        if strategy.terngrad_exchange == "levels":
            bits = levels_lane_bits(run.ranks, strategy.terngrad_lanes == "packed")
            return "iallreduce", split.ternary_elems * float(bits) / 8
        return "iallreduce", float(split.packed_bytes)
    return "allreduce", grad


def exchange_blocks(run: RunMeasurement, workload: Workload | ModelInfo) -> dict[str, float]:
    """The Allgather and Alltoall a run's exchange calls, each with its block (bytes one rank sends in
    one step: perfmodel.profile.schema.BLOCK_OPS), so that the model charges them on their own measured
    links (Cluster.network_ops) where the profile has them. TernGrad's Allgather exchange: every rank's
    2-bit codes; its ps exchange: an Alltoall of 2-bit shards, then an Allgather of the
    ceil(log2(2W+1))-bit sums of one shard (trainers.comm.ps_levels_sum). {} for the other runs."""
    if run.algo != "terngrad" or run.ranks < 2:
        return {}
    (strategy, _), = run_strategies(run)
    split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
    if strategy.terngrad_exchange == "allgather":
        return {"allgather": float(split.packed_bytes)}
    if strategy.terngrad_exchange == "ps":
        shard = float(ps_shard_elems(split.ternary_elems, run.ranks))
        return {"alltoall": shard / 4.0, "allgather": shard * float(aggregate_bits(run.ranks)) / 8.0}
    return {}


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
    from .collectives import cluster_allreduce
    from .ompi_tuned import allreduce_runs
    from .profile.schema import load_profile

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
        "core_share": pred["core_share"],
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
    lines.append(f"MAPE over {len(rows)} runs: step time {mape(rows):.1f}%, "
                 f"throughput {mape(rows, 'throughput_error_pct'):.1f}%, communication "
                 f"{mape(rows, 'comm_error_pct'):.1f}% (median {median_ape(rows, 'comm_error_pct'):.1f}%)")
    return "\n".join(lines)


def rows_json(rows: list[dict]) -> str:
    return json.dumps({"runs": rows, "mape_step_pct": mape(rows),
                       "mape_throughput_pct": mape(rows, "throughput_error_pct")}, indent=1)
