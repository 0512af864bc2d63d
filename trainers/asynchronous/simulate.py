"""Deterministic event-driven simulation of N asynchronous workers in one process.

Each worker w pulls parameters from the master rule, takes a batch time from the gamma (CVB)
model (perfmodel.stragglers, via data_streams.DelaySchedule), and pushes a gradient computed on the
parameters it pulled. Events are processed in time order from a heap keyed by (time, worker), so
ties go to the lower worker id. At an arrival event the simulator loads that worker's stale flat
parameters into the one model object, computes the gradient on the worker's next batch, hands it
to the same master rule object the MPI parameter server drives (trainers.asynchronous.masters; for GEM,
Downpour and adaptive staleness the worker-side rescaling of trainers.asynchronous.gem first), and schedules the
worker's next arrival. Memory: one model plus N flat parameter vectors.

Determinism: one numpy Generator for all batch times (drawn in fixed-size chunks, so worker w's
k-th time does not depend on the event order), per-worker data order from shard_indices with the
seed, torch.manual_seed(step_seed(seed, w, k)) before each gradient. The same configuration gives
bitwise-identical parameters, and the order of arrivals it records, replayed by trainers.asynchronous.ps
(--replay-order), gives the same parameters over MPI.

Staleness is Zhang's tau = i - j: the master clock when the gradient is applied minus the clock
when its parameters were pulled (0 = fresh); Barkai's delay is tau + 1.

The run also reports the simulated wall-clock speedup of asynchronous over synchronous training
on the same batch times: SSGD takes ceil(S / N) steps, each as long as the slowest of the N
workers' batch times of that step; ASGD ends when the S-th gradient arrives (Barkai et al. 2020,
appendix D). perfmodel.stragglers gives its expectation in closed form.

Divergence: the run stops at the first non-finite loss or gradient (nothing is left to learn); its
summary says ``diverged: true`` and ``diverged_at`` (the gradient count). The command then prints one
line ``error: training diverged ...`` and exits 3, unless given ``--allow-divergence`` (a diverged run
is then an outcome, not an error: exit 0, as the reproduce tables that classify stability use it).
Logs and summaries are strict JSON (trainers.log: non-finite values are null and flagged).

CLI::

    trainers simulate --rule ga --workers 32 --model resnet20 --dataset cifar10 --epochs 1 --seed 0 --log run.jsonl
    trainers simulate --rule softsync --n 4 --workers 30 --model none --steps 30000   # staleness only
    trainers simulate --speedup-table 8,32,128,512,1024                                # async vs sync table
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor

from perfmodel.stragglers import CVB_KINDS
from trainers.device import DEVICES
from trainers.log import RunLog
from trainers.asynchronous.cli_args import StrictParser, add_async_arguments, config_from_args, parse_or_status
from trainers.asynchronous.config import Plan, make_plan
from trainers.config import AsyncConfig, defaults
from trainers.asynchronous.data_streams import BatchStream, DelaySchedule, load_data, step_seed
from trainers.asynchronous.evaluate import evaluate
from trainers.asynchronous.flat_model import FlatModel, build_rule, build_schedule, build_worker_rule
from trainers.asynchronous.reporting import StepWindow, WindowStats, header_fields, rule_summary
from trainers.errors import DIVERGED_STATUS, TrainerError
from trainers.validators import check_new_log, check_output_file

PROG = "trainers simulate"  # the prefix of its error lines

__all__ = [
    "SimResult",
    "simulate",
    "finish_times",
    "expected_speedup",
    "speedup_table",
    "PAPER_SPEEDUP_CLAIMS",
    "add_simulate_parser",
    "simulate_main",
    "main",
]

PAPER_SPEEDUP_CLAIMS = {
    "homogeneous": "up to 21% faster than SSGD (Barkai et al. 2020, appendix D, Fig. 12b)",
    "heterogeneous": "about 6x faster than SSGD (Barkai et al. 2020, appendix D, Fig. 12b)",
}


@dataclass
class SimResult:
    """What a simulation produced. params: final central parameters; order: worker of every
    applied gradient, in order; stats: the rule's summary (tau_hist, tau_mean, gap_mean, ...);
    t_async / t_sync: simulated seconds of the asynchronous run and of SSGD on the same batch
    times; evals: the eval records; summary: the run log's summary record."""

    params: Tensor
    order: list[int]
    stats: dict[str, Any]
    t_async: float
    t_sync: float
    evals: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def speedup(self) -> float:
        return self.t_sync / self.t_async if self.t_async > 0 else math.nan


# --------------------------------------------------------------------------- times, vectorized


def finish_times(delays: DelaySchedule, plan: Plan) -> tuple[float, float]:
    """(t_async, t_sync) in simulated seconds, from the batch-time matrix alone (no events).

    Asynchronous: worker w's k-th gradient arrives at the sum of its first k+1 batch times; the run
    ends at the S-th arrival overall (plan.total = S) or when the slowest worker has delivered its
    plan.per_worker gradients. Synchronous: ceil(S / N) (or per_worker) steps, step k lasting
    max over workers of row k. An independent check of the event-driven simulator's clock.
    """
    n = delays.workers
    if plan.total is None:
        rows = delays.rows(plan.per_worker)
        t_async = float(np.cumsum(rows, axis=0)[-1].max())
        return t_async, float(rows.max(axis=1).sum())
    s = plan.total
    k = -(-s // n) + 8
    while True:
        done = np.cumsum(delays.rows(k), axis=0)
        t_async = float(np.partition(done.ravel(), s - 1)[s - 1])
        if t_async <= done[-1].min():  # every worker's later arrivals come after the S-th
            break
        k *= 2
    steps = -(-s // n)
    return t_async, float(delays.rows(steps).max(axis=1).sum())


def expected_speedup(workers: np.ndarray | int, kind: str) -> np.ndarray:
    """Closed-form E[SSGD step] / E[ASGD time per N gradients] for the CVB model ``kind``:
    perfmodel.stragglers.sync_slowdown(N) * async_speedup_factor (Barkai appendix D setting)."""
    from perfmodel.stragglers import CVB, async_speedup_factor, sync_slowdown

    model = CVB.named(kind)
    return np.atleast_1d(sync_slowdown(np.atleast_1d(workers), model)) * async_speedup_factor(model)


def speedup_table(workers: Sequence[int], kinds: Sequence[str] = CVB_KINDS,
                  steps_per_worker: int = 100, seeds: Sequence[int] = (0, 1, 2)) -> list[dict[str, Any]]:
    """Simulated async-over-sync speedup (mean and std over seeds) beside the closed form.

    Each run: N workers, S = steps_per_worker * N gradients, times from DelaySchedule."""
    out = []
    for kind in kinds:
        expected = expected_speedup(np.asarray(workers), kind)
        for n, exp in zip(workers, expected):
            vals = []
            for seed in seeds:
                cfg = AsyncConfig(algo="asgd", workers=int(n), model="none", steps=steps_per_worker * int(n),
                                  delays=kind, seed=int(seed))
                t_async, t_sync = finish_times(DelaySchedule(cfg), make_plan(cfg, None))
                vals.append(t_sync / t_async)
            out.append({"kind": kind, "workers": int(n), "speedup_sim": float(np.mean(vals)),
                        "speedup_sim_std": float(np.std(vals)), "speedup_closed_form": float(exp),
                        "seeds": len(seeds), "steps_per_worker": steps_per_worker})
    return out


# --------------------------------------------------------------------------- the event loop


def simulate(cfg: AsyncConfig, *, log_path: str | os.PathLike | None = None, device: str = "cpu",
             header: dict | None = None) -> SimResult:
    """Run the simulation of ``cfg``; write the JSONL run log to ``log_path`` if given (``header``: more
    header keys, e.g. where the defaults came from). ``device``: where the gradients are computed
    (trainers.device: cpu, cuda, auto; UsageError when unavailable)."""
    from trainers.device import describe, select_device

    torch.set_num_threads(1)
    dev = select_device(device)
    train, test = load_data(cfg)
    plan = make_plan(cfg, train)
    fm = FlatModel.build(cfg, dev)
    rule = build_rule(cfg, fm.initial, fm.segments)
    schedule = build_schedule(cfg)
    wrules = [build_worker_rule(cfg) for _ in range(cfg.workers)]
    worker_side = cfg.spec.worker is not None
    streams = [BatchStream(train, cfg, w) for w in range(cfg.workers)] if train is not None else None
    delays = DelaySchedule(cfg)
    n = cfg.workers
    itemsize = fm.initial.element_size()
    log = None
    if log_path is not None:
        log = RunLog(log_path, {**header_fields(cfg, fm, train, simulated=True, ranks=1, plan=plan),
                                "device": describe(dev), **(header or {})})
    log_every = cfg.log_every or max(1, plan.expected_total // 1000)
    window = StepWindow(bytes_per_push=fm.numel * itemsize)
    wstats = WindowStats()

    rule.lr = schedule.lr_at(0.0)
    held = [rule.initial_params_for(w) for w in range(n)]
    lr_held = [rule.lr] * n
    k = [0] * n
    heap = [(delays.time(w, 0), w) for w in range(n)]
    heapq.heapify(heap)
    order: list[int] = []
    evals: list[dict[str, Any]] = []
    applied, t_now, diverged = 0, 0.0, False
    pi_sum, pi_count = 0.0, 0
    eval_iter = iter(plan.eval_points)
    next_eval = next(eval_iter)
    wall0 = time.perf_counter()
    while heap:
        t_now, w = heapq.heappop(heap)
        batch_time = delays.time(w, k[w])
        if streams is not None:
            x, y = streams[w].next()
            samples = len(y)
        else:
            x = y = None
            samples = cfg.batch
        g, loss = fm.gradient(held[w], x, y, step_seed(cfg.seed, w, k[w]))
        k[w] += 1
        if not (math.isfinite(loss) and bool(torch.isfinite(g).all())):
            diverged = True
            break
        tau = rule.staleness(w)
        epoch = applied / plan.per_epoch
        rule.lr = schedule.lr_at(epoch)
        if worker_side:
            if cfg.weight_decay:
                g = g.add(held[w], alpha=cfg.weight_decay)
            delta = g.mul(-lr_held[w])
            wr = wrules[w]
            central = rule.params if wr.needs_central else None
            update = wr.commit(delta, held[w], central, tau=tau)
            if getattr(wr, "last_stats", None):
                pi_sum += wr.last_stats["pi_mean"]
                pi_count += 1
            held[w] = rule.apply(w, update)
        else:
            held[w] = rule.apply(w, g)
        applied += 1
        order.append(w)
        lr_held[w] = schedule.lr_at(applied / plan.per_epoch)
        window.add(loss, samples, batch_time, tau)
        if log is not None and (applied % log_every == 0 or applied == plan.expected_total):
            log.step(**window.line(applied, applied / plan.per_epoch, t_now, t_sim=t_now, lr=rule.lr, worker=w))
        if applied == next_eval:
            rec = {"step": applied, "epoch": applied / plan.per_epoch, "t_sim": t_now, "lr": rule.lr,
                   **evaluate(fm, rule.params, test, cfg, train), **wstats.take(rule)}
            evals.append(rec)
            if log is not None:
                log.eval(**rec)
            next_eval = next(eval_iter, None)
        if plan.total is not None and applied >= plan.total:
            break
        if plan.per_worker is None or k[w] < plan.per_worker:
            heapq.heappush(heap, (t_now + delays.time(w, k[w]), w))
    wall = time.perf_counter() - wall0

    if diverged or (evals and evals[-1]["step"] != applied) or not evals:
        rec = {"step": applied, "epoch": applied / plan.per_epoch, "t_sim": t_now, "lr": rule.lr,
               **evaluate(fm, rule.params, test, cfg, train), **wstats.take(rule)}
        evals.append(rec)
        if log is not None:
            log.eval(**rec)
    t_async, t_sync = finish_times(delays, plan) if not diverged else (t_now, math.nan)
    stats = rule_summary(rule)
    summary = {
        **stats, "simulated": True, "diverged": diverged, "diverged_at": applied + 1 if diverged else None,
        "t_async": t_async, "t_sync": t_sync,
        "speedup": t_sync / t_async if t_async > 0 else math.nan,
        "speedup_closed_form": float(expected_speedup(n, cfg.delays)[0]) if cfg.delays != "none" else 1.0,
        "t_sim_end": t_now, "wall_s": wall, "gradients_per_wall_s": applied / wall if wall > 0 else math.nan,
        "final_test_acc": evals[-1]["test_acc"], "final_test_loss": evals[-1]["test_loss"],
        "epochs": applied / plan.per_epoch,
    }
    if pi_count:
        summary["pi_mean"] = pi_sum / pi_count
    if log is not None:
        log.summary(**summary)
        log.close()
    return SimResult(rule.params.clone(), order, stats, t_async, t_sync, evals, summary)


# --------------------------------------------------------------------------- command line


def _ints(text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def add_simulate_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``simulate`` subcommand to a parent CLI's subparsers; returns its parser.

    The handler is ``simulate_from_args`` (set as the ``func`` default)."""
    p = subparsers.add_parser("simulate", help="event-driven simulation of N asynchronous workers",
                              description=__doc__.split("\n\n")[0])
    _fill_parser(p)
    p.set_defaults(func=simulate_from_args)
    return p


def _fill_parser(p: argparse.ArgumentParser) -> None:
    add_async_arguments(p, algo_flag="--rule")
    p.add_argument("--allow-divergence", action="store_true",
                   help="a diverged run is an outcome, not an error: exit 0 (default: exit 3)")
    p.add_argument("--record-order", default=None, metavar="FILE",
                   help="write the workers' arrival order (JSON) for trainers.asynchronous.ps --replay-order")
    p.add_argument("--speedup-table", type=_ints, default=None, metavar="N1,N2,...",
                   help="print the simulated async-over-sync speedup for these worker counts and exit")
    p.add_argument("--speedup-steps", type=int, default=100, help="gradients per worker in --speedup-table runs")
    p.add_argument("--speedup-seeds", type=int, default=3, help="seeds per --speedup-table entry")
    p.add_argument("--device", default=defaults(AsyncConfig)["device"], choices=DEVICES,
                   help="where gradients are computed: cpu (default; bitwise replayable by trainers.asynchronous.ps), "
                        "cuda, auto")


def _print_speedup_table(args: argparse.Namespace) -> int:
    if args.speedup_steps < 1 or args.speedup_seeds < 1:
        print(f"{PROG}: error: --speedup-steps and --speedup-seeds must be >= 1", file=sys.stderr)
        return 2
    rows = speedup_table(args.speedup_table, steps_per_worker=args.speedup_steps, seeds=range(args.speedup_seeds))
    print(f"{'kind':<14}{'N':>6}{'simulated':>12}{'std':>8}{'closed form':>13}")
    for r in rows:
        print(f"{r['kind']:<14}{r['workers']:>6}{r['speedup_sim']:>12.3f}{r['speedup_sim_std']:>8.3f}"
              f"{r['speedup_closed_form']:>13.3f}")
    for kind, claim in PAPER_SPEEDUP_CLAIMS.items():
        print(f"paper, {kind}: {claim}")
    return 0


def simulate_from_args(args: argparse.Namespace) -> int:
    """Run ``trainers simulate`` from parsed arguments; bad configuration: one line, status 2."""
    if getattr(args, "speedup_table", None):
        return _print_speedup_table(args)
    try:
        cfg = config_from_args(args)
        check_output_file("--log", cfg.log)  # before the run: it must not fail at its end
        check_new_log(cfg.log, None)
        check_output_file("--record-order", args.record_order)
        result = simulate(cfg, log_path=cfg.log, device=cfg.device,
                          header={"defaults_from": getattr(args, "defaults_from", {})})
    except TrainerError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:  # dataset missing or corrupt, unwritable log
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.record_order:
        from perfmodel.fileio import atomic_write_text

        atomic_write_text(args.record_order, json.dumps({"config": cfg.to_dict(), "order": result.order}))
    s = result.summary
    if s["diverged"] and not cfg.allow_divergence:
        print(f"{PROG}: error: training diverged: non-finite loss or gradient in gradient {s['diverged_at']} (after "
              f"{s['gradients']} applied); stopped" + (f", run log {cfg.log}" if cfg.log else "")
              + "; pass --allow-divergence to accept it", file=sys.stderr)
        return DIVERGED_STATUS
    gap = f" gap_mean={s['gap_mean']:.3f}" if "gap_mean" in s else ""
    print(f"{cfg.algo} N={cfg.workers}: {s['gradients']} gradients, {s['epochs']:.3f} epochs, "
          f"test_acc={s['final_test_acc']:.4f}, tau_mean={s['tau_mean']:.3f} (delay {s['delay_mean']:.3f}){gap}, "
          f"diverged={s['diverged']}, simulated speedup over SSGD {s['speedup']:.3f} "
          f"(closed form {s['speedup_closed_form']:.3f}), wall {s['wall_s']:.1f} s")
    return 0


def simulate_main(argv: Sequence[str] | None = None) -> int:
    """``trainers simulate ARGS`` / ``python -m trainers.asynchronous.simulate ARGS``; exit status (2: bad input)."""
    parser = StrictParser(prog=PROG, description=__doc__.split("\n\n")[0])
    _fill_parser(parser)
    args = parse_or_status(parser, argv)
    return args if isinstance(args, int) else simulate_from_args(args)


main = simulate_main

if __name__ == "__main__":
    sys.exit(simulate_main())
