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
import matplotlib.pyplot as plt
import seaborn as sns

from _common import read_results
from reproduce.paper_tables import load_table

sns.set_theme(style="whitegrid")
published = load_table("wen2017")

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
# Paper: 86.56% (fp32) against 85.64% (TernGrad) after 300K iterations on full CIFAR-10. Ours: 1000
# steps (total batch 128, 32 epochs) on the 4000-image CIFAR-10 SUBSET, 3 seeds, read every 250 steps,
# so the absolute numbers are **not comparable**; only the gap between fp32 and TernGrad at equal
# steps, paired by seed, is of interest (1000 test images: 1 image = 0.1 point).

# %%
t1 = read_results("wen2017", "table1_cifarnet")
if t1 is not None:
    if "step" not in t1.columns:  # tables from before the runs were read every 250 steps
        t1 = t1.assign(step=t1.steps, seed=1)
    ax = sns.lineplot(data=t1, x="step", y="rerun_value", hue="gradients", style="seed", markers=True)
    ax.set(ylabel="test accuracy (%)", title="CifarNet, Adam, 2 workers, CIFAR-10 subset")
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
# * **TernGrad matches fp32 accuracy on LeNet/MNIST with momentum and with vanilla SGD** (Figure 3):
#   supported at 2 and 4 workers. After 1 epoch at 2 workers, TernGrad minus fp32 (paired by seed, 3
#   seeds) is +0.04 +- 0.09 points with momentum (98.08 vs 98.04%) and -0.08 +- 0.01 points with
#   vanilla SGD (95.67 vs 95.75%); at 4 workers (one seed) -0.01 and -0.03 points, and after 2 epochs at
#   2 workers +0.07 points (98.79 vs 98.72%). The seed-to-seed spread of vanilla SGD itself (0.4 points)
#   is larger than any TernGrad-fp32 gap. The paper's runs to 64 workers and its full schedules
#   (polynomial decay, weight decay) are not checked.
# * **CifarNet with Adam, Table 1 (86.56% vs 85.64%)**: the absolute numbers are not reproducible
#   here (1000 steps on the 4000-image subset against 300K iterations on full CIFAR-10; still rising at
#   56.5% for fp32). The direction is: TernGrad ends below fp32 in every seed and at every read-out.
#   After 1000 steps TernGrad minus fp32 is -3.07 +- 0.15 points (53.4 vs 56.5%, 3 seeds, range -3.2
#   to -2.9), and -2.77 +- 0.15 after 750 steps. That is three times the paper's -0.92 points; whether
#   the gap closes with a longer schedule on full data, as the paper's number implies, is not checked.
# * **ImageNet Tables 2 and 3**: not rerun (paper scale only; no ImageNet offline).
# * **Figure 5 throughput**: from the performance model, above; not measured on the paper's clusters.
