"""The gradient's copies into a framework's communication buckets and back, charged from their memory traffic.

A framework that packs gradients into buckets before the collective copies every gradient element into its
bucket (read the gradient, write the bucket) and, once the collective is done, back (read the bucket, write the
gradient). On a GPU each copy is a memory-bound kernel, so per exchange (once per optimizer step, not per
micro-batch) it costs

    t_copy = copies x 2 x n x e / (eta x B)                                          seconds

n the gradient's elements, e the bytes of an element in the bucket (the wire format: 4 fp32, 2 fp16/bf16),
copies the framework's copies per exchange, B the GPU's memory bandwidth (bytes/s) and eta the share of it a
copy kernel reaches (perfmodel.codec_memory.MEMORY_EFFICIENCY, 0.81). Paid on a multi-GPU step only: a
single-GPU run has no bucket. Not hidden: DDP copies into a bucket inside backprop's autograd hooks (on the
compute stream) and back after the last collective; Horovod into its fusion buffer before the collective and
out after it. The averaging pass over the bucket (a division by the world size) is not charged.

A wire narrower than the fp32 gradient adds its casts to the wire format and back (Strategy.wire_cast):
    separate  each gradient is cast before it is packed and back after (Horovod's ``Compression.fp16``, whose
              buckets then hold e-byte elements; PyTorch DDP's ``fp16_compress_hook`` / ``bf16_compress_hook``
              cast each bucket, whose fp32 buckets would add 2 x 2 x n x (4 - e) bytes more: not charged):
              2 x (4 + e) x n bytes beside the copies (read 4, write e; read e, write 4)
    in-copy   the copy into the bucket converts, and so does the copy back (apex's multi_tensor_scale into
              the flat fp16 buffer of NVIDIA's PyTorch BERT, ``--allreduce_post_accumulation_fp16``): each
              copy moves 4 + e bytes per element instead of 2 e
    none      the gradients are already in the wire format (a model trained in fp16 with fp32 master
              weights: MXNet's ``--dtype float16``, the default of NVIDIA's MXNet ResNet-50 fit.py)

    t_copy = [copies x 2 e + 2 (4 + e)] n / (eta x B)   separate
           = copies x (4 + e) n / (eta x B)             in-copy
           = copies x 2 e n / (eta x B)                 none, and any fp32 wire

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

FP32_BYTES = 4.0


def bucket_copy_seconds(elements: float, element_bytes: float, copies: int, memory_Bps: float | None,
                        efficiency: float = MEMORY_EFFICIENCY, cast: str = "none") -> float:
    """Seconds of ``copies`` copies of ``elements`` gradient elements of ``element_bytes`` bytes each (a read
    and a write per element per copy) and of their casts from fp32 (``cast``: perfmodel.specs.WIRE_CASTS) at
    ``efficiency`` x ``memory_Bps`` bytes/s; 0 without a memory bandwidth."""
    if not memory_Bps:
        return 0.0
    if element_bytes >= FP32_BYTES or cast == "none":
        moved = copies * 2.0 * element_bytes
    elif cast == "in-copy":
        moved = copies * (FP32_BYTES + element_bytes)
    else:
        moved = copies * 2.0 * element_bytes + 2.0 * (FP32_BYTES + element_bytes)
    return moved * elements / (efficiency * memory_Bps)
