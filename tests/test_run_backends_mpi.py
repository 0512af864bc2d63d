"""`trainers run --backend --device --overlap` under mpiexec: gloo and MPI give the same SSGD (2 ranks),
TernGrad (every exchange, 2 ranks) and DASO (4 ranks) loss trajectories, overlap on and off give the
same one, the run log holds the exposed communication time,
and bad device/backend choices end every rank with status 2 and one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.mpi_job import mpi_env, run_job

REPO = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec")
pytestmark = [pytest.mark.mpi, pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")]

# every rank reports its own exit status and the wrapper exits 0, so that mpiexec does not kill the
# other ranks when the first one exits non-zero (the test sees every rank's status; mpiexec reports one)
RANK_STATUS = "status=$?; echo \"rank ${OMPI_COMM_WORLD_RANK:-?} exit $status\"; exit 0"

UNSET = ("DSGD_LAUNCHER",)  # removed from the environment of every job here


def _env() -> dict[str, str]:
    return mpi_env(unset=UNSET)


def _mpirun(ranks: int, args: list[str], timeout: float, per_rank: bool = False) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "trainers.run", "run", *args]
    if per_rank:
        cmd = ["sh", "-c", " ".join(f"'{c}'" for c in cmd) + "; " + RANK_STATUS]
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", str(ranks), *cmd], timeout,
                  unset=UNSET)
    if job.code is None:
        pytest.fail(f"mpiexec did not finish within {timeout} s: {job.output[-2000:]}")
    return job.code, job.output


def _read(log: Path) -> tuple[dict, list[dict]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return rows[0], [r for r in rows if r.get("type") == "step"]


# --device cpu: the 1e-5 and bit-equality comparisons below are of CPU arithmetic; --device auto would put
# them on a GPU machine's GPUs (cuDNN algorithm choice); the CUDA tests name --device cuda after these
TRAIN = ["--algo", "ssgd", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "640", "--batch", "16",
         "--steps", "20", "--seed", "3", "--no-progress", "--eval-batch", "160", "--device", "cpu"]


@pytest.mark.slow
def test_gloo_and_mpi_give_the_same_loss_trajectory(tmp_path: Path) -> None:
    runs = {}
    for backend, overlap in (("mpi", "on"), ("gloo", "on"), ("gloo", "off")):
        log = tmp_path / f"{backend}-{overlap}.jsonl"
        code, out = _mpirun(2, [*TRAIN, "--backend", backend, "--overlap", overlap, "--bucket-mb", "0.01",
                                "--log", str(log)], timeout=240)
        assert code == 0, out[-3000:]
        header, steps = _read(log)
        assert header["config"]["backend"] == backend and header["algorithm"]["buckets"] >= 2  # 0.01 MiB each
        runs[backend, overlap] = steps
    mpi, gloo, gloo_off = (runs[k] for k in (("mpi", "on"), ("gloo", "on"), ("gloo", "off")))
    assert len(mpi) == len(gloo) == 20
    for a, b, c in zip(mpi, gloo, gloo_off):
        assert abs(a["loss"] - b["loss"]) <= 1e-5 * abs(a["loss"])
        assert b["loss"] == c["loss"]  # the same collectives on the same data, launched at other times
    assert mpi[-1]["loss"] < mpi[0]["loss"]  # it trains
    for steps in runs.values():
        for s in steps:
            assert 0 <= s["t_comm_exposed"] and 0 <= s["t_comm_full"]


@pytest.mark.slow
def test_terngrad_every_exchange_on_gloo_gives_mpis_loss_trajectory(tmp_path: Path) -> None:
    """The three TernGrad exchanges through gloo (trainers.collectives.buffers.BufferComm) against MPI: the
    codes are the same integers, so the sums and the losses are the same."""
    tern = [a if a != "ssgd" else "terngrad" for a in TRAIN]
    runs = {}
    for backend, exchange in (("mpi", "levels"), ("gloo", "levels"), ("gloo", "ps"), ("gloo", "allgather")):
        log = tmp_path / f"{backend}-{exchange}.jsonl"
        code, out = _mpirun(2, [*tern, "--backend", backend, "--terngrad-exchange", exchange, "--log", str(log)],
                            timeout=240)
        assert code == 0, out[-3000:]
        header, steps = _read(log)
        assert header["backend"] == backend and header["algorithm"]["exchange"] == exchange
        # 4-bit lanes need a user-defined reduction: MPI has one, gloo keeps int8 lanes
        assert header["algorithm"]["level_lane_bits"] == (4 if backend == "mpi" else 8)
        runs[backend, exchange] = [s["loss"] for s in steps]
    mpi = runs["mpi", "levels"]
    assert len(mpi) == 20 and mpi[-1] < mpi[0]
    for key, losses in runs.items():
        assert losses == pytest.approx(mpi, rel=1e-5), key


DASO = ["--algo", "daso", "--ranks-per-node", "2", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "512",
        "--batch", "8", "--epochs", "3", "--daso-warmup-epochs", "1", "--daso-cooldown-epochs", "1", "--daso-b", "2",
        "--daso-w", "1", "--seed", "3", "--no-progress", "--eval-batch", "128", "--bucket-mb", "0.01",
        "--device", "cpu"]


@pytest.mark.slow
def test_daso_on_gloo_and_mpi_gives_the_same_loss_trajectory(tmp_path: Path) -> None:
    """4 ranks as 2 nodes x 2: node-local bucket averaging, blocking bf16 (warm-up) and fp32 (cool-down)
    global syncs, non-blocking syncs merged W = 1 batch later (cycling), broadcasts within the node."""
    runs = {}
    for backend in ("mpi", "gloo"):
        log = tmp_path / f"{backend}.jsonl"
        code, out = _mpirun(4, [*DASO, "--backend", backend, "--log", str(log)], timeout=300)
        assert code == 0, out[-3000:]
        header, steps = _read(log)
        assert header["backend"] == backend
        runs[backend] = steps
    mpi, gloo = runs["mpi"], runs["gloo"]
    assert len(mpi) == len(gloo) == 48
    kinds = {(s["sync"], s["wire"]) for s in mpi}
    assert {("blocking", "bf16"), ("blocking", "fp32"), ("start", "fp32")} <= kinds
    for a, b in zip(mpi, gloo):  # two operands per sum in every group: the same rounding on both backends
        assert abs(a["loss"] - b["loss"]) <= 1e-5 * abs(a["loss"]), (a["step"], a["loss"], b["loss"])
        assert (a["sync"], a["wire"], a["merged"]) == (b["sync"], b["wire"], b["merged"])


@pytest.mark.parametrize("args,message", [
    (["--device", "cuda"], "no CUDA GPU"),
    # the next two start 2 ranks that each import torch before refusing: 10-30 s apiece on 2 cores, so slow
    pytest.param(["--backend", "nccl", "--device", "cpu"], "nccl reduces CUDA tensors", marks=pytest.mark.slow),
    (["--backend", "ucc"], "invalid choice: 'ucc'"),
    (["--device", "cuda", "--algo", "ga"], "no CUDA GPU"),  # parameter server: workers on GPUs
    pytest.param(["--algo", "terngrad", "--backend", "gloo", "--terngrad-lanes", "packed"], "backend 'gloo' lacks",
                 marks=pytest.mark.slow),
])
def test_bad_device_or_backend_ends_every_rank_with_status_2(tmp_path: Path, args: list[str], message: str) -> None:
    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("CUDA is present: --device cuda is valid here")
    code, out = _mpirun(2, [*TRAIN, *args, "--log", str(tmp_path / "bad.jsonl")], timeout=60, per_rank=True)
    assert sorted(line for line in out.splitlines() if line.startswith("rank ")) == ["rank 0 exit 2", "rank 1 exit 2"]
    errors = [line for line in out.splitlines() if line.startswith("trainers: error:")]
    assert len(errors) == 1 and message in errors[0], out[-3000:]
    assert "Traceback" not in out
    assert not (tmp_path / "bad.jsonl").exists()
    if args[0] == "--backend":  # the job's own status, through mpiexec (once: it costs a job start)
        code, out = _mpirun(2, [*TRAIN, *args], timeout=60)
        assert code == 2 and "Traceback" not in out, out[-3000:]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised where CUDA is absent")
def test_simulate_device_cuda_without_cuda_is_one_line_and_status_2(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "trainers.run", "simulate", "--rule", "ga", "--workers", "2",
                          "--model", "lenet", "--steps", "4", "--device", "cuda", "--log", str(tmp_path / "s.jsonl")],
                         cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "no CUDA GPU" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available on this machine")
def test_simulate_on_cuda_matches_the_cpu_run_closely(tmp_path: Path) -> None:
    losses = {}
    for device in ("cpu", "cuda"):
        log = tmp_path / f"{device}.jsonl"
        out = subprocess.run([sys.executable, "-m", "trainers.run", "simulate", "--rule", "asgd", "--workers", "2",
                              "--model", "lenet", "--steps", "8", "--log-every", "1", "--device", device,
                              "--log", str(log)], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        header, steps = _read(log)
        assert header["device"].startswith(device)
        losses[device] = [s["loss"] for s in steps]
    # same order of arrivals and data; GPU kernels round differently (and may use TF32)
    assert losses["cpu"] == pytest.approx(losses["cuda"], rel=1e-2)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.device_count() < 2 if torch.cuda.is_available() else True,
                    reason="needs 2 CUDA GPUs (one per rank); CUDA is absent or has fewer GPUs here")
def test_nccl_and_host_staged_mpi_on_gpus_give_the_same_trajectory(tmp_path: Path) -> None:
    runs = {}
    for backend in ("nccl", "mpi"):
        log = tmp_path / f"{backend}.jsonl"
        code, out = _mpirun(2, [*TRAIN, "--device", "cuda", "--backend", backend, "--bucket-mb", "0.01",
                                "--log", str(log)], timeout=300)
        assert code == 0, out[-3000:]
        header, steps = _read(log)
        assert header["device"].startswith("cuda:") and header["backend"] == backend
        runs[backend] = [s["loss"] for s in steps]
    # the sums of two operands are exact on both; cuDNN's backward kernels need not be deterministic run
    # to run, so the trajectories agree closely rather than bit for bit
    assert runs["nccl"] == pytest.approx(runs["mpi"], rel=1e-3)
