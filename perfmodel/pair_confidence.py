"""How far to trust the plan's choice between two schemes, by how far apart it predicts them.

Of two published runs of different schemes on the same machines, GPU count, model and batch, the plan puts
first the one it predicts faster; on the published families judged once (their frozen predictions,
reproduce.published_judged), how often that was the measured-faster one depends on the predicted gap,
g = (faster predicted rate / slower predicted rate - 1) x 100 (percent): pairs predicted a few percent apart
are ranked little better than a coin, pairs predicted 20% or more apart mostly right.
data/presets/pair_confidence.toml holds the counts per bin of g (each bin from its ``lo_pct`` to the next
bin's, the last one open), written by ``python -m reproduce.published_pair_gaps --write
data/presets/pair_confidence.toml``.

``rival_note`` turns them into one line for `perfmodel plan`: the top plan against the best-ranked plan of
another strategy on the same number of GPUs, the predicted gap between them, and how often pairs predicted
that far apart were ranked as measured. It changes no ranking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .preset_toml import check_keys, read_toml
from .presets import presets_dir
from .specs import SpecError

BIN_KEYS = ("lo_pct", "pairs", "right")
FIRM_SHARE = 0.75  # below it (halfway from a coin's 50% to always right) the note says to measure both


@dataclass(frozen=True)
class GapBin:
    """Published scheme pairs whose predicted gap is at least ``lo_pct`` percent (and below the next bin's):
    how many, and in how many the predicted-faster was the measured-faster."""

    lo_pct: float
    pairs: int
    right: int

    def __post_init__(self):
        if isinstance(self.lo_pct, bool) or not isinstance(self.lo_pct, (int, float)) or not (
                math.isfinite(self.lo_pct) and self.lo_pct >= 0):
            raise SpecError(f"pair-gap bin: lo_pct must be a number >= 0, got {self.lo_pct!r}")
        for k in ("pairs", "right"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise SpecError(f"pair-gap bin from {self.lo_pct}%: {k} must be an integer >= 0, got {v!r}")
        if self.right > self.pairs or self.pairs == 0:
            raise SpecError(f"pair-gap bin from {self.lo_pct}%: needs 0 < pairs and right <= pairs")


@dataclass(frozen=True)
class GapTable:
    """The bins of pair_confidence.toml, in increasing lo_pct, and where the counts come from."""

    bins: tuple
    source: str

    def __post_init__(self):
        los = [b.lo_pct for b in self.bins]
        if not los or los[0] != 0 or los != sorted(set(los)):
            raise SpecError("pair-gap bins must start at lo_pct = 0 and increase")

    def bin_for(self, gap_pct: float) -> tuple[GapBin, float | None]:
        """The bin holding ``gap_pct`` and its upper edge (None for the last, open bin)."""
        for b, nxt in zip(self.bins, [*self.bins[1:], None]):
            if nxt is None or gap_pct < nxt.lo_pct:
                return b, (None if nxt is None else nxt.lo_pct)
        raise AssertionError("unreachable: the last bin is open")


def pair_confidence_path(root: Path | None = None) -> Path:
    """data/presets/pair_confidence.toml (or the presets folder's)."""
    return (root or presets_dir()) / "pair_confidence.toml"


def load_gap_table(path: Path | None = None) -> GapTable:
    """The table of pair_confidence.toml; a missing or malformed file raises SpecError naming it."""
    path = Path(path) if path is not None else pair_confidence_path()
    d = read_toml(path)  # a missing or malformed file: PresetError, a SpecError
    try:
        check_keys(d, ("source", "bin"), str(path))
        bins = []
        for i, b in enumerate(d["bin"]):
            check_keys(b, BIN_KEYS, f"{path} bin {i + 1}")
            bins.append(GapBin(*(b[k] for k in BIN_KEYS)))
    except (KeyError, TypeError):
        raise SpecError(f"{path}: needs [[bin]] tables with {', '.join(BIN_KEYS)}") from None
    return GapTable(tuple(bins), str(d.get("source", "")))


def predicted_gap_pct(faster_samples_per_s: float, slower_samples_per_s: float) -> float:
    """g = (faster / slower - 1) x 100, percent, of two predicted rates (samples/s)."""
    if not (slower_samples_per_s > 0 and faster_samples_per_s >= slower_samples_per_s):
        raise SpecError("a predicted gap needs two positive rates, the faster first")
    return (faster_samples_per_s / slower_samples_per_s - 1.0) * 100.0


def rival_note(ranked: list[dict], table: GapTable | None = None) -> str | None:
    """One line on the top plan of ``ranked`` (plan rows: strategy, label, gpus, samples_per_s) against the
    best-ranked row of another strategy on as many GPUs; None for a 1-GPU top row or when no other strategy
    was searched at its GPU count."""
    if not ranked or ranked[0]["gpus"] <= 1:
        return None
    top = ranked[0]
    rival = next((r for r in ranked[1:] if r["gpus"] == top["gpus"] and r["strategy"] != top["strategy"]), None)
    if rival is None:
        return None
    table = table or load_gap_table()
    fast, slow = max(top["samples_per_s"], rival["samples_per_s"]), min(top["samples_per_s"], rival["samples_per_s"])
    g = predicted_gap_pct(fast, slow)
    b, hi = table.bin_for(g)
    span = f"{b.lo_pct:g}-{hi:g}%" if hi is not None else f"{b.lo_pct:g}% or more"
    share = b.right / b.pairs
    verdict = ("treat the two as a tie and measure both on one node (--node-rate)" if share < FIRM_SHARE
               else "a gap the model mostly ranks right")
    return (f"the best plan of another strategy on {top['gpus']} GPUs, {rival['label']}, is predicted "
            f"{g:.1f}% apart from the top one; of {b.pairs} published scheme pairs predicted {span} apart, judged "
            f"out of sample, the model's first was the measured-faster in {b.right} ({share:.0%}): {verdict} "
            f"(docs/plan.md, section 6)")
