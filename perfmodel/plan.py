"""Plan a training run: search GPU counts x strategies x settings, rank by time to train or by cost.

For every candidate strategy (the collective choice and wire format of synchronous SGD, DASO, the
TernGrad exchanges, synchronous parameter servers, BytePS, asynchronous SGD, ZeRO 1-3 and FSDP),
bucket size, gradient accumulation and GPU count, perfmodel.scaling.predict gives the throughput
(samples/s) and perfmodel.memory the bytes per GPU. Then, for a job of S samples:
    time_to_train_s = S / samples_per_s
    gpu_hours       = gpus x time_to_train_s / 3600
    cost            = gpu_hours x price per GPU-hour (None without a price)
    fits            = memory per GPU <= usable share of the GPU's memory
A row is feasible when it fits and meets every constraint (GPU count, deadline, budget, minimum
efficiency); feasible rows are ranked by time to train (ties: cost) or by cost (ties: time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .memory import PARTS, USABLE, Activations, fits, format_bytes, memory_per_gpu
from .scaling import predict, unrunnable
from .specs import TERNGRAD_LEVELS, TERNGRAD_PS, Cluster, SpecError, Strategy, Workload

RANKS = ("time", "cost")
#: strategies whose update equals SSGD's (the same gradient mean every step)
SAME_UPDATE = ("ssgd", "sync-ps", "byteps", "zero1", "zero2", "zero3", "fsdp")


@dataclass(frozen=True)
class Work:
    """The job: samples to process (epochs x dataset, samples, or tokens / sequence length)."""

    samples: float
    text: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.samples) and self.samples > 0):
            raise SpecError(f"the work must be a positive number of samples, got {self.samples!r}")


def work_from(epochs: float | None = None, dataset_size: int | None = None, samples: float | None = None,
              tokens: float | None = None, seq_len: int | None = None) -> Work:
    """The job from exactly one of: epochs with dataset_size, samples, tokens with seq_len."""
    given = [k for k, v in (("--epochs/--dataset-size", epochs if epochs is not None else dataset_size),
                            ("--samples", samples), ("--tokens/--seq-len", tokens if tokens is not None else seq_len))
             if v is not None]
    if len(given) != 1:
        raise SpecError("give the work as one of --epochs E --dataset-size N, --samples N, or --tokens T --seq-len L"
                        + (f" (got {' and '.join(given)})" if given else ""))
    for name, v in (("--epochs", epochs), ("--dataset-size", dataset_size), ("--samples", samples),
                    ("--tokens", tokens), ("--seq-len", seq_len)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise SpecError(f"{name} must be a number > 0, got {v!r}")
    if given[0].startswith("--epochs"):
        if epochs is None or dataset_size is None:
            raise SpecError("--epochs needs --dataset-size (and the reverse)")
        return Work(epochs * dataset_size, f"{epochs:g} epochs of {dataset_size:,} samples")
    if samples is not None:
        return Work(float(samples), f"{samples:,.0f} samples")
    if tokens is None or seq_len is None:
        raise SpecError("--tokens needs --seq-len (and the reverse)")
    return Work(tokens / seq_len, f"{tokens:,.0f} tokens in sequences of {seq_len}")


@dataclass(frozen=True)
class Constraints:
    """Limits a plan must meet; None: no limit. deadline_s seconds; budget in the price's currency."""

    gpus_max: int = 512
    deadline_s: float | None = None
    budget: float | None = None
    min_efficiency: float | None = None
    global_batch: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.gpus_max, bool) or not isinstance(self.gpus_max, int) or self.gpus_max < 1:
            raise SpecError(f"--gpus-max must be a positive integer, got {self.gpus_max!r}")
        for name in ("deadline_s", "budget"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise SpecError(f"--{name.split('_')[0]} must be > 0, got {v!r}")
        if self.min_efficiency is not None and not 0 < self.min_efficiency <= 1:
            raise SpecError(f"--min-efficiency must be in (0, 1], got {self.min_efficiency!r}")
        if self.global_batch is not None and (isinstance(self.global_batch, bool) or self.global_batch < 1):
            raise SpecError(f"--global-batch must be a positive integer, got {self.global_batch!r}")


@dataclass(frozen=True)
class Candidate:
    """One strategy with its settings: a label for the table and the Strategy the model predicts."""

    label: str
    strategy: Strategy


def candidates(cluster: Cluster, *, allreduce: str = "nccl", buckets=(25.0, 100.0), wires=("fp32", "fp16"),
               same_update: bool = False, names: tuple[str, ...] | None = None,
               straggler_cv: float = 0.0) -> list[Candidate]:
    """The strategy space of a plan: ssgd per collective x wire x bucket; daso; terngrad levels and ps;
    sync-ps and byteps; asgd; zero1-3 and fsdp per wire."""
    base = dict(straggler_cv=straggler_cv)
    coll = [allreduce] if allreduce != "nccl" else ["nccl", "ring", "tree"]
    out: list[Candidate] = []
    for alg in coll:
        for wire in wires:
            for mb in buckets:
                out.append(Candidate(f"ssgd {alg} {wire} {mb:g}MiB",
                                     Strategy("ssgd", allreduce=alg, wire=wire, bucket_mb=mb, **base)))
    ring = "ring" if allreduce == "nccl" else allreduce
    out.append(Candidate("daso B=4 W=1", Strategy("daso", allreduce=allreduce, daso_B=4, daso_W=1, **base)))
    for ex in (TERNGRAD_LEVELS, TERNGRAD_PS):
        out.append(Candidate(f"terngrad {ex}", Strategy("terngrad", allreduce=ring, terngrad_exchange=ex, **base)))
    servers = cluster.gpus_per_node
    for wire in wires:
        out.append(Candidate(f"sync-ps {servers} servers {wire}",
                             Strategy("sync-ps", ps_servers=servers, wire=wire, **base)))
        out.append(Candidate(f"byteps {wire}", Strategy("byteps", ps_placement="colocated", wire=wire, **base)))
    out.append(Candidate(f"asgd {servers} servers", Strategy("asgd", ps_servers=servers, **base)))
    for name in ("zero1", "zero2", "zero3", "fsdp"):
        for wire in wires:
            out.append(Candidate(f"{name} {wire}", Strategy(name, wire=wire, **base)))
    if names is not None:
        out = [c for c in out if c.strategy.name in names]
    if same_update:
        out = [c for c in out if c.strategy.name in SAME_UPDATE]
    return out


def with_node_overheads(cands: list[Candidate], workload: Workload, cluster: Cluster, batch: int,
                        rates: dict[str, float]) -> list[Candidate]:
    """Each candidate of a strategy in ``rates`` (name -> samples/s measured on one node with all its GPUs at
    ``batch`` samples per GPU, one micro-batch per exchange) with the step overhead that run implies for its
    own settings (perfmodel.node_overhead); its label says how much. Raises SpecError for a rate the node
    run cannot give (not positive, one GPU per node, a strategy that cannot run on one node)."""
    from .node_overhead import node_step_overhead

    missing = sorted(set(rates) - {c.strategy.name for c in cands})
    if missing:
        raise SpecError(f"--node-rate names {', '.join(missing)}, which this search does not include "
                        f"(--strategy, --same-update)")
    one = replace(workload, accumulate=1)
    out = []
    for c in cands:
        rate = rates.get(c.strategy.name)
        if rate is None:
            out.append(c)
            continue
        try:
            o = node_step_overhead(one, cluster, c.strategy, batch, rate)
        except SpecError as e:
            raise SpecError(f"--node-rate {c.strategy.name}: {e}") from None
        out.append(Candidate(f"{c.label} +{o * 1e3:.3g}ms", replace(c.strategy, step_overhead_s=o)))
    return out


def gpu_counts(cluster: Cluster, gpus_max: int) -> np.ndarray:
    """1, 2, 4, ... up to gpus_max, plus gpus_max, within the cluster's nodes."""
    limit = gpus_max
    if cluster.max_nodes is not None:
        limit = min(limit, cluster.max_nodes * cluster.gpus_per_node)
    counts = {2**i for i in range(int(math.log2(limit)) + 1)} | {limit}
    return np.array(sorted(counts), dtype=float)


def batch_choices(lo: int, hi: int) -> list[int]:
    """Per-GPU micro-batches in [lo, hi]: lo, the powers of two between, hi."""
    if lo < 1 or hi < lo:
        raise SpecError(f"per-GPU batch range must be 1 <= lo <= hi, got {lo}-{hi}")
    return sorted({lo, hi} | {2**i for i in range(int(math.log2(hi)) + 1) if lo <= 2**i <= hi})


@dataclass(frozen=True)
class PlanInput:
    """Everything a search needs besides the workload and cluster."""

    work: Work
    constraints: Constraints
    acts: Activations
    gpu_memory_bytes: float
    price: float | None = None
    optimizer: str = "momentum"
    precision: str = "fp32"
    batches: tuple[int, ...] = (32,)
    accumulations: tuple[int, ...] = (1,)
    usable: float = USABLE
    workspace_bytes: float = 0.0  # the libraries' fixed workspaces per GPU (perfmodel.memory.blas_workspace_bytes)


def search(workload: Workload, cluster: Cluster, cands: list[Candidate], inp: PlanInput) -> list[dict]:
    """Every runnable (candidate, GPU count, batch, accumulation) as a row (plain Python values), with
    ``violates``: the constraints it breaks (empty when feasible)."""
    w_all = gpu_counts(cluster, inp.constraints.gpus_max)
    rows: list[dict] = []
    gb = inp.constraints.global_batch
    for k in inp.accumulations:
        wl = replace(workload, accumulate=k)
        for b in ((None,) if gb is not None else inp.batches):
            if gb is not None:  # global batch fixed: b = B / (W k) must be a whole number of samples
                w = w_all[(gb % (w_all * k) == 0)]
                w = w[(gb / (w * k) >= min(inp.batches)) & (gb / (w * k) <= max(inp.batches))]
                scaling, batch = "strong", gb
            else:
                w, scaling, batch = w_all, "weak", b
            if len(w) == 0:
                continue
            for j, cand in enumerate(cands):
                keep = w if j == 0 else w[w > 1]  # one GPU exchanges nothing: one row for it
                for _, bad in unrunnable(keep, cluster, cand.strategy, scaling=scaling, batch=batch,
                                         accumulate=k).items():
                    keep = keep[~np.isin(keep, bad)]
                if len(keep) == 0:
                    continue
                rows.extend(_rows(wl, cluster, cand, keep, scaling, batch, k, inp))
    return rows


def _rows(wl: Workload, cluster: Cluster, cand: Candidate, w: np.ndarray, scaling: str, batch: int, k: int,
          inp: PlanInput) -> list[dict]:
    p = predict(wl, cluster, cand.strategy, w, scaling=scaling, batch=batch)
    mem = memory_per_gpu(wl, inp.acts, cand.strategy, w, p.batch_per_gpu, optimizer=inp.optimizer,
                         precision=inp.precision, workspace_bytes=inp.workspace_bytes)
    total = mem.total
    ok = fits(total, inp.gpu_memory_bytes, inp.usable).tolist()
    tt = inp.work.samples / p.throughput
    hours = w * tt / 3600.0
    exposed = (np.maximum(p.t_comm_s - p.extra["t_hidden_s"], 0.0) / p.t_iter_s).tolist()
    parts = {k: getattr(mem, k).tolist() for k in PARTS}
    parts["total"] = total.tolist()
    gpus, thr, eff, b = w.astype(int).tolist(), p.throughput.tolist(), p.efficiency.tolist(), p.batch_per_gpu.tolist()
    t_iter, t_comp = p.t_iter_s.tolist(), p.t_compute_s.tolist()  # for perfmodel.exposure's note
    tt, hours, nodes = tt.tolist(), hours.tolist(), p.nodes.tolist()
    out = []
    c = inp.constraints
    for i in range(len(gpus)):
        cost = hours[i] * inp.price if inp.price is not None else None
        row = {"gpus": gpus[i], "strategy": cand.strategy.name, "label": cand.label if gpus[i] > 1 else "one GPU",
               "samples_per_s": thr[i], "efficiency": eff[i], "time_to_train_s": tt[i], "gpu_hours": hours[i],
               "cost": cost, "memory_per_gpu_bytes": parts["total"][i], "fits": ok[i], "batch_per_gpu": b[i],
               "accumulate": k, "global_batch": b[i] * k * gpus[i], "comm_exposed_share": exposed[i],
               "nodes": nodes[i], "memory": {key: v[i] for key, v in parts.items()},
               "t_iter_s": t_iter[i], "t_compute_s": t_comp[i]}
        violates = []
        if not ok[i]:
            violates.append("memory")
        if c.deadline_s is not None and tt[i] > c.deadline_s:
            violates.append("deadline")
        if c.budget is not None and cost is not None and cost > c.budget:
            violates.append("budget")
        if c.min_efficiency is not None and eff[i] < c.min_efficiency:
            violates.append("min-efficiency")
        row["violates"] = violates
        row["_strategy"] = cand.strategy
        out.append(row)
    return out


def rank(rows: list[dict], by: str = "time") -> list[dict]:
    """Rows sorted by time to train (then cost, fewer GPUs, less memory) or by cost (then time, less memory);
    cost is GPU-hours without a price."""
    if by not in RANKS:
        raise SpecError(f"--rank must be one of {', '.join(RANKS)}, got {by!r}")
    inf = float("inf")

    def cost(r):
        return r["cost"] if r["cost"] is not None else r["gpu_hours"]

    if by == "time":
        return sorted(rows, key=lambda r: (r["time_to_train_s"], cost(r), r["gpus"], r.get("memory_per_gpu_bytes", 0)))
    return sorted(rows, key=lambda r: (cost(r) if cost(r) is not None else inf, r["time_to_train_s"],
                                       r.get("memory_per_gpu_bytes", 0)))


def pareto(rows: list[dict]) -> list[dict]:
    """Rows no other row beats on both time to train and cost (GPU-hours without a price)."""
    key = lambda r: (r["time_to_train_s"], r["cost"] if r["cost"] is not None else r["gpu_hours"])  # noqa: E731
    out, best = [], float("inf")
    for r in sorted(rows, key=key):
        if key(r)[1] < best:
            out.append(r)
            best = key(r)[1]
    return out


CONSTRAINT_WORDS = {"memory": "fits in memory", "deadline": "meets the deadline", "budget": "meets the budget",
                    "min-efficiency": "meets the minimum efficiency"}


def _excess(r: dict, name: str, inp: PlanInput) -> float:
    c = inp.constraints
    if name == "memory":
        return r["memory_per_gpu_bytes"] / (inp.usable * inp.gpu_memory_bytes)
    if name == "deadline":
        return r["time_to_train_s"] / c.deadline_s
    if name == "budget":
        return r["cost"] / c.budget
    return c.min_efficiency / max(r["efficiency"], 1e-12)


def infeasible_message(rows: list[dict], inp: PlanInput) -> str:
    """One line: the constraint that binds (the one the closest plan breaks) and that plan."""
    if not rows:
        c, lo, hi = inp.constraints, min(inp.batches), max(inp.batches)
        if c.global_batch is None:
            return "no strategy can run at any GPU count up to --gpus-max with this batch"
        accs, batch = ", ".join(map(str, inp.accumulations)), (f"{lo}" if lo == hi else f"{lo}-{hi}")
        return (f"no plan splits --global-batch {c.global_batch} as per-GPU batch x accumulation ({accs}) x GPUs "
                f"with the per-GPU batch in --batch {batch} on a GPU count searched (1, 2, 4, ... and "
                f"--gpus-max {c.gpus_max}) that a strategy can run" + (f"; try --batch 1-{hi}" if lo > 1 else ""))
    closest = min(rows, key=lambda r: max(_excess(r, v, inp) for v in r["violates"]))
    bind = max(closest["violates"], key=lambda v: _excess(closest, v, inp))
    counts = {v: sum(v in r["violates"] for r in rows) for v in CONSTRAINT_WORDS}
    c = inp.constraints
    if bind == "memory":
        what = (f"needs {format_bytes(closest['memory_per_gpu_bytes'])} per GPU of "
                f"{format_bytes(inp.gpu_memory_bytes)} ({inp.usable:.0%} usable)")
    elif bind == "deadline":
        what = f"takes {closest['time_to_train_s'] / 3600:.3g} h (deadline {c.deadline_s / 3600:.3g} h)"
    elif bind == "budget":
        what = f"costs {closest['cost']:,.0f} (budget {c.budget:,.0f})"
    else:
        what = f"runs at efficiency {closest['efficiency']:.0%} (minimum {c.min_efficiency:.0%})"
    return (f"no plan {CONSTRAINT_WORDS[bind]} ({counts[bind]} of {len(rows)} rows break it); the closest, "
            f"{closest['label']} on {closest['gpus']} GPUs at {closest['batch_per_gpu']:g} per GPU, {what}"
            + (_memory_hint(inp) if bind == "memory" else ""))


def _memory_hint(inp: PlanInput) -> str:
    """What the search left out that would need less memory: smaller per-GPU batches, mixed precision."""
    tries = []
    if inp.constraints.global_batch is None and min(inp.batches) > 1:
        tries.append(f"--batch 1-{min(inp.batches)}")
    if inp.precision == "fp32":
        tries.append("--precision mixed")
    return f"; try {' or '.join(tries)}" if tries else ""


def why_line(ranked: list[dict], rows: list[dict], by: str = "time") -> str:
    """Why the top row wins, in one line: its exposed communication, the fp32 NCCL allreduce's at the same
    GPU count when the winner is something else, and the runner-up's gap in time (or cost with by="cost")."""
    top = ranked[0]
    where = "one GPU" if top["gpus"] == 1 else f"{top['label']} on {top['gpus']} GPUs"
    text = (f"{where} wins: communication not hidden behind compute is {top['comm_exposed_share']:.0%} of its "
            f"step")
    ref = [r for r in rows if r["gpus"] == top["gpus"] and r["label"].startswith("ssgd nccl fp32")
           and r["batch_per_gpu"] == top["batch_per_gpu"] and r["accumulate"] == top["accumulate"]]
    if ref and not top["label"].startswith("ssgd nccl fp32"):
        text += f" (the fp32 NCCL allreduce's: {ref[0]['comm_exposed_share']:.0%})"
    nxt = next((r for r in ranked[1:] if r["label"] != top["label"] or r["gpus"] != top["gpus"]), None)
    if nxt is not None:
        other = "one GPU" if nxt["gpus"] == 1 else f"{nxt['label']} on {nxt['gpus']} GPUs"
        if by == "cost":
            key = (lambda r: r["cost"] if r["cost"] is not None else r["gpu_hours"])  # noqa: E731
            text += f"; the next, {other}, costs {key(nxt) / key(top) - 1:.1%} more"
        else:
            text += f"; the next, {other}, takes {nxt['time_to_train_s'] / top['time_to_train_s'] - 1:.1%} longer"
    return text
