"""The settings to launch a planned row: framework knobs and, where this project implements the scheme,
the `trainers run` command.

    ssgd      PyTorch DDP bucket_cap_mb (MiB), gradient_as_bucket_view (True when the row charges no copies
              into the buckets, Strategy.bucket_copies 0) and, for fp16/bf16 on the wire, its fp16_compress_hook /
              bf16_compress_hook; the same run under Horovod: HOROVOD_FUSION_THRESHOLD (bytes) and
              HOROVOD_CYCLE_TIME (ms); NCCL_ALGO Ring or Tree where the plan fixed one ("nccl": NCCL's own)
    zero1-3   DeepSpeed zero_optimization.stage, reduce_bucket_size (elements), overlap_comm,
              stage3_prefetch_bucket_size; fsdp: torch FSDP ShardingStrategy.FULL_SHARD,
              backward_prefetch BACKWARD_PRE, forward_prefetch
    every row gradient_accumulation_steps and the per-GPU micro-batch; the `trainers run` command where
              the trainers run the row (with --accumulate for ssgd and terngrad; none for daso and asgd
              rows that accumulate, which the trainers do not)
"""

from __future__ import annotations

from .specs import Strategy

#: schemes `trainers run --algo` implements (trainers/)
TRAINER_ALGOS = {"ssgd": "ssgd", "terngrad": "terngrad", "daso": "daso", "asgd": "asgd"}
#: of those, the ones `trainers run --accumulate` runs (the others exchange every micro-batch)
TRAINER_ACCUMULATES = ("ssgd", "terngrad")
_NCCL_ALGO = {"ring": "Ring", "tree": "Tree"}


def launch_settings(strategy: Strategy, *, gpus: int, gpus_per_node: int, batch_per_gpu: float, accumulate: int,
                    model: str, optimizer: str) -> dict:
    """A JSON-ready dict of what to set to run this row."""
    b = int(round(batch_per_gpu))
    out: dict = {"per_gpu_batch": b, "gradient_accumulation_steps": accumulate}
    name = strategy.name
    if strategy.allreduce in _NCCL_ALGO and name in ("ssgd", "daso"):
        out["NCCL_ALGO"] = _NCCL_ALGO[strategy.allreduce]
    if name == "ssgd":
        out["ddp"] = {"bucket_cap_mb": strategy.bucket_mb, "gradient_as_bucket_view": strategy.bucket_copies == 0}
        if strategy.wire != "fp32":
            out["ddp"]["comm_hook"] = f"torch.distributed.algorithms.ddp_comm_hooks.default_hooks." \
                                      f"{strategy.wire}_compress_hook"
        out["horovod"] = {"HOROVOD_FUSION_THRESHOLD": int(strategy.bucket_mb * 2**20), "HOROVOD_CYCLE_TIME": 1,
                          "compression": "hvd.Compression.fp16" if strategy.wire != "fp32" else "none"}
    elif name in ("zero1", "zero2", "zero3"):
        elems = int(strategy.bucket_mb * 2**20 / (2 if strategy.wire != "fp32" else 4))
        zero = {"stage": int(name[-1]), "overlap_comm": True, "reduce_bucket_size": elems}
        if name == "zero3":
            zero["stage3_prefetch_bucket_size"] = elems if strategy.zero_prefetch else 0
        out["deepspeed"] = {"zero_optimization": zero, "train_micro_batch_size_per_gpu": b,
                            "gradient_accumulation_steps": accumulate,
                            ("fp16" if strategy.wire == "fp16" else "bf16"): {"enabled": strategy.wire != "fp32"}}
    elif name == "fsdp":
        out["fsdp"] = {"sharding_strategy": "FULL_SHARD",
                       "backward_prefetch": "BACKWARD_PRE" if strategy.zero_prefetch else None,
                       "forward_prefetch": strategy.zero_prefetch,
                       "mixed_precision": strategy.wire if strategy.wire != "fp32" else None}
    elif name == "terngrad":
        out["terngrad_exchange"] = strategy.terngrad_exchange
    elif name == "daso":
        out["daso"] = {"B": strategy.daso_B, "W": strategy.daso_W}
    elif name in ("sync-ps", "asgd"):
        out["ps_servers"] = strategy.ps_servers
        if name == "asgd":  # each update is W - 1 others' updates old on average (perfmodel.scaling)
            out["mean_staleness"] = gpus - 1
    elif name == "byteps":
        out["byteps"] = {"BYTEPS_PARTITION_BYTES": 4096000, "servers": "colocated"}
    algo = TRAINER_ALGOS.get(name)
    if algo is not None and (accumulate == 1 or algo in TRAINER_ACCUMULATES):
        extra = {"ssgd": f" --bucket-mb {strategy.bucket_mb:g}",
                 "terngrad": f" --terngrad-exchange {strategy.terngrad_exchange}",
                 "daso": f" --ranks-per-node {gpus_per_node} --daso-b {strategy.daso_B} --daso-w {strategy.daso_W}",
                 "asgd": ""}[algo]  # --ranks-per-node: DASO's node groups; the others do not read it
        opt = "adam" if optimizer == "adam" else "sgd"
        acc = f" --accumulate {accumulate}" if accumulate > 1 else ""
        out["trainers_run"] = (f"mpiexec -n {gpus} trainers run --algo {algo} --model {model} --batch {b}{acc} "
                               f"--optimizer {opt} --device cuda{extra}")
    return out
