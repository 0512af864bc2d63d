"""Published multi-GPU throughput runs (data/published/runs.csv) predicted from nominal specs.

For every row: a cluster from the row's GPU, GPUs per node, intra-node fabric, network fabric and NIC
count; a workload from the model library (per-tensor gradient sizes) whose compute time is the row's own
single-GPU rate, t(b) = b / rate (seconds per mini-batch of b samples, measured at the row's
single-GPU batch); the strategy and collective of the row's scheme; then perfmodel.scaling.predict for
the row's GPU count with weak scaling at batch_per_gpu x accumulate samples per gradient exchange
(gradient accumulation: K micro-batches of compute, one exchange). Nothing is fitted to the rows.

Writes results/published/predictions.csv (atomically): per row the measured rate, the prediction, the error
(predicted / measured - 1, percent), the linear guess (single-GPU rate x GPUs) and its error, or why the row
cannot be expressed; prints median absolute errors overall, in one node and across nodes beside the linear
guess; draws measured_vs_predicted.png. Without --out, another runs file writes to results/published/<its
stem>/ (``default_out``; git ignores them); a judgement kept in results/published_<family>/ is never rewritten.

    python -m reproduce.published [--runs data/published/runs.csv] [--out results/published] [--no-plot]
                                  [--overlap X] [--effects all|none|NAME,...] [--ablation]

Effects beyond the links' whole-node figures and the bucket schedule: EFFECTS, all on by default and in
perfmodel predict, none fitted. Two splits: issue 27's declared halves (column ``half``, reproduce.halves;
fixed before that issue's model changes), "dev half" and "held-out half", all and across nodes, each effect
on and off in the ablation; and "other sources", the rows outside DEV_SOURCES, on which the first three
effects were chosen when runs.csv had 515 rows."""

from __future__ import annotations

import csv
import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser
from perfmodel import presets
from perfmodel.fileio import atomic_open
from perfmodel.plot import save_figure
from perfmodel.scaling import predict
from perfmodel.overlap_causes import CONCURRENT_SLOWDOWN, FRAMEWORK_POLICY, parse_slowdown
from perfmodel.specs import OVERLAP_EFFICIENCY, Cluster, ComputeTime, SpecError, Strategy, Workload
from perfmodel.stragglers import GPU_VARIABILITY_CV
from reproduce.halves import half

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "data" / "published" / "runs.csv"
OUT = ROOT / "results" / "published"

REQUIRED = ("id", "source", "source_url", "source_loc", "read_from", "system", "gpu", "gpus_per_node",
            "intra", "network", "nics", "hardware_source", "framework", "scheme", "scheme_detail", "model",
            "batch_per_gpu", "accumulate", "precision", "grad_wire", "comm_overlap", "data", "gpus", "nodes",
            "samples_per_s", "unit", "single_gpu_samples_per_s", "single_gpu_batch", "single_gpu_loc")
OPTIONAL = ("ps_servers", "ps_placement", "note")
SCHEMES = ("nccl-allreduce", "pytorch-ddp", "horovod-nccl", "horovod-mpi", "horovod-mpi-cuda-aware",
           "tf-replicated-nccl", "tf-replicated", "tf-ps-cpu", "tf-ps-gpu", "tf-distributed-replicated",
           "mxnet-kvstore-device", "mxnet-dist-device-sync", "byteps")
PRECISIONS = ("fp32", "tf32", "fp16", "amp")
WIRES = ("fp32", "fp16", "bf16", "unknown")
OVERLAPS = ("during-backward", "after-backward")
READ_FROM = ("table", "text", "plot")
DATA = ("synthetic", "real")
PS_PLACEMENTS = ("", "host", "gpus", "colocated", "dedicated")  # host/gpus: one-node TF parameter_server
INT_COLUMNS = ("gpus_per_node", "nics", "batch_per_gpu", "accumulate", "gpus", "nodes", "single_gpu_batch")
RATE_COLUMNS = ("samples_per_s", "single_gpu_samples_per_s")
PRED_COLUMNS = ("id", "source", "system", "framework", "scheme", "model", "precision", "batch_per_gpu",
                "accumulate", "gpus", "nodes", "measured", "single_gpu", "predicted", "error_pct", "linear",
                "linear_error_pct", "expressible", "reason")


class PublishedError(ValueError):
    """The runs file is malformed, or a command-line value is bad."""


class NotExpressible(Exception):
    """The model has no way to say this row's configuration (the message says what is missing)."""


# ------------------------------------------------------------------------------------ the runs file

def check_row(r: dict, line: int) -> dict:
    """One CSV row validated and typed (ints, floats); raises PublishedError naming line and column."""
    where = f"runs line {line}"
    for c in REQUIRED:
        if (r.get(c) or "").strip() == "":
            raise PublishedError(f"{where}: column {c!r} is empty")
    out = dict(r)
    for c in INT_COLUMNS:
        try:
            out[c] = int(r[c])
        except ValueError:
            raise PublishedError(f"{where}: {c} must be an integer, got {r[c]!r}") from None
        if out[c] < (0 if c == "nics" else 1):
            raise PublishedError(f"{where}: {c} must be positive, got {r[c]!r}")
    for c in RATE_COLUMNS:
        try:
            out[c] = float(r[c])
        except ValueError:
            raise PublishedError(f"{where}: {c} must be a number, got {r[c]!r}") from None
        if not math.isfinite(out[c]) or out[c] <= 0:
            raise PublishedError(f"{where}: {c} must be a positive number, got {r[c]!r}")
    for c, allowed in (("scheme", SCHEMES), ("precision", PRECISIONS), ("grad_wire", WIRES),
                       ("read_from", READ_FROM), ("data", DATA), ("comm_overlap", OVERLAPS),
                       ("ps_placement", PS_PLACEMENTS)):
        if (r.get(c) or "") not in allowed:
            choices = ", ".join(a or "(empty)" for a in allowed)
            raise PublishedError(f"{where}: {c} {r.get(c)!r} is not one of {choices}")
    if out["gpus"] < 2:
        raise PublishedError(f"{where}: gpus must be >= 2 (a multi-GPU run), got {out['gpus']}")
    if out["nodes"] != math.ceil(out["gpus"] / out["gpus_per_node"]):
        raise PublishedError(f"{where}: nodes {out['nodes']} != ceil(gpus {out['gpus']} / gpus_per_node "
                             f"{out['gpus_per_node']})")
    if out["nodes"] > 1 and (r["network"] == "n/a" or out["nics"] < 1):
        raise PublishedError(f"{where}: a multi-node row needs a network and at least one NIC")
    if not r["source_url"].startswith("https://"):
        raise PublishedError(f"{where}: source_url must be an https URL, got {r['source_url']!r}")
    out["ps_servers"] = int(r["ps_servers"]) if (r.get("ps_servers") or "") != "" else 0
    return out


def load_runs(path: Path) -> list[dict]:
    """All rows of a runs CSV, validated; ids unique."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f, strict=True)
            missing = [c for c in REQUIRED + OPTIONAL if c not in (reader.fieldnames or [])]
            if missing:
                raise PublishedError(f"{path}: missing columns {', '.join(missing)}")
            rows = [check_row(r, i) for i, r in enumerate(reader, start=2)]
    except FileNotFoundError:
        raise PublishedError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PublishedError(f"{path}: is a directory, not a runs CSV") from None
    except (OSError, UnicodeDecodeError) as e:  # unreadable, or bytes that are not UTF-8 text
        raise PublishedError(f"{path}: cannot be read as a runs CSV: {e}") from None
    except csv.Error as e:
        raise PublishedError(f"{path}: malformed CSV: {e}") from None
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise PublishedError(f"{path}: duplicate ids")
    if not rows:
        raise PublishedError(f"{path}: no rows")
    return rows


# ----------------------------------------------------------------------------- row -> model specs

def cluster_table(r: dict) -> dict:
    """The row's cluster in the clusters.toml schema: GPU preset, GPUs per node, LINK texts for the
    intra-node fabric and the network (``K x fabric`` for K NICs)."""
    network = r["network"]
    if network == "n/a":  # a machine only ever used alone: the network is never crossed
        network = r["intra"]
    elif r["nics"] > 1:
        network = f"{r['nics']}x{network}"
    return {"gpu": r["gpu"], "gpus_per_node": r["gpus_per_node"], "intra": r["intra"], "network": network,
            "nics": max(r["nics"], 1), "max_nodes": r["nodes"], "source": f"{r['system']}: {r['hardware_source']}"}


def build_cluster(r: dict, effects=("partial-node-rings",)) -> Cluster:
    """The row's cluster from nominal specs; without partial-node-rings, whole-node intra figures only."""
    try:
        c = presets.cluster_from_table(r["system"], cluster_table(r), f"runs row {r['id']}")
    except SpecError as e:
        raise NotExpressible(str(e)) from None
    return c if "partial-node-rings" in effects else c.with_link("intra", replace(c.intra, partial_Bps=()))


def library_model(model: str):
    """The model-library network ``model`` (per-tensor sizes and forward FLOPs)."""
    from perfmodel.library import load_model

    try:
        return load_model(model, presets.presets_dir())
    except SpecError:
        raise NotExpressible(f"model {model!r} is not in the model library") from None


def build_workload(r: dict) -> Workload:
    """The row's model with compute t(b) = b / single-GPU rate (measured at single_gpu_batch) and the
    row's gradient accumulation."""
    sb = r["single_gpu_batch"]
    ct = ComputeTime.table({sb: sb / r["single_gpu_samples_per_s"]},
                           source=f"single-GPU rate {r['single_gpu_samples_per_s']} samples/s at batch {sb} "
                           f"({r['single_gpu_loc']})")
    lib = library_model(r["model"])
    return Workload(name=r["model"], tensor_sizes=lib.tensor_sizes, tensor_names=lib.tensor_names,
                    compute={r["gpu"]: ct}, classifier_tensors=min(2, len(lib.tensor_sizes)),
                    accumulate=r["accumulate"], tensor_flops=lib.tensor_flops, source=lib.source)


def _wire(r: dict) -> str:
    return "fp16" if r["grad_wire"] == "fp16" else "fp32"


def _wire_cast(r: dict) -> str:
    """How a row's fp32 gradients reach its fp16 wire (perfmodel.bucket_copy): MXNet trains an fp16 model
    (``--dtype float16``), NVIDIA's PyTorch BERT converts in its flat-buffer copies, the rest cast apart."""
    fw = r.get("framework", "")
    if fw.startswith("MXNet"):
        return "none"
    return "in-copy" if fw.startswith("PyTorch") and r["scheme"] == "nccl-allreduce" else "separate"


def _nccl() -> str:
    """The collective of NCCL-based schemes: NCCL's own ring/tree and protocol choice (perfmodel.nccl)."""
    return "nccl"


def _strategy(**kw) -> Strategy:
    try:
        return Strategy(**kw)
    except (SpecError, TypeError) as e:
        msg = str(e).replace("Strategy.__init__() got an ", "")
        raise NotExpressible(f"strategy {kw['name']}: {msg}") from None


# Bucket sizes (MiB) of the old constant's setting (OVERLAP_MODES "old"): DDP's bucket_cap_mb = 25, Horovod's
# fusion buffer 64 MiB (before v0.21); the overlap from its causes uses overlap_causes.FRAMEWORK_POLICY.
_BUCKET_MB = {"pytorch-ddp": 25.0, "horovod-nccl": 64.0, "horovod-mpi": 64.0, "horovod-mpi-cuda-aware": 64.0}
HOROVOD_CYCLE_S = FRAMEWORK_POLICY["horovod"]["cycle_time_s"]
# How the overlap is charged (docs/overlap.md): from its causes (the default), none, or the old constant 0.21
OVERLAP_MODES = ("causes", "none", "old")


def framework_policy(scheme: str) -> dict[str, float]:
    """The bucketing and launch policy of a runs.csv scheme (perfmodel.overlap_causes.FRAMEWORK_POLICY)."""
    if scheme == "pytorch-ddp":
        return FRAMEWORK_POLICY["pytorch-ddp"]
    if scheme.startswith("horovod"):
        return FRAMEWORK_POLICY["horovod"]
    if scheme in ("tf-replicated", "tf-replicated-nccl"):
        return FRAMEWORK_POLICY["tf-replicated"]
    return FRAMEWORK_POLICY["default"]


# Physical effects beyond bandwidth and the bucket schedule, each applied to every row it concerns (the
# README of data/published has the ablation table): name -> what it is.
EFFECTS = {
    "gpu-variability": "a synchronous step waits for the slowest of its W GPUs; chips of one SKU differ in "
                       "speed with CV perfmodel.stragglers.GPU_VARIABILITY_CV (Sinha et al., SC22)",
    "horovod-cycle": f"Horovod launches collectives from a loop of period {HOROVOD_CYCLE_S * 1e3:g} ms "
                     "(HOROVOD_CYCLE_TIME before v0.21): half a cycle's wait per bucket on average",
    "overlap-interference": "compute and collective kernels running at once slow each other: both run "
                            f"{CONCURRENT_SLOWDOWN:g} slower while concurrent (Agrawal et al. 2024; "
                            "perfmodel.overlap_causes)",
    "partial-node-rings": "a run on GPUs 0..g-1 of a DGX-1 rings over the NVLinks among them, fewer than "
                          "the whole node's (fabrics.toml ring_links; docs/model.md section 10.3c)",
    "bucket-copies": "the framework copies the gradient into its buckets and back, and casts it to an fp16 "
                     "wire and back, at the GPU's memory bandwidth (perfmodel.bucket_copy)",
}
# Sources the effects were chosen on (the development half); the others are held out.
DEV_SOURCES = ("TensorFlow Performance Benchmarks", "DLPerf")


def build_strategy(r: dict, overlap: float | None = None, effects=tuple(EFFECTS), mode: str = "causes",
                   slowdown: tuple[float, float] | None = None) -> Strategy:
    """The row's scheme as a Strategy (NotExpressible where the model lacks the scheme).

    comm_overlap "after-backward" (the source's code exchanges the gradients only once backprop and
    accumulation are done) is overlap 0; "during-backward" leaves perfmodel's computed overlap, or the
    constant ``overlap`` (0..1) when one is given. ``effects``: the names of EFFECTS to apply.
    ``mode`` (OVERLAP_MODES): "causes", perfmodel's default (the framework's policy, the slowdowns of
    perfmodel.overlap_causes); "none", no overlap; "old", the constant 0.21 on the ideal schedule of the
    old bucket sizes (_BUCKET_MB). ``slowdown`` (sigma, mu): other concurrent slowdowns than
    perfmodel's GPU default for "causes" with overlap-interference (a diagnostic)."""
    if mode not in OVERLAP_MODES:
        raise PublishedError(f"overlap mode must be one of {', '.join(OVERLAP_MODES)}, got {mode!r}")
    s = r["scheme"]
    common = {"wire": _wire(r)}
    if "gpu-variability" in effects:
        common["straggler_cv"] = GPU_VARIABILITY_CV
    policy = framework_policy(s)
    if mode == "old":
        common["overlap_efficiency"] = OVERLAP_EFFICIENCY if "overlap-interference" in effects else 1.0
        if s in _BUCKET_MB:
            common["bucket_mb"] = _BUCKET_MB[s]
    else:
        common.update(bucket_mb=policy["bucket_mb"], first_bucket_mb=policy["first_bucket_mb"])
        if "overlap-interference" not in effects:  # the ideal schedule
            common.update(overlap_compute_slowdown=0.0, overlap_comm_slowdown=0.0)
        elif slowdown is not None:
            common.update(overlap_compute_slowdown=slowdown[0], overlap_comm_slowdown=slowdown[1])
    if "horovod-cycle" in effects and s.startswith("horovod"):
        common["cycle_time_s"] = HOROVOD_CYCLE_S
    common["bucket_copies"] = policy["bucket_copies"] if "bucket-copies" in effects else 0
    common["wire_cast"] = _wire_cast(r) if "bucket-copies" in effects else "none"
    if r["comm_overlap"] == "after-backward" or mode == "none":
        common["overlap"] = 0.0
    elif overlap is not None:  # a constant instead of the computed bucket-schedule overlap (diagnostic)
        common["overlap"] = overlap
    if s in ("nccl-allreduce", "pytorch-ddp", "horovod-nccl", "tf-replicated-nccl"):
        return _strategy(name="ssgd", allreduce=_nccl(), **common)
    if s == "horovod-mpi-cuda-aware":
        return _strategy(name="ssgd", allreduce="ring", **common)
    if s in ("tf-replicated", "mxnet-kvstore-device"):
        return _strategy(name="ssgd", allreduce="reduce-broadcast", **common)
    if s == "horovod-mpi":
        return _strategy(name="ssgd", allreduce="ring", staging="host", **common)
    if s in ("tf-ps-cpu", "tf-ps-gpu"):
        # one node; variables on the host CPU (ps-cpu) or spread over the GPUs (ps-gpu): every GPU
        # pushes its own gradient and pulls the parameters, no local reduction
        return _strategy(name="sync-ps", ps_servers=r["ps_servers"] or 1, ps_placement="colocated",
                         ps_local_reduce=False, **common)
    if s in ("tf-distributed-replicated", "mxnet-dist-device-sync"):
        # the GPUs of a node sum their gradients, the node pushes to sharded servers
        return _strategy(name="sync-ps", ps_servers=r["ps_servers"] or r["nodes"],
                         ps_placement=r["ps_placement"] or "colocated", ps_local_reduce=True, **common)
    if s == "byteps":
        return _strategy(name="byteps", ps_servers=r["ps_servers"] or 1,
                         ps_placement=r["ps_placement"] or "dedicated", **common)
    raise NotExpressible(f"scheme {s!r} has no strategy")


@dataclass(frozen=True)
class Outcome:
    """One row's prediction, or why there is none."""

    row: dict
    predicted: float | None
    reason: str = ""
    prediction: object = field(default=None, compare=False, repr=False)  # perfmodel's Prediction, when predicted

    @property
    def linear(self) -> float:
        return self.row["single_gpu_samples_per_s"] * self.row["gpus"]


def predict_row(r: dict, overlap: float | None = None, effects=tuple(EFFECTS), mode: str = "causes",
                slowdown: tuple[float, float] | None = None) -> Outcome:
    """Predicted samples/s of one row from its specs, or the reason it cannot be expressed (``mode``:
    OVERLAP_MODES)."""
    built, missing = [], []
    for builder in (lambda row: build_cluster(row, effects), build_workload,
                    lambda row: build_strategy(row, overlap, effects, mode, slowdown)):
        try:
            built.append(builder(r))
        except NotExpressible as e:
            missing.append(str(e))
    if missing:
        return Outcome(r, None, " | ".join(missing))
    cluster, workload, strategy = built
    try:
        p = predict(workload, cluster, strategy, [r["gpus"]], scaling="weak", batch=r["batch_per_gpu"])
    except SpecError as e:
        return Outcome(r, None, f"model rejected the row: {e}")
    return Outcome(r, float(p.throughput[0]), prediction=p)


# --------------------------------------------------------------------------------------- report

def error_pct(predicted: float, measured: float) -> float:
    """Signed error in percent: (predicted / measured - 1) x 100."""
    return (predicted / measured - 1.0) * 100.0


def records(outcomes: list[Outcome]) -> list[dict]:
    """The predictions.csv rows."""
    out = []
    for o in outcomes:
        r = o.row
        rec = {c: r[c] for c in ("id", "source", "system", "framework", "scheme", "model", "precision",
                                 "batch_per_gpu", "accumulate", "gpus", "nodes")}
        rec.update(measured=r["samples_per_s"], single_gpu=r["single_gpu_samples_per_s"], linear=round(o.linear, 6),
                   linear_error_pct=round(error_pct(o.linear, r["samples_per_s"]), 4),
                   expressible=int(o.predicted is not None), reason=o.reason)
        if o.predicted is None:
            rec.update(predicted="", error_pct="")
        else:
            rec.update(predicted=round(o.predicted, 6), error_pct=round(error_pct(o.predicted, r["samples_per_s"]), 4))
        out.append(rec)
    return out


def is_dev(r: dict) -> bool:
    """Whether a row belongs to the development half (DEV_SOURCES), on which the effects were chosen."""
    return any(r["source"].startswith(d) for d in DEV_SOURCES)


def row_half(r: dict) -> str:
    """The declared half of issue 27 of a row: its ``half`` column, or reproduce.halves' rule on its
    source and source_loc where the row has none."""
    return r.get("half") or half(r)


def summary(outcomes: list[Outcome]) -> dict[str, dict]:
    """Per group: rows, expressible share, median |error| (percent) of the model (and its signed median) and
    of the linear guess over the expressible rows and over all rows. Groups: all, one node, across nodes; the
    declared halves (row_half), and the rows outside DEV_SOURCES ("other sources"), all and across nodes."""
    across = [o for o in outcomes if o.row["nodes"] > 1]
    dev = [o for o in outcomes if row_half(o.row) == "dev"]
    held = [o for o in outcomes if row_half(o.row) == "held-out"]
    other = [o for o in outcomes if not is_dev(o.row)]
    groups = {"all": outcomes, "one node": [o for o in outcomes if o.row["nodes"] == 1], "across nodes": across,
              "dev half": dev, "dev across": [o for o in dev if o.row["nodes"] > 1],
              "held-out half": held, "held-out across": [o for o in held if o.row["nodes"] > 1],
              "other sources": other, "other across": [o for o in other if o.row["nodes"] > 1]}
    res = {}
    for name, os_ in groups.items():
        ok = [o for o in os_ if o.predicted is not None]

        def med(vals):
            return float(np.median(vals)) if vals else float("nan")
        res[name] = {
            "rows": len(os_), "expressible": len(ok),
            "share_expressible": len(ok) / len(os_) if os_ else float("nan"),
            "median_abs_error_pct": med([abs(error_pct(o.predicted, o.row["samples_per_s"])) for o in ok]),
            "median_error_pct": med([error_pct(o.predicted, o.row["samples_per_s"]) for o in ok]),
            "linear_median_abs_error_pct": med([abs(error_pct(o.linear, o.row["samples_per_s"])) for o in ok]),
            "linear_median_abs_error_pct_all": med([abs(error_pct(o.linear, o.row["samples_per_s"])) for o in os_]),
        }
    return res


def report_text(outcomes: list[Outcome]) -> str:
    """The printed report: the summary table, then the rows the model cannot express by reason."""
    s = summary(outcomes)
    lines = ["published runs: median |error| of the model vs the linear-scaling guess (single-GPU rate x GPUs)",
             f"{'group':<16}{'rows':>6}{'expressible':>13}{'model':>9}{'signed':>9}{'linear':>9}{'linear(all)':>13}"]
    for name, v in s.items():
        if not v["rows"]:
            continue
        lines.append(f"{name:<16}{v['rows']:>6}{v['expressible']:>6} ({v['share_expressible']:>4.0%})"
                     f"{v['median_abs_error_pct']:>8.1f}%{v['median_error_pct']:>+8.1f}%"
                     f"{v['linear_median_abs_error_pct']:>8.1f}%{v['linear_median_abs_error_pct_all']:>12.1f}%")
    lines.append("by source (expressible rows; median |error| model / linear, median signed model error):")
    for src in sorted({o.row["source"] for o in outcomes}):
        for where, sel in (("one node", lambda o: o.row["nodes"] == 1), ("across nodes", lambda o: o.row["nodes"] > 1)):
            part = [o for o in outcomes if o.row["source"] == src and sel(o)]
            if not part:
                continue
            v = summary(part)["all"]
            label = (src.replace("NVIDIA DeepLearningExamples ", "DLE ").replace(" README", "")
                     .replace("pre-training, ", "").replace(" v1.1 fine-tuning", "").replace(" test report v1.0", "")
                     .replace(" (Oneflow-Inc/DLPerf, Oct 2020)", "").replace("tf_cnn_benchmarks, ", ""))
            lines.append(f"  {label[:56]:<56} {where:<12} {v['expressible']:>4}/{v['rows']:<4}"
                         f"{v['median_abs_error_pct']:>7.1f}% /{v['linear_median_abs_error_pct']:>6.1f}%"
                         f"{v['median_error_pct']:>+8.1f}%")
    lines.append("by precision, development half (expressible rows; median |error| model, median signed):")
    for prec in sorted({o.row.get("precision", "") for o in outcomes}):
        cells = []
        for where, sel in (("one node", lambda o: o.row["nodes"] == 1), ("across nodes", lambda o: o.row["nodes"] > 1)):
            part = [o for o in outcomes if o.row.get("precision", "") == prec and row_half(o.row) == "dev" and sel(o)]
            v = summary(part)["all"] if part else None
            cells.append(f"{where} {v['expressible']:>4} rows {v['median_abs_error_pct']:>5.1f}% "
                         f"({v['median_error_pct']:+.1f}%)" if v and v["expressible"] else f"{where}    - rows")
        lines.append(f"  {prec or '?':<6} " + "   ".join(cells))
    missing = [o for o in outcomes if o.predicted is None]
    if missing:
        lines.append(f"not expressible: {len(missing)} rows")
        by: dict[str, list[str]] = {}
        for o in missing:
            for reason in o.reason.split(" | "):
                by.setdefault(reason, []).append(o.row["id"])
        lines.append("  missing features (a row may lack several):")
        for reason, ids in sorted(by.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(ids[:12]) + (f", ... ({len(ids)})" if len(ids) > 12 else "")
            lines.append(f"  {reason}: {shown}")
    return "\n".join(lines)


def write_csv_atomic(path: Path, rows: list[dict], columns: tuple[str, ...]) -> None:
    """Write rows to path through a temporary file in the same folder and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def plot(outcomes: list[Outcome], path: Path) -> None:
    """Measured vs predicted (and the linear guess), log-log, one point per expressible row."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [o for o in outcomes if o.predicted is not None]
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    for multi, color, label in ((False, "tab:blue", "one node"), (True, "tab:red", "across nodes")):
        sel = [o for o in ok if (o.row["nodes"] > 1) == multi]
        if not sel:
            continue
        m = [o.row["samples_per_s"] for o in sel]
        ax.scatter(m, [o.predicted for o in sel], s=14, color=color, label=f"model, {label} ({len(sel)})")
        ax.scatter(m, [o.linear for o in sel], s=10, marker="x", color=color, alpha=0.35,
                   label=f"linear guess, {label}")
    if ok:
        lo = min(min(o.row["samples_per_s"], o.predicted) for o in ok) / 1.5
        hi = max(max(o.row["samples_per_s"], o.predicted, o.linear) for o in ok) * 1.5
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set(xlim=(lo, hi), ylim=(lo, hi))
    ax.set(xscale="log", yscale="log", xlabel="measured samples/s (published)", ylabel="predicted samples/s")
    ax.set_title(f"published multi-GPU runs: {len(ok)} of {len(outcomes)} expressible")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path)


def ablation(rows: list[dict], overlap: float | None = None) -> list[tuple[str, dict]]:
    """Medians with no effect, then with the EFFECTS added one at a time in their order, then with each
    one left out of all of them: [(label, summary)]."""
    names = list(EFFECTS)
    steps = [("none", ())] + [("+ " + ", ".join(names[:i + 1]), tuple(names[:i + 1])) for i in range(len(names))]
    if len(names) > 1:
        steps += [(f"all but {n}", tuple(m for m in names if m != n)) for n in names]
    return [(label, summary([predict_row(r, overlap, eff) for r in rows])) for label, eff in steps]


def ablation_text(table: list[tuple[str, dict]]) -> str:
    """The ablation as a Markdown table of median |error| (percent) overall, in one node, across nodes and
    per declared half, and the signed median of each half."""
    cols = ("all", "one node", "across nodes", "dev half", "dev across", "held-out half", "held-out across")
    signed = ("dev half", "held-out half")
    lines = ["| effects | " + " | ".join(cols) + " | " + " | ".join(f"signed ({c})" for c in signed) + " |",
             "|---" * (len(cols) + len(signed) + 1) + "|"]
    for label, s in table:
        lines.append(f"| {label} | " + " | ".join(f"{s[c]['median_abs_error_pct']:.1f}%" for c in cols)
                     + " | " + " | ".join(f"{s[c]['median_error_pct']:+.1f}%" for c in signed) + " |")
    return "\n".join(lines)


def parse_effects(text: str) -> tuple[str, ...]:
    """--effects: "all", "none" or a comma list of EFFECTS names (PublishedError otherwise)."""
    if text == "all":
        return tuple(EFFECTS)
    if text == "none":
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in EFFECTS]
    if bad or not names:
        raise PublishedError(f"unknown effect {', '.join(bad) or text!r}; choose all, none or from "
                             f"{', '.join(EFFECTS)}")
    return names


def run(runs: Path, out: Path, draw: bool = True, overlap: float | None = None,
        slowdown: tuple[float, float] | None = None, effects=tuple(EFFECTS)) -> list[Outcome]:
    """Predict every row of ``runs``, write out/predictions.csv (and the plot); return the outcomes
    (``overlap``, ``slowdown``: build_strategy's diagnostics)."""
    rows = load_runs(runs)
    outcomes = [predict_row(r, overlap, effects, slowdown=slowdown) for r in rows]
    write_csv_atomic(out / "predictions.csv", records(outcomes), PRED_COLUMNS)
    if draw:
        plot(outcomes, out / "measured_vs_predicted.png")
    return outcomes


def default_out(runs: Path) -> Path:
    """The results folder of a runs file without --out: OUT for RUNS, else OUT/<the file's stem>."""
    return OUT if runs.resolve() == RUNS.resolve() else OUT / runs.stem


def main(argv: list[str] | None = None) -> int:
    ap = OneLineExitParser(prog="python -m reproduce.published", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS, help="published runs CSV (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"results folder (default: {OUT} for the default runs file, else {OUT}/<runs file stem>)")
    ap.add_argument("--no-plot", action="store_true", help="skip the measured-vs-predicted plot")
    ap.add_argument("--overlap", type=float, default=None,
                    help="constant share of communication hidden behind backprop for the rows whose framework "
                         "overlaps (default: perfmodel's computed bucket-schedule overlap); a diagnostic")
    ap.add_argument("--overlap-slowdown", default=None, metavar="SIGMA[,MU]",
                    help="concurrent slowdowns of compute (and collective) instead of perfmodel's GPU default "
                         "(docs/overlap.md); a diagnostic")
    ap.add_argument("--effects", default="all",
                    help=f"physical effects to apply: all (default), none, or a comma list of {', '.join(EFFECTS)}")
    ap.add_argument("--ablation", action="store_true",
                    help="also print the medians with the effects added one at a time and each left out")
    args = ap.parse_args(argv)
    args.out = default_out(args.runs) if args.out is None else args.out
    try:
        if args.overlap is not None and not 0.0 <= args.overlap <= 1.0:
            raise PublishedError(f"--overlap must be in [0, 1], got {args.overlap}")
        if args.out.resolve().parent == OUT.parent.resolve() and args.out.name.startswith("published_") \
                and (args.out / "predictions.csv").exists():  # results/published_<family>/: judged once
            raise PublishedError(f"{args.out} holds a judgement made once (docs/validation.md); give another --out")
        effects = parse_effects(args.effects)
        sigma, mu = parse_slowdown(args.overlap_slowdown)
        slowdown = None if sigma is None else (sigma, mu)
        outcomes = run(args.runs, args.out, draw=not args.no_plot, overlap=args.overlap, slowdown=slowdown,
                       effects=effects)
        table = ablation(load_runs(args.runs), args.overlap) if args.ablation else None
    except (PublishedError, SpecError) as e:
        print(f"published: error: {e}", file=sys.stderr)
        return 2
    print(report_text(outcomes))
    print(f"effects applied: {', '.join(effects) or 'none'}; dev / held-out half: issue 27's declared split "
          f"(runs.csv column half, reproduce.halves); other sources: those other than {' and '.join(DEV_SOURCES)}, "
          "held out when the effects were chosen")
    if table is not None:
        print("ablation (median |error|):")
        print(ablation_text(table))
    plot_note = "" if args.no_plot else f" and {args.out / 'measured_vs_predicted.png'}"
    print(f"wrote {args.out / 'predictions.csv'}{plot_note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
