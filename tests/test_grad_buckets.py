"""trainers.grad_buckets in-process: the bucket plan by hand, and when buckets leave during backward, on a
one-rank group that records its calls (the sum over one rank is the tensor itself). The multi-rank
exactness against one allreduce of the full gradient runs under mpiexec in test_collectives_backends.py."""

from __future__ import annotations

import time

import pytest
import torch

from trainers.collectives.base import Collectives, Handle
from trainers.grad_buckets import GradBuckets, bucket_plan


class _Done(Handle):
    def __init__(self) -> None:
        super().__init__(time.perf_counter())

    def _done(self) -> bool:
        return True

    def _block(self) -> None:
        pass


class OneRank(Collectives):
    """A group of one rank (every reduction is the identity) that logs what is launched and when."""

    name, rank, size, device, comm, library = "one", 0, 1, torch.device("cpu"), None, "none"

    def __init__(self) -> None:
        self.launched: list[tuple[int, bool]] = []  # (numel, inside backward)
        self.in_backward = False

    def allreduce(self, t: torch.Tensor, op: str = "sum") -> None:
        pass

    def allreduce_async(self, t: torch.Tensor, op: str = "sum") -> Handle:
        self.launched.append((t.numel(), self.in_backward))
        return _Done()

    def allgather(self, t: torch.Tensor) -> torch.Tensor:
        return t.unsqueeze(0).clone()

    def alltoall(self, t: torch.Tensor) -> torch.Tensor:
        return t.clone()

    def broadcast(self, t: torch.Tensor, root: int = 0) -> None:
        pass

    def split(self, color: int) -> Collectives:
        return self


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    # parameter numels in registration order: 40, 10, 50, 5 (Linear(4,10), Linear(10,5))
    return torch.nn.Sequential(torch.nn.Linear(4, 10), torch.nn.Tanh(), torch.nn.Linear(10, 5))


def _backward(model: torch.nn.Module, coll: OneRank, gb: GradBuckets, x: torch.Tensor, arm: bool = True) -> None:
    loss = model(x).square().sum()
    if arm:
        gb.begin()
    coll.in_backward = True
    loss.backward()
    coll.in_backward = False


def test_bucket_plan_by_hand() -> None:
    # cap 40 floats; tensors taken from the last: 5; +30 = 35; +20 = 55 >= 40 closes [3, 2, 1]; 10 is left
    assert bucket_plan([10, 20, 30, 5], 160) == [[3, 2, 1], [0]]
    assert bucket_plan([100, 1], 160) == [[1, 0]]  # the bucket overshoots by its last tensor (DDP's rule)
    assert bucket_plan([40, 40, 40], 160) == [[2], [1], [0]]  # exactly full closes
    assert bucket_plan([1, 1, 1], 2**20) == [[2, 1, 0]]
    assert bucket_plan([], 16) == [[]]
    with pytest.raises(ValueError, match="bucket_bytes"):
        bucket_plan([1], 2)


def test_grads_are_bucket_views_equal_to_plain_autograd() -> None:
    x = torch.randn(3, 4)
    plain = _model()
    plain(x).square().sum().backward()
    model, coll = _model(), OneRank()
    gb = GradBuckets(list(model.parameters()), coll, bucket_bytes=60 * 4)
    gb.zero_grad()
    _backward(model, coll, gb, x)
    gb.finish()
    # reverse order, cap 60 floats: 5 + 50 = 55, + 10 = 65 >= 60 closes; then 40
    assert [b.numel() for b in gb.buckets] == [65, 40]
    assert gb.nbytes == 105 * 4
    for p, q in zip(model.parameters(), plain.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0)
        assert any(p.grad.data_ptr() >= b.data_ptr() and p.grad.data_ptr() < b.data_ptr() + b.numel() * 4
                   for b in gb.buckets)


def test_overlap_launches_each_bucket_during_backward_in_bucket_order() -> None:
    model, coll = _model(), OneRank()
    gb = GradBuckets(list(model.parameters()), coll, bucket_bytes=60 * 4, extra_numel=1)
    gb.zero_grad()
    _backward(model, coll, gb, torch.randn(3, 4))
    times = gb.finish()
    assert coll.launched == [(65, True), (41, True)]  # the loss slot rides in the last bucket
    assert times.buckets == 2 and times.launched_in_backward == 2
    assert times.exposed_s >= 0 and 0 <= times.comm_s <= times.span_s


def test_without_overlap_every_bucket_leaves_after_backward() -> None:
    model, coll = _model(), OneRank()
    gb = GradBuckets(list(model.parameters()), coll, bucket_bytes=60 * 4, overlap=False)
    gb.zero_grad()
    _backward(model, coll, gb, torch.randn(3, 4))
    times = gb.finish()
    assert coll.launched == [(65, False), (40, False)]
    assert times.launched_in_backward == 0


def test_accumulation_communicates_once_and_sums_the_micro_batches() -> None:
    x1, x2 = torch.randn(3, 4), torch.randn(3, 4)
    plain = _model()
    (plain(x1).square().sum() + plain(x2).square().sum()).backward()
    model, coll = _model(), OneRank()
    gb = GradBuckets(list(model.parameters()), coll, bucket_bytes=2**20)
    gb.zero_grad()
    _backward(model, coll, gb, x1, arm=False)  # like DDP's no_sync
    assert coll.launched == []
    _backward(model, coll, gb, x2)
    gb.finish()
    assert coll.launched == [(105, True)]
    for p, q in zip(model.parameters(), plain.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=1e-6)


def test_rebinds_after_set_to_none_and_unused_parameters_do_not_block() -> None:
    torch.manual_seed(0)
    used, unused = torch.nn.Linear(4, 2), torch.nn.Linear(4, 3)
    params = list(used.parameters()) + list(unused.parameters())
    coll = OneRank()
    gb = GradBuckets(params, coll, bucket_bytes=4 * 4)  # 3 + 12 >= 4 closes [unused]; 2 + 8 is [used]
    opt = torch.optim.SGD(params, lr=0.1)
    opt.zero_grad(set_to_none=True)  # breaks the binding; begin() restores it
    gb.begin()
    used(torch.randn(2, 4)).sum().backward()
    times = gb.finish()
    assert times.buckets == len(gb.buckets) == 2
    # the unused layer's bucket (reverse order: launched first) never becomes ready in backward, and
    # buckets launch in order, so nothing leaves before finish()
    assert coll.launched == [(15, False), (10, False)]
    assert all(p.grad is not None and p.grad.data_ptr() == v.data_ptr() for p, v in zip(params, gb.views))
    assert float(unused.weight.grad.abs().sum()) == 0.0


def test_rejects_bad_arguments() -> None:
    model, coll = _model(), OneRank()
    with pytest.raises(ValueError, match="op must be"):
        GradBuckets(list(model.parameters()), coll, op="max")
    with pytest.raises(ValueError, match="float32"):
        GradBuckets([torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))], coll)
    gb = GradBuckets(list(model.parameters()), coll)
    with pytest.raises(RuntimeError, match="without begin"):
        gb.finish()
    gb.begin()
    with pytest.raises(RuntimeError, match="twice"):
        gb.begin()


@pytest.mark.parametrize("model_name,bucket_bytes", [("resnet20", 2**16), ("lenet", 2**14), ("resnet20", 25 * 2**20)])
def test_plan_matches_the_models_buckets(model_name: str, bucket_bytes: int) -> None:
    """trainers.grad_buckets and perfmodel.overlap (two implementations of DDP's rule) agree on a real net."""
    from perfmodel.overlap import make_buckets
    from trainers.models import tensor_sizes

    numels = [n for _, n in tensor_sizes(model_name)]
    plan = bucket_plan(numels, bucket_bytes)
    model = make_buckets([4 * n for n in numels], numels, bucket_bytes)
    assert [4 * sum(numels[i] for i in g) for g in plan] == model.nbytes.tolist()
    assert sorted(i for g in plan for i in g) == list(range(len(numels)))
