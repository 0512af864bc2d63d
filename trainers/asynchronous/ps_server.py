"""The parameter server's loop (rank 0): receive pushes from any worker, apply the master rule, answer
with parameters, log, evaluate, stop the workers when the budget is spent or training diverged
(trainers.asynchronous.ps describes the protocol and the run log)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainers.config import AsyncConfig, PSOptions
from trainers.faults import server_hooks
from trainers.log import RunLog
from trainers.asynchronous.config import make_plan
from trainers.asynchronous.data_streams import load_data
from trainers.asynchronous.evaluate import evaluate
from trainers.asynchronous.flat_model import FlatModel, build_rule, build_schedule, build_worker_rule
from trainers.asynchronous.ps_messages import (CENTRAL, GRAD, PARAMS, REQUEST, STOP, TAG_DN_DATA, TAG_DN_HDR,
                                               TAG_UP_DATA, TAG_UP_HDR, UP_LEN, abort, load_order, wait)
from trainers.asynchronous.reporting import StepWindow, WindowStats, header_fields, rule_summary

__all__ = ["PSResult", "Server"]


@dataclass
class PSResult:
    """Rank 0's outcome: final central parameters and the run log's summary record."""

    params: torch.Tensor
    summary: dict[str, Any]


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


class Server:
    """Rank 0 of a parameter-server job: ``Server(cfg, comm, opt).run()``."""

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
        # called with the count of gradients applied before each apply: test hooks (trainers.faults)
        self.before_apply = server_hooks(opt.fail_server_at)

    # ---- messages
    def watchdog(self) -> None:
        now = time.monotonic()
        for w, since in self.computing.items():
            if now - since > self.opt.worker_timeout:
                abort(self.comm, f"worker {w} (rank {w + 1}) silent for {now - since:.1f} s "
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
                    wait(req, self.opt.poll_s, self.watchdog)

    def recv_header(self) -> tuple[int, np.ndarray]:
        MPI = self.MPI
        req = self.comm.Irecv([self.hdr, MPI.DOUBLE], source=MPI.ANY_SOURCE, tag=TAG_UP_HDR)
        status = wait(req, self.opt.poll_s, self.watchdog)
        w = status.Get_source() - 1
        self.computing.pop(w, None)
        return w, self.hdr.copy()

    def recv_payload(self, w: int, into: torch.Tensor) -> torch.Tensor:
        req = self.comm.Irecv([into.numpy(), self.MPI.FLOAT], source=w + 1, tag=TAG_UP_DATA)
        self.payload_bytes += into.numel() * into.element_size()
        self.computing[w] = time.monotonic()
        wait(req, self.opt.poll_s, self.watchdog)
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
        if cfg.log:
            head = header_fields(cfg, self.fm, self.train, simulated=False, ranks=n + 1, plan=plan)
            head["replay_order"] = self.opt.replay_order
            wr = build_worker_rule(cfg)
            head["exchange"] = "central-round-trip" if wr is not None and (wr.needs_central or wr.needs_tau) \
                else "push-pull"
            log = RunLog(cfg.log, head)
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
            for hook in self.before_apply:
                hook(applied)
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
