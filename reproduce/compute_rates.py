"""Published single-GPU rates: the measured-rate table and the ESTIMATE's fit and error.

    python -m reproduce.compute_rates [--runs data/published/runs.csv] [--write]

Reads the single-GPU rates that data/published/runs.csv carries (single_gpu_samples_per_s at
single_gpu_batch, each with its source and location), keeps those of library models whose sample is
the library's input (BERT rows at the library's 128-token sequence) on GPUs of gpus.toml, and
  - prints, with --write writes (atomically), data/presets/measured_rates.toml: per (model, GPU,
    precision) the median measurement (the lower middle one of an even count), with its source and
    the spread of the others;
  - fits the ESTIMATE's constants (perfmodel.compute_rule: the achieved share f_p of each precision's
    peak, the FLOPs per element of memory traffic J) on the development rates only (reproduce.halves:
    a rate some development row carries), minimizing the mean |log(estimate / measured)|;
  - prints the median |error| of the ESTIMATE with compute_estimate.toml's constants on the
    development and the held-out rates, and of the constants it would fit.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser
from perfmodel import presets
from perfmodel.preset_toml import PresetError
from perfmodel.compute_rule import (PRECISIONS, RUNS_PRECISION, EstimateRule, activation_elements,
                                    estimate_seconds_per_sample, load_rule)
from perfmodel.fileio import atomic_open
from perfmodel.library import LibraryError, load_model

from .halves import half
from .published import RUNS, PublishedError, load_runs

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "data" / "presets" / "measured_rates.toml"


def single_gpu_rates(rows: list[dict]) -> list[dict]:
    """The distinct single-GPU measurements of ``rows`` usable for the rule, each with its half."""
    root = presets.presets_dir()
    gpus = presets.gpus(root)
    seen: dict[tuple, dict] = {}
    for r in rows:
        precision = RUNS_PRECISION.get(r["precision"])
        if precision is None or r["gpu"] not in gpus:
            continue
        try:
            lib = load_model(r["model"], root)
        except LibraryError:
            continue
        if "sequence" in lib.input and lib.input.split()[-2] not in r["unit"]:
            continue  # a BERT row at another sequence length than the library's
        key = (r["source"], r["single_gpu_loc"], r["gpu"], r["model"], precision, r["single_gpu_batch"],
               r["single_gpu_samples_per_s"])
        entry = seen.setdefault(key, {"source": r["source"], "url": r["source_url"], "loc": r["single_gpu_loc"],
                                      "framework": r["framework"], "gpu": r["gpu"], "model": r["model"],
                                      "precision": precision, "batch": r["single_gpu_batch"],
                                      "rate": r["single_gpu_samples_per_s"], "forward_flops": lib.forward_flops,
                                      "activations": activation_elements(lib.tensor_sizes, lib.tensor_flops),
                                      "half": "held-out"})
        if half(r) == "dev":
            entry["half"] = "dev"
    return list(seen.values())


def table_entries(rates: list[dict]) -> list[dict]:
    """One entry per (model, GPU, precision): the median measurement and the spread."""
    groups: dict[tuple, list[dict]] = {}
    for m in rates:
        groups.setdefault((m["model"], m["gpu"], m["precision"]), []).append(m)
    out = []
    for (model, gpu, precision), ms in sorted(groups.items()):
        ms = sorted(ms, key=lambda m: m["rate"])
        med = ms[(len(ms) - 1) // 2]
        out.append({"key": f"{model}.{gpu}.{precision}", "model": model, "gpu": gpu, "precision": precision,
                    "samples_per_s": med["rate"], "batch": med["batch"],
                    "source": (f"{med['source']} ({med['url']}), {med['loc']}, {med['framework']}; median of "
                               f"{len(ms)} published single-GPU rate(s) of data/published/runs.csv, "
                               f"{ms[0]['rate']:g}-{ms[-1]['rate']:g} samples/s")})
    return out


def toml_text(entries: list[dict]) -> str:
    """measured_rates.toml's text."""
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = ["# Published single-GPU training rates (samples/s at batch) per library model, GPU and precision:",
             "# the first source of perfmodel's compute rule (perfmodel/compute_rule.py, docs/compute.md).",
             "# Written by `python -m reproduce.compute_rates --write` from data/published/runs.csv; do not edit.", ""]
    for e in entries:
        lines += [f'["{e["key"]}"]', f"model = {q(e['model'])}", f"gpu = {q(e['gpu'])}",
                  f"precision = {q(e['precision'])}", f"samples_per_s = {e['samples_per_s']!r}",
                  f"batch = {e['batch']}", f"source = {q(e['source'])}", ""]
    return "\n".join(lines)


def errors_pct(rates: list[dict], rule: EstimateRule) -> np.ndarray:
    """Signed error of the ESTIMATE on each rate, percent: (estimated rate / measured - 1) x 100."""
    gpus = presets.gpus()
    out = []
    for m in rates:
        s = estimate_seconds_per_sample(m["forward_flops"], m["activations"], gpus[m["gpu"]], m["precision"], rule)
        out.append((1.0 / s / m["rate"] - 1.0) * 100.0)
    return np.asarray(out)


def fit(rates: list[dict], rule: EstimateRule) -> EstimateRule:
    """f_p and k minimizing the sum of |log(estimate / measured)| over ``rates`` (grid search: for each
    k, each precision's best f_p; a precision without rates keeps ``rule``'s)."""
    gpus = presets.gpus()
    best = None
    for k in np.geomspace(1.0, 200.0, 81):
        fractions, total = {}, 0.0
        for p in PRECISIONS:
            ms = [m for m in rates if m["precision"] == p]
            if not ms:
                fractions[p] = rule.fraction[p]
                continue
            scores = []
            for f in np.linspace(0.05, 1.0, 96):
                trial = replace(rule, fraction={**rule.fraction, p: float(f)}, crossings=float(k))
                scores.append((sum(abs(math.log(1.0 / estimate_seconds_per_sample(
                    m["forward_flops"], m["activations"], gpus[m["gpu"]], p, trial) / m["rate"])) for m in ms),
                    float(f)))
            s, f = min(scores)
            fractions[p], total = f, total + s
        if best is None or total < best[0] - 1e-12:
            best = (total, float(k), fractions)
    _, k, fractions = best
    return replace(rule, fraction=fractions, crossings=k)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineExitParser(prog="python -m reproduce.compute_rates", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS, help="published runs CSV (default: %(default)s)")
    ap.add_argument("--write", action="store_true", help=f"write {TABLE}")
    args = ap.parse_args(argv)
    try:
        rates = single_gpu_rates(load_runs(args.runs))
        rule = load_rule()
    except (PublishedError, PresetError) as e:
        print(f"compute_rates: error: {e}", file=sys.stderr)
        return 2
    entries = table_entries(rates)
    if args.write:
        with atomic_open(TABLE, "w") as f:
            f.write(toml_text(entries) + "\n")
        print(f"wrote {TABLE}: {len(entries)} entries from {len(rates)} single-GPU rates")
    dev = [m for m in rates if m["half"] == "dev"]
    held = [m for m in rates if m["half"] == "held-out"]
    fitted = fit(dev, rule)
    print(f"single-GPU rates: {len(rates)} ({len(dev)} dev, {len(held)} held-out)")
    for label, r in (("compute_estimate.toml", rule), ("fit on dev", fitted)):
        print(f"{label}: fractions " + ", ".join(f"{p} {r.fraction[p]:.3f}" for p in PRECISIONS)
              + f"; memory_crossings {r.crossings:.2f}")
        for name, part in (("dev", dev), ("held-out", held), ("all", rates)):
            e = errors_pct(part, r)
            print(f"  {name:<9} {len(part):>3} rates: median |error| {np.median(np.abs(e)):.1f}%, "
                  f"signed {np.median(e):+.1f}%")
    h100 = presets.gpus()["h100"]
    r50 = load_model("resnet50", presets.presets_dir())
    acts = activation_elements(r50.tensor_sizes, r50.tensor_flops)
    print(f"ResNet-50 mixed on h100 (compute_estimate.toml): "
          f"{1.0 / estimate_seconds_per_sample(r50.forward_flops, acts, h100, 'mixed', rule):,.0f} samples/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
