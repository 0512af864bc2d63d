"""Out of sample: does the model predict a step that accumulates gradients over several micro-batches?

`perfmodel plan` searches gradient accumulation (A micro-batches per exchange) and `perfmodel predict
--accumulate A` prices it: A micro-batches of compute, the optimizer step once (the profile's), one
exchange hidden behind the last micro-batch's backward only, and the link's slowdown of the step after
an exchange on the first micro-batch only (perfmodel.scaling, perfmodel.lab.profile.predictor). No
published row has runs at two accumulations on one cluster, so this check makes them. Declared before
its first run:

- runs: ResNet-20 (1.08 MB of gradient) at 16 samples per rank and micro-batch on 2 emulated nodes of
  one rank each (2 ranks on this machine's 2 cores: not oversubscribed) at 100 Mbit/s: SSGD with
  overlap on (0.25 MiB buckets) at A = 1, 2 and 4; SSGD with overlap off at A = 1 and 4; TernGrad (its
  default exchange) at A = 1 and 4. `trainers run --accumulate A`.
- inputs: per remake, one node profile (this machine, 1 and 2 ranks) and one link profile
  (reproduce.overlap_check.profiles: the same commands); nothing is read from the runs;
- predictions: every run's `perfmodel predict` command (perfmodel.lab.validate, as `perfmodel validate`
  makes it, with --accumulate from the run's settings) and its output, written to
  ``accumulation_check_predictions_r<remake>.json`` before the remake's first run;
- judged: the median |error| and signed median of the step over the runs with A > 1, beside the runs
  with A = 1 (the control: no accumulation); and the transfer from A = 1 to A: the predicted ratio of
  the steps T_A / T_1 over the measured one, per remake and setting.

Remakes 0-2 judged the model of commit ea8f0d8, which applied the profile's straggler CV (the ranks'
spread in one micro-batch's step) to the whole step of A micro-batches. After them (development), one
change: that spread is jitter, independent between micro-batches, so a step of A has CV / sqrt(A)
(perfmodel.lab.profile.predictor); remakes 3-5 (held out, ``--remakes 6``) judge the model with it,
declared in the commit of this paragraph before their first profile. JUDGED_FROM: the first remake the
current model is judged on; the frozen predictions of earlier remakes recompute at A = 1 only.

    python -m reproduce.accumulation_check [--remakes 6] [--out results/validation]    # as root; minutes

Writes ``accumulation_check.csv`` (one row per run; a rerun skips the rows already there) and prints
the medians. Nothing here was tuned: the accumulation terms were fixed (commit of this file) before
the first profile of this check was made.
"""

from __future__ import annotations

import sys
from pathlib import Path

from reproduce.common import ResultTable, emulated_check_main
from reproduce.overlap_check import BATCH, BUCKET_MB, MODEL, SKIP, STEPS, profiles
from reproduce.runs import mpi_command, run_command
from reproduce.scale_out import _now, check_provenance, freeze_once, judged_row

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "validation"
RATE = "100mbit"
#: (algo, overlap, accumulate) of every run of a remake, in the order they run
RUNS = (("ssgd", "on", 1), ("ssgd", "on", 2), ("ssgd", "on", 4), ("ssgd", "off", 1), ("ssgd", "off", 4),
        ("terngrad", "on", 1), ("terngrad", "on", 4))
KEY = ("scale", "remake", "algo", "overlap", "accumulate")
JUDGED_FROM = 3  # remakes 0-2: the model before the CV / sqrt(A) change (module docstring)
SCALE = "small"


def _config(algo: str, overlap: str, accumulate: int) -> dict:
    """A run's settings as its log's header will carry them (trainers.config.SyncConfig.to_dict)."""
    from trainers.config import SyncConfig

    return SyncConfig(algo=algo, model=MODEL, dataset="synthetic", batch=BATCH, accumulate=accumulate,
                      bucket_mb=BUCKET_MB, overlap=overlap == "on", device="cpu").to_dict()


def planned(algo: str, overlap: str, accumulate: int):
    """The RunMeasurement a planned run's log will give, as far as its prediction reads it."""
    from perfmodel.lab.validate import RunMeasurement

    return RunMeasurement("planned", algo, MODEL, 2, BATCH, 1, STEPS - SKIP, 1.0, 0.0, 0.0, 0.0, 1.0,
                          _config(algo, overlap, accumulate), {}, 0.0, "mpi", 0)


def _row_key(algo: str, overlap: str, accumulate: int) -> str:
    return f"{algo}|{overlap}|{accumulate}"


def frozen_path(out: Path, remake: int) -> Path:
    """Where remake ``remake``'s predictions are frozen."""
    return out / f"accumulation_check_predictions_r{remake}.json"


def freeze(path: Path, node: Path, link: Path) -> dict:
    """Every planned run's prediction, written to ``path`` (atomically) unless it exists."""
    from perfmodel.lab.validate import Scenario, predict_run

    def rows(cores) -> dict:
        return {_row_key(algo, overlap, a): predict_run(planned(algo, overlap, a),
                                                        Scenario(str(node), (str(link),), 1, 0, cores))
                for algo, overlap, a in RUNS}

    return freeze_once(path, node, {RATE: link}, rows)


def _train_args(algo: str, overlap: str, accumulate: int, log: Path) -> list[str]:
    from reproduce.validation_runs import run_args
    from trainers.run import ALGO_FLAGS

    flag, readers = ALGO_FLAGS["overlap"]  # terngrad has no overlap to switch: it keeps the config's default
    return [*run_args(algo, MODEL, BATCH, 2, STEPS, log, accumulate), "--bucket-mb", str(BUCKET_MB),
            *([flag, overlap] if algo in readers else [])]


def check(out: Path, remakes: int) -> Path:
    """Profile, freeze and run every remake not in the table yet (module docstring); the table's path."""
    from perfmodel.lab.emulate import EmulatedCluster, EmulationSpec, check_host, parse_rate

    check_host()
    table = ResultTable(out / "accumulation_check.csv", KEY)
    for remake in range(remakes):
        todo = [r for r in RUNS if not table.done(scale=SCALE, remake=remake, algo=r[0], overlap=r[1], accumulate=r[2])]
        if not todo:
            continue
        node, links = profiles(out, remake, "accumulation", (RATE,))
        link = links[RATE]
        frozen = freeze(frozen_path(out, remake), node, link)
        runs = out / "runs" / f"accumulation_check_r{remake}"
        for algo, overlap, a in todo:
            log = runs / f"{MODEL}_2x1_{RATE}_{algo}_overlap_{overlap}_a{a}.jsonl"
            want = {"algo": algo, "model": MODEL, "batch": BATCH, "steps": STEPS, "dataset": "synthetic",
                    "accumulate": a}
            started = _now()
            with EmulatedCluster(EmulationSpec(nodes=2, ranks_per_node=1, rate_bps=parse_rate(RATE))) as cl:
                run_command(mpi_command(2, _train_args(algo, overlap, a, log), extra=cl.mpiexec_args()), log, want,
                            900, f"accumulation check r{remake} {algo} overlap {overlap} A={a}")
            pred = frozen["rows"][_row_key(algo, overlap, a)]
            row = judged_row(log, node, link, pred, f"accumulation check {algo} {overlap} A={a}", skip=SKIP)
            row.update({"scale": SCALE, "remake": remake, "algo": algo, "overlap": overlap, "accumulate": a,
                        "rate": RATE, "bucket_mb": BUCKET_MB,
                        **check_provenance(row, frozen, pred, RATE, started, log, out, node, link)})
            table.add(row)
    return out / "accumulation_check.csv"


def transfer(d) -> "object":
    """Per remake and setting with A > 1: (predicted T_A / T_1) / (measured T_A / T_1) - 1, percent."""
    import pandas as pd

    base = d[d.accumulate == 1].set_index(["remake", "algo", "overlap"])
    out = []
    for _, r in d[d.accumulate > 1].iterrows():
        k = (r.remake, r.algo, r.overlap)
        if k in base.index:
            b = base.loc[k]
            out.append({"remake": r.remake, "algo": r.algo, "overlap": r.overlap, "accumulate": r.accumulate,
                        "ratio_error_pct": ((r.predicted_step_s / b.predicted_step_s)
                                            / (r.measured_step_s / b.measured_step_s) - 1.0) * 100.0})
    return pd.DataFrame(out)


def report(path: Path) -> str:
    """Median |error| (signed median) of the step with and without accumulation and the transfer, for the
    development remakes (before JUDGED_FROM) and the held-out ones; the held-out runs per setting."""
    import pandas as pd

    d = pd.read_csv(path)

    def cell(e) -> str:
        return f"{e.abs().median():.1f}% ({e.median():+.1f}%)" if len(e) else "-"
    lines = [f"accumulation check ({len(d)} runs, {d.remake.nunique()} remakes): median |error| (signed) of the step"]
    groups = (("development, remakes before the CV / sqrt(A) change", d[d.remake < JUDGED_FROM]),
              ("held out, the current model", d[d.remake >= JUDGED_FROM]))
    for name, part in groups:
        if not len(part):
            continue
        acc, one, t = part[part.accumulate > 1], part[part.accumulate == 1], transfer(part)
        moved = cell(t["ratio_error_pct"]) if len(t) else "-"
        lines += [f"  {name} (remakes {part.remake.min()}-{part.remake.max()}):",
                  f"    A > 1: {cell(acc.step_error_pct)}  n={len(acc)}; A = 1 (control): {cell(one.step_error_pct)}"
                  f"  n={len(one)}",
                  f"    transfer from A=1 (predicted T_A/T_1 over measured): {moved}"
                  f"  n={len(t)}"]
    held = groups[1][1] if len(groups[1][1]) else groups[0][1]
    for (algo, overlap, a), part in held.groupby(["algo", "overlap", "accumulate"], sort=False):
        lines.append(f"  {algo} overlap {overlap} A={a}: {cell(part.step_error_pct)}; communication left exposed "
                     f"{part.comm_share.median():.0%} of the step")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return emulated_check_main(argv, name="accumulation_check", doc=__doc__, table="accumulation_check.csv", out=OUT,
                               remakes=6, check=check, report=report)


if __name__ == "__main__":
    sys.exit(main())
