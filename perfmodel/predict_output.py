"""What `perfmodel predict` prints: a fixed-width table for a terminal, or CSV."""

from __future__ import annotations

import csv
import io
import math

TABLE_COLUMNS = [("strategy", "strategy", "{}"), ("gpus", "gpus", "{:d}"), ("nodes", "nodes", "{:d}"),
                 ("batch_per_gpu", "b/gpu", "{:.4g}"), ("t_compute_s", "t_comp ms", "{:.2f}"),
                 ("t_comm_s", "t_comm ms", "{:.2f}"), ("t_iter_s", "t_iter ms", "{:.2f}"),
                 ("throughput", "samples/s", "{:,.0f}"), ("speedup", "speedup", "{:.1f}"),
                 ("efficiency", "eff", "{:.0%}")]


CODEC_COLUMN = ("t_compress_s", "t_codec ms", "{:.2f}")  # shown when a strategy has a codec (TernGrad)
#: the gradient's copies into the buckets and back (perfmodel.bucket_copy), shown when a row charges them
COPY_COLUMN = ("t_copy_s", "t_copy ms", "{:.2f}")
#: the 80% band of the throughput (perfmodel.intervals), shown when the records carry it
BAND_COLUMNS = [("throughput_lo", "80% lo", "{:,.0f}"), ("throughput_hi", "80% hi", "{:,.0f}")]


def format_table(records: list[dict]) -> str:
    """A fixed-width table for a terminal (times in milliseconds); the codec's time (t_compress_s) and the
    bucket copies' (t_copy_s), both part of t_iter, as columns when a row has them ("-" for the others),
    the throughput's 80% band when the records carry one."""
    added = [c for c in (CODEC_COLUMN, COPY_COLUMN) if any(c[0] in r for r in records)]
    columns = TABLE_COLUMNS[:6] + added + TABLE_COLUMNS[6:]
    if any(BAND_COLUMNS[0][0] in r for r in records):
        at = [c[0] for c in columns].index("throughput") + 1
        columns = columns[:at] + BAND_COLUMNS + columns[at:]
    rows = []
    for r in records:
        row = []
        for key, _, fmt in columns:
            if key not in r:
                row.append("-")
                continue
            v = r[key]
            if key.endswith("_s"):
                v = v * 1e3
            row.append(fmt.format(v))
        rows.append(row)
    heads = [h for _, h, _ in columns]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths)))]
    prev = None
    for r in rows:
        if prev is not None and r[0] != prev:
            lines.append("")
        prev = r[0]
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def csv_text(records: list[dict]) -> str:
    """CSV of records: one column per key, in the order keys first appear."""
    keys: list[str] = []
    for r in records:
        keys.extend(k for k in r if k not in keys)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buf.getvalue()


def refuse_non_finite(value, what: str) -> None:
    """SpecError naming the first non-finite number in ``value`` (an overflow from extreme inputs): strict
    JSON and CSV have no inf or nan. ``what``: "prediction" or "plan"."""
    from .specs import SpecError

    bad = non_finite(value)
    if bad is not None:
        raise SpecError(f"the {what}'s {bad.split('.', 1)[-1]} is not a finite number: an input is out of range "
                        f"(a bandwidth, price, time or rate too small or too large)")


def non_finite(value, path: str = "") -> str | None:
    """The path of the first non-finite float in ``value`` (nested dicts and lists), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path or "value"
    if isinstance(value, dict):
        return next((p for k, v in value.items() if (p := non_finite(v, f"{path}.{k}" if path else str(k)))), None)
    if isinstance(value, (list, tuple)):
        return next((p for i, v in enumerate(value) if (p := non_finite(v, f"{path}[{i}]"))), None)
    return None
