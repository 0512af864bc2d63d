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

from _common import read_results, seed_summary
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
                 hue_order=ORDER, marker="o", errorbar=("pi", 100), ax=axes[1])
    axes[1].set(title=f"rerun ({acc.scale.iloc[0]}): {acc.model.iloc[0]}, {acc.dataset.iloc[0]}; "
                      f"line: mean, band: range of {acc.seed.nunique()} seed(s)",
                ylabel="test accuracy (%)")
    axes[1].legend(fontsize=7)
plt.tight_layout()
plt.show()
if acc is not None:
    display(acc.pivot_table(index="workers", columns="paper_method", values="rerun_value")
            [[m for m in ORDER if m in set(acc.paper_method)]].round(2))
    display(seed_summary(acc, ["workers", "paper_method"]))
    best = acc.loc[acc.groupby(["workers", "seed"]).rerun_value.idxmax(), ["workers", "seed", "paper_method",
                                                                           "rerun_value"]]
    display(best.rename(columns={"paper_method": "best method", "rerun_value": "its accuracy (%)"}))
    display(acc[["method", "workers", "seed", "paper_value", "rerun_value", "difference", "tau_mean", "gap_mean",
                 "diverged"]])
    print("reduction:", json.loads(acc.settings.iloc[0]).get("reduction"))

# %% [markdown]
# The small-scale rerun is a different experiment from Table 4: a smaller network without batch norm
# (cifar10-quick), 4000 training images, 12 epochs instead of 160 (same schedule shape: warm-up, /10 at
# 50% and 75%), lr 0.02 instead of 0.1, and 3 seeds instead of 5. Its accuracies (9-52%) therefore sit
# far below the paper's 90-92%, and the `difference` column measures the reduction, not the method.
# What can be compared is the ordering at equal budget and its trend with N:
#
# * **DANA-GA is the best method at N = 8 and 16 for every seed**, and at N = 4 for 2 of 3 (seed 2:
#   DANA-SA 51.4 against 51.2%): 51.8 / 45.9 / 38.9% (mean of 3 seeds) at N = 4 / 8 / 16, ahead of the
#   next method (DANA-SA 49.5 / 38.2 / 29.9%) by 2.3-9.0 points. The paper has it best at N = 8 and 16
#   and 0.07 point behind DANA at N = 4.
# * **The momentum methods without a staleness penalty fail earlier than in the paper**: NAG-ASGD stays
#   at chance at every N here (its loss goes non-finite at N = 8 and 16), where the paper has it at
#   87.7% at N = 8 and at chance from N = 12; plain DANA is unstable here (one seed of 3 at chance
#   already at N = 4, two at N = 8, all at N = 16), where the paper has it fall only from N = 24 (67.7%). Without batch norm, and
#   with the effective step eta/(1-gamma) = 0.2 of the momentum methods, our network tolerates less
#   staleness. The penalized variants (SA, GA, DANA-SA, DANA-GA) stay stable at every N.
# * **Where this rerun disagrees**: the paper has GA and SA above plain ASGD at N = 4 and 8 (e.g. GA
#   91.78 vs ASGD 90.50% at N = 4). Here GA is above ASGD at N = 4 and 16 but below at N = 8, and SA is
#   below ASGD at every N (ASGD 39.0 / 35.6 / 23.5%, GA 41.7 / 33.0 / 27.3%, SA 35.6 / 27.3 / 22.6%).
#   ASGD has no momentum, so at lr 0.02 it takes 10x smaller effective steps than the momentum
#   methods, which helps it with staleness on this network. Every method also loses far more accuracy
#   with N than in the paper (DANA-GA: 13 points from N = 4 to 16 here, 0.08 point in the paper):
#   12 epochs leave no time to recover from the stale early updates.
# * Spread between the 3 seeds is up to 10 points for some methods (SA at N = 4: 32.2-41.8%; see the
#   std column), so only differences larger than that are read above.

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
# The paper (CIFAR-100, WRN-16-4) finds the Gap constantly below the delay, DANA-GA's Gap below GA's,
# and the Gap falling when the learning rate decays. In the rerun (16 workers, delay about 16, the
# 12-epoch schedule above with lr /10 at epochs 6 and 9, seed 0, evaluations on 200 test images) all
# three hold: GA's mean Gap is 7.7-9.2 in the first 3 epochs (about half the delay), DANA-GA's
# look-ahead keeps it at 3.6-3.9 (about a quarter), and after each decay both fall (GA 3.5 -> 1.9 after
# epoch 6, 1.8 -> 1.2 after epoch 9), ending near 1 (no penalty) while the delay stays at 16.

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
# simulation (the same gamma CVB model) and the closed form agree with each other and with the paper in
# size: the heterogeneous ratio reaches about 6x near 1000 workers (6.4x simulated, 6.7x closed form at
# 1024). The homogeneous ratio keeps growing with N, past 21% at 32 workers and about 35% at 1024, where
# the paper's curve tops out near 21%; the difference probably lies in how the paper draws the homogeneous
# machines' mean (our reading: one shared machine mean, every task ~ Gamma with V_mach = 0.1), which the
# paper text leaves open. For heterogeneous workers and N <= 32 the simulation (3 seeds, 100 gradients per
# worker) lies well below the closed form: with few machines the run's speed depends on the drawn machine
# means, and the seeds spread widely (`speedup_sim_std`); the paper averaged 20 runs of 100000 iterations.
