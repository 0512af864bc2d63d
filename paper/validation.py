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
# MPI trainers (ssgd, terngrad, daso) at 1, 2 and 4 ranks on two models, and compares each run's
# median step time with the model's prediction (`perfmodel validate`). DASO runs are measured per
# cycle of B steps, so the sync steps count; on CPU ranks the model charges DASO's non-blocking global
# sync in full at its wait (`daso_progress = "wait"`: MPI moves it only inside MPI calls), times the
# profile's iallreduce / allreduce factor where the profile measured it.

# %%
import matplotlib.pyplot as plt
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
                 "step_error_pct", "measured_comm_s", "predicted_comm_s", "core_share"]].round(4))

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
# Runs with more ranks than cores share the cores: the prediction stretches compute by
# ranks x threads / cores (`core_share`). Errors are largest where the machine was shared with other
# work while the runs were timed; the profile and the runs should be taken on an otherwise idle machine.
