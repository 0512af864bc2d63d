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
from reproduce.barkai2020 import current_setting
from reproduce.paper_tables import load_table

sns.set_theme(style="whitegrid")
published = load_table("barkai2020")
table4 = published[published.table == "Table 4"]
ORDER = ["ASGD", "NAG-ASGD", "SA", "GA", "DANA", "DANA-SA", "DANA-GA"]

# %% [markdown]
# ## How the small setting's learning rate was chosen
#
# The rule, stated before the sweep: the largest learning rate of {0.02, 0.01, 0.005} at which both
# momentum baselines (NAG-ASGD and DANA) reach at least ASGD's final accuracy at N = 4, as they do in
# Table 4 (91.43 and 92.13 against 90.50%); N = 4, seed 0, warm-up 0.5 epoch (the paper's 5 of 160,
# scaled) or 3 epochs.

# %%
screen = read_results("barkai2020", "setting_screen")
if screen is not None:
    display(screen.pivot_table(index=["lr", "lr_warmup_epochs"], columns="paper_method", values="rerun_value")
            .round(1))
    chosen = screen[screen.chosen]
    print("chosen:", ", ".join(f"lr {lr}, warm-up {w} epoch(s)" for lr, w in
                               chosen[["lr", "lr_warmup_epochs"]].drop_duplicates().itertuples(index=False)))

# %% [markdown]
# ## Tables 4-6: final test accuracy versus the number of workers

# %%
acc = read_results("barkai2020", "tables4_6")
if acc is not None:  # the scale's current setting; rows of an earlier learning rate stay in the file
    acc = current_setting(acc)
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
# 50% and 75%), lr 0.005 instead of 0.1 (chosen by the screen above), and 3 seeds instead of 5. Its
# accuracies (9-50%) therefore sit far below the paper's 90-92%, and the `difference` column measures the
# reduction, not the method. What can be compared is the ordering at equal budget and its trend with N
# (means of 3 seeds at N = 4 / 8 / 16):
#
# * **All seven methods train at N = 4**, as in Table 4: DANA 49.1% is best for every seed (the paper's
#   best at N = 4, 92.13%), then DANA-GA 45.4% (the paper's second, 92.06%); ASGD is last (26.3%; the
#   paper's last, 90.50%). NAG-ASGD reaches 35.6%, above ASGD, as in the paper (91.43 against 90.50%).
# * **N = 8: DANA-GA and DANA tie** (39.2 against 39.3%; DANA ahead for 2 seeds of 3). The paper has
#   DANA-GA 0.16 point ahead (92.13 against 91.97%), a margin no 3-seed rerun could resolve; the verdict
#   is inconclusive at this scale.
# * **N = 16: DANA-GA is best for every seed** (33.5%), 6.7 points ahead of GA; DANA (20.1%: 9.0, 19.5,
#   31.8% by seed) and NAG-ASGD (12.1%, at chance for 2 seeds) fail, NAG-ASGD as in the paper (10.00% at
#   N = 16). DANA falls earlier than in the paper, which has it at 89.68% at N = 16 and failing from 24.
# * **GA and SA beat ASGD at N = 4 and 8 for every seed** (GA 36.7 / 31.4%, SA 35.0 / 27.8%, ASGD
#   26.3 / 26.0%), as in the paper. At N = 16 GA stays above ASGD (26.8 against 24.7%) and SA falls
#   below (18.1%); the paper has both just below ASGD there (89.59, 88.93 against 89.82%).
# * **Where this rerun disagrees**: DANA-SA is below SA at N = 8 and 16 (22.1 / 16.4 against 27.8 /
#   18.1%), where the paper has it above (90.99 / 89.48 against 90.63 / 88.93%); and every method
#   except ASGD loses far more accuracy with N than in the paper (DANA-GA: 12 points from N = 4 to 16
#   here, 0.08 point in the paper): 12 epochs leave little time to recover from stale early updates.
#   ASGD, without momentum, takes 10x smaller effective steps and is nearly flat in N (26.3 to 24.7%;
#   the paper's 90.50 to 89.82%).
# * The earlier small setting, lr 0.02, had NAG-ASGD at chance for every N and DANA losing a seed
#   already at N = 4, so its ordering was read where the baselines failed; its rows stay in
#   results/barkai2020/tables4_6.csv (column `lr`) and are left out here.

# %% [markdown]
# ## Figure 4: mean Gap versus mean delay during training

# %%
gap = read_results("barkai2020", "fig4_gap_vs_delay")
if gap is not None:
    gap = current_setting(gap)
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
# three hold: GA's mean Gap is 7.7-11.2 in the first 6 epochs (half to two thirds of the delay),
# DANA-GA's look-ahead keeps it at 3.6-4.0 (about a quarter), and after each decay both fall (GA 11.2
# -> 3.5 after epoch 6, 2.6 -> 1.3 after epoch 9; DANA-GA 3.6 -> 1.7 and 1.3 -> 1.1), ending near 1
# (no penalty) while the delay stays at 16.

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
