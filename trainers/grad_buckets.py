"""Gradient buckets reduced while backprop runs: DDP's bucketing on any :class:`Collectives` backend.

Parameters are grouped into flat float32 buckets of about ``bucket_bytes`` (:func:`bucket_plan`) in
*reverse* registration order (the order backprop produces their gradients; PyTorch DDP does the same,
and so does the model's overlap: docs/model.md section 9, perfmodel/overlap.py), and each parameter's
``.grad`` is a view of its bucket, so backward accumulates straight into bucket memory. A
``register_post_accumulate_grad_hook`` on every parameter counts down its bucket; when a bucket is
complete it is handed to the backend's non-blocking allreduce at once (``overlap=True``), while backprop
goes on with the earlier layers. Buckets are launched strictly in bucket order (a complete bucket waits
for its predecessors), so every rank issues the same collectives in the same order, as NCCL requires.
With ``overlap=False`` every bucket is launched after backward, one after another: the same
collectives on the same data, so the results are bitwise identical to the overlapped ones.

A step::

    buckets.zero_grad()
    loss = criterion(model(x), y)
    buckets.extra.fill_(loss.item())      # optional extra slots reduced with the last bucket
    buckets.begin()                        # arm the hooks for this backward
    loss.backward()
    times = buckets.finish()               # launch what is left, wait for all; grads are reduced
    optimizer.step()

Times per step (seconds): on the CPU from ``time.perf_counter``; on CUDA from CUDA events, with no
device-wide ``torch.cuda.synchronize`` (which would also wait for the collectives still running and
count them as compute): an event on the compute stream marks the end of backward, another is recorded
after the stream has been made to wait for every bucket, and only that event is synchronized. Where the
backend gives each handle its own start/end events (NCCL, gloo on CUDA), comm_s is from those too.

    exposed_s   from the end of backward (the ``finish()`` call) until every bucket is reduced: the
                communication backprop did not hide
    comm_s      the time the channel was busy with this step's buckets: the sum over buckets of
                completion - max(launch, previous bucket's completion) (collectives of one group run
                one after another). Completion is the backend's callback time where it has one
                (gloo), otherwise when test()/wait() first saw it (an upper bound)
    span_s      from the first launch until the last completion

With ``overlap=False`` exposed_s ~= comm_s; the hidden fraction is 1 - exposed_s / comm_s.
Gradient accumulation: call ``begin()`` only before the last micro-batch's backward (the others
accumulate into the buckets without communicating, like DDP's ``no_sync``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from trainers.collectives.base import Collectives, Handle

__all__ = ["DEFAULT_BUCKET_BYTES", "BucketTimes", "GradBuckets", "bucket_plan", "busy_seconds"]

DEFAULT_BUCKET_BYTES = 25 * 2**20
"""Bucket cap in bytes: 25 MiB, PyTorch DDP's default ``bucket_cap_mb``."""


@dataclass(frozen=True)
class BucketTimes:
    """One step's communication (seconds) and its size (bytes); see the module docstring."""

    exposed_s: float
    comm_s: float
    span_s: float
    buckets: int
    launched_in_backward: int
    nbytes: int


def bucket_plan(numels: Sequence[int], bucket_bytes: int, itemsize: int = 4) -> list[list[int]]:
    """Indices of the tensors in each bucket, in launch order: tensors taken from the last one, a bucket
    closed as soon as it holds at least ``bucket_bytes`` (PyTorch DDP's rule, and perfmodel.overlap's:
    a bucket overshoots the cap by at most its last tensor); the remainder forms the last bucket."""
    if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) or bucket_bytes < itemsize:
        raise ValueError(f"bucket_bytes must be an int >= {itemsize}, got {bucket_bytes!r}")
    cap = bucket_bytes // itemsize
    groups: list[list[int]] = [[]]
    fill = 0
    for i in reversed(range(len(numels))):
        groups[-1].append(i)
        fill += int(numels[i])
        if fill >= cap:
            groups.append([])
            fill = 0
    if len(groups) > 1 and not groups[-1]:
        groups.pop()
    return groups


def busy_seconds(spans: Sequence[tuple[float, float]], t_last: float) -> float:
    """Seconds a channel was busy with collectives run one after another: the sum over (start, done)
    spans, in launch order, of min(done, t_last) - max(start, previous done), negatives counted as 0."""
    comm, prev = 0.0, spans[0][0] if spans else 0.0
    for start, done in spans:
        done = min(done, t_last)
        comm += max(done - max(start, prev), 0.0)
        prev = max(prev, done)
    return comm


class GradBuckets:
    """Buckets bound to ``params`` (float32, on ``coll.device``), reduced with ``op`` ("sum" or "mean").

    ``extra_numel`` float32 slots (``self.extra``) ride at the end of the last bucket -- the one
    launched last -- e.g. the loss, averaged for free with the gradients.
    """

    def __init__(self, params: Sequence[torch.Tensor], coll: Collectives, *,
                 bucket_bytes: int = DEFAULT_BUCKET_BYTES, overlap: bool = True, op: str = "sum",
                 extra_numel: int = 0) -> None:
        if op not in ("sum", "mean"):
            raise ValueError(f"op must be 'sum' or 'mean', got {op!r}")
        if isinstance(extra_numel, bool) or not isinstance(extra_numel, int) or extra_numel < 0:
            raise ValueError(f"extra_numel must be an int >= 0, got {extra_numel!r}")
        self.params = [p for p in params if p.requires_grad]
        for i, p in enumerate(self.params):
            if p.dtype != torch.float32 or p.device != coll.device:
                raise ValueError(f"parameter {i} is {p.dtype} on {p.device}; buckets hold float32 on {coll.device}")
        self.coll, self.overlap, self.op = coll, bool(overlap), op
        self.bucket_bytes = bucket_bytes
        groups = bucket_plan([p.numel() for p in self.params], bucket_bytes)
        self.buckets: list[torch.Tensor] = []
        self.views: list[torch.Tensor] = [torch.empty(0)] * len(self.params)
        self.bucket_of: list[int] = [0] * len(self.params)
        for b, members in enumerate(groups):
            extra = extra_numel if b == len(groups) - 1 else 0
            flat = torch.zeros(sum(self.params[i].numel() for i in members) + extra, device=coll.device)
            offset = 0
            for i in members:
                n = self.params[i].numel()
                self.views[i] = flat[offset:offset + n].view(self.params[i].shape)
                self.bucket_of[i] = b
                offset += n
            self.buckets.append(flat)
        self.extra = self.buckets[-1][len(self.buckets[-1]) - extra_numel:]
        self.sizes = [len(m) for m in groups]
        self._pending = list(self.sizes)
        self._seen = [False] * len(self.params)
        self._handles: list[Handle | None] = [None] * len(self.buckets)
        self._next = 0
        self._armed = False
        self._in_backward = 0
        self._bind()
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(self.params)]

    @property
    def nbytes(self) -> int:
        """Bytes of all buckets (what one rank hands to the allreduce per step)."""
        return sum(b.numel() * b.element_size() for b in self.buckets)

    # --------------------------------------------------------------------------------- binding

    def _bind(self) -> None:
        for p, v in zip(self.params, self.views):
            if p.grad is None or p.grad.data_ptr() != v.data_ptr():
                if p.grad is not None:
                    v.copy_(p.grad)
                p.grad = v

    def zero_grad(self) -> None:
        """Zero every bucket (and so every parameter's .grad, kept bound to its bucket view)."""
        for b in self.buckets:
            b.zero_()
        self._bind()

    # --------------------------------------------------------------------------------- hooks

    def _make_hook(self, i: int):
        def hook(_: torch.Tensor) -> None:
            if not self._armed or self._seen[i]:
                return
            self._seen[i] = True
            b = self.bucket_of[i]
            self._pending[b] -= 1
            if self.overlap:
                self._launch_ready(in_backward=True)
                self._poll()
        return hook

    def _launch(self, b: int) -> None:
        self._handles[b] = self.coll.allreduce_async(self.buckets[b], self.op)

    def _launch_ready(self, in_backward: bool) -> None:
        while self._next < len(self.buckets) and self._pending[self._next] == 0:
            self._launch(self._next)
            self._next += 1
            self._in_backward += int(in_backward)

    def _poll(self) -> None:
        """Let in-flight collectives progress (MPI needs calls into the library to move them)."""
        for h in self._handles:
            if h is not None and h.completed_at is None:
                h.test()
                return

    # --------------------------------------------------------------------------------- the step

    def begin(self) -> None:
        """Arm the hooks for the next backward (the one whose gradients are to be reduced)."""
        if self._armed:
            raise RuntimeError("begin() called twice without finish()")
        self._bind()
        self._pending = list(self.sizes)
        self._seen = [False] * len(self.params)
        self._handles = [None] * len(self.buckets)
        self._next = 0
        self._in_backward = 0
        self._armed = True
        # buckets with no parameters (only extra slots) are ready at once
        if self.overlap:
            self._launch_ready(in_backward=True)

    def finish(self) -> BucketTimes:
        """Launch the buckets not launched yet (unused parameters count as ready), wait for all."""
        if not self._armed:
            raise RuntimeError("finish() without begin()")
        cuda = self.coll.device.type == "cuda"
        mark = None
        if cuda:  # the end of backward on the compute stream; the buckets in flight keep running
            mark = torch.cuda.Event(enable_timing=True)
            mark.record()
        t_end = time.perf_counter()
        self._armed = False
        self._pending = [0] * len(self.buckets)
        self._launch_ready(in_backward=False)
        for h in self._handles:
            assert h is not None
            h.wait()
        handles = [h for h in self._handles if h is not None]
        if mark is not None:
            done = torch.cuda.Event(enable_timing=True)
            done.record()  # after the compute stream was made to wait for every bucket
            done.synchronize()  # this event only, never the whole device
            exposed = max(mark.elapsed_time(done) / 1e3, 0.0)
            if all(h.start_event is not None and h.end_event is not None for h in handles):
                ref = handles[0].start_event
                spans = [(ref.elapsed_time(h.start_event) / 1e3, ref.elapsed_time(h.end_event) / 1e3)
                         for h in handles]
                last = ref.elapsed_time(done) / 1e3
                return BucketTimes(exposed_s=exposed, comm_s=busy_seconds(spans, last), span_s=last,
                                   buckets=len(handles), launched_in_backward=self._in_backward, nbytes=self.nbytes)
        t_done = time.perf_counter()
        spans = [(h.started_at, h.completed_at if h.completed_at is not None else t_done) for h in handles]
        return BucketTimes(exposed_s=exposed if mark is not None else t_done - t_end,
                           comm_s=busy_seconds(spans, t_done), span_s=t_done - handles[0].started_at,
                           buckets=len(handles), launched_in_backward=self._in_backward, nbytes=self.nbytes)

    def remove(self) -> None:
        """Remove the hooks (the parameters keep their bucket-view grads)."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
