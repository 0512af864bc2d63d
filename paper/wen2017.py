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
# InfiniBand cluster, and gains most for AlexNet on the Ethernet cluster. The model agrees in direction
# and ordering; how large the VGG-A gain is depends on the per-GPU compute time of the preset
# (an estimate, see `data/presets/README.md`).

# %% [markdown]
# ## Published numbers (Tables 1-3)

# %%
display(published[published.table.str.startswith("Table")][["table", "model", "workers", "method", "batch",
                                                            "metric", "value"]])
