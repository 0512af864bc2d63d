# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # TernGrad (Wen et al., 2017): rerun beside the paper
#
# Ternary gradients (2 bits per element plus one scaler per layer) cut the bytes each worker sends
# by about 16x. This report lays our reruns beside the paper's numbers: the performance model's
# Figure 5, and the accuracy runs made with the real MPI trainer (`reproduce/wen2017.py`).

# %%
import json

import matplotlib.pyplot as plt
import seaborn as sns
from IPython.display import Markdown

from _common import read_results
from reproduce.paper_tables import load_table

sns.set_theme(style="whitegrid")
published = load_table("wen2017")


def dataset_of(frame):
    """What the rows were trained on, from their settings (synthetic data at smoke scale)."""
    notes = set()
    for text in frame.get("settings", []):
        settings = json.loads(text)
        notes.add(settings.get("dataset_note") or settings.get("dataset", "?"))
    return " and ".join(sorted(notes)) or "unknown data"


def paired_gaps(frame, index):
    """TernGrad minus fp32 accuracy per setting, paired by seed: mean, std, seeds, mean accuracies."""
    wide = frame.pivot_table(index=[*index, "seed"], columns="gradients", values="rerun_value")
    if not {"fp32", "TernGrad"} <= set(wide.columns):
        return None
    wide = wide.dropna(subset=["fp32", "TernGrad"]).assign(gap=lambda w: w.TernGrad - w.fp32)
    return wide.groupby(level=index).agg(gap=("gap", "mean"), sd=("gap", "std"), seeds=("gap", "count"),
                                         below=("gap", lambda g: int((g < 0).sum())),
                                         fp32=("fp32", "mean"), terngrad=("TernGrad", "mean"))


def gap_text(r):
    spread = f" +- {r.sd:.2f}" if r.seeds > 1 else ""
    return (f"{r.gap:+.2f}{spread} points ({r.terngrad:.2f} vs {r.fp32:.2f}%, {int(r.seeds)} "
            f"seed{'s' if r.seeds > 1 else ''})")

# %% [markdown]
# ## Figure 5: throughput from the performance model, 1 to 512 GPUs
#
# Weak scaling with per-GPU batch 128 (AlexNet), 64 (GoogLeNet), 32 (VGG-A); TernGrad's Appendix B
# model (`--allreduce paper`) on the two clusters of the paper, fed by `data/presets`.

# %%
fig5 = read_results("wen2017", "fig5_model")
if fig5 is not None:
    long = fig5.melt(id_vars=["workload", "cluster", "gpus"], value_vars=["fp32_throughput", "terngrad_throughput"],
                     var_name="gradients", value_name="samples/s")
    long["gradients"] = long.gradients.str.replace("_throughput", "")
    g = sns.relplot(data=long, x="gpus", y="samples/s", hue="gradients", col="workload", row="cluster",
                    kind="line", marker="o", height=2.8, aspect=1.2, facet_kws={"sharey": False})
    g.set(xscale="log", yscale="log")
    for ax in g.axes.flat:
        ax.set_xscale("log", base=2)
    plt.show()
    at512 = fig5[fig5.gpus == 512][["workload", "cluster", "paper_value", "rerun_value"]]
    display(at512.rename(columns={"rerun_value": "TernGrad gain (model)", "paper_value": "paper"}))

# %% [markdown]
# The paper: "TernGrad is still able to double the training speed of VggNet-A on 128 nodes" of the
# InfiniBand cluster, and gains most for AlexNet on the Ethernet cluster. The model charges TernGrad's
# exchange as the paper's text describes it: workers push 2-bit gradients, but the servers send back
# the sum of N ternary gradients, which needs log2(2N+1) bits per element ("the server-to-worker
# communication reduces by a factor of 32/log2(1+2N)"), and the classifier layer stays fp32. On
# full-duplex links the pull is the longer direction, so at 512 GPUs each element costs log2(1025) = 10
# bits against fp32's 32: VGG-A on InfiniBand gains 2.03x, as the paper says, and every Ethernet gain
# (AlexNet 2.76x, VGG-A 2.97x, GoogLeNet 2.08x) stays above its InfiniBand one (1.97x, 2.03x, 1.08x).

# %% [markdown]
# ## Published numbers (Tables 1-3)

# %%
display(published[published.table.str.startswith("Table")][["table", "model", "workers", "method", "batch",
                                                            "metric", "value"]])

# %% [markdown]
# ## Figure 3: LeNet on MNIST, TernGrad against fp32 gradients (real MPI runs)
#
# The paper trains LeNet with momentum SGD and vanilla SGD on 2 to 64 workers at a fixed total batch
# and plots accuracy curves: "TernGrad can converge to the similar accuracy within the same iterations".
# Our small-scale runs: 2 and 4 MPI ranks on one shared CPU machine, total batch 128 split over the
# ranks, 1 epoch (468 steps; the 2-rank momentum runs are reused 2-epoch logs, also read at epoch 1),
# constant lr (momentum: 0.01 with 0.9; vanilla: 0.01 — the paper's base LRs are lost from its text;
# a first try of vanilla SGD at lr 0.1 diverged within a few steps for fp32 and TernGrad alike),
# no weight decay. Seed 1 for every run; the 2-rank runs again for 1 epoch with seeds 2 and 3, so the
# 2-rank epoch-1 comparison is paired over 3 seeds (the same seed gives fp32 and TernGrad the same
# initial weights and data order).

# %%
fig3 = read_results("wen2017", "fig3_mnist")
if fig3 is not None:
    g = sns.catplot(data=fig3[fig3.epoch == 1], x="workers", y="rerun_value", hue="gradients", col="optimizer",
                    kind="bar", height=3, aspect=1.2)
    g.set(ylabel="test accuracy after 1 epoch (%)")
    lo = max(0.0, fig3.rerun_value.min() - 2)
    for ax in g.axes.flat:
        ax.set_ylim(lo, 100)
    plt.show()
    # paired by seed: TernGrad minus fp32 at the same seed, workers and epoch
    wide = fig3.pivot_table(index=["optimizer", "workers", "epoch", "seed"], columns="gradients",
                            values="rerun_value")
    if {"fp32", "TernGrad"} <= set(wide.columns):
        wide["TernGrad - fp32 (points)"] = wide["TernGrad"] - wide["fp32"]
        display(wide.round(2))
        display(wide.groupby(level=["optimizer", "workers", "epoch"])
                .agg(["mean", "std", "count"]).round(2))

# %% [markdown]
# ## Table 1: CifarNet with Adam, 2 workers
#
# Paper: 86.56% (fp32) against 85.64% (TernGrad) after 300K iterations on full CIFAR-10. Ours are far
# shorter runs on less data (described below from the table itself), so the absolute numbers are
# **not comparable**; only the gap between fp32 and TernGrad at equal steps, paired by seed, is of
# interest.

# %%
t1 = read_results("wen2017", "table1_cifarnet")
if t1 is not None:
    if "step" not in t1.columns:  # tables from before the runs were read every 250 steps
        t1 = t1.assign(step=t1.steps, seed=1)
    t1_data = dataset_of(t1)
    reads = sorted(t1.step.unique())
    display(Markdown(f"Ours: {int(t1.steps.max()) if 'steps' in t1 else reads[-1]} steps on {t1_data}, "
                     f"{t1.seed.nunique()} seed(s), read at step{'s' if len(reads) > 1 else ''} "
                     f"{', '.join(str(int(r)) for r in reads)} ({', '.join(sorted(t1.scale.astype(str).unique()))} "
                     f"scale)."))
    ax = sns.lineplot(data=t1, x="step", y="rerun_value", hue="gradients", style="seed", markers=True)
    ax.set(ylabel="test accuracy (%)", title=f"CifarNet, Adam, 2 workers, {t1_data}")
    plt.show()
    last = t1[t1.step == t1.step.max()]
    display(last[["gradients", "workers", "step", "seed", "paper_value", "rerun_value", "difference", "scale"]])
    # paired by seed: TernGrad minus fp32 at the same seed and step
    wide = t1.pivot_table(index=["step", "seed"], columns="gradients", values="rerun_value")
    if {"fp32", "TernGrad"} <= set(wide.columns):
        wide["TernGrad - fp32 (points)"] = wide["TernGrad"] - wide["fp32"]
        display(wide.round(2))
        display(wide.groupby(level="step").agg(["mean", "std", "count"]).round(2))

# %% [markdown]
# ## What the rerun supports, and what not
#
# The figures in this section are computed from the tables above, whatever scale made them.

# %%
lines = []
if fig3 is not None and (g3 := paired_gaps(fig3, ["optimizer", "workers", "epoch"])) is not None:
    gaps = "; ".join(f"{opt} SGD at {w} workers after epoch {e:g}: {gap_text(r)}" for (opt, w, e), r in g3.iterrows())
    fp32_spread = fig3[fig3.gradients == "fp32"].groupby(["optimizer", "workers", "epoch"]).rerun_value.std().max()
    worst = g3.gap.abs().max()
    within = ("within" if fp32_spread == fp32_spread and worst <= fp32_spread else "beyond")
    lines.append(f"* **LeNet/MNIST, Figure 3** ({dataset_of(fig3)}): TernGrad minus fp32, paired by seed: {gaps}. "
                 f"The largest gap, {worst:.2f} points, is {within} the seed-to-seed spread of fp32 itself "
                 f"({fp32_spread:.2f} points)." if fp32_spread == fp32_spread else
                 f"* **LeNet/MNIST, Figure 3** ({dataset_of(fig3)}): TernGrad minus fp32: {gaps} (one seed: no "
                 f"spread to compare with). The paper's runs to 64 workers and its full schedules are not checked.")
if t1 is not None and (g1 := paired_gaps(t1, ["step"])) is not None:
    last_step = g1.index.max()
    paper_gap = published_gap = None
    paper = t1.groupby("gradients").paper_value.first()
    if {"fp32", "TernGrad"} <= set(paper.index) and paper.notna().all():
        published_gap = paper["TernGrad"] - paper["fp32"]
    below = int(g1.below.sum())
    lines.append(f"* **CifarNet with Adam, Table 1** ({dataset_of(t1)}): after {last_step} steps TernGrad minus "
                 f"fp32 is {gap_text(g1.loc[last_step])}; TernGrad is below fp32 in {below} of "
                 f"{int(g1.seeds.sum())} paired read-outs"
                 + (f"; the paper's gap is {published_gap:+.2f} points after 300K iterations on full CIFAR-10"
                    if published_gap is not None else "") + ". The absolute numbers are not comparable.")
lines.append("* **ImageNet Tables 2 and 3**: not rerun (paper scale only; no ImageNet offline).")
lines.append("* **Figure 5 throughput**: from the performance model, above; not measured on the paper's clusters.")
display(Markdown("\n".join(lines)))
