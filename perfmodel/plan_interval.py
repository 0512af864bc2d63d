"""The plan's interval: the same 80% band `perfmodel predict` prints, as samples/s and time to train.

A plan row predicts R samples/s for a strategy on W GPUs over N nodes. Its band is predict's
(perfmodel.intervals): [R q_lo, R q_hi], q_lo and q_hi the 10th and 90th percentiles of measured /
predicted over the development rows of data/published/runs.csv in the row's regime (one node or across
nodes; scheme family, else the span's band pooled over every family). The time to train S samples is
then [S / (R q_hi), S / (R q_lo)]. One GPU exchanges nothing: its interval is the point itself. The band
holds the model's error on the exchange given a measured per-GPU rate; an ESTIMATEd compute time's error
comes on top and is not in it.
"""

from __future__ import annotations

from .intervals import band_of, load_bands


def interval(strategy: str, gpus: int, nodes: int, samples_per_s: float, samples: float) -> dict:
    """{"samples_per_s": [lo, hi], "time_to_train_s": [lo, hi], "basis": text} for a row of ``gpus`` GPUs
    on ``nodes`` nodes predicted at ``samples_per_s``, training ``samples`` samples."""
    b = band_of(load_bands(), strategy, gpus, nodes)  # the TOML is read once (preset_toml caches it)
    if b is None:
        return {"samples_per_s": [samples_per_s, samples_per_s],
                "time_to_train_s": [samples / samples_per_s] * 2, "basis": "1 GPU: nothing exchanged"}
    lo, hi = samples_per_s * b.q_lo, samples_per_s * b.q_hi
    return {"samples_per_s": [lo, hi], "time_to_train_s": [samples / hi, samples / lo],
            "basis": f"80% band, {b.span} {b.family}: measured / predicted {b.q_lo:.3f} .. {b.q_hi:.3f} over "
                     f"{b.rows} development published runs (data/presets/intervals.toml, as perfmodel predict)"}
