"""The framework's cost per multi-GPU step, read off one node run at full occupancy.

Before the big job a user can run the scheme on one node of the cluster: all G = gpus_per_node GPUs,
b samples per GPU, K micro-batches per exchange, and read its throughput R_node (samples/s). The model,
from the single-GPU compute and the node's fabric, predicts that node's step t_model(G). What the node
took beyond it is the framework's own cost per step (launch and synchronisation work, an input pipeline
that feeds G GPUs more slowly than one, exchanges slower than the fabric's figures), which the model
charges to every multi-GPU step as ``Strategy.step_overhead_s``:

    o = max(0, G b K / R_node - t_model(G))                                   (seconds per step)

Clamped at 0: a cost is not negative; where the model's one-node step is already longer than the
measured one, nothing is added. With o applied, the model's one-node step is max(t_model(G), the measured
step); across nodes the same o is added to the model's longer step. Nothing here is measured on more
than one node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .scaling import predict
from .specs import Cluster, SpecError, Strategy, Workload


def node_step_seconds(workload: Workload, cluster: Cluster, strategy: Strategy, batch: int) -> float:
    """t_model(G): the model's step on one full node (G = cluster.gpus_per_node GPUs, ``batch`` samples per
    GPU, weak scaling), seconds, without any step overhead."""
    g = cluster.gpus_per_node
    p = predict(workload, cluster, replace(strategy, step_overhead_s=0.0), [g], scaling="weak", batch=batch)
    return float(p.t_iter_s[0])


@dataclass(frozen=True)
class NodeStep:
    """One node's step measured (G b K / R_node) and as the model predicts it (t_model(G)), seconds."""

    measured_s: float
    model_s: float

    @property
    def overhead_s(self) -> float:
        """o = max(0, measured - model): the framework's cost per multi-GPU step, seconds."""
        return max(0.0, self.measured_s - self.model_s)


def node_step(workload: Workload, cluster: Cluster, strategy: Strategy, batch: int,
              node_samples_per_s: float) -> NodeStep:
    """The measured and the model's step of one node of ``cluster`` run with all its GPUs at ``batch``
    samples per GPU and throughput ``node_samples_per_s`` (samples/s). Raises SpecError for a rate that
    is not a positive finite number or a cluster of one GPU per node (whose one-node run has no
    exchange)."""
    if isinstance(node_samples_per_s, bool) or not (isinstance(node_samples_per_s, (int, float))
                                                    and 0 < node_samples_per_s < math.inf):
        raise SpecError(f"the one-node rate must be a positive finite number of samples/s, got {node_samples_per_s!r}")
    g = cluster.gpus_per_node
    if g < 2:
        raise SpecError(f"cluster {cluster.name!r} has 1 GPU per node: a one-node run has no exchange to measure")
    k = int(getattr(workload, "accumulate", 1) or 1)
    return NodeStep(g * batch * k / node_samples_per_s, node_step_seconds(workload, cluster, strategy, batch))


def node_step_overhead(workload: Workload, cluster: Cluster, strategy: Strategy, batch: int,
                       node_samples_per_s: float) -> float:
    """o = max(0, G b K / R_node - t_model(G)), seconds per multi-GPU step (``node_step``)."""
    return node_step(workload, cluster, strategy, batch, node_samples_per_s).overhead_s
