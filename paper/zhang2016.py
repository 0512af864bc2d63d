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
# # Staleness-aware ASGD (Zhang et al., 2016): rerun beside the paper
#
# n-softsync: the parameter server updates after floor(N/n) gradients from any learners, and divides
# each gradient's rate by its staleness, alpha = eta0/tau. The paper (30 learners, CIFAR-10 and
# ImageNet on a POWER7 cluster) finds a mean staleness close to n with tau in 0..2n, a 22x-28x
# speedup at 30 learners, and about 18% CIFAR-10 test error for every n with alpha = eta0/tau, while a
# constant rate fails at large n. Reruns: `reproduce/zhang2016.py`; the scale of each row is in its
# `scale` and `settings` columns.

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from _common import read_results, seed_summary
from reproduce.paper_tables import load_table

sns.set_theme(style="whitegrid")
published = load_table("zhang2016")
display(published[["table", "workers", "method", "metric", "value", "unit"]])

# %% [markdown]
# ## Figure 1: staleness distribution, 30 learners
#
# Event-driven simulator without a model (only arrivals and the master's clock), homogeneous gamma
# batch times. tau = master clock at apply minus clock at pull.

# %%
fig1 = read_results("zhang2016", "fig1_staleness")
if fig1 is not None:
    hist = (fig1.drop_duplicates("n")[["n", "tau_hist"]]
            .assign(tau_hist=lambda d: d.tau_hist.map(json.loads)))
    long = pd.DataFrame([{"n": f"{r.n}-softsync", "tau": int(t), "fraction": c / sum(r.tau_hist.values())}
                         for r in hist.itertuples() for t, c in r.tau_hist.items()])
    g = sns.relplot(data=long, x="tau", y="fraction", col="n", col_wrap=3, kind="line", drawstyle="steps-mid",
                    height=2.4, aspect=1.3, facet_kws={"sharex": False})
    for ax, n in zip(g.axes.flat, hist.n):
        ax.axvline(n, color="grey", ls="--")
        ax.axvline(2 * n, color="red", ls=":")
    plt.show()
    display(fig1[["n", "metric", "paper_value", "rerun_value", "difference", "scale"]])

# %% [markdown]
# Grey: tau = n, red: tau = 2n. The simulated master reproduces the paper's shape: the mean staleness
# sits just below n (the first c updates of a run are fresh), 1-softsync gives tau in {0, 1, 2}, and no
# gradient was staler than 2n. The paper's real cluster had its own timing; the simulator's gamma batch
# times (coefficient of variation about 0.14) are an assumption.

# %% [markdown]
# ## Figure 2: speedup over one learner
#
# The performance model (asgd: each learner pushes and pulls through one parameter server; ssgd: ring
# allreduce) for the Caffe cifar10-quick network, weak scaling, batch 128 per learner, on the
# terngrad-infiniband preset (P100 nodes, 100 Gbps InfiniBand; the paper's P775 is not a preset) and,
# for contrast, terngrad-ethernet (1 Gbps). At small scale also real MPI parameter-server runs on this
# machine (1..4 workers plus the server, all on the same shared CPU cores).

# %%
fig2 = read_results("zhang2016", "fig2_speedup")
if fig2 is not None:
    model = fig2[fig2.source.str.startswith("model")]
    curves = model.melt(id_vars=["cluster", "variant", "learners"], value_vars=["asgd_speedup", "ssgd_speedup"],
                        var_name="strategy", value_name="speedup")
    curves["strategy"] = curves.strategy.str.replace("_speedup", "")
    curves["setting"] = curves.cluster + ", " + curves.variant
    ax = sns.lineplot(data=curves, x="learners", y="speedup", hue="setting", style="strategy", marker="o")
    ax.plot([1, 30], [1, 30], color="black", lw=0.8, label="linear")
    paper = model.dropna(subset=["paper_value"])
    if len(paper):
        ax.errorbar([30], [(paper.paper_value.iloc[0] + paper.paper_high.iloc[0]) / 2],
                    yerr=[[(paper.paper_high.iloc[0] - paper.paper_value.iloc[0]) / 2]], fmt="s", color="red",
                    label="paper 22x-28x")
    ax.set(xlabel="learners", ylabel="speedup over one learner (model)")
    ax.legend(fontsize=7)
    plt.show()
    display(model[model.learners == 30][["source", "asgd_speedup", "ssgd_speedup", "asgd_over_ssgd_pct",
                                         "paper_value", "paper_high", "paper_asgd_over_ssgd_pct"]])
    mpi = fig2[fig2.source == "mpi softsync"]
    if len(mpi):
        display(mpi[["learners", "asgd_samples_per_s", "asgd_speedup", "scale", "note"]])

# %% [markdown]
# On InfiniBand the model's ASGD speedup at 30 learners (about 27x) falls inside the paper's 22x-28x.
# The paper's "ASGD about 50% faster than SSGD" is not reproduced: without stragglers the model's
# allreduce is at least as fast as one parameter server, and with gamma stragglers (cv 0.1) ASGD gains
# only about 13% at 30 learners. On 1 Gbps Ethernet the single server's link caps ASGD near 1x.
# The real MPI runs (trainers.asynchronous.ps, softsync with n = N, 400 gradients of cifar10-quick at batch 16,
# made while nothing else ran) give 1.89x at 2 workers and 1.96x / 1.92x at 3 / 4: all workers and the
# server share this machine's two CPU cores, which cap the speedup at 2x. They show that the trainer
# scales up to the cores it has, not how a cluster of 30 learners scales.

# %% [markdown]
# ## Figure 3: test error with alpha = eta0/tau and with a constant eta0

# %%
fig3 = read_results("zhang2016", "fig3_accuracy")
if fig3 is not None:
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.5))
    sns.barplot(data=fig3, x="n", y="rerun_value", hue="lr_rule", ax=axes[0])
    for v, style in ((18.0, "--"), (90.0, ":")):
        axes[0].axhline(v, color="grey", ls=style)
    axes[0].set(ylabel="final test error (%)", title=f"rerun ({fig3.scale.iloc[0]} scale); grey: paper 18% / 90%")
    axes[0].legend(fontsize=7)
    curves = pd.DataFrame([{"n": r.n, "lr_rule": r.lr_rule, "seed": r.seed, "epoch": e, "test error (%)": err}
                           for r in fig3.itertuples() for e, err in json.loads(r.test_error_curve)])
    for ax, rule in zip(axes[1:], ["alpha = eta0/tau", "constant eta0"]):
        sns.lineplot(data=curves[curves.lr_rule == rule], x="epoch", y="test error (%)", hue="n", marker="o",
                     errorbar=None, ax=ax, palette="viridis")  # mean over seeds
        ax.set(title=rule, ylim=(40, 95))
        ax.legend(title="n", fontsize=7)
    plt.tight_layout()
    plt.show()
    display(fig3[["n", "lr_rule", "seed", "learners", "tau_mean", "diverged", "epochs_run", "paper_value",
                  "rerun_value", "difference", "scale"]])
    display(seed_summary(fig3, ["lr_rule", "n"]))
    print("reduction:", json.loads(fig3.settings.iloc[0]).get("reduction"))

# %% [markdown]
# The small-scale rerun trains the CIFAR-10 subset (4000 images) for 12 epochs with 8 learners and 3
# seeds, so its errors (56-90%) are far above the paper's 18% after 140 epochs on 50000 images: the
# absolute numbers (and the `difference` column) measure the reduction, not the method. The comparison
# of the two rate rules at equal budget follows the paper:
#
# * **alpha = eta0/tau keeps the error about the same for every n**: 63.7, 61.4, 62.9, 60.1% for
#   n = 1, 2, 4, 8 (final epoch, mean of 3 seeds; the seeds differ by up to 13 points at n = 4, so these
#   four are equal within noise; the verdict's reading, the mean of the last 3 epochs, is n = 8 minus
#   n = 1: -5.0 [-18.9, 8.9] points, inconclusive against +-2.9).
# * **a constant eta0 fails as n grows**: 61.8% at n = 1 (where tau is about 1 and both rules nearly
#   coincide), 71.4% at n = 2, chance level (89.1-90.0%) for every seed at n = 4, and at n = N = 8 seeds
#   0 and 1 diverge (loss not finite) within 0.7 and 1.3 epochs and seed 2 ends at chance (89.1%), as the
#   paper's large-n constant-rate runs (90% error).
#
# Not reproduced: the 18% itself (it needs full CIFAR-10 and 140 epochs: `--scale paper`), and n up to
# 30 learners (8 here).
