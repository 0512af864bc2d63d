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
# # Model validation: predicted versus measured
#
# `reproduce/validation.py` profiles this machine with `perfmodel profile` (compute time per
# mini-batch, MPI Allreduce/ping-pong alpha-beta fits, TernGrad's encode/decode rates), runs the real
# MPI trainers (ssgd, terngrad, daso at 1, 2 and 4 ranks; the asgd parameter server from 3 ranks) on two
# models, and compares each run's median step time with the model's prediction (`perfmodel validate`). DASO runs are measured per
# cycle of B steps, so the sync steps count; on CPU ranks the model charges DASO's non-blocking global
# sync in full at its wait (`daso_progress = "wait"`: MPI moves it only inside MPI calls), times the
# profile's iallreduce / allreduce factor where the profile measured it.

# %%
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from _common import read_results

sns.set_theme(style="whitegrid")
val = read_results("validation", "validate")

# %%
if val is not None:
    for scale, part in val.groupby("scale"):
        mape_step = part.step_error_pct.abs().mean()
        mape_tp = part.throughput_error_pct.abs().mean()
        print(f"{scale}: {len(part)} runs, MAPE step time {mape_step:.1f}%, throughput {mape_tp:.1f}%")
    display(val[["scale", "algo", "model", "ranks", "batch", "measured_step_s", "predicted_step_s",
                 "step_error_pct", "measured_comm_s", "predicted_comm_s", "computing_ranks"]].round(4))

# %%
if val is not None:
    fig, ax = plt.subplots(figsize=(5.5, 5))
    sns.scatterplot(data=val, x="measured_throughput", y="predicted_throughput", hue="algo", style="model",
                    size="ranks", ax=ax)
    lo = min(val.measured_throughput.min(), val.predicted_throughput.min()) * 0.8
    hi = max(val.measured_throughput.max(), val.predicted_throughput.max()) * 1.2
    ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="measured samples/s", ylabel="predicted samples/s")
    plt.show()

# %% [markdown]
# ## Each component of the step
#
# Measured against predicted compute, communication, compression and step time, with the error of
# each (`<component>_error_pct`, empty where the run measured none of it). Communication is what decides
# every prediction above a few GPUs, so its error is reported on its own.

# %%
COMPONENTS = ["compute", "comm", "compress", "step"]


def component_summary(frame):
    """Median and mean absolute error (%) of each component over the rows that measured it."""
    return pd.DataFrame({c: {"median |error| %": frame[f"{c}_error_pct"].abs().median(),
                             "mean |error| %": frame[f"{c}_error_pct"].abs().mean(),
                             "rows": int(frame[f"{c}_error_pct"].notna().sum())} for c in COMPONENTS}).round(1)


if val is not None and "comm_error_pct" in val:
    display(component_summary(val))
    display(val[["algo", "model", "ranks"] + [f"{c}_error_pct" for c in COMPONENTS]].round(1))

# %% [markdown]
# ## The emulated cluster: where communication matters
#
# `python -m reproduce.validation --only emulated` builds an emulated cluster on this machine
# (`perfmodel.lab.emulate`: one network namespace per node with its own hostname, veth links on a bridge
# shaped by a token bucket to 1 Gbit/s or 250 Mbit/s), profiles its links with `perfmodel profile` placed
# on the emulated nodes, runs the trainers on it and validates each run against that profile. Open MPI
# is made to run the ring Allreduce and ring Allgather (`perfmodel.mpi_algorithms`), the algorithms the
# prediction charges. `comm_share` is the measured share of the step spent communicating.

# %%
emu = read_results("validation", "emulated")
if emu is not None:
    for scale, part in emu.groupby("scale"):
        print(f"{scale}: {len(part)} runs; median |error| communication {part.comm_error_pct.abs().median():.1f}%, "
              f"step {part.step_error_pct.abs().median():.1f}%; communication >= 40% of the step in "
              f"{(part.comm_share >= 0.4).sum()} of {len(part)} runs")
        display(component_summary(part))
    display(emu[["scale", "algo", "exchange", "nodes", "ranks_per_node", "rate", "comm_share", "measured_comm_s",
                 "predicted_comm_s", "comm_error_pct", "measured_step_s", "predicted_step_s", "step_error_pct",
                 "compute_error_pct", "compress_error_pct"]].round(4))

# %% [markdown]
# Measured against predicted communication time per step, by the collective algorithm the run used:
# Open MPI's own choice on shared memory (the table above) and the forced ring algorithms on the
# emulated links.

# %%
def collective(row) -> str:
    where = "emulated links" if "nodes" in row and pd.notna(row.get("nodes")) else "shared memory"
    if row["algo"] == "terngrad":
        ex = row.get("exchange") if isinstance(row.get("exchange"), str) and row.get("exchange") else "allgather"
        algo = f"TernGrad {ex}"
    elif row["algo"] == "daso":
        algo = "DASO: node allreduce + global iallreduce"
    elif row["algo"] == "asgd":  # point-to-point Send/Recv: no collective algorithm to force
        return f"parameter server push + pull ({where})"
    else:
        algo = "SSGD allreduce"
    return f"{algo} ({'ring' if where == 'emulated links' else 'Open MPI default'}, {where})"


frames = [f for f in (val, emu) if f is not None]
if frames:
    both = pd.concat(frames, ignore_index=True)
    both = both[both.measured_comm_s > 0].copy()
    both["collective"] = both.apply(collective, axis=1)
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    sns.scatterplot(data=both, x="measured_comm_s", y="predicted_comm_s", hue="collective", style="collective",
                    s=60, ax=ax)
    lo = max(1e-6, min(both.measured_comm_s.min(), both.predicted_comm_s.clip(lower=1e-6).min()) * 0.5)
    hi = max(both.measured_comm_s.max(), both.predicted_comm_s.max()) * 2
    ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured communication s/step",
           ylabel="predicted communication s/step")
    ax.legend(fontsize=7, loc="upper left")
    plt.show()

# %% [markdown]
# Runs with more ranks than cores share the cores: the prediction takes the step timed on that many
# ranks at once (`computing_ranks`), or stretches the one-process step by ranks x threads / cores. Errors are largest where the machine was shared with other
# work while the runs were timed; the profile and the runs should be taken on an otherwise idle machine.
