"""TernGrad exchange objects (trainers.exchanges) under mpiexec: exact against a float reference
(tests/mpi_tern/exchange_check.py),
and the trainer's bytes per step equal to the model's for each exchange at 2, 3 and 4 ranks."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from perfmodel.mpi_algorithms import mca_args
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, Workload
from perfmodel.lab.validate import measure_run, run_strategies
from trainers.log import read_run_log
from trainers.models import tensor_sizes

from tests.mpi_job import run_job

REPO = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec")
pytestmark = [pytest.mark.mpi, pytest.mark.slow,
              pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")]


def run_mpi(n: int, argv: list[str], timeout: float = 180.0, mca: list[str] | None = None) -> tuple[int | None, str]:
    """mpiexec [MCA] -n n python ARGV (tests/mpi_job.py: its own session, ended as a group on timeout)."""
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", *(mca or []), "-n", str(n), sys.executable,
                   *argv], timeout)
    return job.code, job.output


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_exchanges_are_exact_against_the_float_reference(ranks: int) -> None:
    code, out = run_mpi(ranks, [str(REPO / "tests" / "mpi_tern" / "exchange_check.py")])
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert code == 0, out[-3000:]
    assert [r["exchange"] for r in rows] == ["levels", "levels-lanes4", "ps", "allgather"]
    assert [r["parts"] for r in rows] == [2, 2, 1, 1]  # levels: one part per gradient bucket
    # sums of 2..4 ternary codes reach beyond 1 in magnitude: the lanes carry multi-level values
    assert all(r["max_abs_sum"] >= 2 for r in rows)
    assert all(r["exact"] and r["bytes"] == r["expected_bytes"] for r in rows), rows


def test_lanes4_sum_is_exact_on_the_forced_ring_allreduce() -> None:
    # the emulated runs force Open MPI's ring (perfmodel.mpi_algorithms): it cuts the byte buffer into
    # 3 uneven segments and applies the user-defined lane op to each; the sums must stay exact
    code, out = run_mpi(3, [str(REPO / "tests" / "mpi_tern" / "exchange_check.py")], mca=mca_args())
    rows = {r["exchange"]: r for r in (json.loads(line) for line in out.splitlines() if line.startswith("{"))}
    assert code == 0, out[-3000:]
    lanes = rows["levels-lanes4"]
    assert lanes["exact"] and lanes["bytes"] == lanes["expected_bytes"] == pytest.approx(2 * 2 / 3 * 1523)


def _lenet() -> Workload:
    sizes = tensor_sizes("lenet")
    return Workload("lenet", tuple(n for _, n in sizes), {"cpu": ComputeTime("linear", t1_s=1e-3)},
                    tensor_names=tuple(k for k, _ in sizes), classifier_tensors=2)


def _train(tmp_path: Path, ranks: int, algo: str, exchange: str | None, lanes: str | None = None) -> Path:
    log = tmp_path / f"{algo}-{exchange}-{lanes}-{ranks}.jsonl"
    args = ["-m", "trainers.run", "run", "--algo", algo, "--model", "lenet", "--dataset", "synthetic",
            "--synthetic-n", "128", "--batch", "4", "--steps", "3", "--seed", "5", "--no-progress", "--log", str(log)]
    if exchange:
        args += ["--terngrad-exchange", exchange]
    if lanes:
        args += ["--terngrad-lanes", lanes]
    code, out = run_mpi(ranks, args)
    assert code == 0, out[-3000:]
    return log


def _predicted_bytes(log: Path) -> float:
    run = measure_run(log, skip=0)
    link = Link(1e-5, 1e9)
    cluster = Cluster("local", 1, link, link, link, gpu="cpu")
    ((strategy, _, _),) = run_strategies(run)
    return float(predict(_lenet(), cluster, strategy, [run.ranks], batch=run.batch).bytes_per_gpu[0])


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_trainer_bytes_per_step_equal_the_model_for_each_exchange(tmp_path: Path, ranks: int) -> None:
    losses = {}
    for exchange in ("levels", "ps", "allgather"):
        log = _train(tmp_path, ranks, "terngrad", exchange)
        steps = read_run_log(log).steps
        measured = {s["bytes_sent"] for s in steps}
        assert len(measured) == 1
        assert measured.pop() == pytest.approx(_predicted_bytes(log), rel=1e-12), exchange
        losses[exchange] = [s["loss"] for s in steps]
    # the three exchanges sum the same codes exactly: bit-identical training
    assert losses["levels"] == losses["ps"] == losses["allgather"]
    if ranks == 4:
        ssgd = read_run_log(_train(tmp_path, 4, "ssgd", None)).steps[0]["bytes_sent"]
        log = read_run_log(tmp_path / "terngrad-levels-None-4.jsonl")
        levels = log.steps[0]["bytes_sent"]
        assert (log.header["algorithm"]["level_lanes"], log.header["algorithm"]["level_lane_bits"]) == ("packed", 4)
        # LeNet: 431_080 parameters, ip2 (5_010) in fp32; ring allreduce sends 2 * 3/4 of each buffer;
        # the default lanes on MPI at 4 ranks: 4 bits (two sums per byte)
        assert ssgd == 1.5 * 4 * 431_080
        assert levels == 1.5 * (426_070 / 2 + 4 * 6 + 4 * 5_010)
        assert ssgd / levels == pytest.approx(7.397, abs=1e-3)
        # int8 lanes (what gloo and NCCL sum): twice the ternary bytes, the same training
        int8_log = _train(tmp_path, 4, "terngrad", "levels", "int8")
        steps = read_run_log(int8_log).steps
        assert {s["bytes_sent"] for s in steps} == {1.5 * (426_070 * 1 + 4 * 6 + 4 * 5_010)}
        assert steps[0]["bytes_sent"] == pytest.approx(_predicted_bytes(int8_log), rel=1e-12)
        assert [s["loss"] for s in steps] == losses["levels"]
