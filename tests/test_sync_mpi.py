"""trainers.sync: data order, the DASO schedule and checkpoints in-process; SSGD, TernGrad and DASO
under mpiexec (2 and 4 ranks, synthetic data, a few steps) against a plain single-process torch loop,
the TernGrad wire bytes from the run log, abort on a failing rank, and resume after a kill.

The MPI jobs run tests/mpi_sync/train_dump.py (the real Trainer, then every rank's live state
dumped) or `python -m trainers.run run ...` (the real command line)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from trainers.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from trainers.synthetic_data import synthetic
from trainers.log import read_run_log
from trainers.models import build_model, tensor_sizes
from trainers.sync.daso_schedule import DasoSchedule, DasoScheduleConfig, PlateauDetector
from trainers.sync.loop import batch_indices, epoch_permutation, steps_per_epoch

from tests.mpi_job import run_job

REPO = Path(__file__).resolve().parents[1]
DUMP_SCRIPT = REPO / "tests" / "mpi_sync" / "train_dump.py"
MPIEXEC = shutil.which("mpiexec")
U16 = 2.0**-8  # bfloat16 unit roundoff
mpi_only = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")


# ------------------------------------------------------------------------------------ helpers


def run_mpi(n: int, argv: list[str], timeout: float = 150.0) -> tuple[int | None, str, float]:
    """mpiexec -n n python ARGV; (returncode or None on timeout, output, time.time() at the end).
    Never leaves ranks behind (tests/mpi_job.py)."""
    if "--device" not in argv and (str(DUMP_SCRIPT) in argv or "trainers.run" in argv):
        argv = [*argv, "--device", "cpu"]  # the equality checks are of CPU arithmetic, also on a GPU machine
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", str(n), sys.executable, *argv], timeout)
    return job.code, job.output, job.ended


def train_dump(n: int, dump: Path, args: list[str]) -> list[dict]:
    """Run train_dump.py under mpiexec; every rank's final {"model", "optimizer"} state."""
    code, out, _ = run_mpi(n, [str(DUMP_SCRIPT), str(dump), *args, "--no-progress"])
    assert code == 0, out[-3000:]
    return [torch.load(dump / f"rank{r}.pt", weights_only=False) for r in range(n)]


def reference(world: int, batch: int, steps: int, lr: float, momentum: float, seed: int, n: int,
              order: str = "batch", init: bool = False) -> dict[str, torch.Tensor]:
    """Plain single-process torch: LeNet, SGD, batch world*batch, the same data order.

    order "batch": one loss over the whole batch; "forward" / "reverse": one gradient per rank slice,
    summed in rank order or reversed, then / world (other summation orders, same mathematics).
    init: return the initial parameters instead."""
    torch.set_num_threads(1)
    ds = synthetic("lenet", n=n, seed=seed, train=True)
    torch.manual_seed(seed)
    model = build_model("lenet", num_classes=10)
    if init:
        return {k: v.clone() for k, v in model.state_dict().items()}
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum)
    spe = n // (world * batch)
    for s in range(steps):
        epoch, i = divmod(s, spe)
        idx = epoch_permutation(n, seed, epoch)[i * world * batch:(i + 1) * world * batch]
        x, y = ds[torch.from_numpy(idx)]
        opt.zero_grad()
        if order == "batch":
            F.cross_entropy(model(x), y).backward()
        else:
            ranks = range(world) if order == "forward" else reversed(range(world))
            grads = [torch.autograd.grad(F.cross_entropy(model(x[r * batch:(r + 1) * batch]),
                                                         y[r * batch:(r + 1) * batch]), params) for r in ranks]
            for j, p in enumerate(params):
                p.grad = torch.stack([g[j] for g in grads]).sum(0) / world
        opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def flat(state: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([v.reshape(-1).double() for v in state.values()])


# Shared settings of the equality runs: LeNet on 1024 synthetic images, 20 steps, per-rank batch 16.
# Rounding differences (another summation order of the rank gradients) grow into jumps of ~lr/batch
# whenever they flip a ReLU or max-pool decision; at lr 0.005 that reaches 1e-4 after 20 steps for
# some seeds. At lr 0.001 three summation orders stay within 1e-6 (checked below) while the
# parameters move by more than 1e-3 from their initial values, so a 1e-5 gap is a real difference.
EQ = dict(batch=16, steps=20, lr=0.001, momentum=0.9, seed=3, n=1024)
EQ_ARGS = ["--algo", "ssgd", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", str(EQ["n"]),
           "--batch", str(EQ["batch"]), "--steps", str(EQ["steps"]), "--lr", str(EQ["lr"]),
           "--momentum", str(EQ["momentum"]), "--seed", str(EQ["seed"])]


# ------------------------------------------------------------------------------- in-process


def test_global_batch_is_the_union_of_rank_slices() -> None:
    perm = epoch_permutation(100, seed=5, epoch=2)
    assert sorted(perm.tolist()) == list(range(100))
    assert steps_per_epoch(100, 8, 3) == 4
    for index in range(4):
        parts = [batch_indices(perm, 8, r, 3, index) for r in range(3)]
        np.testing.assert_array_equal(np.concatenate(parts), batch_indices(perm, 24, 0, 1, index))
    with pytest.raises(ValueError, match="outside the epoch"):
        batch_indices(perm, 8, 0, 3, 4)


def test_plateau_detector_counts_epochs_without_relative_improvement() -> None:
    d = PlateauDetector(patience=2, threshold=0.05)
    # 1.0 best; 0.96 is not 5% better; 0.97, 0.99 neither -> third bad epoch is a plateau
    assert [d.update(v) for v in (1.0, 0.96, 0.97, 0.99)] == [False, False, False, True]
    assert d.bad_epochs == 0 and d.best == 1.0
    assert d.update(0.94) is False and d.best == 0.94  # 6% better: improvement
    with pytest.raises(ValueError, match="patience"):
        PlateauDetector(patience=-1)


def test_daso_schedule_paper_rule() -> None:
    # patience 0: every epoch without a 5% improvement is a plateau.
    s = DasoSchedule(DasoScheduleConfig(total_epochs=10, warmup_epochs=2, cooldown_epochs=2, max_b=8,
                                        rule="paper", patience=0, threshold=0.05))
    losses = [3.0, 2.0,                      # warm-up: not fed to the detector
              1.0, 1.0, 0.5, 0.5, 0.5, 0.5,  # cycling: improve, plateau, improve, plateau x3
              0.4, 0.4]                      # cool-down
    assert s.trace(losses) == [
        ("warmup", 1, 0), ("warmup", 1, 0),
        ("cycling", 8, 2),   # B = max, W = B/4
        ("cycling", 8, 2),   # epoch 2 improved (first value)
        ("cycling", 4, 1),   # epoch 3 plateau: halve both
        ("cycling", 4, 1),   # epoch 4 improved (0.5 < 0.95)
        ("cycling", 2, 1),   # plateau: B halves, W stays at its minimum 1
        ("cycling", 1, 1),   # plateau
        ("cooldown", 1, 0), ("cooldown", 1, 0)]
    # epoch 7 (0.5 again) was a plateau at B = W = 1 too: reset, seen by no cycling epoch
    assert s.plateaus == 4 and (s.b, s.w) == (8, 2)
    # one more plateau at B = W = 1 resets to the initial values
    s2 = DasoSchedule(DasoScheduleConfig(total_epochs=6, warmup_epochs=0, cooldown_epochs=0, max_b=4,
                                         patience=0))
    assert [bw for _, *bw in s2.trace([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])] == [
        [4, 1], [4, 1], [2, 1], [1, 1], [4, 1], [2, 1]]


def test_daso_schedule_code_rule_and_fixed() -> None:
    s = DasoSchedule(DasoScheduleConfig(total_epochs=8, warmup_epochs=1, cooldown_epochs=0, max_b=8,
                                        rule="code", patience=0))
    # authors' code: B = 4, W = 1 after warm-up; halve B, W - 1 (min 1); reset to (8, 8 // 4)
    assert [bw for _, *bw in s.trace([9.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])] == [
        [1, 0], [4, 1], [4, 1], [2, 1], [1, 1], [8, 2], [4, 1], [2, 1]]
    fixed = DasoSchedule(DasoScheduleConfig(total_epochs=4, warmup_epochs=0, cooldown_epochs=0, fixed=(1, 0),
                                            patience=0))
    assert [bw for _, *bw in fixed.trace([1.0] * 4)] == [[1, 0]] * 4
    state = s.state_dict()
    again = DasoSchedule(s.config)
    again.load_state_dict(state)
    assert again.state_dict() == state and again.b_w(7) == s.b_w(7)


def test_checkpoint_is_atomic_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "ck" / "run.pt"
    save_checkpoint(path, {"format": 1, "x": torch.arange(3)})
    assert torch.equal(load_checkpoint(path)["x"], torch.arange(3))
    with pytest.raises(Exception):
        save_checkpoint(path, {"format": 1, "bad": lambda: 0})  # cannot be pickled
    assert torch.equal(load_checkpoint(path)["x"], torch.arange(3))  # the old checkpoint survives
    assert [p.name for p in path.parent.iterdir()] == ["run.pt"]  # no temporary file left
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(path)
    save_checkpoint(path, {"format": 99})
    with pytest.raises(CheckpointError, match="format 99"):
        load_checkpoint(path)


def test_reference_is_well_conditioned() -> None:
    """Three summation orders of the same large-batch training agree far below the 1e-5 test bound,
    and training moves the parameters far beyond it."""
    args = (EQ["batch"], EQ["steps"], EQ["lr"], EQ["momentum"], EQ["seed"], EQ["n"])
    for world in (2, 4):
        a = reference(world, *args)
        for order in ("forward", "reverse"):
            assert max_diff(a, reference(world, *args, order=order)) < 1e-6
        assert max_diff(a, reference(world, *args, init=True)) > 1e-3


# --------------------------------------------------------------------------------- under MPI


@pytest.mark.mpi
@mpi_only
@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.slow)])  # 4 ranks: 20-40 s on 2 cores
def test_ssgd_equals_single_process_large_batch(world: int, tmp_path: Path) -> None:
    ranks = train_dump(world, tmp_path, EQ_ARGS)
    ref = reference(world, EQ["batch"], EQ["steps"], EQ["lr"], EQ["momentum"], EQ["seed"], EQ["n"])
    for r in range(world):
        assert max_diff(ranks[r]["model"], ref) < 1e-5
        assert max_diff(ranks[r]["model"], ranks[0]["model"]) == 0.0  # replicas stay bit-identical


@pytest.fixture(scope="module")
def daso_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[dict], Path]]:
    """DASO with a blocking global sync every batch, 2 pretend nodes x 2 ranks, 20 steps (2 epochs of
    16 steps): "fp32" and "cycling-bf16" in the cycling phase with B = 1, W = 0 (--daso-global-dtype
    fp32 and bf16); "bf16": the whole run in warm-up with bf16 on the wire. (rank states, log)."""
    base = tmp_path_factory.mktemp("daso")
    args = [a if a != "ssgd" else "daso" for a in EQ_ARGS] + ["--ranks-per-node", "2", "--daso-b", "1", "--daso-w", "0"]
    runs = {"fp32": ["--daso-warmup-epochs", "0", "--daso-cooldown-epochs", "0", "--daso-global-dtype", "fp32"],
            "cycling-bf16": ["--daso-warmup-epochs", "0", "--daso-cooldown-epochs", "0", "--daso-global-dtype", "bf16"],
            "bf16": ["--daso-warmup-epochs", "2", "--daso-cooldown-epochs", "0", "--daso-global-dtype", "bf16"]}
    return {name: (train_dump(4, base / name, args + extra + ["--log", str(base / f"{name}.jsonl")]),
                   base / f"{name}.jsonl") for name, extra in runs.items()}


@pytest.mark.mpi
@pytest.mark.slow
@mpi_only
def test_daso_b1_w0_fp32_equals_ssgd(daso_runs: dict[str, tuple[list[dict], Path]]) -> None:
    ref = reference(4, EQ["batch"], EQ["steps"], EQ["lr"], EQ["momentum"], EQ["seed"], EQ["n"])
    fp32 = daso_runs["fp32"][0]
    for r in range(4):
        assert max_diff(fp32[r]["model"], ref) < 1e-5
        assert max_diff(fp32[r]["model"], fp32[0]["model"]) == 0.0


@pytest.mark.mpi
@pytest.mark.slow
@mpi_only
def test_daso_cycling_syncs_go_in_fp32_whatever_the_warmup_wire(daso_runs: dict[str, tuple[list[dict], Path]]) -> None:
    # HeAT casts to bf16 only while global_skip = 0 (warm-up/cool-down): W = 0 and the last sync of a
    # cycling phase are fp32, so --daso-global-dtype bf16 changes nothing there, bit for bit
    (fp32, fp32_log), (cyc, cyc_log) = daso_runs["fp32"], daso_runs["cycling-bf16"]
    for r in range(4):
        assert max_diff(cyc[r]["model"], fp32[r]["model"]) == 0.0
    steps = read_run_log(cyc_log).steps
    assert [s["wire"] for s in steps] == ["fp32"] * EQ["steps"]
    assert [s["bytes_global"] for s in steps] == [s["bytes_global"] for s in read_run_log(fp32_log).steps]


@pytest.mark.mpi
@pytest.mark.slow
@mpi_only
def test_daso_bf16_global_sync_stays_within_bf16_tolerance(daso_runs: dict[str, tuple[list[dict], Path]]) -> None:
    exact, (bf16_ranks, log) = daso_runs["fp32"][0][0]["model"], daso_runs["bf16"]
    bf16 = bf16_ranks[0]["model"]
    assert [s["wire"] for s in read_run_log(log).steps] == ["bf16"] * EQ["steps"]  # all in warm-up
    for r in range(4):  # the last step ended with a bf16 sync and a broadcast: all ranks equal
        assert max_diff(bf16_ranks[r]["model"], bf16) == 0.0
    for v in bf16.values():  # the mean of 2 bf16 values is a bf16 value: parameters came over the wire as bf16
        assert torch.equal(v, v.to(torch.bfloat16).to(torch.float32))
    # Each of the T blocking syncs rounds every parameter to bf16 (twice with the bf16-sum op):
    # ||error|| <= 2 u ||x|| per sync, and SGD with a small step passes earlier errors on ~unchanged.
    rel = float((flat(bf16) - flat(exact)).norm() / flat(exact).norm())
    assert 0.05 * U16 < rel <= 2 * EQ["steps"] * U16, rel


@pytest.mark.slow
@pytest.mark.mpi
@mpi_only
def test_daso_merge_weights_and_sync_wire_by_hand(tmp_path: Path) -> None:
    """tests/mpi_sync/daso_merge.py: set parameters, one non-blocking sync merged after S = 3 batches,
    then blocking bf16 and fp32 syncs, through DASO's real MPI path (2 nodes x 2 ranks)."""
    code, out, _ = run_mpi(4, [str(REPO / "tests" / "mpi_sync" / "daso_merge.py"), str(tmp_path)], timeout=120)
    assert code == 0, out[-3000:]
    got = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(4)]
    numel = got[0]["merged"].numel()
    # senders: rank 0 (node 0) sent 1, rank 2 (node 1) sent 3; locals at merge time 10 and 30.
    # x = (2S x_local + sum_i x_i) / (2S + P), S = 3, P = 2 nodes:
    #   node 0: (6*10 + 1 + 3) / 8 = 8;  node 1: (6*30 + 4) / 8 = 23   [(S x + sum)/(S + P) would give 6.8, 19.6]
    # and the node's other rank gets the sender's merged parameters by broadcast
    for r, want in enumerate((8.0, 8.0, 23.0, 23.0)):
        assert torch.equal(got[r]["merged"], torch.full((numel,), want)), (r, got[r]["merged"][:3])
    # blocking syncs of 1*(1+2^-10) and 3*(1+2^-10): fp32 gives their mean 2*(1+2^-10) exactly; bf16
    # (8 significant bits) rounds each to 1 and 3 first, so the mean is 2.0
    odd = 1.0 + 2.0**-10
    for r in range(4):
        assert torch.equal(got[r]["fp32"], torch.full((numel,), 2.0 * odd))
        assert torch.equal(got[r]["bf16"], torch.full((numel,), 2.0))
    # bytes the senders hand to MPI: 4 per parameter for the Iallreduce; 2 (bf16) or 4 (fp32) for the
    # blocking allreduce plus 4 for the broadcast to the node; the other ranks send nothing
    for r in (0, 2):
        assert (got[r]["bytes_start"], got[r]["bytes_bf16"], got[r]["bytes_fp32"]) == (4 * numel, 6 * numel, 8 * numel)
    for r in (1, 3):
        assert (got[r]["bytes_start"], got[r]["bytes_bf16"], got[r]["bytes_fp32"]) == (0, 0, 0)


def _assert_once(log: Path, total: int) -> None:
    contents = read_run_log(log)
    assert [s["step"] for s in contents.steps] == list(range(total))
    evals = [e["step"] for e in contents.evals]
    assert evals == sorted(set(evals))  # no evaluation written twice


def _interrupt_and_resume(tmp_path: Path, world: int, args: list[str], fail_at: int, total: int
                          ) -> tuple[list[dict], list[dict], float, str, dict]:
    """An uninterrupted run; a run whose last rank raises at `fail_at` (real CLI); a --resume run."""
    full = train_dump(world, tmp_path / "full", args + ["--log", str(tmp_path / "full.jsonl"),
                                                        "--checkpoint", str(tmp_path / "full.pt")])
    log, ck = tmp_path / "run.jsonl", tmp_path / "run.pt"
    code, out, ended = run_mpi(world, ["-m", "trainers.run", "run", *args, "--log", str(log), "--checkpoint",
                                       str(ck), "--fail-at-step", str(fail_at), "--no-progress"], timeout=120)
    assert code not in (0, None), out[-3000:]
    failed_at = float(re.search(r"injected failure at step \d+ on rank \d+ \(t=([0-9.]+)\)", out).group(1))
    assert read_run_log(log).last_step < fail_at
    at_failure = load_checkpoint(ck)
    resumed = train_dump(world, tmp_path / "resumed", args + ["--log", str(log), "--checkpoint", str(ck), "--resume"])
    _assert_once(log, total)
    a, b = read_run_log(tmp_path / "full.jsonl"), read_run_log(log)
    assert [s["loss"] for s in a.steps] == [s["loss"] for s in b.steps]
    return full, resumed, ended - failed_at, out, at_failure


@pytest.mark.slow
@pytest.mark.mpi
@mpi_only
def test_terngrad_abort_resume_and_wire_bytes(tmp_path: Path) -> None:
    # ResNet-20 (BatchNorm buffers differ per rank), checkpoints every 2 steps, rank 1 raises at step 5
    args = ["--algo", "terngrad", "--model", "resnet20", "--dataset", "synthetic", "--synthetic-n", "64",
            "--batch", "4", "--steps", "7", "--lr", "0.05", "--seed", "2", "--checkpoint-every", "2",
            "--eval-every", "3"]
    full, resumed, abort_s, out, ckpt = _interrupt_and_resume(tmp_path, 2, args, fail_at=5, total=7)
    assert ckpt["step"] == 4
    assert abort_s < 10.0, f"job took {abort_s:.1f} s to end after the failure"
    assert "[rank 1/2] RuntimeError: injected failure" in out
    for r in range(2):
        for k, v in full[r]["model"].items():
            assert torch.equal(v, resumed[r]["model"][k]), (r, k)
        assert torch.equal(flat({k: s["momentum_buffer"] for k, s in full[r]["optimizer"]["state"].items()}),
                           flat({k: s["momentum_buffer"] for k, s in resumed[r]["optimizer"]["state"].items()}))

    # Bytes per step (trainers.log), from the logs: the TernGrad run above (levels) against SSGD
    ssgd_log = tmp_path / "ssgd.jsonl"
    code, out, _ = run_mpi(2, ["-m", "trainers.run", "run", "--algo", "ssgd", *args[2:10], "--steps", "1",
                               "--log", str(ssgd_log), "--no-progress"])
    assert code == 0, out[-3000:]
    fp32 = [s["bytes_sent"] for s in read_run_log(ssgd_log).steps]
    tern = [s["bytes_sent"] for s in read_run_log(tmp_path / "full.jsonl").steps]
    # hand count at 2 ranks, where a ring allreduce sends 2(p-1)/p = 1 times its buffer: fp32 = 4 bytes
    # per parameter; TernGrad levels on MPI at 2 ranks = half a byte (4-bit lanes, two sums per byte, one
    # bucket) per ternary element + a 4-byte scaler per ternary tensor + 4 bytes per element of the last
    # layer (fc, 650 elements); the loss slot is not counted
    sizes = tensor_sizes("resnet20")
    assert fp32 == [4 * 269_722]
    ternary = [n for name, n in sizes if not name.startswith("fc.")]
    expect = (sum(ternary) + 1) // 2 + 4 * len(ternary) + 4 * 650
    assert tern == [expect] * 7
    assert fp32[0] / tern[0] >= 7.8


@pytest.mark.slow
@pytest.mark.mpi
@mpi_only
def test_daso_resume_reissues_in_flight_sync(tmp_path: Path) -> None:
    # 8 steps per epoch; epoch 0 warm-up (blocking), epoch 1 cycling with B = 2, W = 1: syncs start at
    # steps 8, 10, 12, 14 and are merged one step later. Checkpoints every 3 steps: the one after
    # step 8 holds a sync in flight; rank 3 fails at step 11, the rerun resumes from it.
    args = ["--algo", "daso", "--ranks-per-node", "2", "--model", "lenet", "--dataset", "synthetic",
            "--synthetic-n", "256", "--batch", "8", "--steps", "16", "--lr", "0.005", "--seed", "4",
            "--daso-b", "2", "--daso-w", "1", "--daso-warmup-epochs", "1", "--daso-cooldown-epochs", "0",
            "--checkpoint-every", "3"]
    full, resumed, abort_s, _, ckpt = _interrupt_and_resume(tmp_path, 4, args, fail_at=11, total=16)
    assert abort_s < 10.0
    # the checkpoint the rerun started from: after 9 steps, the sync started at step 8 in flight,
    # its send buffer held by the sending group's members (local rank 0: ranks 0 and 2)
    assert ckpt["step"] == 9
    pending = [r["algo"]["pending"] for r in ckpt["ranks"]]
    assert [[(due, group, waited) for due, group, waited, _ in p] for p in pending] == [[(1, 0, 1)]] * 4
    assert [p[0][3] is not None for p in pending] == [True, False, True, False]
    for r in range(4):
        for k, v in full[r]["model"].items():
            assert torch.equal(v, resumed[r]["model"][k]), (r, k)
    steps = read_run_log(tmp_path / "full.jsonl").steps
    assert [s["sync"] for s in steps[8:]] == ["start", "none"] * 3 + ["start", "blocking"]
    assert [s["merged"] for s in steps[8:]] == [0, 1] * 4
    final = load_checkpoint(tmp_path / "run.pt")  # after 16 steps: nothing in flight at the end
    assert final["step"] == 16 and all(not r["algo"]["pending"] for r in final["ranks"])


def _strict_lines(path: Path) -> list[dict]:
    import json

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")
    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


DIVERGE_ARGS = ["-m", "trainers.run", "run", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "256",
                "--batch", "16", "--steps", "12", "--lr", "100", "--seed", "1", "--no-progress"]


@pytest.mark.mpi
@pytest.mark.slow
@mpi_only
@pytest.mark.parametrize("algo,ranks,extra", [
    ("ssgd", 2, []),  # the loss is averaged over all ranks: every rank stops at the same step
    # node means: the ranks agree at the run's (epoch's) end by Allreduce(MIN) of their first bad step
    ("daso", 4, ["--ranks-per-node", "2", "--daso-warmup-epochs", "0", "--daso-cooldown-epochs", "0",
                 "--daso-b", "4", "--daso-w", "1"]),
])
def test_divergence_stops_every_rank_with_one_line_and_status_3(tmp_path: Path, algo: str, ranks: int,
                                                                 extra: list[str]) -> None:
    log = tmp_path / "div.jsonl"
    code, out, _ = run_mpi(ranks, [*DIVERGE_ARGS, "--algo", algo, *extra, "--log", str(log)], timeout=120)
    assert code == 3, out[-3000:]  # not None: no rank hung in a collective
    # one line from us (rank 0); mpiexec adds its own banner about the non-zero status after it
    ours = [x for x in out.splitlines() if x.startswith("trainers:")]
    assert len(ours) == 1 and ours[0].startswith("trainers: error: training diverged: non-finite loss or gradients "
                                                 "at step "), out[-3000:]
    assert out.lstrip().startswith(ours[0]) and "Traceback" not in out
    records = _strict_lines(log)
    summary = records[-1]
    assert summary["type"] == "summary" and summary["diverged"] is True
    steps = [r for r in records if r["type"] == "step"]
    first = summary["diverged_at_step"]
    assert steps[first]["loss"] is None and steps[first]["nonfinite"] == {"loss": "nan"}
    assert all(r["loss"] is not None for r in steps[:first])
    if algo == "ssgd":
        assert steps[-1]["step"] == first < 11  # stopped at once
    else:  # at the end of its epoch: 256 images / (4 ranks x 16) = 4 steps per epoch
        assert steps[-1]["step"] == 4 * (first // 4) + 3
    # asked to go on: trains to its budget, status 0, the summary still says it diverged
    log.unlink()  # a run never writes over a log
    code, out, _ = run_mpi(ranks, [*DIVERGE_ARGS, "--algo", algo, *extra, "--log", str(log), "--allow-divergence"],
                           timeout=120)
    assert code == 0, out[-3000:]
    records = _strict_lines(log)
    assert [r["step"] for r in records if r["type"] == "step"] == list(range(12))
    assert records[-1]["diverged"] is True and records[-1]["diverged_at_step"] == first
