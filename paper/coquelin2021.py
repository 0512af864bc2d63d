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
# # DASO (Coquelin et al., 2021): rerun beside the paper
#
# DASO averages gradients inside a node every batch and parameters across nodes only every B
# batches, overlapped with W batches of compute. The paper reports up to 25% less time than Horovod
# for ResNet-50 on ImageNet on JUWELS Booster (4 A100 per node), 16 to 256 GPUs.

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from _common import read_results, results_dir
from reproduce.paper_tables import load_table

sns.set_theme(style="whitegrid")
published = load_table("coquelin2021")
display(published[["table", "model", "workers", "method", "metric", "value", "unit"]])

# %% [markdown]
# ## The model's time saving, ResNet-50 on juwels-booster

# %%
savings = read_results("coquelin2021", "model_savings")
if savings is not None:
    ax = sns.lineplot(data=savings, x="gpus", y="rerun_value", hue="variant", marker="o")
    ax.axhline(savings.paper_value.iloc[0], color="grey", ls="--", label="paper (best case)")
    ax.set(xscale="log", ylabel="time saving over Horovod (%)", xlabel="GPUs")
    ax.set_xscale("log", base=2)
    ax.legend()
    plt.show()
    display(savings[["variant", "gpus", "horovod_step_s", "daso_step_s", "rerun_value", "paper_value"]])

# %% [markdown]
# Without per-batch time noise the model predicts almost no saving: with these presets ResNet-50 is
# compute-bound on A100s, and Horovod's hierarchical fp16 allreduce is already cheap. With the gamma
# straggler model, DASO's non-blocking phase waits only for the 4 GPUs of a node instead of all of
# them, and the predicted saving grows with the GPU count; the model thus points at stragglers, not
# bandwidth, as the source of the paper's savings.

# %% [markdown]
# ## Small real runs: DASO against SSGD on LeNet/MNIST, 4 ranks = 2 pretend nodes x 2
#
# Both with per-rank batch 32, lr 0.01, momentum 0.9, seed 1. DASO: 1 warm-up epoch (blocking bf16 global
# sync every batch), cycling epochs (node-local allreduce every batch, non-blocking fp32 global parameter
# sync every B=4 batches, merged W=1 batch later; the epoch-end sync blocking in fp32, as HeAT's), 1
# cool-down epoch (blocking bf16). HeAT's default is 4 warm-up and 4 cool-down epochs; 1 and 1 here
# leave 2 cycling epochs in a 4-epoch run. Time per epoch is rank 0's sum of
# measured step times. All 4 ranks share one 2-core machine with other jobs: the "network" between pretend
# nodes is shared memory, and times are noisy.

# %%
small = read_results("coquelin2021", "small_runs")
if small is not None:
    per = small[small.algo.isin(["ssgd", "daso"])]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, metric, label in zip(axes, ["epoch_wall_s", "test_accuracy"], ["wall time of the epoch (s)",
                                                                          "test accuracy after the epoch (%)"]):
        sns.barplot(data=per[per.metric == metric], x="epoch", y="rerun_value", hue="algo", ax=ax)
        ax.set(ylabel=label)
    acc = per[per.metric == "test_accuracy"].rerun_value
    axes[1].set_ylim(max(0, acc.min() - 2), 100)
    plt.tight_layout()
    plt.show()
    display(per.pivot_table(index=["epoch"], columns=["metric", "algo"], values="rerun_value").round(3))
    sav = small[small.metric == "time_saving_pct"]
    display(sav[["epoch", "phase", "paper_value", "rerun_value", "difference"]])

# %% [markdown]
# ## DASO against SSGD under equal load, beside the model's prediction for this machine
#
# 2 MPI ranks (one per core) as 2 pretend nodes of one rank, LeNet on MNIST, 300 steps per run.
# SSGD allreduces the gradients every batch; DASO stays in its cycling phase (non-blocking fp32 global
# parameter sync every B=4 batches, merged W=1 batch later). SSGD and DASO runs alternate round after
# round, so both see the same load. Per run: rank 0's median step time (DASO: median over 4-step cycles, so
# the sync steps count), and `perfmodel validate`'s prediction from a profile of this machine made in
# the same session. Per-rank batch 4 makes communication a large share of a step; batch 32 does not.

# %%
timing = read_results("coquelin2021", "daso_timing")
if timing is not None:
    runs = timing[timing.algo.isin(["ssgd", "daso"])].copy()
    runs["measured (ms)"] = 1e3 * runs.rerun_value.astype(float)
    runs["predicted (ms)"] = 1e3 * runs.predicted_value.astype(float)
    long = runs.melt(id_vars=["batch", "algo", "round"], value_vars=["measured (ms)", "predicted (ms)"],
                     var_name="source", value_name="step time (ms)")
    g = sns.catplot(data=long, x="algo", y="step time (ms)", hue="source", col="batch", kind="bar",
                    sharey=False, height=3.2, aspect=1.2)
    plt.show()
    display(runs.pivot_table(index=["batch", "round"], columns="algo",
                             values=["measured (ms)", "predicted (ms)"]).round(3))
    sav = timing[timing.algo == "daso vs ssgd"]
    display(sav[["batch", "paper_value", "rerun_value", "predicted_value", "saving_per_round"]]
            .rename(columns={"rerun_value": "measured saving (%)", "predicted_value": "predicted saving (%)"}))

# %% [markdown]
# Where DASO's communication time goes: the median `t_comm` per kind of step, from the same logs
# (`start`: the global Iallreduce is posted; `merge`: its wait and the merge, W=1 batch later; `none`:
# no global traffic). SSGD's row is its blocking allreduce of the fp32 gradients, every batch.

# %%
if timing is not None:
    parts = []
    for r in runs.itertuples():
        for line in (results_dir() / "coquelin2021" / r.log).read_text().splitlines():
            d = json.loads(line)
            if d.get("type") != "step":
                continue
            kind = "allreduce" if r.algo == "ssgd" else ("merge" if d.get("merged") else d.get("sync", "none"))
            parts.append({"batch": r.batch, "algo": r.algo, "kind": kind, "t_comm (ms)": 1e3 * d["t_comm"]})
    per_kind = pd.DataFrame(parts).groupby(["batch", "algo", "kind"])["t_comm (ms)"].agg(["median", "count"])
    display(per_kind.round(3))

# %% [markdown]
# ## DASO that cycles: B and W on training-loss plateaus
#
# LeNet/MNIST, 4 ranks = 2 pretend nodes x 2, per-rank batch 32, lr 0.01, momentum 0.9, seed 1;
# HeAT's 4 warm-up and 4 cool-down epochs around the cycling epochs, the paper's rule from max B = 8
# (B starts at 8 with W = B/4 = 2; each plateau halves both, minimum 1; a plateau at B = W = 1 resets
# them), the authors' plateau detector (no 5% relative improvement of the epoch's mean training loss
# for more than 2 epochs); SSGD for as many epochs beside it. Two weight decays: none, with 24 cycling
# epochs, and the paper's 1e-4 for ResNet-50, with 48.

# %%
cycling = read_results("coquelin2021", "daso_cycling")
if cycling is not None:
    cyc = cycling.copy()
    cyc["run"] = cyc.algo + ", weight decay " + cyc.weight_decay.map("{:g}".format)
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.5))
    sns.lineplot(data=cyc, x="epoch", y="train_loss", hue="run", ax=axes[0])
    axes[0].set(yscale="log", ylabel="mean training loss of the epoch")
    sns.lineplot(data=cyc, x="epoch", y="rerun_value", hue="run", ax=axes[1], legend=False)
    axes[1].set(ylabel="test accuracy (%)", ylim=(max(0, cyc.rerun_value.min() - 0.5), 100))
    daso = cyc[cyc.algo == "daso"]
    sns.lineplot(data=daso, x="epoch", y="B", hue="run", drawstyle="steps-mid", ax=axes[2])
    sns.lineplot(data=daso, x="epoch", y="W", hue="run", drawstyle="steps-mid", ls="--", ax=axes[2], legend=False)
    axes[2].set(ylabel="B (solid), W (dashed)")
    plt.tight_layout()
    plt.show()
    display(daso[daso.phase == "cycling"].pivot_table(index="epoch", columns="weight_decay",
                                                      values=["B", "W", "plateaus"]))
    last = cyc[cyc.epoch > cyc.groupby("run").epoch.transform("max") - 3]  # each run's last 3 epochs
    display(last.groupby(["weight_decay", "algo"]).agg(epochs=("epoch", "max"), plateaus=("plateaus", "max"),
                                                       test_accuracy_last_3=("rerun_value", "mean")).round(3))

# %% [markdown]
# ## What the rerun supports, and what not
#
# * **DASO saves time over a synchronous allreduce** (paper: up to 25% for ResNet-50 on 16-256 A100s
#   against Horovod): **not shown on this machine**. In alternating rounds (2 ranks
#   = 2 pretend nodes, LeNet/MNIST, 300 steps per run, 3 rounds; rerun after the fix that sends the
#   cycling phase's last sync in fp32), DASO's cycling phase saved 10.9% of the step time at per-rank
#   batch 4 (per round +13.7%, -2.0%, +10.9%) and 2.9% at batch 32 (+5.2%, +7.0%, -2.1%): one round
#   in three has the other sign, so the saving is within the round-to-round noise (earlier sets of
#   the same runs gave 0.24% / 1.7% and 5.0% / 0.25%). The per-step breakdown: DASO's global sync
#   costs 0.10 ms to post and 0.67-0.74 ms at the merge per 4-step cycle, i.e. 0.19-0.21 ms per step,
#   against 0.25-0.30 ms per step for SSGD's blocking allreduce of the same 1.7 MB fp32 vector. The
#   non-blocking Iallreduce does not progress while both ranks compute (two busy ranks on two cores,
#   no progress thread), and its wait then costs 2.5-2.8x a blocking Allreduce. A set run while other
#   jobs loaded the 2 cores (not kept) gave 48.6% and 14.7% with rounds from -17.7% to +65.6%: there
#   SSGD's blocking allreduce waited for the other rank to be scheduled (2.2-3.2 ms per step), the
#   straggler effect the model points at.
# * **The model against these runs**: with the profile's iallreduce / allreduce factor (1.74 at 1.7 MB,
#   Iallreduce waited at once) and `daso_progress = "wait"` (what `perfmodel validate` and `perfmodel
#   predict --profile` take for CPU ranks), the model predicts savings of 3.7% (batch 4) and 0.84%
#   (batch 32): within the noise of the measured 10.9% and 2.9%. Under its GPU assumption, that the
#   W=1 batch of compute hides the sync, it predicted 12.4% and 2.8% (first set of runs). It
#   under-predicts DASO's communication (0.11 vs 0.19-0.22 ms per step): waited right after being
#   posted, an Iallreduce costs 1.74x an Allreduce, but waited after a batch of compute it costs more.
#   SSGD's communication is predicted within 15% (0.26 vs 0.25-0.30 ms); the step times are
#   over-predicted 1.8-2.3x because the profile's compute (3.7 ms at batch 4, 17 ms at batch 32,
#   measured in an earlier session) is slower than these runs' (1.7-1.8 and 7.0 ms): the savings are
#   ratios of one profile, the absolute times are not.
# * **Accuracy is kept** (paper: similar accuracy up to 128 GPUs): supported at this tiny scale; after
#   2 epochs DASO and SSGD both reach about 98.7% (98.67% and 98.70%, one seed each), DASO is behind
#   after its warm-up epoch (97.61% against 98.01%) and reaches 98.95% after its 4 epochs.
# * **The model's ResNet-50 prediction** (above, with 4 warm-up and 4 cool-down epochs of 90 blocking
#   every batch): 0.16-0.73% without stragglers, 6.2-14.4% with gamma stragglers, against the paper's 25%.
# * **B and W on plateaus** (section "DASO that cycles" above): with the paper's weight decay 1e-4 and
#   48 cycling epochs the detector fired 7 times from epoch 29, and B/W went 8/2, 4/1, 2/1, 1/1, back
#   to 8/2 (the paper's reset), 4/1 and 2/1; DASO ended at 99.13% test accuracy against SSGD's 99.08%
#   (means of the last 3 epochs, one seed each). In 24 cycling epochs no plateau fired, with or without
#   weight decay: LeNet's training loss on MNIST kept falling 5-10% an epoch, above the 5% threshold.
# * **Not checked**: ImageNet/ResNet-50 and CityScapes, more than 2 (pretend) nodes, the paper's max
#   B = 4 (here 8, so that W can move).
