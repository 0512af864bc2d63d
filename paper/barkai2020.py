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
# # Gap-Aware (Barkai et al., 2020): rerun beside the paper
#
# Gap-Aware (GA) divides a stale gradient by its Gap, |theta - theta_stale| / C + 1 per parameter,
# instead of dividing the step by the delay as Staleness-Aware (SA) does; DANA sends workers a
# look-ahead of the master's parameters. The paper simulates N gamma-timed workers on one machine and
# reports final accuracy for seven methods and N = 4..48 (Tables 4-6), the Gap against the delay
# (Figure 4) and the asynchronous speedup over SSGD (Figure 12). Reruns: `reproduce/barkai2020.py`.

# %%
import json

import matplotlib.pyplot as plt
import seaborn as sns

from _common import read_results
from reproduce.paper_tables import load_table

sns.set_theme(style="whitegrid")
published = load_table("barkai2020")
table4 = published[published.table == "Table 4"]
ORDER = ["ASGD", "NAG-ASGD", "SA", "GA", "DANA", "DANA-SA", "DANA-GA"]

# %% [markdown]
# ## Tables 4-6: final test accuracy versus the number of workers

# %%
acc = read_results("barkai2020", "tables4_6")
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
sns.lineplot(data=table4[table4.workers > 1], x="workers", y="value", hue="method", hue_order=ORDER,
             marker="o", ax=axes[0])
axes[0].set(title="paper, Table 4 (ResNet-20, CIFAR-10, 160 epochs)", ylabel="test accuracy (%)")
axes[0].legend(fontsize=7)
if acc is not None:
    sns.lineplot(data=acc.assign(method=acc.paper_method), x="workers", y="rerun_value", hue="method",
                 hue_order=ORDER, marker="o", ax=axes[1])
    axes[1].set(title=f"rerun ({acc.scale.iloc[0]}): {acc.model.iloc[0]}, {acc.dataset.iloc[0]}",
                ylabel="test accuracy (%)")
    axes[1].legend(fontsize=7)
plt.tight_layout()
plt.show()
if acc is not None:
    display(acc.pivot_table(index="workers", columns="paper_method", values="rerun_value").round(2))
    display(acc[["method", "workers", "paper_value", "rerun_value", "difference", "tau_mean", "gap_mean", "diverged"]])
    print("reduction:", json.loads(acc.settings.iloc[0]).get("reduction"))

# %% [markdown]
# The small-scale rerun is a different experiment from Table 4: a smaller network without batch norm,
# 4000 training images and 2 epochs instead of 160, one seed, so its accuracies (10-30%) sit far below
# the paper's and the `difference` column measures the reduction, not the method. What can be compared
# is the ordering at equal budget. In agreement with the paper, DANA-GA is the best method at every N
# (30%, 25%, 22% at N = 4, 8, 16), and GA overtakes SA as N grows (at N = 16, 22% against 15%, while
# SA is ahead at N = 4 and 8). NAG-ASGD stays at chance level at every N here, where the paper has it
# collapse only from N = 12 on: at this learning rate and without batch norm, un-penalized momentum
# fails earlier. With one seed and 2 epochs, differences of a few points are within the noise.

# %% [markdown]
# ## Figure 4: mean Gap versus mean delay during training

# %%
gap = read_results("barkai2020", "fig4_gap_vs_delay")
if gap is not None:
    long = gap.melt(id_vars=["method", "workers", "epoch"], value_vars=["gap_mean", "delay_mean"],
                    var_name="measure", value_name="value")
    g = sns.relplot(data=long, x="epoch", y="value", hue="measure", col="method", row="workers", kind="line",
                    marker="o", height=2.8, aspect=1.3)
    plt.show()
    display(gap.groupby(["method", "workers"])[["gap_mean", "delay_mean", "rerun_value"]].mean()
            .rename(columns={"rerun_value": "gap / delay"}))

# %% [markdown]
# The paper (CIFAR-100, WRN-16-4) finds the Gap constantly below the delay, and DANA-GA's Gap below
# GA's. In the rerun (16 workers, delay about 16) GA's mean Gap stays at about half the delay through
# the run, and DANA-GA's look-ahead lowers it to about a quarter: both directions agree. With a
# constant learning rate the Gap slowly grows during the short run. The paper's further observation, that the
# Gap falls at the end of training when the learning rate decays, is not tested (no decay in the
# short run).

# %% [markdown]
# ## Figure 12: asynchronous over synchronous speedup, gamma workers

# %%
sp = read_results("barkai2020", "fig12_speedup")
if sp is not None:
    long = sp.melt(id_vars=["kind", "workers"], value_vars=["speedup_sim", "speedup_closed_form"],
                   var_name="source", value_name="ASGD / SSGD throughput")
    ax = sns.lineplot(data=long, x="workers", y="ASGD / SSGD throughput", hue="kind", style="source", marker="o")
    ax.axhline(1.21, color="tab:blue", ls=":", lw=1, label="paper homogeneous, up to 1.21")
    ax.axhline(6.0, color="tab:orange", ls=":", lw=1, label="paper heterogeneous, 6x")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    plt.show()
    best = sp.groupby("kind").agg(max_rerun=("rerun_value", "max"), max_closed_form=("closed_form_value", "max"),
                                  paper=("paper_value", "first"), metric=("metric", "first"))
    display(best)
    display(sp[["kind", "workers", "speedup_sim", "speedup_sim_std", "speedup_closed_form", "paper_value",
                "rerun_value"]])

# %% [markdown]
# The paper's Figure 12(b) states "up to 21%" for homogeneous and "6x" for heterogeneous workers. The
# simulation (the same gamma CVB model) and the closed form agree with each other and with the paper
# in size: the heterogeneous ratio reaches about 6x near 1000 workers (6.4x simulated, 6.7x closed
# form at 1024). The homogeneous ratio keeps growing with N, past 21% at 32 workers and about 35% at
# 1024, where the paper's curve tops out near 21%; the difference probably lies in how the paper
# draws the homogeneous machines' mean (our reading: one shared machine mean, every task ~ Gamma with V_mach = 0.1), which the paper
# text leaves open. For heterogeneous workers and N <= 32 the simulation (3 seeds, 100 gradients per
# worker) lies well below the closed form: with few machines the run's speed depends on the drawn
# machine means, and the seeds spread widely (`speedup_sim_std`); the paper averaged 20 runs of
# 100000 iterations.
