"""80% bands on predicted throughput, from the model's residuals on published multi-GPU runs.

For a prediction P (samples/s) of a strategy in regime g = (span, family), span "one-node" or
"multi-node" (nodes > 1), family the strategy's scheme family (FAMILIES), the band is

    throughput_lo = P x q_lo(g),   throughput_hi = P x q_hi(g)

where q_lo and q_hi are the 10th and 90th percentiles of measured / predicted over the development
half (column ``half`` = dev) of data/published/runs.csv in regime g, as reproduce.published predicts
them (every row with its own measured single-GPU rate as compute). data/presets/intervals.toml holds
the percentiles; ``python -m reproduce.published_intervals`` writes it and reports the bands' coverage
on the held-out half. A regime with fewer than ``min_rows`` development rows (the file's figure), or a
family with no published rows at all (terngrad, daso, asgd), takes its span's band pooled over every
family. A 1-GPU prediction exchanges nothing: its band is the point itself.

The band holds the model's error on the exchange given a measured per-GPU rate; the error of a
compute-time ESTIMATE (``perfmodel predict --estimate``) comes on top and is not in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .preset_toml import PresetError, read_toml
from .presets import presets_dir
from .specs import SpecError

SPANS = ("one-node", "multi-node")
POOLED = "pooled"
# Strategy.name -> the scheme family its published rows are grouped in (reproduce.published maps every
# published scheme to a Strategy: NCCL/MPI allreduce, Horovod, DDP, TF replicated -> ssgd; TF and MXNet
# parameter servers -> sync-ps; BytePS -> byteps).
FAMILIES = {"ssgd": "allreduce", "sync-ps": "parameter-server", "byteps": "byteps"}
BAND_COLUMNS = ("throughput_lo", "throughput_hi", "band")


def family(strategy_name: str) -> str:
    """The scheme family of a Strategy.name (the name itself for strategies with no published rows)."""
    return FAMILIES.get(strategy_name, strategy_name)


def span(nodes: int) -> str:
    """ "one-node" for nodes <= 1, else "multi-node"."""
    return "one-node" if nodes <= 1 else "multi-node"


@dataclass(frozen=True)
class Band:
    """Percentiles of measured / predicted (dimensionless) over ``rows`` development rows of a regime."""

    span: str
    family: str
    q_lo: float
    q_hi: float
    rows: int

    def __post_init__(self):
        if self.span not in SPANS:
            raise SpecError(f"band span {self.span!r} is not one of {', '.join(SPANS)}")
        for name in ("q_lo", "q_hi"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise SpecError(f"band {self.span}/{self.family}: {name} must be a positive number, got {v!r}")
        if self.q_lo > self.q_hi:
            raise SpecError(f"band {self.span}/{self.family}: q_lo {self.q_lo} > q_hi {self.q_hi}")
        if not isinstance(self.rows, int) or self.rows < 1:
            raise SpecError(f"band {self.span}/{self.family}: rows must be a positive integer, got {self.rows!r}")


@dataclass(frozen=True)
class Bands:
    """Every regime's band, the pooled band of each span, and the fewest rows a regime's own band needs."""

    bands: dict
    min_rows: int
    source: str

    def __post_init__(self):
        for s in SPANS:
            if (s, POOLED) not in self.bands:
                raise SpecError(f"intervals: no pooled band for span {s!r}")

    def band_for(self, strategy_name: str, nodes: int) -> Band:
        """The band of a strategy at ``nodes`` machines: its regime's, else its span's pooled band."""
        sp = span(nodes)
        own = self.bands.get((sp, family(strategy_name)))
        if own is not None and own.rows >= self.min_rows:
            return own
        return self.bands[(sp, POOLED)]


def intervals_path(root: Path | None = None) -> Path:
    """data/presets/intervals.toml (or the presets folder's)."""
    return (root or presets_dir()) / "intervals.toml"


def load_bands(path: Path | None = None) -> Bands:
    """The bands of intervals.toml; a missing or malformed file raises SpecError naming it."""
    path = Path(path) if path is not None else intervals_path()
    try:
        d = read_toml(path)
    except PresetError as e:
        raise SpecError(str(e)) from None
    try:
        min_rows = d["min_rows"]
        table = d["band"]
        if not isinstance(min_rows, int) or min_rows < 1 or not isinstance(table, dict):
            raise TypeError
        bands = {}
        for sp, fams in table.items():
            for fam, b in fams.items():
                bands[(sp, fam)] = Band(sp, fam, b["q_lo"], b["q_hi"], b["rows"])
    except (KeyError, TypeError, AttributeError):
        raise SpecError(f"{path}: needs min_rows (a positive integer) and [band.<span>.<family>] tables "
                        "with q_lo, q_hi and rows") from None
    return Bands(bands, min_rows, str(d.get("source", "")))


def band_of(bands: Bands, strategy: str, gpus: int, nodes: int) -> Band | None:
    """The band around a prediction of ``strategy`` on ``gpus`` GPUs over ``nodes`` nodes; None for one GPU
    (nothing exchanged: the prediction is its own interval)."""
    return None if gpus <= 1 else bands.band_for(strategy, nodes)


def with_band(records: list[dict], bands: Bands | None = None) -> list[dict]:
    """``records`` (perfmodel.scaling.Prediction.records rows: strategy, gpus, nodes, throughput in
    samples/s) with throughput_lo and throughput_hi (samples/s, the 80% band) and band (its regime and
    development rows) added to each; the same list, updated in place."""
    bands = bands or load_bands()
    for r in records:
        p = r["throughput"]
        b = band_of(bands, r["strategy"], r["gpus"], r["nodes"])
        if b is None:
            r.update(throughput_lo=p, throughput_hi=p, band="1 GPU: nothing exchanged")
            continue
        r.update(throughput_lo=p * b.q_lo, throughput_hi=p * b.q_hi,
                 band=f"{b.span} {b.family} ({b.rows} dev rows)")
    return records
