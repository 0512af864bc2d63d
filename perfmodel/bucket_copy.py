"""The gradient's copies into a framework's communication buckets and back, charged from their memory traffic.

A framework that packs gradients into buckets before the collective copies every gradient element into its
bucket (read the gradient, write the bucket) and, once the collective is done, back (read the bucket, write the
gradient). On a GPU each copy is a memory-bound kernel, so per exchange (once per optimizer step, not per
micro-batch) it costs

    t_copy = copies x 2 x n x e / (eta x B)                                          seconds

n the gradient's elements, e the bytes of an element in the bucket (the wire format: 4 fp32, 2 fp16/bf16; exact
where the gradients are already in the wire format, a lower bound where a hook or Horovod's Compression.fp16
casts fp32 gradients, whose casts are not charged),
copies the framework's copies per exchange, B the GPU's memory bandwidth (bytes/s) and eta the share of it a
copy kernel reaches (perfmodel.codec_memory.MEMORY_EFFICIENCY, 0.81). Paid on a multi-GPU step only: a
single-GPU run has no bucket. Not hidden: DDP copies into a bucket inside backprop's autograd hooks (on the
compute stream) and back after the last collective; Horovod into its fusion buffer before the collective and
out after it. The averaging pass over the bucket (a division by the world size) is not charged.

Copies per exchange (perfmodel.overlap_causes.FRAMEWORK_POLICY):
    pytorch-ddp  2: ``DistributedDataParallel(gradient_as_bucket_view=False)``, the default, "copies between
                 gradients and allreduce communication buckets"; True makes the gradients views into the
                 buckets (torch.nn.parallel.DistributedDataParallel's documentation): 0.
    horovod      2: a response fusing several tensors is copied into the fusion buffer
                 (``MemcpyInFusionBuffer``) and out of it after the collective (``MemcpyOutFusionBuffer``;
                 horovod/common/ops/collective_operations.cc, nccl_operations.cc).
    tf-replicated  0: one collective per gradient tensor, nothing packed (tf_cnn_benchmarks
                 gradient_repacking=0).
    others       2, as DDP's default.
Charged to ssgd (not allreduce "paper", whose measured t_comm holds its own copies) and to DASO's node-local
allreduce where a node has more than one GPU (HeAT runs torch DDP inside the node, fp32), on clusters that
state their GPU's memory bandwidth; CPU ranks are not charged.
"""

from __future__ import annotations

from .codec_memory import MEMORY_EFFICIENCY


def bucket_copy_seconds(elements: float, element_bytes: float, copies: int, memory_Bps: float | None,
                        efficiency: float = MEMORY_EFFICIENCY) -> float:
    """Seconds of ``copies`` copies of ``elements`` gradient elements of ``element_bytes`` bytes each (a read and
    a write per element per copy) at ``efficiency`` x ``memory_Bps`` bytes/s; 0 without a memory bandwidth."""
    if not memory_Bps or copies == 0:
        return 0.0
    return copies * 2.0 * elements * element_bytes / (efficiency * memory_Bps)
