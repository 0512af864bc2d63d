"""Synchronous data-parallel training, the synchronous family of ``trainers run``: SSGD, TernGrad and
DASO (docs/algorithms.md sections 2 and 5).

MPI starts the ranks and carries the control plane; the gradient collectives go through the
``--backend`` (trainers.collectives: mpi, gloo, nccl) on the ``--device`` (trainers.device: one GPU per
rank, or the CPU).

One :class:`Trainer` owns what every algorithm shares -- data order, model, optimizer, learning-rate
schedule, step timer, run log, evaluation, checkpoints, progress bar -- and calls one small algorithm
object per step (the shape of ``torch.distributed.algorithms.ddp_comm_hooks``: a state object plus a
step function)::

    ssgd      gradients fused into flat float32 buckets (backward writes straight into them, of
              loss / K), each summed by the backend's allreduce as soon as backprop has produced it
              (--overlap on; trainers.grad_buckets), like DDP (benchmarks/ddp_vs_ours.py compares the two).
    terngrad  per-tensor scalers (2.5 sigma clipping), scaler sharing by allreduce(max), fused
              stochastic ternarization from a counter-based per-rank stream, then --terngrad-exchange:
              levels (integer Allreduce of the codes, int8/int16), ps (sharded parameter server:
              Alltoall of 2-bit codes, Allgather of ceil(log2(2p+1))-bit sums) or allgather (every
              rank's 2-bit codes; does not scale); the last layer and tensors below --tern-min-elems
              travel as float32 (bucketed Allreduce); every rank applies the average itself
              (parameter localization).
    daso      node-local gradient averaging every batch (buckets during backprop, on the node's
              sub-group of the backend); every B batches one rotating global group
              (the i-th rank of every node) averages parameters -- blocking every batch in
              warm-up/cool-down (bf16 on the wire, or fp32 with --daso-global-dtype fp32), blocking
              fp32 in the cycling phase at epoch ends and when W = 0 (HeAT's DASO casts only while
              global_skip = 0, i.e. in warm-up/cool-down), otherwise a non-blocking fp32
              Iallreduce merged W batches later as x = (2S x_local + sum_i x_i) / (2S + P) --
              followed by a broadcast of the group member's parameters to its node. B and W follow
              :class:`DasoSchedule` (plateau cycling, paper rule or the authors' code rule).

Layout: trainers.sync.registry (``SYNC_ALGORITHMS``, the one list of the family's names, pure data;
re-exported here), trainers.sync.runner (``run``, the run function ``trainers run`` registers for each
name, and ``algorithm(name)``), trainers.sync.loop (the :class:`Trainer` every algorithm shares, batch
indexing), trainers.sync.ssgd, trainers.sync.terngrad, trainers.sync.daso (one algorithm each),
trainers.sync.daso_schedule (DASO's B/W schedule, pure Python) and trainers.sync.optimizers (the local
optimizers by name). The configuration is trainers.config.SyncConfig. Importing this package imports
neither torch nor mpi4py (import the modules above for their names).

BatchNorm running statistics stay per rank while training (like the parameters of DASO's nodes) and
are averaged over all ranks at every evaluation point (epoch ends, --eval-every, the last step);
rank 0 evaluates its own model on the whole test split.

Data order: epoch e uses the permutation ``shard_indices(n, 0, 1, seed, e)``; step i of the epoch
takes the global batch ``perm[i*K*b:(i+1)*K*b]`` and rank r its r-th slice of b samples
(:func:`batch_indices`). So K ranks with batch b see exactly the samples of one process with batch
K*b, which is what makes SSGD equal to the large-batch single-process run.

The run log (trainers.log) gets one line per step: step (0-based), epoch, loss (mean over the
ranks that averaged it: all ranks for ssgd/terngrad, the node for daso), samples (global batch),
t_compute / t_comm / t_compress / t_idle / t_step (rank 0's StepTimer phases, seconds; t_idle
includes fetching the batch), bytes_sent (bytes per step as trainers.log defines them: what this rank
sends on the wire, each collective counted as the model's algorithm for it; 0 with one rank), lr, and
algorithm extras; eval lines (test_loss, test_acc, train_loss at epoch ends); a summary line at the end.
"""

from __future__ import annotations

from trainers.sync.registry import SYNC_ALGORITHMS

__all__ = ["SYNC_ALGORITHMS"]
