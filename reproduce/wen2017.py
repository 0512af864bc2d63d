"""TernGrad (Wen et al., 2017): rerun its tables beside the published numbers.

Tables (results/wen2017/<table>.csv):
  fig5_model   Figure 5: the performance model's throughput of AlexNet, GoogLeNet and VGG-A with fp32
               and TernGrad gradients on the paper's two clusters, 1..512 GPUs (docs/model.md sections 2-5,
               `--allreduce paper`: TernGrad's pull at log2(2W+1) bits per element, the classifier
               layer in fp32, as the trainers). Same at every scale: the model answers in milliseconds.
  fig3_mnist   Figure 3: LeNet on MNIST, TernGrad vs fp32 gradients, with momentum SGD and with vanilla
               SGD, across worker counts; real MPI runs of `trainers run` (total batch 128 split over
               the ranks, as the paper keeps the total mini-batch fixed). small: 2 and 4 ranks, 1 epoch
               (the 2-rank momentum runs are 2-epoch logs read at epoch 1 and 2), seed 1, and the 2-rank
               runs again for 1 epoch with seeds 2 and 3; constant lr, no
               weight decay (the paper: polynomial decay and weight decay; its base LRs are lost from
               the text, ours are said in each row). smoke: synthetic data, a few steps.
  table1_cifarnet  Table 1 (2 workers): CifarNet, Adam lr 0.0002, total batch 128, fp32 vs TernGrad.
               small: 1000 steps (32.3 epochs) on the CIFAR-10 SUBSET (4000 train / 1000 test images),
               seeds 1, 2 and 3, read every 250 steps; not comparable with the paper's 300K
               iterations on full CIFAR-10. smoke: synthetic data.
  imagenet     Tables 2 and 3 (AlexNet, GoogLeNet on ImageNet): paper scale only; ImageNet is not
               available offline here, so the script refuses with one line.

Real runs write their JSONL logs to results/wen2017/runs/; a complete log whose header configuration
matches is reused, so a rerun skips it.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from reproduce.common import (MODEL_SCALE, ReproduceError, ResultTable, difference, parser, progress, run_tables,
                              seeds_of, settings_text)
from reproduce.paper_tables import published
from reproduce.runs import (diverged, evals_of, log_wall, mpi_command, require_data, run_command,
                            train_args)
from reproduce.verdicts import Claim, Verdict, binomial_resolution, need_rows, paired, rows_at

PAPER = "wen2017"
FIG5_BATCH = {"alexnet": 128, "googlenet": 64, "vgg-a": 32}
FIG5_CLUSTERS = {"terngrad-ethernet": "Figure 5(a)", "terngrad-infiniband": "Figure 5(b)"}
FIG5_GPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _published_gain(workload: str, cluster: str, gpus: int) -> float | None:
    names = {"alexnet": "AlexNet", "googlenet": "GoogLeNet", "vgg-a": "VggNet-A"}
    try:
        rows = published(PAPER, table=FIG5_CLUSTERS[cluster], model=names[workload], workers=gpus,
                         metric="throughput_gain")
    except LookupError:
        return None
    return float(rows.value.iloc[0])


def fig5_model(args: argparse.Namespace, out: Path) -> None:
    from perfmodel.presets import load_cluster, load_workload
    from perfmodel.scaling import predict
    from perfmodel.specs import Strategy

    table = ResultTable(out / "fig5_model.csv", ("workload", "cluster", "gpus", "scale"))
    cases = [(w, c) for w in FIG5_BATCH for c in FIG5_CLUSTERS]
    for workload, cluster in progress(cases, args, "wen2017 fig5_model"):
        if all(table.done(workload=workload, cluster=cluster, gpus=g, scale=MODEL_SCALE) for g in FIG5_GPUS):
            continue
        wl, cl = load_workload(workload), load_cluster(cluster)
        b = FIG5_BATCH[workload]
        fp32 = predict(wl, cl, Strategy("ssgd", allreduce="paper"), FIG5_GPUS, batch=b)
        tern = predict(wl, cl, Strategy("terngrad", allreduce="paper"), FIG5_GPUS, batch=b)
        for i, g in enumerate(FIG5_GPUS):
            gain = float(tern.throughput[i] / fp32.throughput[i])
            paper = _published_gain(workload, cluster, g)
            table.add({"workload": workload, "cluster": cluster, "gpus": g, "figure": FIG5_CLUSTERS[cluster],
                       "batch_per_gpu": b, "fp32_throughput": float(fp32.throughput[i]),
                       "terngrad_throughput": float(tern.throughput[i]), "metric": "throughput_gain",
                       "paper_value": paper, "rerun_value": gain, "difference": difference(gain, paper),
                       "scale": MODEL_SCALE, "settings": settings_text({"allreduce": "paper", "scaling": "weak",
                                                                    "batch_per_gpu": b, "presets": "data/presets",
                                                                    "pull_bits": "log2(2W+1)",
                                                                    "fp32_last": True})})


def _published_acc(**setting) -> float | None:
    try:
        return float(published(PAPER, **setting).value.iloc[0])
    except LookupError:
        return None


# --------------------------------------------------------------------------- Figure 3: LeNet on MNIST
FIG3_TOTAL_BATCH = 128
#: optimizer -> (lr, momentum); the paper's base LRs are lost from the text
FIG3_OPT = {"momentum": (0.01, 0.9), "vanilla": (0.01, 0.0)}
FIG3_ALGOS = {"fp32": "ssgd", "TernGrad": "terngrad"}


FIG3_SEEDS = {"smoke": (1,), "small": (1, 2, 3), "paper": (1,)}


def _fig3_plan(scale: str, seeds: tuple[int, ...]) -> list[tuple[str, str, int, float, int]]:
    """(optimizer, gradients, ranks, epochs, seed) of each run at `scale`.

    small: the first seed runs 2 and 4 ranks (momentum with 2 ranks for 2 epochs); the other seeds
    repeat the 2-rank runs for 1 epoch, so epoch 1 at 2 ranks has every seed."""
    if scale == "smoke":
        return [("momentum", g, 2, 0, s) for s in seeds for g in FIG3_ALGOS]
    plan = []
    for i, seed in enumerate(seeds):
        ranks = ((2, 4) if i == 0 else (2,)) if scale == "small" else (2, 4, 8, 16, 32, 64)
        for o in FIG3_OPT:
            for g in FIG3_ALGOS:
                for k in ranks:
                    if scale != "small":
                        epochs = 10
                    else:
                        epochs = 2 if (i == 0 and o == "momentum" and k == 2) else 1
                    plan.append((o, g, k, epochs, seed))
    return plan


def fig3_mnist(args: argparse.Namespace, out: Path) -> None:
    table = ResultTable(out / "fig3_mnist.csv", ("optimizer", "gradients", "workers", "epoch", "scale", "seed"))
    smoke = args.scale == "smoke"
    root = None if smoke else require_data(args, "mnist")
    plan = _fig3_plan(args.scale, seeds_of(args, FIG3_SEEDS[args.scale]))
    for opt, grads, ranks, epochs, seed in progress(plan, args, "wen2017 fig3_mnist"):
        lr, mom = FIG3_OPT[opt]
        cfg = {"algo": FIG3_ALGOS[grads], "model": "lenet", "dataset": "synthetic" if smoke else "mnist",
               "batch": FIG3_TOTAL_BATCH // ranks, "lr": lr, "momentum": mom, "seed": seed}
        if smoke:
            cfg.update(steps=6, synthetic_n=256, eval_every=6)
        else:
            cfg.update(epochs=epochs)
        read_at = [1] if smoke else sorted({1, int(epochs)})
        if all(table.done(optimizer=opt, gradients=grads, workers=ranks, epoch=e, scale=args.scale, seed=seed)
               for e in read_at):
            continue
        name = f"lenet_{FIG3_ALGOS[grads]}_{opt}_n{ranks}_e{epochs}" + ("_smoke" if smoke else "")
        if opt != "momentum":
            name += f"_lr{lr:g}"
        if seed != 1:  # seed 1 logs keep their original names
            name += f"_s{seed}"
        log = out / "runs" / f"{name}.jsonl"
        extra = {"data_root": root} if root else {}
        cmd = mpi_command(ranks, train_args({**cfg, **extra, "log": str(log), "no_progress": True}))
        try:
            wall = run_command(cmd, log, cfg, timeout_s=120 if smoke else 900, what=f"wen2017 fig3 {name}")
        except ReproduceError:
            if not diverged(log):
                raise
            wall = float("nan")  # the trainer stopped on a non-finite loss: a result, not a failure
        evals = evals_of(log)
        for e in read_at:
            ev = evals[-1] if (smoke and evals) else next((v for v in evals if abs(float(v["epoch"]) - e) < 1e-6), None)
            if ev is None and not diverged(log):
                raise ReproduceError(f"wen2017 fig3 {name}: log {log} has no evaluation at epoch {e}")
            finite = ev is not None and math.isfinite(float(ev.get("test_loss", float("nan"))))
            acc = round(100 * float(ev["test_acc"]), 2) if finite else None
            table.add({"optimizer": opt, "gradients": grads, "workers": ranks, "epoch": e, "scale": args.scale,
                       "seed": seed, "total_batch": FIG3_TOTAL_BATCH, "metric": "test_accuracy", "paper_value": None,
                       "rerun_value": acc, "difference": None, "outcome": "converged" if finite else "diverged",
                       "steps": int(ev["step"]) + 1 if ev is not None else None,
                       "run_wall_s": wall if wall is not None else log_wall(log), "reused": wall is None,
                       "log": str(log.relative_to(out)),
                       "settings": settings_text({**cfg, "ranks": ranks, "read_at_epoch": e,
                                                  "dataset_note": "synthetic" if smoke else "full MNIST"}),
                       "note": ("reused log; " if wall is None else "") + "paper Figure 3 prints curves, no "
                               "numbers; paper: polynomial lr decay + weight decay, base LRs lost from the "
                               "text; here constant lr, no weight decay" +
                               ("; REDUCED: 1-2 epochs, 2 and 4 workers, 3 seeds at 2 workers"
                                if args.scale == "small" else "")})


# --------------------------------------------------------------------------- Table 1: CifarNet, Adam
T1_LR, T1_TOTAL_BATCH, T1_WORKERS = 0.0002, 128, 2
T1_STEPS = {"smoke": 5, "small": 1000, "paper": 300_000}
T1_EVAL_EVERY = {"smoke": 5, "small": 250, "paper": 10_000}
T1_SEEDS = {"smoke": (1,), "small": (1, 2, 3), "paper": (1,)}


def table1_cifarnet(args: argparse.Namespace, out: Path) -> None:
    table = ResultTable(out / "table1_cifarnet.csv", ("gradients", "workers", "step", "scale", "seed"))
    smoke = args.scale == "smoke"
    steps, every = T1_STEPS[args.scale], T1_EVAL_EVERY[args.scale]
    if args.scale == "paper":
        raise ReproduceError("wen2017 table1_cifarnet at paper scale needs full CIFAR-10 (300K iterations); "
                             "only the 4000-image subset is offline here")
    root = None if smoke else require_data(args, "cifar10-subset")
    read_at = list(range(every, steps + 1, every))
    plan = [(g, a, seed) for seed in seeds_of(args, T1_SEEDS[args.scale]) for g, a in FIG3_ALGOS.items()]
    for grads, algo, seed in progress(plan, args, "wen2017 table1_cifarnet"):
        if all(table.done(gradients=grads, workers=T1_WORKERS, step=k, scale=args.scale, seed=seed)
               for k in read_at):
            continue
        cfg = {"algo": algo, "model": "cifarnet", "dataset": "synthetic" if smoke else "cifar10",
               "batch": T1_TOTAL_BATCH // T1_WORKERS, "optimizer": "adam", "lr": T1_LR, "momentum": 0.0,
               "steps": steps, "seed": seed, "augment": not smoke, "eval_every": every}
        if smoke:
            cfg["synthetic_n"] = 256
        name = f"cifarnet_{algo}_adam_n{T1_WORKERS}_s{steps}_seed{seed}" + ("_smoke" if smoke else "")
        log = out / "runs" / f"{name}.jsonl"
        extra = {"data_root": root} if root else {}
        cmd = mpi_command(T1_WORKERS, train_args({**cfg, **extra, "log": str(log), "no_progress": True}))
        wall = run_command(cmd, log, cfg, timeout_s=120 if smoke else 2400, what=f"wen2017 table1 {name}")
        by_step = {int(ev["step"]) + 1: ev for ev in evals_of(log)}
        paper = _published_acc(table="Table 1", method="floating" if grads == "fp32" else "TernGrad",
                               workers=T1_WORKERS, metric="test_accuracy")
        for k in read_at:
            ev = by_step.get(k)
            if ev is None:
                raise ReproduceError(f"wen2017 table1 {name}: log {log} has no evaluation after step {k}")
            acc = round(100 * float(ev["test_acc"]), 2)
            table.add({"gradients": grads, "workers": T1_WORKERS, "step": k, "scale": args.scale, "seed": seed,
                       "metric": "test_accuracy", "paper_value": paper, "rerun_value": acc,
                       "difference": difference(acc, paper), "steps": steps,
                       "epoch": round(float(ev["epoch"]), 2),
                       "run_wall_s": wall if wall is not None else log_wall(log), "reused": wall is None,
                       "log": str(log.relative_to(out)),
                       "settings": settings_text({**cfg, "ranks": T1_WORKERS, "read_at_step": k,
                                                  "dataset_note": "synthetic" if smoke else
                                                  "CIFAR-10 SUBSET: 4000 train / 1000 test images"}),
                       "note": "NOT comparable with the paper: it trains 300K iterations on full CIFAR-10 "
                               f"(50000 images); here {k} steps on "
                               + ("synthetic images" if smoke else "a 4000-image subset")})


def imagenet(args: argparse.Namespace, out: Path) -> None:
    raise ReproduceError("wen2017 imagenet (Tables 2, 3): paper scale only and ImageNet is not available "
                         "offline here; nothing run")


TABLES = {"fig5_model": fig5_model, "fig3_mnist": fig3_mnist, "table1_cifarnet": table1_cifarnet}


def headlines(results: Path) -> list[Verdict]:
    """TernGrad's accuracy claims, decided on the small-scale rows (reproduce.verdicts), each a paired
    difference TernGrad - fp32 (points) per seed: LeNet/MNIST after 1 epoch on 2 ranks, with momentum
    and with vanilla SGD (no loss: the difference at least minus the MNIST test set's resolution at
    the fp32 accuracy), and CifarNet at the last step read (no more loss than the paper's own 0.92)."""
    out = []
    table = f"{PAPER}/fig3_mnist.csv"
    frame = rows_at(results, table)
    for opt in ("momentum", "vanilla"):
        sub = frame[(frame.optimizer == opt) & (frame.workers == 2) & (frame.epoch == 1)]
        fp32 = need_rows(sub[sub.gradients == "fp32"], results, table, f"small-scale fp32 rows of {opt} SGD at 2 "
                         "ranks after epoch 1")
        diffs, rows = paired(sub, "gradients", "TernGrad", "fp32")
        margin = binomial_resolution(float(fp32.rerun_value.mean()), 10_000)
        out.append(Verdict(Claim(
            PAPER, f"TernGrad keeps LeNet/MNIST accuracy ({opt} SGD)", "same accuracy as fp32 (Figure 3, no number)",
            "TernGrad - fp32 test accuracy (points) after 1 epoch, 2 ranks, paired by seed", -margin, None,
            f"at least -{margin:.2f}: no loss the 10,000 MNIST test images resolve at fp32's accuracy",
            "small: 2 ranks, 1 epoch, total batch 128, constant lr (paper: more epochs, lr decay)",
            "dsgd-reproduce wen2017 --scale small --only fig3_mnist"), diffs, table, rows))
    table = f"{PAPER}/table1_cifarnet.csv"
    frame = rows_at(results, table)
    sub = need_rows(frame[frame.workers == 2], results, table, "small-scale rows at 2 workers")
    last = int(sub.step.max())
    sub = sub[sub.step == last]
    tern, fp32 = (need_rows(sub[sub.gradients == g], results, table,
                            f"small-scale {g} rows at 2 workers and step {last}") for g in ("TernGrad", "fp32"))
    paper_gap = float(tern.paper_value.iloc[0]) - float(fp32.paper_value.iloc[0])
    diffs, rows = paired(sub, "gradients", "TernGrad", "fp32")
    out.append(Verdict(Claim(
        PAPER, "TernGrad loses at most 0.92 points on CifarNet", "86.56% fp32 vs 85.64% TernGrad (Table 1, 2 workers, "
        "Adam, 300K steps, full CIFAR-10)",
        f"TernGrad - fp32 test accuracy (points) at step {last}, paired by seed", paper_gap, None,
        f"at least {paper_gap:.2f}: the loss the paper reports", f"small: {last} of 300K steps, "
        "CIFAR-10 subset (4,000 train / 1,000 test images)",
        "dsgd-reproduce wen2017 --scale small --only table1_cifarnet"), diffs, table, rows))
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser(PAPER, __doc__.splitlines()[0]).parse_args(argv)
    tables = dict(TABLES)
    if args.only and "imagenet" in args.only.split(","):
        tables["imagenet"] = imagenet
    return run_tables(PAPER, tables, args)


if __name__ == "__main__":
    sys.exit(main())
