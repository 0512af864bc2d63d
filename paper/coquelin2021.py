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
import matplotlib.pyplot as plt
import seaborn as sns

from _common import read_results
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
