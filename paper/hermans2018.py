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
# # Gradient Energy Matching (Hermans et al., 2018): rerun beside the paper
#
# GEM rescales every asynchronous worker's update so that the energy of all workers' updates together
# matches the energy of sequential momentum SGD (the "proxy"); the master just adds what it receives.
# The paper's MNIST claims: GEM stays stable up to 100 asynchronous workers and reaches 99.38% test
# accuracy there, while Downpour "faces strong convergence issues" as workers grow; with a deliberately
# large learning rate Downpour fails and GEM does not (Section 4.2, Figure 6).
#
# Our runs use the deterministic event-driven simulator of N asynchronous workers
# (`trainers simulate`, homogeneous gamma batch times), the paper's MNIST CNN, worker batch 64, lr 0.05,
# momentum 0.9 and `--data replicate` (each worker gets its own pass over the data).
# `reproduce/hermans2018.py` makes the tables. GEM runs in three settings (the `protocol` column):
#
# * `paper`: the rule as printed (the CLI default): commit, then pull; no clamp of pi, eps 1e-16.
# * `paper-clamp`: the paper's protocol (the worker commits, then pulls, so the central shift it
#   subtracts holds only the other workers' updates) with the authors' clamp of pi to [0, 5] and
#   eps 1e-12 added to |Delta|. The full-epoch N=100 runs used this setting.
# * `authors`: the authors' public code, where the worker pulls the central variable just before it
#   commits, so the shift also holds its own last update, and the denominator is |Delta + eps|;
#   pi clamped to [0, 5], eps 1e-12.

# %%
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from _common import read_results, results_dir, seed_summary
from reproduce.paper_tables import load_table
from trainers.log import read_run_log

sns.set_theme(style="whitegrid")
published = load_table("hermans2018")
display(published[["table", "workers", "method", "metric", "value", "unit"]])


def curves(frame: pd.DataFrame) -> pd.DataFrame:
    """Test-accuracy curves of the runs in `frame`, read from their logs (absent logs are skipped)."""
    parts = []
    for row in frame.itertuples():
        path = results_dir() / "hermans2018" / row.log
        if not path.exists():
            continue
        evals = read_run_log(path).evals
        parts.append(pd.DataFrame({"method": row.method, "workers": row.workers, "lr": row.lr,
                                   "epochs per worker": [e["epoch"] for e in evals],
                                   "test accuracy (%)": [100 * e["test_acc"] for e in evals]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


# %% [markdown]
# ## Stability and final accuracy against the number of workers
#
# "diverged": the loss became non-finite; "collapsed": the run ended at chance level (test accuracy
# at most 20%, loss back at ln 10 = 2.30) after its training loss had dropped below 2.0; "stuck at
# chance": it ends at chance and its loss never dropped below 2.0 (stuck from the start, or, with a
# reduced budget and a small effective step, simply too slow). Rows at reduced scale give every worker only a
# fraction of an epoch (0.04 at small scale; the `note` and `epochs_per_worker` columns say how much).

# %%
def with_method(frame: pd.DataFrame) -> pd.DataFrame:
    """A `method` column: the rule, and for GEM its protocol."""
    frame["method"] = [r if r != "gem" else f"gem ({p})" for r, p in zip(frame.rule, frame.protocol)]
    return frame


sweep = read_results("hermans2018", "workers_sweep")
if sweep is not None:
    sweep = with_method(sweep)
    sweep["run"] = sweep.epochs_per_worker.map(lambda f: f"{f:g} epoch per worker")
    g = sns.relplot(data=sweep, x="workers", y="rerun_value", hue="method", style="run", kind="line",
                    marker="o", height=3.5, aspect=1.4)
    g.set(xscale="log", ylabel="final test accuracy (%)", xlabel="asynchronous workers N")
    g.ax.axhline(99.38, color="grey", ls="--", lw=1)
    g.ax.text(sweep.workers.min(), 99.38, " paper: GEM, N=100", va="bottom", fontsize=8)
    plt.show()
    display(seed_summary(sweep, ["epochs_per_worker", "workers", "method"]))

# %% [markdown]
# ## Figure 5 shape: test accuracy over training with 100 workers (full epoch per worker)

# %%
if sweep is not None:
    full = sweep[sweep.epochs_per_worker == 1.0]
    c = curves(full)
    if not c.empty:
        ax = sns.lineplot(data=c, x="epochs per worker", y="test accuracy (%)", hue="method", style="workers",
                          marker="o")
        ax.set_title("MNIST CNN, 100 asynchronous workers, lr 0.05, momentum 0.9")
        plt.show()
    else:
        print("No full-epoch logs here (small scale reuses them only when they are in results/hermans2018/runs/).")

# %% [markdown]
# ## Paper against rerun

# %%
if sweep is not None:
    cmp = sweep[sweep.paper_value.notna()][["rule", "protocol", "workers", "epochs_per_worker", "paper_value",
                                            "rerun_value", "difference", "outcome", "scale", "note"]]
    display(cmp if not cmp.empty else "no row of this scale has a published counterpart")

# %% [markdown]
# ## Section 4.2: resilience against a too-large learning rate (Figure 6 shape)

# %%
big = read_results("hermans2018", "large_lr")
if big is not None:
    big = with_method(big)
    display(seed_summary(big, ["lr", "workers", "method"]))
    c = curves(big)
    if not c.empty:  # one panel per learning rate; the band spans the seeds
        g = sns.relplot(data=c, x="epochs per worker", y="test accuracy (%)", hue="method", col="lr", kind="line",
                        marker="o", height=3.2, aspect=1.2)
        g.set_titles(f"lr {{col_name}}, {big.workers.iloc[0]} workers")
        plt.show()

# %% [markdown]
# ## What the rerun supports, and what not
#
# * **GEM is stable with 100 asynchronous workers and reaches 99.38%.** Supported: the full-epoch run
#   (every worker one epoch, 93,800 gradients, mean staleness about 99; protocol `paper-clamp`: pull
#   after commit, pi clamped to [0, 5]) ends at 99.32 / 99.31 / 99.33% for seeds 0 / 1 / 2, a mean of
#   99.32%, 0.06 points below the paper's mean of 3 runs. The `authors` setting (the authors' code:
#   pull just before commit) at the same full length ends at 99.34 / 99.21 / 99.10%, a mean of 99.22%:
#   its 3-seed interval, [98.92, 99.52]%, reaches below 99.38 +- 0.15 (its top is inside), so it is
#   inconclusive at this scale. At 0.1 epoch per worker (9,400 gradients), seeds 0-2, `authors` ends at
#   98.26 / 97.92 / 98.08% and `paper-clamp` at 98.31 / 98.10 / 98.24%, while Downpour stays at chance
#   (11.35%) in all three.
# * **The rule as printed (`paper`: no clamp) diverges**, in every run we made: at N = 100 after
#   289-300 gradients (at one epoch per worker as at 0.1), at N = 5 / 20 / 50 after 40-41 / 80-82 / 155-165 gradients (3 seeds each), and in
#   every large-lr run. The authors' clamp of pi to [0, 5] (with eps 1e-12) is what makes GEM stable here.
# * **Downpour fails as workers grow.** Supported, for 3 seeds each: with lr 0.05 Downpour still learns
#   at N=5 (48.9% mean after 0.04 epoch per worker, 35.6-58.0%), and ends at chance (11.35%) for every
#   seed at N=20 and N=50 (5 of 6 runs learned first and collapsed, one never left chance); with 100
#   workers and a full epoch each it never leaves chance level (11.35% for all 3 seeds; its training
#   loss never goes below 2.22). Its loss stays finite: it does not overflow, it stalls. GEM at the
#   same reduced budget is stable in all 9 runs of each protocol: 81.4 / 85.3 / 87.0% (mean of 3 seeds)
#   at N = 5 / 20 / 50 with `paper-clamp`, 80.1 / 87.6 / 87.3% with `authors`. The seed ranges overlap
#   at N = 5 and 50; at N = 20 `authors` is 2.4 points ahead (86.5-89.1% against 84.3-86.4%), one
#   setting of 3 seeds at a reduced budget: no sign that either protocol is less stable.
# * **Adaptive staleness is stable but slow** (the paper groups it with the unstable/weak baselines in
#   its figures): its updates are divided by about N, so at 0.04 epoch per worker it reaches 28.4 /
#   36.5 / 39.8% (mean of 3 seeds; one N=5 seed stuck at chance); it never collapses. Its full-epoch
#   N=100 run is not made at small scale (about 35 minutes here).
# * **Resilience to a too-large learning rate (Section 4.2)**: partly supported. The paper's value is
#   lost from its text. At lr 0.2 (4x), 20 workers, GEM `paper-clamp` stays stable for all 3 seeds
#   (29.6-43.7% after 0.04 epoch per worker, still learning), GEM `authors` for 2 of 3 (61.3, 51.5%;
#   the third learned, then collapsed to chance), while Downpour ends at chance for all 3 (one of them
#   with a non-finite loss); at lr 0.5 (10x) Downpour and both GEM protocols end at chance for every
#   seed, each GEM protocol in two seeds after having learned first. The paper's argument, GEM is
#   stable where the sequential momentum-SGD proxy is, predicts this if lr 0.5 is beyond what
#   momentum SGD itself tolerates; we did not run the proxy.
# * **Reductions**: the N=5/20/50 runs give every worker 0.04 of an epoch (paper: 1 epoch), 3 seeds
#   as the paper, N=10 is left out; N=100 rows are full-epoch runs with seeds 0, 1, 2 for each GEM
#   setting and Downpour (25-42 minutes each here), reused from their logs (`--with-n100` makes the
#   missing ones). **Not checked**: the
#   wall-clock speedup of Figure 4 (the simulator gives simulated time only), the generalization gap
#   against momentum SGD, the ImageNet AlexNet runs (no ImageNet offline).
