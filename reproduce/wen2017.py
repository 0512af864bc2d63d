"""TernGrad (Wen et al., 2017): rerun its tables beside the published numbers.

Tables (results/wen2017/<table>.csv):
  fig5_model   Figure 5: the performance model's throughput of AlexNet, GoogLeNet and VGG-A with fp32
               and TernGrad gradients on the paper's two clusters, 1..512 GPUs (ALGORITHMS.md section 2,
               `--allreduce paper`). Same at every scale: the model answers in milliseconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reproduce.common import ResultTable, difference, parser, progress, run_tables, settings_text
from reproduce.paper_tables import published

PAPER = "wen2017"
FIG5_BATCH = {"alexnet": 128, "googlenet": 64, "vgg-a": 32}
FIG5_CLUSTERS = {"terngrad-ethernet": "Figure 5(a)", "terngrad-infiniband": "Figure 5(b)"}
FIG5_GPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _published_gain(workload: str, cluster: str, gpus: int) -> float | None:
    names = {"alexnet": "AlexNet", "googlenet": "GoogLeNet", "vgg-a": "VggNet-A"}
    try:
        rows = published(PAPER, table=FIG5_CLUSTERS[cluster], model=names[workload], workers=gpus,
                         metric="throughput_gain")
    except LookupError:
        return None
    return float(rows.value.iloc[0])


def fig5_model(args: argparse.Namespace, out: Path) -> None:
    from perfmodel.presets import load_cluster, load_workload
    from perfmodel.scaling import predict
    from perfmodel.specs import Strategy

    table = ResultTable(out / "fig5_model.csv", ("workload", "cluster", "gpus"))
    cases = [(w, c) for w in FIG5_BATCH for c in FIG5_CLUSTERS]
    for workload, cluster in progress(cases, args, "wen2017 fig5_model"):
        if all(table.done(workload=workload, cluster=cluster, gpus=g) for g in FIG5_GPUS):
            continue
        wl, cl = load_workload(workload), load_cluster(cluster)
        b = FIG5_BATCH[workload]
        fp32 = predict(wl, cl, Strategy("ssgd", allreduce="paper"), FIG5_GPUS, batch=b)
        tern = predict(wl, cl, Strategy("terngrad", allreduce="paper"), FIG5_GPUS, batch=b)
        for i, g in enumerate(FIG5_GPUS):
            gain = float(tern.throughput[i] / fp32.throughput[i])
            paper = _published_gain(workload, cluster, g)
            table.add({"workload": workload, "cluster": cluster, "gpus": g, "figure": FIG5_CLUSTERS[cluster],
                       "batch_per_gpu": b, "fp32_throughput": float(fp32.throughput[i]),
                       "terngrad_throughput": float(tern.throughput[i]), "metric": "throughput_gain",
                       "paper_value": paper, "rerun_value": gain, "difference": difference(gain, paper),
                       "scale": "model", "settings": settings_text({"allreduce": "paper", "scaling": "weak",
                                                                    "batch_per_gpu": b, "presets": "data/presets"})})


TABLES = {"fig5_model": fig5_model}


def main(argv: list[str] | None = None) -> int:
    args = parser(PAPER, __doc__.splitlines()[0]).parse_args(argv)
    return run_tables(PAPER, TABLES, args)


if __name__ == "__main__":
    sys.exit(main())
