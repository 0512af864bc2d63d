"""Overlap of gradient communication with backprop, computed from a bucket schedule.

Backprop produces gradients from the last tensor to the first. Frameworks group them into buckets
(PyTorch DDP: bucket_cap_mb = 25 MiB; Horovod: a fusion buffer of HOROVOD_FUSION_THRESHOLD, 64 MiB
before v0.21, 128 MiB from v0.21) and start a bucket's collective as soon as its last gradient exists.
Collectives run one after another on one stream. See docs/model.md section 9.

Buckets: tensors in reverse model order are added to the open bucket; it closes once it holds at least
``bucket_bytes`` (a tensor larger than a bucket fills one alone), and the rest forms the last bucket.
Ready times: the backward pass takes t_b seconds and spends it on tensor i in proportion to a weight
w_i: the tensor's FLOPs when the workload gives ``tensor_flops``, else its parameter count (a stated
fallback: a layer's backward FLOPs grow with its parameters times the positions it is applied at, which
the parameter count alone does not know). Only the proportions matter, so measured per-tensor backward
times (a profile's) can be given in ``tensor_flops`` as well. Bucket j is ready at r_j = t_b S_j / S, where S_j sums the
weights of the tensors produced up to and including its last one, S all of them.
Schedule (one stream): f_0 = r_0 + d + c_0, f_j = max(r_j + d, f_{j-1}) + c_j, where c_j is bucket j's
communication time and d the wait between a bucket being ready and its collective being launched (0 for
frameworks that launch at once; half a cycle on average for a framework that launches from a periodic
loop, Horovod's HOROVOD_CYCLE_TIME: the ready time falls uniformly within a cycle). Exposed
communication = f_last - t_b (>= c_last); hidden = sum_j c_j - exposed.
Interference (perfmodel.overlap_causes gives the slowdowns per setting): while a collective runs
during backprop, backprop advances at 1/(1+sigma) of its own speed and the collective at 1/(1+mu):
bucket j starts at s_j = max(r_j + D_j + d, f_{j-1}) with D_j the backprop delay so far; the window
of concurrency is W_j = min(c_j (1+mu), (t_b + D_j - s_j)^+ (1+sigma)); D_{j+1} = D_j + W_j sigma/(1+sigma);
f_j = s_j + W_j + c_j - W_j/(1+mu); exposed = max(f_last, t_b + D) - t_b. sigma = mu = 0 is the
ideal schedule above; a collective entirely inside backprop then costs c_j sigma (sigma = mu).
t_b = BACKWARD_SHARE x the measured step time: backward costs twice the forward pass (2 FLOPs per
parameter per sample forward, 4 backward: Kaplan et al. 2020, "Scaling Laws for Neural Language
Models", section 2.1, C ~ 6N per token), so backward is 2/3 of forward plus backward; the optimizer
update, not separated in a measured step time, is counted in the step and not in t_b.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .specs import SpecError, Workload

BACKWARD_SHARE = 2.0 / 3.0
MIB = float(1 << 20)


@dataclass(frozen=True)
class Buckets:
    """Gradient buckets in the order they are sent: bytes of each, and the fraction of the backward
    pass done when each is ready (0..1, non-decreasing, the last one 1)."""

    nbytes: np.ndarray
    ready_fraction: np.ndarray


def make_buckets(sizes_bytes, weights, bucket_bytes: float, first_bucket_bytes: float = 0.0) -> Buckets:
    """Buckets from per-tensor bytes and backward weights, both in model order (module docstring); the
    first bucket sent closes at ``first_bucket_bytes`` when that is > 0 (PyTorch DDP's 1 MiB)."""
    sizes = np.asarray(sizes_bytes, dtype=float)[::-1]
    wts = np.asarray(weights, dtype=float)[::-1]
    if bucket_bytes <= 0:
        raise SpecError(f"bucket size must be > 0 bytes, got {bucket_bytes!r}")
    if first_bucket_bytes < 0:
        raise SpecError(f"first bucket size must be >= 0 bytes, got {first_bucket_bytes!r}")
    total_w = wts.sum()
    done = np.cumsum(wts) / total_w if total_w > 0 else np.arange(1, len(wts) + 1) / len(wts)
    filled = np.cumsum(sizes)
    nbytes, ready = [], []
    start, base = 0, 0.0
    while start < len(sizes):  # one pass per bucket: the first tensor that fills it closes it
        cap = first_bucket_bytes if (not nbytes and first_bucket_bytes > 0) else bucket_bytes
        # at least the next tensor: a cap below float resolution at base (base + cap == base) still advances
        end = min(max(int(np.searchsorted(filled, base + cap, side="left")), start), len(sizes) - 1)
        nbytes.append(filled[end] - base)
        ready.append(done[end])
        start, base = end + 1, filled[end]
    ready[-1] = 1.0
    return Buckets(np.asarray(nbytes), np.asarray(ready))


def workload_buckets(workload: Workload, bytes_per_element: float, bucket_mb: float,
                     first_bucket_mb: float = 0.0) -> Buckets:
    """A workload's gradient buckets of ``bucket_mb`` MiB (the first ``first_bucket_mb`` MiB when > 0)
    with elements of ``bytes_per_element`` bytes. The same buckets object for the same inputs (cached: a
    plan asks for them once per candidate and GPU group); callers do not write to its arrays."""
    flops = tuple(getattr(workload, "tensor_flops", ()) or ())
    return _buckets(workload.name, tuple(workload.tensor_sizes), flops, float(bytes_per_element),
                    float(bucket_mb), float(first_bucket_mb))


@lru_cache(maxsize=512)
def _buckets(name: str, sizes: tuple, flops: tuple, bytes_per_element: float, bucket_mb: float,
             first_bucket_mb: float) -> Buckets:
    """The buckets of workload_buckets; each tensor's backward weight is its tensor_flops when the workload
    gives them, else its parameter count (module docstring)."""
    if flops and len(flops) != len(sizes):
        raise SpecError(f"workload {name}: {len(flops)} tensor_flops for {len(sizes)} tensors")
    weights = np.asarray(flops or sizes, dtype=float)
    nbytes = np.asarray(sizes, dtype=float) * bytes_per_element
    return make_buckets(nbytes, weights, bucket_mb * MIB, first_bucket_mb * MIB)


def exposed_time(buckets: Buckets, t_backward,
                 cost: Callable[[np.ndarray], np.ndarray],
                 start_delay: float = 0.0, compute_slowdown: float = 0.0,
                 comm_slowdown: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(total communication seconds, seconds of it not hidden behind backprop), arrays over GPU counts.

    t_backward: seconds of the backward pass (per GPU count, array); cost(nbytes[:, None]) gives each
    bucket's communication seconds as an array (buckets, GPU counts); start_delay: seconds between a
    bucket being ready and its collective being launched (d in the module docstring). The exposed
    seconds include that wait where it is not hidden.
    compute_slowdown (sigma) and comm_slowdown (mu): while a collective runs during backprop, backprop
    advances at 1/(1+sigma) of its speed and the collective at 1/(1+mu) (module docstring); both 0:
    the ideal schedule. A collective inside a window W of concurrency delays backprop by
    W sigma / (1+sigma); its remaining work after the backward pass runs at full speed.
    """
    t_b = np.asarray(t_backward, dtype=float)
    c = np.asarray(cost(buckets.nbytes[:, None]), dtype=float)
    if c.shape[1:] != t_b.shape:  # (a plan runs this thousands of times: no broadcast where none is needed)
        c = np.broadcast_to(c, (len(buckets.nbytes),) + np.broadcast_shapes(c.shape[1:], t_b.shape))
    # the loop's per-bucket terms formed once, for all buckets (a plan runs this thousands of times)
    ready = buckets.ready_fraction[:, None] * t_b + start_delay
    longest = c * (1.0 + comm_slowdown)  # a window is at most the collective's time when slowed
    lag = compute_slowdown / (1.0 + compute_slowdown)  # backprop delay per second of window
    gain = comm_slowdown / (1.0 + comm_slowdown)  # what a second of window adds to the collective's end
    finish = np.zeros(c.shape[1:])
    delay = np.zeros(c.shape[1:])  # backprop's lag behind its own speed so far
    for j in range(len(c)):  # one stream: bucket j waits for j-1
        start = np.maximum(ready[j] + delay, finish)
        left = np.maximum((t_b + delay) - start, 0.0)  # backprop seconds (alone) still to run at the start
        window = np.minimum(longest[j], left * (1.0 + compute_slowdown))
        if lag:
            delay = delay + window * lag
        finish = start + c[j] + window * gain  # = start + W + c_j - W / (1 + mu)
    end = t_b + delay
    return c.sum(axis=0), np.maximum(finish, end) - t_b
