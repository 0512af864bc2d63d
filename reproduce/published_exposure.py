"""Where the model misses across nodes: its error by the exposed share of the step and by network.

    python -m reproduce.published_exposure [--runs FILE ...] [--socket-cap GB_PER_S] [--write TOML]

Predicts every row across nodes of the given runs files (default: runs.csv and every judged family's,
reproduce.published_judged.JUDGED) with the current model, as reproduce.published does, and groups the
rows by the share of the predicted step that is not compute, (t_iter - t_compute) / t_iter: the exposed
exchange with its launch waits and bucket copies. Per group: rows, median absolute and signed error of
the model and the linear guess's median absolute error (percent). A second table groups the same rows
by network fabric (the runs file's column, RDMA or TCP as the source states). ``--socket-cap``: the
rows over TCP (is_tcp) predicted again with each NIC's bandwidth capped at that many GB/s, before and
after per runs file, network and scheme (a what-if tried and not adopted). A development diagnostic
(docs/validation.md, "Before a third round"): it reads no frozen prediction and judges nothing.

``--write TOML``: the first table over the judged families only (runs.csv left out: it is where the model's
terms were chosen), with each bin's 10th and 90th percentiles of measured / predicted, written atomically as
data/presets/exposure.toml, the figures `perfmodel predict` and `plan` quote (perfmodel.exposure). The
current model predicts those rows as their frozen judgements did (tests/test_published_judged*.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.exposure import EXPOSED_EDGES, exposed_share
from perfmodel.fileio import atomic_write_text
from perfmodel.specs import SpecError
from reproduce import published as pub

NOTE_ABOVE_PCT = 10.0  # exposure.toml's note_above_pct: about twice issue 27's 5-6% targets across nodes
ETHERNET_LATENCY = ",15us"  # the runs files give a TCP link as a bare figure with fabrics.toml's Ethernet latency


def is_tcp(r: dict) -> bool:
    """A row whose network is TCP over Ethernet: an eth-* preset, or a bare figure at the Ethernet latency."""
    return r["network"].startswith("eth-") or r["network"].endswith(ETHERNET_LATENCY)


def judged_runs() -> list[Path]:
    """The runs file of every judged family (reproduce.published_judged.JUDGED)."""
    from reproduce.published_judged import JUDGED, runs_path
    return [runs_path(f) for f in JUDGED]


def default_runs() -> list[Path]:
    """runs.csv and the runs file of every judged family."""
    return [pub.RUNS] + judged_runs()


def capped_network(r: dict, cap_Bps: float) -> dict:
    """The row with each NIC of its network (a preset or a figure) at most ``cap_Bps`` bytes/s, as a figure."""
    net = pub.build_cluster(r).network
    per_nic = min(net.bandwidth_Bps / r["nics"], cap_Bps)
    return {**r, "network": f"{per_nic / 1e9!r}GB/s,{net.latency_s * 1e6!r}us"}


def exposed_rows(paths: list[Path], socket_cap_Bps: float | None = None) -> list[dict]:
    """Each expressible row across nodes: id, file, network, scheme, exposed share of the predicted step,
    measured / predicted, model and linear errors (percent); with ``socket_cap_Bps`` also ``capped``, the
    model's error with each NIC of a TCP row (is_tcp) capped at that many bytes/s."""
    out = []
    for path in paths:
        for r in pub.load_runs(path):
            o = pub.predict_row(r) if r["nodes"] > 1 else None
            if o is None or o.predicted is None:
                continue
            p = o.prediction
            x = dict(id=r["id"], file=path.name, network=r["network"], scheme=r["scheme"], tcp=is_tcp(r),
                     exposed=exposed_share(float(p.t_iter_s[0]), float(p.t_compute_s[0])),
                     ratio=r["samples_per_s"] / o.predicted, error=pub.error_pct(o.predicted, r["samples_per_s"]),
                     linear=pub.error_pct(r["single_gpu_samples_per_s"] * r["gpus"], r["samples_per_s"]))
            if socket_cap_Bps is not None and x["tcp"]:  # the what-if: this row again over a capped link
                capped = pub.predict_row(capped_network(r, socket_cap_Bps))
                x["capped"] = pub.error_pct(capped.predicted, r["samples_per_s"])
            out.append(x)
    return out


def _line(label: str, group: list[dict]) -> str:
    err, lin = np.array([g["error"] for g in group]), np.array([g["linear"] for g in group])
    return (f"  {label:22s} {len(group):5d}  {np.median(np.abs(err)):6.1f}%  {np.median(err):+6.1f}%  "
            f"{np.median(np.abs(lin)):7.1f}%")


def bins(rows: list[dict]) -> list[tuple[float, float, list[dict]]]:
    """(lo, hi, the rows whose exposed share is in (lo, hi]) per non-empty bin of EXPOSED_EDGES; the first
    bin also takes shares <= 0."""
    out = []
    for lo, hi in zip(EXPOSED_EDGES, EXPOSED_EDGES[1:]):
        group = [x for x in rows if (lo < x["exposed"] <= hi) or (lo == 0.0 and x["exposed"] <= 0.0)]
        if group:
            out.append((lo, hi, group))
    return out


def exposure_toml(rows: list[dict], paths: list[Path]) -> str:
    """exposure.toml (perfmodel.exposure): per bin its rows, the model's median absolute and signed error
    (percent) and the 10th and 90th percentiles of measured / predicted, with the note's threshold."""
    lines = [
        "# The model's error across nodes by the exposed share s = (t_iter - t_compute) / t_iter of its predicted",
        "# step (perfmodel.exposure), over the rows across nodes of the published families judged once, out of",
        "# sample (each row predicted from its source's single-GPU rate). Errors in percent of the measured rate",
        "# (positive: predicted too fast); q10, q90: percentiles of measured / predicted. Generated by",
        "# `python -m reproduce.published_exposure --write data/presets/exposure.toml`; regenerate after any",
        "# change to the model or to the judged families (tests/test_exposure.py checks it).",
        f'source = "reproduce.published_exposure over {len(rows)} rows across nodes of the runs files of '
        f'{len(paths)} judged families (reproduce.published_judged.JUDGED)"',
        f"note_above_pct = {NOTE_ABOVE_PCT}  # perfmodel.exposure.exposure_note prints above this median |error|",
        "",
    ]
    for lo, hi, group in bins(rows):
        err = np.array([g["error"] for g in group])
        q10, q90 = np.quantile(np.array([g["ratio"] for g in group]), [0.1, 0.9])
        lines += ["[[bin]]", f"lo = {lo!r}", f"hi = {hi!r}", f"rows = {len(group)}",
                  f"median_abs_pct = {round(float(np.median(np.abs(err))), 2)!r}",
                  f"median_signed_pct = {round(float(np.median(err)), 2)!r}",
                  f"q10 = {round(float(q10), 4)!r}", f"q90 = {round(float(q90), 4)!r}", ""]
    return "\n".join(lines)


def report(rows: list[dict]) -> str:
    """Both tables as text."""
    head = f"  {'':22s} {'rows':>5s}  {'model':>7s} {'signed':>7s}  {'linear':>7s}"
    lines = ["rows across nodes by the exposed share of the predicted step:", head]
    for lo, hi, group in bins(rows):
        lines.append(_line(f"({lo:g}, {hi:g}]", group))
    lines += ["by network:", head]
    for net in sorted({x["network"] for x in rows}):
        lines.append(_line(net, [x for x in rows if x["network"] == net]))
    lines.append(_line("all", rows))
    return "\n".join(lines)


def cap_report(rows: list[dict], cap_GBps: float) -> str:
    """The TCP rows' model error before and after the socket cap, per runs file, network and scheme."""
    tcp = [x for x in rows if "capped" in x]
    if not tcp:
        return "no row across nodes over TCP"
    med = lambda v: f"{np.median(np.abs(v)):6.1f}% ({np.median(v):+6.1f}%)"  # noqa: E731
    lines = [f"rows across nodes over TCP, each NIC capped at {cap_GBps:g} GB/s: before -> after (signed)"]
    for key in sorted({(x["file"], x["network"], x["scheme"]) for x in tcp}):
        g = [x for x in tcp if (x["file"], x["network"], x["scheme"]) == key]
        lines.append(f"  {' '.join(key):62s} {len(g):4d}  {med([x['error'] for x in g])} -> "
                     f"{med([x['capped'] for x in g])}")
    lines.append(f"  {'all':62s} {len(tcp):4d}  {med([x['error'] for x in tcp])} -> {med([x['capped'] for x in tcp])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = OneLineExitParser(prog="python -m reproduce.published_exposure", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, nargs="+", default=None, help="runs files (default: runs.csv and the judged)")
    p.add_argument("--socket-cap", type=float, default=None, metavar="GB_PER_S",
                   help="also predict the rows over TCP with each NIC capped at this many GB/s")
    p.add_argument("--write", type=Path, default=None, metavar="TOML",
                   help="write the judged families' table (not runs.csv's) to this TOML (data/presets/exposure.toml)")
    args = p.parse_args(argv)
    try:
        if args.socket_cap is not None and not (args.socket_cap > 0 and np.isfinite(args.socket_cap)):
            raise SpecError(f"--socket-cap must be a positive number of GB/s, got {args.socket_cap}")
        cap = None if args.socket_cap is None else args.socket_cap * 1e9
        if args.write is not None and (args.runs or cap is not None):
            raise SpecError("--write takes the judged families' rows as they are: not with --runs or --socket-cap")
        paths = judged_runs() if args.write is not None else args.runs or default_runs()
        rows = exposed_rows(paths, cap)
    except (pub.PublishedError, SpecError) as e:
        print(f"published_exposure: error: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("published_exposure: error: no expressible row across nodes", file=sys.stderr)
        return 2
    if args.write is not None:
        atomic_write_text(args.write, exposure_toml(rows, paths))
        print(f"wrote {args.write}")
    print(report(rows))
    if args.socket_cap is not None:
        print(cap_report(rows, args.socket_cap))
    return 0


if __name__ == "__main__":
    sys.exit(main())
