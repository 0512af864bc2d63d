"""Per-step timers for trainers: split each training step into compute, comm, compress and idle.

Usage::

    timer = StepTimer(sink=lambda rec: run_log.step(**rec))   # trainers.log.RunLog
    for step in range(steps):
        with timer.phase("compute"):
            loss = model(x).loss(); loss.backward()
        with timer.phase("compress"):
            packed = ternarize(grads)
        with timer.phase("comm"):
            comm.Allreduce(...)
        record = timer.end_step(step=step, loss=float(loss))

A step runs from the previous ``end_step`` (or ``start``, or the first phase entered) to this
``end_step``. The record uses the run log's step keys (trainers/log.py), in seconds: ``t_compute``,
``t_comm``, ``t_compress`` (time inside those phases), ``t_idle`` (time inside ``phase("idle")`` plus
every part of the step in no phase, so ``t_compute + t_comm + t_compress + t_idle == t_step``),
``t_untimed`` (the part in no phase) and ``t_step``. Phases must not nest. The clock is ``time.perf_counter``.

On a GPU the host runs ahead of the device, so a GPU trainer passes ``events`` (a factory of
``torch.cuda.Event(enable_timing=True)``-like objects: ``record()``, ``synchronize()``,
``elapsed_time(other)`` in milliseconds; trainers.device.timing_events): every phase boundary records
an event on the compute stream instead of reading the clock, and ``end_step`` synchronizes its last
event -- one host sync per step, on that stream only -- and takes the phases' times from the events.
A collective still running on another stream (NCCL, a DASO global sync in flight) is neither waited
for nor counted, unless the compute stream was made to wait for it (the handle's wait() inside the
phase). ``sync`` (called before each clock read) is the older, blunter way: ``torch.cuda.synchronize``
there waits for every stream, NCCL's included, so communication running past backward is counted as
compute and overlap is lost; it stays for CPU tools that need a barrier-like hook.

Cost: two clock reads and a few attribute updates per phase (about a microsecond on a 2-core CPU;
``benchmarks/timer_overhead.py`` measures it against a LeNet step). No torch or mpi4py import.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from trainers.errors import TrainerError

__all__ = ["PHASES", "StepTimer", "overhead_per_step"]

PHASES: tuple[str, ...] = ("compute", "comm", "compress", "idle")


class _Phase:
    """Re-usable context manager for one phase name (no allocation per use)."""

    __slots__ = ("_timer", "_index", "_t0")

    def __init__(self, timer: "StepTimer", index: int) -> None:
        self._timer = timer
        self._index = index
        self._t0 = 0.0

    def __enter__(self) -> "_Phase":
        timer = self._timer
        if timer._active is not None:
            raise RuntimeError(f"phase {PHASES[self._index]!r} entered inside phase "
                               f"{PHASES[timer._active]!r}; phases must not nest")
        if timer._events is not None:
            ev = timer._record()
            if timer._step_ev is None:
                timer._step_ev = ev
            timer._active = self._index
            self._t0 = ev
            return self
        if timer._sync is not None:
            timer._sync()
        t = timer._clock()
        if timer._step_t0 is None:
            timer._step_t0 = t
        timer._active = self._index
        self._t0 = t
        return self

    def __exit__(self, *exc: Any) -> None:
        timer = self._timer
        if timer._events is not None:
            timer._spans.append((self._index, self._t0, timer._record()))
            timer._active = None
            return
        if timer._sync is not None:
            timer._sync()
        timer._acc[self._index] += timer._clock() - self._t0
        timer._active = None


class StepTimer:
    """Accumulates phase times within a step and emits one record per step.

    sink: called with each record (e.g. a run-log writer's append); clock: seconds (default
    ``time.perf_counter``); sync: called before each clock read; events: a factory of device events
    that replaces clock and sync (see the module docstring).
    """

    def __init__(self, *, sink: Callable[[dict], Any] | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 sync: Callable[[], Any] | None = None,
                 events: Callable[[], Any] | None = None) -> None:
        self._sink = sink
        self._clock = clock
        self._sync = sync
        self._events = events
        self._step_ev: Any = None
        self._spans: list[tuple[int, Any, Any]] = []
        self._phases = {name: _Phase(self, i) for i, name in enumerate(PHASES)}
        self._acc = [0.0] * len(PHASES)
        self._active: int | None = None
        self._step_t0: float | None = None
        self.steps = 0
        self.totals: dict[str, float] = {f"t_{p}": 0.0 for p in PHASES} | {"t_untimed": 0.0, "t_step": 0.0}

    def phase(self, name: str) -> _Phase:
        """Context manager timing one phase: "compute", "comm", "compress" or "idle"."""
        try:
            return self._phases[name]
        except KeyError:
            raise TrainerError(f"unknown phase {name!r}; choose from {', '.join(PHASES)}") from None

    def _record(self) -> Any:
        ev = self._events()
        ev.record()
        return ev

    def start(self) -> None:
        """Mark the start of the current step now (otherwise: the first phase entered)."""
        if self._events is not None:
            self._step_ev = self._record()
            return
        if self._sync is not None:
            self._sync()
        self._step_t0 = self._clock()

    def end_step(self, **extra: Any) -> dict:
        """Close the step: return (and pass to the sink) its record, then start the next step.

        The record has the keys described in the module docstring, then ``extra`` (e.g. step=, loss=).
        """
        if self._active is not None:
            raise RuntimeError(f"end_step inside phase {PHASES[self._active]!r}")
        if self._events is not None:
            end = self._record()
            end.synchronize()  # the step's one host sync, on the compute stream only
            for index, a, b in self._spans:
                self._acc[index] += a.elapsed_time(b) / 1e3
            step_s = 0.0 if self._step_ev is None else self._step_ev.elapsed_time(end) / 1e3
            self._spans = []
            self._step_ev = end
            now = t0 = 0.0
        else:
            if self._sync is not None:
                self._sync()
            now = self._clock()
            t0 = now if self._step_t0 is None else self._step_t0
            step_s = now - t0
        compute, comm, compress, idle = self._acc
        untimed = max(step_s - (compute + comm + compress + idle), 0.0)
        step_s = compute + comm + compress + idle + untimed  # exact partition
        record = {"t_compute": compute, "t_comm": comm, "t_compress": compress,
                  "t_idle": idle + untimed, "t_untimed": untimed, "t_step": step_s}
        for key, value in record.items():
            self.totals[key] += value
        record.update(extra)
        self._acc = [0.0] * len(PHASES)
        self._step_t0 = now
        self.steps += 1
        if self._sink is not None:
            self._sink(record)
        return record

    def reset(self) -> None:
        """Forget the current step's phases and the totals."""
        if self._active is not None:
            raise RuntimeError(f"reset inside phase {PHASES[self._active]!r}")
        self._acc = [0.0] * len(PHASES)
        self._step_t0 = None
        self._step_ev, self._spans = None, []
        self.steps = 0
        self.totals = {k: 0.0 for k in self.totals}


def overhead_per_step(n: int = 50000, rounds: int = 5, timer: StepTimer | None = None) -> float:
    """Seconds a StepTimer adds to one step (4 empty phases + end_step) on the real clock: the best
    of ``rounds`` of (n timed steps - n empty loop iterations) / n. ``timer`` is the one exercised
    (a new one by default); it ends with ``rounds * n`` more steps."""
    timer = StepTimer() if timer is None else timer
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            with timer.phase("compute"):
                pass
            with timer.phase("compress"):
                pass
            with timer.phase("comm"):
                pass
            with timer.phase("idle"):
                pass
            timer.end_step()
        t1 = time.perf_counter()
        for _ in range(n):
            pass
        t2 = time.perf_counter()
        best = min(best, ((t1 - t0) - (t2 - t1)) / n)
    return best
