"""A real parameter server over MPI that drives a transport-free master rule (trainers.asynchronous.masters).

Rank 0 holds the central parameters and the rule; ranks 1..K-1 are the N = K - 1 workers
(worker w = rank w + 1). A worker pulls parameters, computes a gradient on its next batch (the
same BatchStream, seeds and model code as trainers.asynchronous.simulate), optionally pads the batch to a time
drawn from the gamma CVB model (--delays homogeneous|heterogeneous, --delay-mean seconds) so that
stragglers can be emulated on one machine, and pushes. The server receives from any source (no
barriers anywhere), applies the rule, and answers with the parameters to use next.

Messages (float64 headers, float32 payloads of the flat parameter size P)::

    worker -> server  tag UP_HDR  [kind, loss, t_compute, t_idle, k, samples, t_exchange]
                                  kind GRAD: a payload follows; kind REQUEST: GEM family, wants the
                                  central parameters first; t_exchange: seconds of the worker's
                                  previous exchange (-1 before its first one)
                      tag UP_DATA the gradient (or the worker's finished update)
    server -> worker  tag DN_HDR  [kind, lr, tau]  kind PARAMS or CENTRAL (a payload follows), STOP
                      tag DN_DATA parameters

Run log (rank 0; trainers.log): one step line per ``log_every`` gradients applied, over the gradients
since the previous line: t_compute and t_idle the workers' mean batch and padding times; t_comm the
workers' mean exchange time as each worker times it (push start to new parameters in hand: push, the
wait for the server, pull; null when no gradient of the window reported one); t_step the server's
seconds per gradient applied (1 / the aggregate rate); t_server the server's mean seconds per gradient
(receive the payload, apply, post the answer); bytes_exchanged the mean payload bytes per gradient
between its worker and the server, both directions (push + pull; headers not counted, as trainers.log
leaves out the loss); bytes_sent the workers' pushed bytes. The header says ``exchange``: "push-pull"
(one payload each way) or "central-round-trip" (GEM family: central parameters, update, parameters).

GEM and adaptive staleness need the central parameters (or tau) at commit time: the worker sends
REQUEST, the server answers CENTRAL and then waits for that worker's update before serving anybody
else, so the commit is atomic as in the simulator.

Shutdown: when the budget is spent (or training diverges) every further push is answered with
STOP; the server returns once every worker has been stopped. A worker that raises aborts the job
(trainers.comm.abort_on_error); a worker that dies is noticed by mpiexec, which ends the job; a
worker that hangs is noticed by the server: if a worker it waits for is silent for longer than
--worker-timeout seconds, it prints one line and aborts the job.

Replay: --replay-order FILE (written by ``trainers simulate --record-order``) makes the server
process pushes in exactly the recorded order, buffering early arrivals; the final parameters then
equal the simulator's.

    mpiexec -n 9 python -m trainers.asynchronous.ps --algo ga --model gem-cnn --dataset mnist --epochs 1 --log ps.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from trainers.device import DEVICES, env_world
from trainers.errors import DIVERGED_STATUS, DivergenceError, TrainerError, UsageError
from trainers.faults import FAIL_MODES, worker_hooks
from trainers.log import RunLog
from trainers.validators import check_choice, check_int, check_number
from trainers.asynchronous.cli_args import StrictParser, add_async_arguments, config_from_args, parse_or_status
from trainers.asynchronous.config import AsyncConfig, make_plan
from trainers.asynchronous.data_streams import BatchStream, DelaySchedule, load_data, step_seed
from trainers.asynchronous.evaluate import evaluate
from trainers.asynchronous.flat_model import FlatModel, build_rule, build_schedule, build_worker_rule
from trainers.asynchronous.reporting import StepWindow, WindowStats, header_fields, rule_summary

__all__ = ["PSOptions", "PSResult", "OPTION_KEYS", "run_ps", "run_from_run_config", "load_order",
           "add_ps_arguments", "ps_from_args", "ps_main", "main"]

TAG_UP_HDR, TAG_UP_DATA, TAG_DN_HDR, TAG_DN_DATA = 11, 12, 13, 14
GRAD, REQUEST = 0.0, 1.0
PARAMS, CENTRAL, STOP = 0.0, 1.0, 2.0
UP_LEN, DN_LEN = 7, 3


@dataclass(frozen=True)
class PSOptions:
    """Server-only options. log: run-log path (rank 0 writes it); replay_order: JSON file with
    {"order": [worker, ...]}; worker_timeout: seconds a worker may stay silent while the server
    waits for it; poll_s: sleep between polls of a pending receive (idle ranks do not spin);
    threads: torch threads per rank (1 matches the simulator bit for bit); device: where the workers
    compute gradients (trainers.device: cpu, cuda, auto; the server stays on the CPU);
    save_params: .npy file for the final central parameters; fail_worker / fail_after / fail_mode:
    testing only, worker fail_worker fails before its fail_after-th gradient, by exiting at once
    ("exit", status 17), hanging ("hang") or raising ("raise"), or pushes that gradient with one
    infinite element and a finite loss ("inf-grad")."""

    log: str | None = None
    replay_order: str | None = None
    worker_timeout: float = 300.0
    poll_s: float = 0.0005
    save_params: str | None = None
    fail_worker: int | None = None
    fail_after: int = 0
    fail_mode: str = "exit"
    threads: int = 1
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_number("worker_timeout", self.worker_timeout, 0.0, lo_open=True)
        check_number("poll_s", self.poll_s, 0.0, 1.0, hi_open=True)
        check_choice("fail_mode", self.fail_mode, FAIL_MODES)
        check_int("fail_worker", self.fail_worker, 0, none_ok=True)
        check_int("fail_after", self.fail_after, 0)
        check_int("threads", self.threads, 1)


@dataclass
class PSResult:
    """Rank 0's outcome: final central parameters and the run log's summary record."""

    params: torch.Tensor
    summary: dict[str, Any]


def load_order(path: str, workers: int) -> list[int]:
    """The recorded arrival order in ``path`` (a JSON object with "order"), validated."""
    try:
        data = json.loads(Path(path).read_text())
        order = data["order"] if isinstance(data, dict) else data
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrainerError(f"replay order {path}: cannot read a JSON object with an 'order' list ({exc})") from None
    if not isinstance(order, list) or not order or not all(
            isinstance(w, int) and not isinstance(w, bool) and 0 <= w < workers for w in order):
        raise TrainerError(f"replay order {path}: 'order' must be a non-empty list of worker indices 0..{workers - 1}")
    return order


# --------------------------------------------------------------------------- waiting without spinning


def _wait(req: Any, poll_s: float, watchdog: Any = None) -> Any:
    """Complete an MPI request by polling Test() with short sleeps; ``watchdog()`` runs between polls."""
    from mpi4py import MPI

    status = MPI.Status()
    while not req.Test(status):
        if watchdog is not None:
            watchdog()
        if poll_s:
            time.sleep(poll_s)
    return status


def _abort(comm: Any, message: str, code: int = 1) -> None:
    sys.stderr.write(f"[rank {comm.Get_rank()}/{comm.Get_size()}] parameter server: {message}\n")
    sys.stderr.flush()
    comm.Abort(code)


# --------------------------------------------------------------------------- the server


class _ExchangeWindow:
    """Sums over the gradients since the last step line of what StepWindow does not see: the workers'
    exchange times (as they report them), the server's time and the payload bytes per gradient."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.count, self.t_server, self.nbytes, self.t_exchange, self.reported = 0, 0.0, 0, 0.0, 0

    def add(self, t_exchange: float, t_server: float, nbytes: int) -> None:
        self.count += 1
        self.t_server += t_server
        self.nbytes += nbytes
        if t_exchange >= 0:
            self.t_exchange += t_exchange
            self.reported += 1

    def line(self) -> dict[str, float]:
        """t_comm (the workers' mean exchange, nan if none reported), t_server, bytes_exchanged; resets."""
        c = max(self.count, 1)
        out = {"t_comm": self.t_exchange / self.reported if self.reported else math.nan,
               "t_server": self.t_server / c, "bytes_exchanged": self.nbytes / c}
        self.reset()
        return out


class _Server:
    def __init__(self, cfg: AsyncConfig, comm: Any, opt: PSOptions) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.cfg, self.comm, self.opt = cfg, comm, opt
        self.n = comm.Get_size() - 1
        self.train, self.test = load_data(cfg)
        self.plan = make_plan(cfg, self.train)
        self.fm = FlatModel.build(cfg)
        self.rule = build_rule(cfg, self.fm.initial, self.fm.segments)
        self.schedule = build_schedule(cfg)
        self.order = load_order(opt.replay_order, self.n) if opt.replay_order else None
        self.computing: dict[int, float] = {}  # worker -> since when the server waits for its push
        self.pending: dict[int, np.ndarray] = {}  # replay: headers that arrived early
        self.sends: dict[int, tuple] = {}  # worker -> (requests, buffers) of the last non-blocking send
        self.hdr = np.zeros(UP_LEN)
        self.payload = torch.empty(self.fm.numel, dtype=torch.float32)
        self.trash = torch.empty(self.fm.numel, dtype=torch.float32)
        self.payload_bytes = 0  # payload bytes received and sent so far (headers not counted)

    # ---- messages
    def watchdog(self) -> None:
        now = time.monotonic()
        for w, since in self.computing.items():
            if now - since > self.opt.worker_timeout:
                _abort(self.comm, f"worker {w} (rank {w + 1}) silent for {now - since:.1f} s "
                                  f"(> worker timeout {self.opt.worker_timeout:g} s); aborting the job")

    def send(self, w: int, kind: float, lr: float, tau: int, data: torch.Tensor | None = None) -> None:
        """Non-blocking: the buffers stay referenced until the next send to w (or flush) completes."""
        MPI = self.MPI
        self.complete(w)
        head = np.array([kind, lr, tau], dtype=np.float64)
        reqs = [self.comm.Isend([head, MPI.DOUBLE], dest=w + 1, tag=TAG_DN_HDR)]
        if data is not None:
            data = data.contiguous()
            self.payload_bytes += data.numel() * data.element_size()
            reqs.append(self.comm.Isend([data.numpy(), MPI.FLOAT], dest=w + 1, tag=TAG_DN_DATA))
        self.sends[w] = (reqs, head, data)
        if kind == PARAMS:
            self.computing[w] = time.monotonic()

    def complete(self, w: int | None = None) -> None:
        """Wait for the outstanding sends to w (all workers when None)."""
        for v in ([w] if w is not None else list(self.sends)):
            pending = self.sends.pop(v, None)
            if pending is not None:
                for req in pending[0]:
                    _wait(req, self.opt.poll_s, self.watchdog)

    def recv_header(self) -> tuple[int, np.ndarray]:
        MPI = self.MPI
        req = self.comm.Irecv([self.hdr, MPI.DOUBLE], source=MPI.ANY_SOURCE, tag=TAG_UP_HDR)
        status = _wait(req, self.opt.poll_s, self.watchdog)
        w = status.Get_source() - 1
        self.computing.pop(w, None)
        return w, self.hdr.copy()

    def recv_payload(self, w: int, into: torch.Tensor) -> torch.Tensor:
        req = self.comm.Irecv([into.numpy(), self.MPI.FLOAT], source=w + 1, tag=TAG_UP_DATA)
        self.payload_bytes += into.numel() * into.element_size()
        self.computing[w] = time.monotonic()
        _wait(req, self.opt.poll_s, self.watchdog)
        self.computing.pop(w, None)
        return into

    def next_push(self, expected: int | None) -> tuple[int, np.ndarray]:
        """The next push to process: the expected worker's (replay), else any worker's."""
        if expected is None and self.pending:
            w = next(iter(self.pending))
            return w, self.pending.pop(w)
        if expected is not None and expected in self.pending:
            return expected, self.pending.pop(expected)
        while True:
            w, hdr = self.recv_header()
            if expected is None or w == expected:
                return w, hdr
            self.pending[w] = hdr

    # ---- the loop
    def run(self) -> PSResult:
        cfg, plan, rule, n = self.cfg, self.plan, self.rule, self.n
        log = None
        if self.opt.log:
            head = header_fields(cfg, self.fm, self.train, simulated=False, ranks=n + 1, plan=plan)
            head["replay_order"] = self.opt.replay_order
            wr = build_worker_rule(cfg)
            head["exchange"] = "central-round-trip" if wr is not None and (wr.needs_central or wr.needs_tau) \
                else "push-pull"
            log = RunLog(self.opt.log, head)
        log_every = cfg.log_every or max(1, plan.expected_total // 1000)
        window = StepWindow(bytes_per_push=self.fm.numel * 4)
        wstats = WindowStats()
        exchanges = _ExchangeWindow()
        evals: list[dict[str, Any]] = []
        eval_iter = iter(plan.eval_points)
        next_eval = next(eval_iter)
        total = len(self.order) if self.order is not None else plan.total
        count = [0] * n
        active = set(range(n))
        applied, discarded, diverged, stopping = 0, 0, False, False
        t_comm = 0.0
        wall0 = time.perf_counter()
        rule.lr = self.schedule.lr_at(0.0)
        for w in range(n):
            self.send(w, PARAMS, rule.lr, 0, rule.initial_params_for(w))
        window.reset(time.perf_counter())
        while active:
            expected = None if (stopping or self.order is None) else self.order[applied]
            w, hdr = self.next_push(expected)
            kind, loss = hdr[0], float(hdr[1])
            budget_left = plan.per_worker is None or count[w] < plan.per_worker
            if not math.isfinite(loss) and not stopping:
                diverged = stopping = True
            if stopping or not budget_left:
                if kind == GRAD:
                    self.recv_payload(w, self.trash)
                discarded += 1
                self.send(w, STOP, 0.0, 0)
                active.discard(w)
                continue
            t0 = time.perf_counter()
            bytes0 = self.payload_bytes
            tau = rule.staleness(w)
            rule.lr = self.schedule.lr_at(applied / plan.per_epoch)
            if kind == REQUEST:
                self.send(w, CENTRAL, rule.lr, tau, rule.params)
            grad = self.recv_payload(w, self.payload)
            if kind == REQUEST:
                self.complete(w)  # the central parameters went out before rule.apply changes them
            if not bool(torch.isfinite(grad).all()):  # finite loss, non-finite push: diverged, not applied
                diverged = stopping = True
                discarded += 1
                self.send(w, STOP, 0.0, 0)
                active.discard(w)
                continue
            new = rule.apply(w, grad)
            applied += 1
            count[w] += 1
            if total is not None and applied >= total:
                stopping = True
            if stopping or (plan.per_worker is not None and count[w] >= plan.per_worker):
                self.send(w, STOP, 0.0, 0)
                active.discard(w)
            else:
                self.send(w, PARAMS, self.schedule.lr_at(applied / plan.per_epoch), rule.clock, new)
            t_comm_step = time.perf_counter() - t0
            t_comm += t_comm_step
            window.add(loss, int(hdr[5]), float(hdr[2]), tau, t_idle=float(hdr[3]))
            exchanges.add(float(hdr[6]), t_comm_step, self.payload_bytes - bytes0)
            if log is not None and (applied % log_every == 0 or applied == plan.expected_total):
                line = window.line(applied, applied / plan.per_epoch, time.perf_counter(), lr=rule.lr, worker=w)
                line.update(exchanges.line())
                log.step(**line)
            if applied == next_eval:
                rec = {"step": applied, "epoch": applied / plan.per_epoch,
                       "t_wall": time.perf_counter() - wall0, "lr": rule.lr,
                       **evaluate(self.fm, rule.params, self.test, cfg, self.train), **wstats.take(rule)}
                evals.append(rec)
                if log is not None:
                    log.eval(**rec)
                next_eval = next(eval_iter, None)
                now = time.monotonic()  # workers waited while the server evaluated
                self.computing = {v: now for v in self.computing}
        self.complete()
        wall = time.perf_counter() - wall0
        if not evals or evals[-1]["step"] != applied:
            rec = {"step": applied, "epoch": applied / plan.per_epoch, "t_wall": wall, "lr": rule.lr,
                   **evaluate(self.fm, rule.params, self.test, cfg, self.train), **wstats.take(rule)}
            evals.append(rec)
            if log is not None:
                log.eval(**rec)
        summary = {
            **rule_summary(rule), "simulated": False, "replayed": self.order is not None, "diverged": diverged,
            "discarded": discarded, "wall_s": wall, "gradients_per_wall_s": applied / wall if wall > 0 else math.nan,
            "server_time_per_gradient_s": t_comm / applied if applied else math.nan,
            "final_test_acc": evals[-1]["test_acc"], "final_test_loss": evals[-1]["test_loss"],
            "epochs": applied / plan.per_epoch, "per_worker_gradients": count,
        }
        if log is not None:
            log.summary(**summary)
            log.close()
        if self.opt.save_params:
            np.save(self.opt.save_params, rule.params.numpy())
        return PSResult(rule.params.clone(), summary)


# --------------------------------------------------------------------------- a worker


def _work(cfg: AsyncConfig, comm: Any, opt: PSOptions, device: torch.device | None = None) -> None:
    from mpi4py import MPI

    w = comm.Get_rank() - 1
    train, _ = load_data(cfg, test=False)
    fm = FlatModel.build(cfg, device or "cpu")  # parameters arrive and gradients leave on the CPU
    stream = BatchStream(train, cfg, w) if train is not None else None
    delays = DelaySchedule(cfg) if cfg.delays != "none" and opt.replay_order is None else None
    wr = build_worker_rule(cfg)
    ask = wr is not None and (wr.needs_central or wr.needs_tau)
    params = torch.empty(fm.numel, dtype=torch.float32)
    central = torch.empty(fm.numel, dtype=torch.float32) if ask else None
    down = np.zeros(DN_LEN)
    before_gradient, on_gradient = worker_hooks(opt.fail_worker, opt.fail_after, opt.fail_mode)  # tests only

    def receive(into: torch.Tensor | None) -> float:
        _wait(comm.Irecv([down, MPI.DOUBLE], source=0, tag=TAG_DN_HDR), opt.poll_s)
        if down[0] != STOP:
            _wait(comm.Irecv([into.numpy(), MPI.FLOAT], source=0, tag=TAG_DN_DATA), opt.poll_s)
        return down[0]

    def push(kind: float, loss: float, t_c: float, t_idle: float, k: int, data: torch.Tensor | None) -> None:
        head = np.array([kind, loss, t_c, t_idle, k, samples, t_exchange], dtype=np.float64)
        comm.Send([head, MPI.DOUBLE], dest=0, tag=TAG_UP_HDR)
        if data is not None:
            comm.Send([data.contiguous().numpy(), MPI.FLOAT], dest=0, tag=TAG_UP_DATA)

    receive(params)
    lr = float(down[1])
    k = 0
    t_exchange = -1.0  # seconds of the previous exchange (push start to parameters in hand); none yet
    while True:
        for hook in before_gradient:
            hook(w, k)
        t0 = time.perf_counter()
        x, y = stream.next() if stream is not None else (None, None)
        samples = len(y) if y is not None else cfg.batch
        g, loss = fm.gradient(params, x, y, step_seed(cfg.seed, w, k))
        for hook in on_gradient:
            hook(w, k, g)
        t_c = time.perf_counter() - t0
        t_idle = 0.0
        if delays is not None:
            t_idle = max(0.0, delays.time(w, k) - t_c)
            time.sleep(t_idle)
        t_push = time.perf_counter()
        if wr is None:
            push(GRAD, loss, t_c, t_idle, k, g)
        else:
            if cfg.weight_decay:
                g = g.add(params, alpha=cfg.weight_decay)
            delta = g.mul(-lr)
            if ask:
                push(REQUEST, loss, t_c, t_idle, k, None)
                if receive(central) == STOP:
                    break
                push_data = wr.commit(delta, params, central, tau=int(down[2]))
                comm.Send([push_data.contiguous().numpy(), MPI.FLOAT], dest=0, tag=TAG_UP_DATA)
            else:
                push(GRAD, loss, t_c, t_idle, k, wr.commit(delta, params, None))
        k += 1
        if receive(params) == STOP:
            break
        t_exchange = time.perf_counter() - t_push
        lr = float(down[1])


# --------------------------------------------------------------------------- entry points


def run_ps(cfg: AsyncConfig, comm: Any, options: PSOptions | None = None) -> PSResult | None:
    """Run the parameter server job on ``comm`` (rank 0 serves, the other ranks work).

    cfg.workers must equal comm size - 1. Returns the PSResult on rank 0 and None on workers.
    Raises TrainerError for fewer than 2 ranks or a mismatched worker count.
    """
    opt = options or PSOptions()
    size = comm.Get_size()
    if size < 2:
        raise TrainerError(f"the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work); "
                           f"got {size}")
    if cfg.workers != size - 1:
        raise TrainerError(f"workers must be the number of MPI ranks minus one ({size - 1}), got {cfg.workers}")
    if opt.fail_worker is not None and opt.fail_worker >= cfg.workers:
        raise TrainerError(f"fail_worker must be in 0..{cfg.workers - 1}, got {opt.fail_worker}")
    torch.set_num_threads(opt.threads)
    from trainers.comm import abort_on_error

    from trainers.device import select_worker_device

    device = select_worker_device(opt.device, comm)  # UsageError on every rank alike
    with abort_on_error(comm):
        if comm.Get_rank() == 0:
            return _Server(cfg, comm, opt).run()
        _work(cfg, comm, opt, device)
        return None


OPTION_KEYS: dict[str, type] = {
    "n": int, "gap": str, "kappa": float, "gem_code": str, "data": str, "delays": str, "delay_mean": float,
    "eval_limit": int, "log_every": int, "replay_order": str, "worker_timeout": float, "poll": float,
    "save_params": str,
}
"""``trainers run --opt key=value`` settings of the asynchronous algorithms (AsyncConfig / PSOptions fields)."""


def run_from_run_config(cfg: Any, comm: Any) -> None:
    """``trainers run --algo <async algo>``: the parameter server from a trainers.run.RunConfig.

    RunConfig fields map onto AsyncConfig (lr_warmup_epochs -> warmup_epochs, lr_milestones ->
    milestones, lr_gamma -> lr_decay, eval_every in steps -> epochs, no length -> 1 epoch,
    fail_rank r -> worker r - 1, nesterov as given); the rest come as --opt key=value (OPTION_KEYS;
    delays default to none). Bad input raises trainers.errors.UsageError on every rank alike.
    """
    opts: dict[str, Any] = {}
    for key, text in cfg.options:
        if key not in OPTION_KEYS:
            raise UsageError(f"unknown --opt {key!r} for {cfg.algo}; allowed: {', '.join(OPTION_KEYS)}")
        try:
            opts[key] = OPTION_KEYS[key](text)
        except ValueError:
            raise UsageError(f"--opt {key}={text!r}: expected {OPTION_KEYS[key].__name__}") from None
    size = comm.Get_size()
    try:
        if size < 2:
            raise TrainerError("the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work): "
                              "start it with mpiexec -n K, K >= 2")
        if cfg.fail_rank is not None and not 1 <= cfg.fail_rank < size:
            raise TrainerError(f"fail_rank must be a worker rank in 1..{size - 1}, got {cfg.fail_rank}")
        fields_ = dict(
            algo=cfg.algo, workers=size - 1, model=cfg.model, dataset=cfg.dataset, data_root=cfg.data_root,
            synthetic_n=cfg.synthetic_n, batch=cfg.batch, lr=cfg.lr, momentum=cfg.momentum, nesterov=cfg.nesterov,
            weight_decay=cfg.weight_decay, epochs=None if cfg.steps is not None else float(cfg.epochs or 1),
            steps=cfg.steps, warmup_epochs=cfg.lr_warmup_epochs, milestones=cfg.lr_milestones,
            lr_decay=cfg.lr_gamma, augment=cfg.augment, seed=cfg.seed, delays="none", delay_mean=0.05,
        )
        fields_.update({k: v for k, v in opts.items() if k in AsyncConfig.__dataclass_fields__})
        acfg = AsyncConfig(**fields_)
        if cfg.eval_every:
            per_epoch = make_plan(acfg, load_data(acfg, test=False)[0]).per_epoch
            acfg = AsyncConfig(**{**fields_, "eval_every": cfg.eval_every / per_epoch})
        options = PSOptions(log=cfg.log, replay_order=opts.get("replay_order"),
                            worker_timeout=opts.get("worker_timeout", PSOptions.worker_timeout),
                            poll_s=opts.get("poll", PSOptions.poll_s), save_params=opts.get("save_params"),
                            fail_worker=None if cfg.fail_rank is None else cfg.fail_rank - 1,
                            fail_after=cfg.fail_at_step or 0, threads=cfg.threads, device=cfg.device)
        if options.replay_order:
            load_order(options.replay_order, acfg.workers)
        if acfg.model != "none":
            load_data(acfg, test=False)
    except ValueError as exc:
        raise UsageError(" ".join(str(exc).split())) from None
    result = run_ps(acfg, comm, options)
    if _diverged_everywhere(comm, result) and not cfg.allow_divergence:
        raise DivergenceError(_divergence_message(result, cfg.log))
    if result is not None:
        _print_result(acfg, result)


def _diverged_everywhere(comm: Any, result: PSResult | None) -> bool:
    """Rank 0's verdict (its summary's "diverged") on every rank: one broadcast after the run."""
    return bool(comm.bcast(bool(result.summary.get("diverged")) if result is not None else None, root=0))


def _divergence_message(result: PSResult | None, log: str | None) -> str:
    applied = result.summary.get("gradients") if result is not None else None
    return ("training diverged: a worker pushed a non-finite loss"
            + (f" after {applied} gradients were applied" if applied is not None else "") + "; stopped"
            + (f", run log {log}" if log else "") + "; pass --allow-divergence to accept it")


def _print_result(cfg: AsyncConfig, result: PSResult) -> None:
    s = result.summary
    gap = f" gap_mean={s['gap_mean']:.3f}" if "gap_mean" in s else ""
    print(f"{cfg.algo} N={cfg.workers} (MPI): {s['gradients']} gradients, test_acc={s['final_test_acc']:.4f}, "
          f"tau_mean={s['tau_mean']:.3f} (delay {s['delay_mean']:.3f}){gap}, diverged={s['diverged']}, "
          f"wall {s['wall_s']:.1f} s", flush=True)


def add_ps_arguments(parser: argparse.ArgumentParser) -> None:
    """The AsyncConfig options (delays default to none: real compute times) plus PSOptions."""
    add_async_arguments(parser, algo_flag="--algo")
    parser.set_defaults(workers=None, delays="none", delay_mean=0.05)
    parser.add_argument("--replay-order", default=None, metavar="FILE",
                        help="process pushes in this recorded order (trainers simulate --record-order)")
    parser.add_argument("--worker-timeout", type=float, default=PSOptions.worker_timeout,
                        help="seconds a worker may be silent before the server aborts the job")
    parser.add_argument("--poll", type=float, default=PSOptions.poll_s, help="seconds between receive polls")
    parser.add_argument("--save-params", default=None, metavar="FILE.npy", help="write the final parameters")
    parser.add_argument("--device", default="cpu", choices=DEVICES,
                        help="where the workers compute gradients (one GPU per worker; the server stays on the CPU)")
    parser.add_argument("--allow-divergence", action="store_true",
                        help="a diverged run is an outcome, not an error: exit 0 (default: exit 3)")
    parser.add_argument("--fail-worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fail-after", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--fail-mode", default="exit", help=argparse.SUPPRESS)


def ps_from_args(args: argparse.Namespace) -> int:
    """Run the parameter server from parsed add_ps_arguments options; exit status.

    The configuration is checked on every rank before MPI starts; a bad one prints one line (on
    rank 0) and returns 2 everywhere."""
    rank, size = env_world()
    try:
        if size is None:
            from mpi4py import MPI

            size = MPI.COMM_WORLD.Get_size()
        if size < 2:
            raise TrainerError("the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work): "
                              "start it with mpiexec -n K, K >= 2")
        if args.workers is None:
            args.workers = size - 1
        elif args.workers != size - 1:
            raise TrainerError(f"--workers must be the number of MPI ranks minus one ({size - 1}), got {args.workers}")
        cfg = config_from_args(args)
        opt = PSOptions(log=args.log, replay_order=args.replay_order, worker_timeout=args.worker_timeout,
                        poll_s=args.poll, save_params=args.save_params, fail_worker=args.fail_worker,
                        fail_after=args.fail_after, fail_mode=args.fail_mode, device=args.device)
        if opt.replay_order:
            load_order(opt.replay_order, cfg.workers)
        if opt.fail_worker is not None and opt.fail_worker >= cfg.workers:
            raise TrainerError(f"--fail-worker must be in 0..{cfg.workers - 1}, got {opt.fail_worker}")
        if cfg.model != "none":
            load_data(cfg, test=False)  # a missing dataset is a configuration error, found before MPI starts
    except ValueError as exc:
        if rank == 0:
            print(f"trainers ps: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    from mpi4py import MPI

    try:
        result = run_ps(cfg, MPI.COMM_WORLD, opt)
    except UsageError as exc:  # raised on every rank alike (e.g. --device cuda without a GPU)
        if rank == 0:
            print(f"trainers ps: error: {exc}", file=sys.stderr)
        return 2
    if _diverged_everywhere(MPI.COMM_WORLD, result) and not args.allow_divergence:
        if rank == 0:
            print(f"trainers ps: error: {_divergence_message(result, args.log)}", file=sys.stderr)
        return DIVERGED_STATUS
    if result is not None:
        _print_result(cfg, result)
    return 0


def ps_main(argv: Sequence[str] | None = None) -> int:
    """``mpiexec -n K python -m trainers.asynchronous.ps ARGS``; exit status (2: bad input, one line on rank 0)."""
    parser = StrictParser(prog="trainers ps", description=__doc__.split("\n\n")[0])
    add_ps_arguments(parser)
    args = parse_or_status(parser, argv, show_error=env_world()[0] == 0)
    return args if isinstance(args, int) else ps_from_args(args)


main = ps_main

if __name__ == "__main__":
    sys.exit(ps_main())
