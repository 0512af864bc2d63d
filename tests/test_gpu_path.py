"""The CUDA/NCCL path checked without a GPU (issue 32), one section per point:

1. a collective's completion is when the work completes, not when its future fires (NCCL's fires at
   enqueue): a fake work handle done 50 ms after its future fired gives comm_s >= 0.05;
2. no device-wide sync between a DASO global sync's start and its wait W batches later (a recorder
   in place of torch.cuda.synchronize, fake CUDA events for the step timer);
3. device choice from the GPUs a rank sees (one visible GPU, local rank 3 -> cuda:0), no shared GPU;
4. checkpoint gathers carry host tensors only (model on the ``meta`` device), CUDA RNG saved;
5. a rendezvous whose address lookup fails on rank 0 ends every rank with one line, never a hang;
6. non-blocking collectives on device memory stage through the host unless opted in;
7. numerics (TF32, cuDNN) set and recorded in the run-log header;
8. one host sync per step for the divergence check and for the step timer.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from trainers.collectives.torch_dist import _TorchHandle, master_address, rendezvous
from trainers.device import select_device, set_numerics, timing_events
from trainers.errors import UsageError
from trainers.grad_buckets import GradBuckets, busy_seconds
from trainers.timers import StepTimer

from tests.mpi_job import run_job

REPO = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec")


# ----------------------------------------------------------------------------------- fakes

class FakeWork:
    """A torch.distributed work like NCCL's: its future fires at once (enqueued), the work itself
    completes ``delay`` seconds later."""

    def __init__(self, delay: float) -> None:
        self.done_at = time.perf_counter() + delay
        self.future = torch.futures.Future()

    def get_future(self) -> torch.futures.Future:
        return self.future

    def is_completed(self) -> bool:
        return time.perf_counter() >= self.done_at

    def wait(self) -> bool:
        time.sleep(max(self.done_at - time.perf_counter(), 0.0))
        return True


class FakeNCCL:
    """Collectives of rank 0 of 2 identical ranks whose allreduce_async hands back _TorchHandle(FakeWork)."""

    name, rank, size, device = "nccl", 0, 2, torch.device("cpu")

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.handles: list[_TorchHandle] = []

    def allreduce_async(self, t: torch.Tensor, op: str = "sum") -> _TorchHandle:
        work = FakeWork(self.delay)
        h = _TorchHandle(work, lambda: t.mul_(2))  # the sum over two identical ranks
        work.future.set_result(None)  # NCCL: the future fires once the kernel is enqueued
        self.handles.append(h)
        return h


class Recorder:
    """One list of what happened, in order: device-wide syncs, events, collectives' starts and waits."""

    def __init__(self) -> None:
        self.log: list[tuple] = []


class FakeEvent:
    """torch.cuda.Event(enable_timing=True) on the host clock: record(), synchronize(), elapsed_time()."""

    recorder: Recorder

    def __init__(self, enable_timing: bool = False) -> None:
        self.t: float | None = None

    def record(self, stream=None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        self.recorder.log.append(("event_sync",))

    def elapsed_time(self, other: "FakeEvent") -> float:
        return (other.t - self.t) * 1e3


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """torch.cuda.synchronize and torch.cuda.Event replaced by recorders (no GPU needed)."""
    rec = Recorder()
    FakeEvent.recorder = rec
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: rec.log.append(("device_sync",)))
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    return rec


# ----------------------------------------------------------------------------------- 1. NCCL times

def test_completion_is_when_the_work_completes_not_when_its_future_fires() -> None:
    coll = FakeNCCL(delay=0.05)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    buckets = GradBuckets(list(model.parameters()), coll, bucket_bytes=4 * 64, overlap=True)
    buckets.zero_grad()
    buckets.begin()
    model(torch.randn(8, 16)).sum().backward()
    times = buckets.finish()
    assert times.buckets >= 2
    for h in coll.handles:
        # the fake's clock starts a few microseconds before the handle's: compare with the work's own end
        assert h.completed_at >= h.work.done_at
        assert h.completed_at - h.started_at >= 0.045
    assert times.comm_s >= 0.045  # before the fix: ~0 (completion taken from the future's callback)
    assert times.span_s >= times.comm_s


def test_busy_seconds_counts_serialized_collectives_once() -> None:
    # two collectives launched at 0 and 0.01, each 0.05 long on one channel: busy 0.05 + 0.04 (queued)
    assert busy_seconds([(0.0, 0.05), (0.01, 0.09)], 1.0) == pytest.approx(0.09)
    assert busy_seconds([(0.0, 0.05), (0.2, 0.3)], 0.25) == pytest.approx(0.10)  # cut at t_last


# ----------------------------------------------------------------------------------- 2. DASO overlap

class FakeGroup:
    """A group of 2 identical ranks, seen from rank 0; allreduce_async logs its start and wait."""

    name, rank, size, device = "nccl", 0, 2, torch.device("cpu")
    library = "fake"

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.n = 0

    def split(self, color: int) -> "FakeGroup":
        return self

    def allreduce(self, t: torch.Tensor, op: str = "sum") -> None:
        t.mul_(2)

    def broadcast(self, t: torch.Tensor, root: int = 0) -> None:
        pass

    def allreduce_async(self, t: torch.Tensor, op: str = "sum"):
        ident, rec = self.n, self.rec
        self.n += 1
        rec.log.append(("start", ident))

        class H:
            def wait(self) -> None:
                rec.log.append(("wait", ident))
                t.mul_(2)
        return H()


def test_daso_global_sync_runs_w_batches_without_a_device_wide_sync(fake_cuda: Recorder) -> None:
    from trainers.run import RunConfig
    from trainers.sync.daso import DASO
    from trainers.sync.loop import StepPosition

    cfg = RunConfig(algo="daso", model="lenet", dataset="synthetic", ranks_per_node=1, daso_b=1, daso_w=2,
                    daso_warmup_epochs=0, daso_cooldown_epochs=0, daso_global_dtype="fp32")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    params = list(model.parameters())
    # the timer a CUDA trainer builds (trainers.sync.loop.Trainer): events on the compute stream
    timer = StepTimer(events=timing_events(torch.device("cuda", 0)))
    tr = SimpleNamespace(cfg=cfg, world=2, rank=0, coll=FakeGroup(fake_cuda), params=params, model=model,
                         timer=timer, total_epochs=1)
    algo = DASO(tr)
    tr.optimizer = torch.optim.SGD(params, lr=0.01)
    steps = 6
    for step in range(steps):
        fake_cuda.log.append(("step", step))
        timer.start()
        x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
        algo.step(tr, x, y, StepPosition(step, 0, step, steps - 1, step == steps - 1))
        timer.end_step()
    log = fake_cuda.log
    starts = {e[1]: i for i, e in enumerate(log) if e[0] == "start"}
    waits = {e[1]: i for i, e in enumerate(log) if e[0] == "wait"}
    step_at = {}
    current = -1
    for i, e in enumerate(log):
        current = e[1] if e[0] == "step" else current
        step_at[i] = current
    assert len(starts) >= 3 and set(starts) == set(waits)
    for ident, i in starts.items():
        j = waits[ident]
        assert ("device_sync",) not in log[i:j], f"a device-wide sync between start and wait of sync {ident}"
        if step_at[j] < steps - 1:  # the last step merges whatever is in flight
            assert step_at[j] - step_at[i] == 2  # awaited W = 2 batches later
    assert ("device_sync",) not in log
    assert timer.totals["t_step"] > 0


# ----------------------------------------------------------------------------------- 3. device choice

@pytest.fixture
def one_visible_gpu(monkeypatch: pytest.MonkeyPatch) -> list:
    """torch as on an srun task with --gpus-per-task=1: CUDA present, one visible device."""
    chosen: list = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: chosen.append(d))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: SimpleNamespace(uuid="GPU-aaaa"))
    monkeypatch.delenv("DSGD_SHARE_GPUS", raising=False)
    return chosen


class TwinComm:
    """Rank 0 of 2 ranks that pass the same values (same host, same GPU): allgather -> [x, x]."""

    def Get_rank(self) -> int:  # noqa: N802
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 2

    def allgather(self, x):
        return [x, x]


def test_one_visible_gpu_is_the_ranks_whatever_its_local_rank(one_visible_gpu: list) -> None:
    env = {"SLURM_LOCALID": "3"}
    assert select_device("cuda", None, env) == torch.device("cuda", 0)
    assert select_device("auto", None, env) == torch.device("cuda", 0)
    assert one_visible_gpu == [torch.device("cuda", 0)] * 2


def test_two_ranks_of_a_host_on_one_gpu_are_refused_unless_asked(one_visible_gpu: list,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture) -> None:
    env = {"SLURM_LOCALID": "0"}  # a stale SLURM_LOCALID=0 on every rank
    with pytest.raises(UsageError, match="would share GPU GPU-aaaa"):
        select_device("cuda", TwinComm(), env)
    assert select_device("auto", TwinComm(), env) == torch.device("cpu")  # never silently:
    note = capsys.readouterr().err.strip().splitlines()
    assert len(note) == 1 and note[0].startswith("trainers: note: --device auto runs on the CPU: ranks 0 and 1")
    monkeypatch.setenv("DSGD_SHARE_GPUS", "1")
    assert select_device("cuda", TwinComm(), env) == torch.device("cuda", 0)


def test_auto_says_why_it_falls_back_to_the_cpu(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert select_device("auto", None, {"OMPI_COMM_WORLD_LOCAL_RANK": "5"}) == torch.device("cpu")
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["trainers: note: --device auto runs on the CPU: local rank 5 on a host with 2 visible GPU(s)"]


# ----------------------------------------------------------------------------------- 4. checkpoints

def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def test_checkpoint_gather_carries_host_tensors_only() -> None:
    from trainers.sync.loop import Trainer

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).to("meta")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for p in model.parameters():
        opt.state[p]["momentum_buffer"] = torch.zeros_like(p)  # on meta, as it would be on the GPU
    gathered = []

    class Comm:
        def gather(self, obj, root=0):
            devices = {t.device.type for t in _tensors(obj)}
            assert devices == {"cpu"}, f"gathered tensors on {devices}"
            gathered.append(obj)
            return None

        def Barrier(self) -> None:  # noqa: N802
            pass

    algo = SimpleNamespace(replicated=False, rank_state=lambda: {"pending": [(3, 0, 1, torch.ones(5, device="meta"))]})
    fake = SimpleNamespace(model=model, optimizer=opt, algo=algo, aug_gen=torch.Generator(), comm=Comm(), rank=1)
    Trainer.save(fake, 3)
    (state,) = gathered
    assert state["model"]["0.weight"].shape == (3, 4) and state["algo"]["pending"][0][3].shape == (5,)
    assert state["buffers"]["1.running_mean"].shape == (3,)
    assert len(state["optimizer"]["state"]) == 4


def test_rng_state_saves_and_restores_the_cuda_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainers.checkpoint import restore_rng, rng_state

    restored = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda *a: torch.arange(8, dtype=torch.uint8))
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda s, *a: restored.append(s))
    state = rng_state()
    assert state["cuda"].tolist() == list(range(8))
    restore_rng(state)
    assert restored[0].tolist() == list(range(8))


# ----------------------------------------------------------------------------------- 5. rendezvous

class PairComm:
    """Rank `rank` of 2; the other rank's allgather entry is given; bcast passes rank 0's value."""

    def __init__(self, rank: int, other) -> None:
        self.rank, self.other = rank, other

    def Get_rank(self) -> int:  # noqa: N802
        return self.rank

    def Get_size(self) -> int:  # noqa: N802
        return 2

    def allgather(self, x):
        return [x, self.other] if self.rank == 0 else [self.other, x]

    def bcast(self, x, root=0):
        return x


def test_rank0_lookup_failure_is_a_usage_error_not_a_socket_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*a, **k):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "node0")
    monkeypatch.setattr(socket, "getaddrinfo", fail)
    monkeypatch.setattr(socket, "gethostbyname", fail)
    with pytest.raises(UsageError, match="cannot resolve host name 'node0' of rank 0"):
        rendezvous(PairComm(0, ("node1", ["10.9.9.9"], None)))


def test_master_address_prefers_the_route_to_a_peer_and_never_loopback() -> None:
    assert master_address(["127.0.1.1"], [None]) is None
    assert master_address(["127.0.1.1", "10.1.2.3"], []) == "10.1.2.3"
    assert master_address(["10.1.2.3"], ["192.168.7.5"]) == "192.168.7.5"  # the interface toward the peers
    assert master_address(["10.1.2.3"], ["127.0.0.1"]) == "10.1.2.3"


def test_rendezvous_on_one_host_is_loopback_and_master_addr_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    host = socket.gethostname()
    url = rendezvous(PairComm(0, (host, [], None)))
    assert url.startswith("tcp://127.0.0.1:")
    assert rendezvous(PairComm(0, ("elsewhere", [], None)), master_addr="10.0.0.7").startswith("tcp://10.0.0.7:")


def test_ddp_benchmark_uses_the_rendezvous_not_loopback() -> None:
    text = (REPO / "benchmarks" / "ddp_vs_ours.py").read_text()
    assert "127.0.0.1" not in text and "rendezvous(comm, args.master_addr)" in text


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")
def test_failed_lookup_on_rank0_ends_every_rank_with_one_line() -> None:
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", "2", sys.executable,
                   str(REPO / "tests" / "mpi_scripts" / "rendezvous_fail.py")], timeout=90,
                  unset=["MASTER_ADDR"], split_stderr=True)
    out, err = job.output, job.errors
    if job.code is None:
        pytest.fail(f"the ranks hung in the rendezvous: {out[-1000:]} {err[-1000:]}")
    assert "Traceback" not in err, err[-3000:]
    lines = [x for x in err.splitlines() if x.startswith("trainers:")]
    assert len(lines) == 2, err[-3000:]  # one line per rank, the same on both
    assert all("cannot resolve host name 'node0' of rank 0" in x for x in lines), lines
    assert sorted(out.split()) == ["rank0-exit2", "rank1-exit2"], out


# ----------------------------------------------------------------------------------- 6. CUDA-aware MPI

def test_nonblocking_allreduce_on_device_memory_is_staged_unless_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    import trainers.collectives.mpi as tmpi

    seen: list[tuple[str, bool]] = []

    class Buf:
        def __init__(self, t, device_ok, staging=None) -> None:
            self.t, self.work = t, t
            seen.append(("buffer", bool(device_ok)))

        def mpi(self):
            return self.t.numpy()

        def finish(self, divide_by) -> None:
            pass

    class Comm:
        def Get_rank(self) -> int:  # noqa: N802
            return 0

        def Get_size(self) -> int:  # noqa: N802
            return 1

        def Iallreduce(self, *a, **k):  # noqa: N802
            return SimpleNamespace(Test=lambda: True, Wait=lambda: None)

        def Allreduce(self, *a, **k) -> None:  # noqa: N802
            pass

    monkeypatch.setattr(tmpi, "_mpi", lambda: SimpleNamespace(Get_library_version=lambda: "Open MPI v5.0.3",
                                                              IN_PLACE=None, SUM="sum", MAX="max"))
    monkeypatch.setattr(tmpi, "_Buffer", Buf)
    monkeypatch.setenv(tmpi.CUDA_AWARE_ENV, "1")
    monkeypatch.delenv("DSGD_MPI_CUDA_NONBLOCKING", raising=False)
    coll = tmpi.MPICollectives(Comm(), "cuda")
    assert coll.cuda_aware
    coll.allreduce(torch.ones(4))
    coll.allreduce_async(torch.ones(4)).wait()
    assert seen == [("buffer", True), ("buffer", False)]  # blocking: device memory; non-blocking: staged
    monkeypatch.setenv("DSGD_MPI_CUDA_NONBLOCKING", "1")
    seen.clear()
    tmpi.MPICollectives(Comm(), "cuda").allreduce_async(torch.ones(4)).wait()
    assert seen == [("buffer", True)]
    assert not tmpi.device_memory_ok(False, blocking=True, env={})


# ----------------------------------------------------------------------------------- 7. numerics

def test_numerics_are_set_and_returned_for_the_header() -> None:
    try:
        got = set_numerics(tf32=True, deterministic=False)
        assert got == {"tf32": True, "cudnn_deterministic": False, "cudnn_benchmark": True}
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        got = set_numerics()
        assert got == {"tf32": False, "cudnn_deterministic": True, "cudnn_benchmark": False}
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    finally:
        set_numerics()


@pytest.mark.slow  # one interpreter that imports torch and trains 2 steps
def test_run_log_header_records_the_numerics(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "trainers.run", "run", "--algo", "ssgd", "--model", "lenet",
                           "--dataset", "synthetic", "--synthetic-n", "64", "--batch", "16", "--steps", "2",
                           "--device", "cpu", "--no-progress", "--log", str(log)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    header = json.loads(log.read_text().splitlines()[0])
    assert header["device"] == "cpu"
    assert header["numerics"] == {"tf32": False, "cudnn_deterministic": True, "cudnn_benchmark": False}


# ----------------------------------------------------------------------------------- 8. host syncs

def test_divergence_check_costs_one_host_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainers.sync.loop import _grads_finite

    params = [torch.nn.Parameter(torch.ones(3)) for _ in range(6)]
    for p in params:
        p.grad = torch.ones(3)
    syncs = []
    real_bool, real_item = torch.Tensor.__bool__, torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda self: syncs.append(1) or real_bool(self))
    monkeypatch.setattr(torch.Tensor, "item", lambda self: syncs.append(1) or real_item(self))
    assert _grads_finite(params)
    assert len(syncs) == 1  # before: one per parameter
    params[4].grad[1] = float("nan")
    syncs.clear()
    assert not _grads_finite(params) and len(syncs) == 1


def test_divergence_check_is_one_multi_tensor_call_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """No per-parameter isfinite (two kernels each on a GPU); an infinity is caught, and finite values
    whose squares overflow float32 (a 2-norm would read them as infinite) are not."""
    from trainers.sync.loop import _grads_finite

    params = [torch.nn.Parameter(torch.ones(4)) for _ in range(5)]
    for p in params:
        p.grad = torch.full((4,), 1e30)  # finite; its 2-norm overflows float32
    calls = []
    real = torch.isfinite
    monkeypatch.setattr(torch, "isfinite", lambda t: calls.append(t.numel()) or real(t))
    assert _grads_finite(params)
    assert calls == [5]  # one call on the 5 per-gradient maxima
    params[2].grad[3] = float("-inf")
    assert not _grads_finite(params)
    params[2].grad[3] = 0.0
    params[0].grad = None  # a parameter without a gradient is skipped
    assert _grads_finite(params)


def test_a_dataset_moves_to_a_device_whole_and_leaves_the_original() -> None:
    """A GPU trainer keeps a small training set on its device (trainers.sync.loop): Dataset.to moves
    images, labels and the normalisation together; the host copy is left as it was."""
    from trainers.synthetic_data import synthetic

    host = synthetic("lenet", n=32, seed=0)
    moved = host.to("meta")  # a device without a GPU
    assert {t.device.type for t in (moved.images, moved.labels, moved.mean, moved.std)} == {"meta"}
    assert host.images.device.type == "cpu" and len(moved) == len(host) == 32
    assert moved.info is host.info


def _batching_stand_in(data, batch: int, rank: int, world: int):
    """What Trainer.batch reads of a trainer, with the dataset given (one micro-batch per step)."""
    import types

    cfg = types.SimpleNamespace(batch=batch, step_batch=batch, seed=3)
    return types.SimpleNamespace(train_set=data, cfg=cfg, rank=rank,
                                 world=world, device=data.images.device, _prepare=lambda x, train: x,
                                 _perm_epoch=-1, _perm=torch.empty(0, dtype=torch.int64))


def test_a_device_dataset_is_batched_without_a_host_copy_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The epoch's order goes to the dataset's device once; each step's indices are a slice of it there
    (before: a host index tensor per step, copied to the GPU by every gather of a launch-bound step)."""
    from trainers.sync.loop import Trainer
    from trainers.synthetic_data import synthetic

    tr = _batching_stand_in(synthetic("lenet", n=64, seed=0).to("meta"), batch=8, rank=1, world=2)
    moves, indices = [], []
    real_to, real_getitem = torch.Tensor.to, type(tr.train_set).__getitem__
    monkeypatch.setattr(torch.Tensor, "to", lambda self, *a, **k: self.device.type == "cpu" and moves.append(a)
                        or real_to(self, *a, **k))  # host tensors sent to the device
    monkeypatch.setattr(type(tr.train_set), "__getitem__",
                        lambda self, idx: indices.append(idx.device.type) or real_getitem(self, idx))
    for index in range(4):
        x, y = Trainer.batch(tr, 0, index)
        assert x.shape == (8, 1, 28, 28) and y.shape == (8,)
    assert indices == ["meta"] * 4
    assert len(moves) == 1  # the epoch's order, once
    Trainer.batch(tr, 1, 0)  # a new epoch: its order, once more
    assert len(moves) == 2


def test_batches_are_the_epochs_order_sliced_by_rank() -> None:
    """Trainer.batch gives rank r of W the samples perm[(i W + r) b : (i W + r + 1) b] of the epoch's
    permutation: the same samples as one process with batch W b, in the same order."""
    from trainers.errors import TrainerError
    from trainers.sync.loop import Trainer, epoch_permutation
    from trainers.synthetic_data import synthetic

    data = synthetic("lenet", n=48, seed=0)
    perm = epoch_permutation(48, 3, 2)
    whole = Trainer.batch(_batching_stand_in(data, batch=12, rank=0, world=1), 2, 1)[1]
    parts = [Trainer.batch(_batching_stand_in(data, batch=4, rank=r, world=3), 2, 1)[1] for r in range(3)]
    torch.testing.assert_close(torch.cat(parts), whole)
    torch.testing.assert_close(whole, data.labels[torch.from_numpy(perm[12:24])])
    with pytest.raises(TrainerError, match="outside the epoch"):
        Trainer.batch(_batching_stand_in(data, batch=12, rank=0, world=1), 0, 4)


def test_event_timer_syncs_once_per_step_and_never_the_device(fake_cuda: Recorder) -> None:
    timer = StepTimer(events=timing_events(torch.device("cuda", 0)))
    for _ in range(3):
        timer.start()
        with timer.phase("compute"):
            time.sleep(0.01)
        with timer.phase("comm"):
            time.sleep(0.005)
        rec = timer.end_step()
        assert rec["t_compute"] >= 0.01 and rec["t_comm"] >= 0.005
        assert rec["t_step"] == pytest.approx(rec["t_compute"] + rec["t_comm"] + rec["t_idle"])
    assert fake_cuda.log == [("event_sync",)] * 3


# ----------------------------------------------------------------------------------- the checklist

@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU machine the checklist runs its checks")
def test_gpu_checklist_says_no_gpu_here_and_exits_0() -> None:
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu_checklist.sh")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["gpu_checklist: no GPU here (torch.cuda.is_available() is False); "
                                        "nothing to check"]
    assert proc.stderr == ""


@pytest.mark.slow  # ~13 s
def test_step_parity_benchmark_times_both_paths_in_one_process() -> None:
    """benchmarks/gpu_step_parity.py (a checklist check) on the CPU at a tiny size: the profile's step
    and the trainer's variants, each a positive median, in its JSON line; with --device cuda and no GPU
    it says so and exits 0."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    script = str(REPO / "benchmarks" / "gpu_step_parity.py")
    proc = subprocess.run([sys.executable, script, "--device", "cpu", "--model", "lenet", "--batch", "4,8",
                           "--steps", "3", "--warmup", "1", "--rounds", "1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("JSON "))[5:])
    assert set(out["median_s"]) == {"4", "8"}
    for med in out["median_s"].values():
        assert set(med) == {"profile", "trainer", "trainer, lr 1e-3", "trainer, no batch"}
        assert all(0 < v < 5 for v in med.values())
    if not torch.cuda.is_available():
        proc = subprocess.run([sys.executable, script], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0 and proc.stdout.strip() == \
            "gpu_step_parity: no GPU here (torch.cuda.is_available() is False)"
