"""How far to trust a prediction across nodes, by the share of its step the exchange leaves exposed.

The exposed share of a predicted step is the part that is not compute,

    s = (t_iter - t_compute) / t_iter                                            (dimensionless, 0..1)

(the exchange not hidden behind backprop, its launch waits, bucket copies, codec time and any measured step
overhead). On published runs across nodes judged once, out of sample (every family of
reproduce.published_judged.JUDGED, each row predicted from its own source's single-GPU rate), the model's
error grows with s: the more of the step the exchange takes, the more the model's exchange time (nominal
link figures, nccl-tests bus bandwidths) falls short of the exchange the training job saw, and the faster
the model is. data/presets/exposure.toml holds those rows' figures per bin of s (EXPOSED_EDGES, left-open,
right-closed), written by ``python -m reproduce.published_exposure --write data/presets/exposure.toml``.

``exposure_note`` turns them into one line for `perfmodel predict` and `perfmodel plan`: for the prediction
across nodes with the largest s, when its bin's median absolute error on those runs exceeds the file's
``note_above_pct``, it says how far off the model was there and in which direction. A warning from
out-of-sample evidence, not a correction: no prediction changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .intervals import FAMILIES
from .preset_toml import check_keys, read_toml
from .presets import presets_dir
from .specs import SpecError

EXPOSED_EDGES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)  # bins of s (left-open, right-closed; s <= 0 goes in the first)
# the strategies the published rows were predicted as (reproduce.published maps every published scheme to one);
# the asynchronous ones, TernGrad and DASO have no published rows across nodes: no note for them
PUBLISHED_STRATEGIES = tuple(FAMILIES)
BIN_KEYS = ("lo", "hi", "rows", "median_abs_pct", "median_signed_pct", "q10", "q90")


def exposed_share(t_iter_s: float, t_compute_s: float) -> float:
    """s = (t_iter - t_compute) / t_iter of one predicted step (seconds in, dimensionless out), in [0, 1]."""
    if not (t_iter_s > 0 and math.isfinite(t_iter_s)):
        raise SpecError(f"a step time must be a positive finite number of seconds, got {t_iter_s!r}")
    return min(max((t_iter_s - t_compute_s) / t_iter_s, 0.0), 1.0)


@dataclass(frozen=True)
class ExposureBin:
    """The out-of-sample errors of the rows across nodes whose exposed share lies in (lo, hi]: their count,
    median absolute and signed error of the predicted samples/s (percent; positive: predicted too fast), and
    the 10th and 90th percentiles of measured / predicted."""

    lo: float
    hi: float
    rows: int
    median_abs_pct: float
    median_signed_pct: float
    q10: float
    q90: float

    def __post_init__(self):
        for k in BIN_KEYS:
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SpecError(f"exposure bin ({self.lo}, {self.hi}]: {k} must be a finite number, got {v!r}")
        if not 0 <= self.lo < self.hi <= 1:
            raise SpecError(f"exposure bin ({self.lo}, {self.hi}]: needs 0 <= lo < hi <= 1")
        if not isinstance(self.rows, int) or self.rows < 1:
            raise SpecError(f"exposure bin ({self.lo}, {self.hi}]: rows must be a positive integer")
        if self.median_abs_pct < 0 or not 0 < self.q10 <= self.q90:
            raise SpecError(f"exposure bin ({self.lo}, {self.hi}]: needs median_abs_pct >= 0 and 0 < q10 <= q90")

    def holds(self, share: float) -> bool:
        """Whether ``share`` falls in this bin (the first bin also takes s <= lo)."""
        return (self.lo < share <= self.hi) or (self.lo == 0.0 and share <= 0.0)


@dataclass(frozen=True)
class ExposureTable:
    """The bins of exposure.toml, the median absolute error (percent) above which a note is printed, and
    where the figures come from."""

    bins: tuple
    note_above_pct: float
    source: str

    def bin_for(self, share: float) -> ExposureBin | None:
        """The bin holding ``share``; None where no published row fell (the file omits empty bins)."""
        return next((b for b in self.bins if b.holds(share)), None)


def exposure_path(root: Path | None = None) -> Path:
    """data/presets/exposure.toml (or the presets folder's)."""
    return (root or presets_dir()) / "exposure.toml"


def load_exposure(path: Path | None = None) -> ExposureTable:
    """The table of exposure.toml; a missing or malformed file raises SpecError naming it."""
    path = Path(path) if path is not None else exposure_path()
    d = read_toml(path)  # a missing or malformed file: PresetError, a SpecError
    try:
        check_keys(d, ("source", "note_above_pct", "bin"), str(path))
        bins = []
        for i, b in enumerate(d["bin"]):
            check_keys(b, BIN_KEYS, f"{path} bin {i + 1}")
            bins.append(ExposureBin(*(b[k] for k in BIN_KEYS)))
        above = d["note_above_pct"]
        if isinstance(above, bool) or not isinstance(above, (int, float)) or not above >= 0:
            raise TypeError
    except (KeyError, TypeError):
        raise SpecError(f"{path}: needs note_above_pct (a number >= 0) and [[bin]] tables with "
                        f"{', '.join(BIN_KEYS)}") from None
    return ExposureTable(tuple(bins), float(above), str(d.get("source", "")))


def exposure_note(records: list[dict], table: ExposureTable | None = None) -> str | None:
    """One line on the prediction across nodes (nodes > 1) of ``records`` (rows with gpus, nodes, t_iter_s
    and t_compute_s, seconds; a strategy of PUBLISHED_STRATEGIES where one is named) whose exposed share is
    largest, when its bin's out-of-sample median absolute error exceeds ``table.note_above_pct``; None
    otherwise (one node, a small share, an empty bin)."""
    across = [r for r in records if r["nodes"] > 1 and r.get("strategy", "ssgd") in PUBLISHED_STRATEGIES]
    if not across:
        return None
    table = table or load_exposure()
    s, top = max(((exposed_share(r["t_iter_s"], r["t_compute_s"]), r) for r in across), key=lambda t: t[0])
    b = table.bin_for(s)
    if b is None or b.median_abs_pct <= table.note_above_pct:
        return None
    fast = b.median_signed_pct > 0
    who = f"{top['strategy']} at {top['gpus']} GPUs" if top.get("strategy") else f"{top['gpus']} GPUs"
    return (f"the exchange leaves {s:.0%} of the predicted step exposed ({who}); on {b.rows} published runs across "
            f"nodes with {b.lo:.0%}-{b.hi:.0%} exposed, judged out of sample, the model was "
            f"{abs(b.median_signed_pct):.0f}% {'too fast' if fast else 'too slow'} at the median "
            f"({b.median_abs_pct:.0f}% absolute; measured / predicted {b.q10:.2f} .. {b.q90:.2f} for 80% of them): "
            f"read it as {'optimistic' if fast else 'pessimistic'}, and give the links' measured allreduce bus "
            f"bandwidth (nccl-tests over two nodes) with --network (docs/intervals.md, section 4)")
