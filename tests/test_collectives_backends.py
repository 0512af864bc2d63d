"""trainers.collectives (mpi, gloo, nccl) and trainers.device: backend and device checks in-process; the
collectives and gradient buckets under mpiexec -n 2 and -n 4 (tests/mpi_scripts/collectives_checks.py),
checked against values computed here from the same inputs and against each other (gloo vs MPI)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from trainers.collectives import BACKENDS, check_backend, resolve_backend
from trainers.collectives.base import check_tensor, wire_dtype
from trainers.device import LOCAL_RANK_ENV, local_rank, select_device
from trainers.errors import UsageError

from tests.mpi_job import run_job

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "tests" / "mpi_scripts"
MPIEXEC = shutil.which("mpiexec")
CUDA = torch.cuda.is_available()
GPUS = torch.cuda.device_count() if CUDA else 0
NO_CUDA = "CUDA is not available on this machine (torch.cuda.is_available() is False)"


def _load_inputs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("collectives_inputs", SCRIPTS / "collectives_inputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


inputs = _load_inputs()


# ------------------------------------------------------------------------------------ in-process


def test_unknown_backend_and_nccl_on_cpu_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown backend 'ucc'"):
        check_backend("ucc", "cpu")
    with pytest.raises(UsageError, match="nccl reduces CUDA tensors"):
        check_backend("nccl", "cpu")
    check_backend("gloo", "cpu")
    check_backend("mpi", "cpu")
    assert BACKENDS == ("mpi", "gloo", "nccl")


def test_auto_backend_is_nccl_on_gpus_and_mpi_on_cpus() -> None:
    assert resolve_backend("auto", "cuda") == "nccl"
    assert resolve_backend("auto", "cpu") == "mpi"
    assert resolve_backend("gloo", "cuda") == "gloo"


def test_importing_backends_and_devices_loads_neither_torch_nor_mpi4py() -> None:
    code = "import sys, trainers.collectives, trainers.device; print('torch' in sys.modules, 'mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_wire_types_widen_only_what_a_backend_lacks() -> None:
    gloo = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int32)
    assert wire_dtype(torch.int16, gloo) == torch.int32
    assert wire_dtype(torch.int8, gloo) == torch.int8
    assert wire_dtype(torch.bfloat16, (torch.float32, torch.int16)) == torch.float32
    assert wire_dtype(torch.int64, gloo) == torch.int64


def test_check_tensor_rejects_mean_of_integers_and_strided_tensors() -> None:
    with pytest.raises(ValueError, match="mean"):
        check_tensor(torch.zeros(3, dtype=torch.int8), "mean")
    with pytest.raises(ValueError, match="contiguous"):
        check_tensor(torch.zeros(4, 4).t(), "sum")
    with pytest.raises(ValueError, match="op must be"):
        check_tensor(torch.zeros(3), "min")
    check_tensor(torch.zeros(3, dtype=torch.int16), "max")


def test_local_rank_reads_the_launchers_variables_in_order() -> None:
    assert local_rank(None, {"OMPI_COMM_WORLD_LOCAL_RANK": "3", "SLURM_LOCALID": "1"}) == 3
    assert local_rank(None, {"MPI_LOCALRANKID": "2", "SLURM_LOCALID": "1"}) == 2
    assert local_rank(None, {"SLURM_LOCALID": "5"}) == 5
    assert local_rank(None, {"SLURM_LOCALID": "x"}) == 0  # malformed: ignored; no comm -> 0
    assert LOCAL_RANK_ENV[0] == "OMPI_COMM_WORLD_LOCAL_RANK"


def test_env_world_reads_the_launchers_rank_and_size() -> None:
    from trainers.device import env_world

    assert env_world({}) == (0, 1)  # no launcher: one process
    assert env_world({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "PMIX_RANK": "9"}) == (2, 4)
    assert env_world({"PMIX_RANK": "1"}) == (1, None)  # size unknown: ask MPI
    assert env_world({"PMI_RANK": "x", "MV2_COMM_WORLD_RANK": "3", "MV2_COMM_WORLD_SIZE": "8"}) == (3, 8)


def test_select_device_cpu_and_bad_names() -> None:
    assert select_device("cpu", None, {}) == torch.device("cpu")
    with pytest.raises(UsageError, match="unknown device 'gpu'"):
        select_device("gpu", None, {})


@pytest.mark.skipif(CUDA, reason="checks the error raised where CUDA is absent")
def test_device_cuda_without_cuda_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no CUDA GPU"):
        select_device("cuda", None, {})
    assert select_device("auto", None, {}) == torch.device("cpu")


@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
def test_device_cuda_takes_the_gpu_of_the_local_rank() -> None:
    assert select_device("cuda", None, {"OMPI_COMM_WORLD_LOCAL_RANK": "0"}) == torch.device("cuda", 0)
    if GPUS == 1:  # one visible GPU (srun's one GPU per task): it is the rank's, whatever its local rank
        assert select_device("cuda", None, {"OMPI_COMM_WORLD_LOCAL_RANK": "3"}) == torch.device("cuda", 0)
        return
    with pytest.raises(UsageError, match="one GPU per rank"):
        select_device("cuda", None, {"OMPI_COMM_WORLD_LOCAL_RANK": str(GPUS)})
    assert select_device("auto", None, {"OMPI_COMM_WORLD_LOCAL_RANK": str(GPUS)}) == torch.device("cpu")


# ------------------------------------------------------------------------------------ under mpiexec


def _run_checks(tmp_path: Path, ranks: int, device: str, *backends: str) -> dict:
    out = tmp_path / "out.json"
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", str(ranks), sys.executable,
                   str(SCRIPTS / "collectives_checks.py"), str(out), device, *backends], timeout=180)
    if job.code is None:
        pytest.fail(f"collectives checks timed out: {job.output[-2000:]}")
    assert job.code == 0, job.output[-3000:]
    return json.loads(out.read_text())


def _expected(ranks: int) -> dict:
    f = [inputs.floats(r) for r in range(ranks)]
    exp = {"allreduce_max": np.max(f, axis=0)}
    total = f[0].copy()
    for a in f[1:]:
        total = total + a  # float32, rank order
    exp["allreduce_sum"] = total
    exp["allreduce_mean"] = total / np.float32(ranks)
    for name, dtype in (("int8", np.int8), ("int16", np.int16), ("int32", np.int32)):
        exp[f"allreduce_sum_{name}"] = np.sum([inputs.levels(r, dtype).astype(np.int64) for r in range(ranks)], axis=0)
    return exp


def _bf16(a: np.ndarray) -> np.ndarray:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16).float().numpy()


def _reference_grads(ranks: int) -> np.ndarray:
    """Mean over ranks of each rank's flat gradient and loss, computed here without MPI (float64 mean)."""
    rows = []
    for r in range(ranks):
        model = inputs.model()
        x, y = inputs.batch(r)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()] + [loss.detach().reshape(1)]).double())
    return torch.stack(rows).mean(0).numpy()


def _check_backend_result(res: dict, ranks: int, exact: bool, grad_rtol: float = 1e-5) -> None:
    """grad_rtol: gradients computed on the ranks' device vs here on the CPU (GPU convolutions may use TF32)."""
    exp = _expected(ranks)
    f = [inputs.floats(r) for r in range(ranks)]
    ref = _reference_grads(ranks)
    for rank, mine in enumerate(res["ranks"]):
        c = mine["collectives"]
        for key, want in exp.items():
            got = np.asarray(c[key])
            if exact or key.startswith(("allreduce_sum_int", "allreduce_max")):
                np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float64), err_msg=key)
            else:  # summation order is the library's: float32 rounding per partial sum
                bound = 4 * ranks * 2.0**-24 * np.sum(np.abs(f), axis=0)
                assert np.all(np.abs(got - want) <= bound), key
        for name in ("int8", "int16", "int32"):
            assert c[f"dtype_{name}"] == f"torch.{name}"  # widened on the wire, given back in its own type
        np.testing.assert_array_equal(c["async_mean"], c["allreduce_mean"])
        assert c["async_completed"]
        np.testing.assert_array_equal(np.asarray(c["allgather"]).reshape(ranks, 7),
                                      np.stack([a[:7] for a in f]).astype(np.float64))
        np.testing.assert_array_equal(np.asarray(c["allgather_int8"]).reshape(ranks, 5),
                                      np.stack([inputs.levels(r, np.int8)[:5] for r in range(ranks)]))
        np.testing.assert_array_equal(c["broadcast_last"], f[-1])
        a2a = np.concatenate([np.arange(3 * rank, 3 * rank + 3) + 100 * r for r in range(ranks)])
        np.testing.assert_array_equal(c["alltoall"], a2a)  # chunk r: rank r's chunk number `rank`
        if "buffercomm" in c:
            bc = c["buffercomm"]
            assert (bc["size"], bc["rank"]) == (ranks, rank)
            np.testing.assert_array_equal(bc["max"], exp["allreduce_max"])
            np.testing.assert_array_equal(bc["levels"], exp["allreduce_sum_int8"])
            np.testing.assert_array_equal(bc["allgather"], np.stack([a[:7] for a in f]).reshape(-1))
            np.testing.assert_array_equal(bc["alltoall"], a2a)
        if ranks == 2:  # one rounding of the float32 sum of two bf16 values
            np.testing.assert_array_equal(c["allreduce_sum_bf16"], _bf16(_bf16(f[0]) + _bf16(f[1])))
        if ranks % 2 == 0:
            node, pos = rank // 2, rank % 2
            local = [2 * node, 2 * node + 1]
            glob = list(range(pos, ranks, 2))
            for kind, members in (("local", local), ("global", glob)):
                s = c[f"split_{kind}"]
                assert s["members"] == members and s["size"] == len(members) and s["rank"] == members.index(rank)
                want = f[members[0]].copy()
                for m in members[1:]:
                    want = want + f[m]
                np.testing.assert_allclose(s["sum"], want, rtol=0, atol=1e-3 * float(np.abs(want).max()))
                np.testing.assert_array_equal(s["bcast"], f[members[-1]])
        b = mine["buckets"]
        for key in ("on", "off"):
            if exact:  # two operands: (a + b) / 2 is exact whatever the chunking, so buckets == full vector
                assert b[f"equal_{key}"], (key, b[f"max_abs_diff_{key}"])
            else:
                assert b[f"max_abs_diff_{key}"] <= 1e-6 * float(np.abs(ref).max())
            assert b[f"buckets_{key}"] >= 3  # BUCKET_BYTES splits the model's 17k parameters
            t = b[f"times_{key}"]
            assert 0 <= t["comm_s"] <= t["span_s"] + 1e-9 and t["exposed_s"] >= 0
            assert t["nbytes"] == 4 * (ref.size)  # every gradient plus the loss slot, float32
        assert b["launched_in_backward_on"] == b["buckets_on"]  # overlap: every bucket left during backward
        assert b["launched_in_backward_off"] == 0
        assert b["times_off"]["span_s"] <= b["times_off"]["exposed_s"] + 1e-9  # all of it after backward
        np.testing.assert_allclose(b["full"], ref, rtol=grad_rtol, atol=grad_rtol * float(np.abs(ref).max()))


@pytest.mark.mpi
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")
def test_gloo_and_mpi_agree_on_two_ranks(tmp_path: Path) -> None:
    res = _run_checks(tmp_path, 2, "cpu", "mpi", "gloo")
    for name in ("mpi", "gloo"):
        _check_backend_result(res[name], 2, exact=True)
    # the two backends give the same bits for every collective on two ranks
    assert res["mpi"]["ranks"][0]["collectives"] == res["gloo"]["ranks"][0]["collectives"]
    assert res["mpi"]["ranks"][0]["buckets"]["full"] == res["gloo"]["ranks"][0]["buckets"]["full"]


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")
def test_gloo_and_mpi_on_four_ranks_with_node_and_global_groups(tmp_path: Path) -> None:
    res = _run_checks(tmp_path, 4, "cpu", "mpi", "gloo")
    for name in ("mpi", "gloo"):
        _check_backend_result(res[name], 4, exact=False)


@pytest.mark.mpi
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")
@pytest.mark.skipif(GPUS < 1, reason=NO_CUDA)
def test_nccl_and_host_staged_mpi_on_gpus(tmp_path: Path) -> None:
    ranks = min(GPUS, 2)
    res = _run_checks(tmp_path, ranks, "cuda", "mpi", "nccl")
    for name in ("mpi", "nccl"):
        _check_backend_result(res[name], ranks, exact=ranks <= 2, grad_rtol=1e-2)


def test_run_config_takes_device_backend_overlap_and_refuses_other_backends_for_the_parameter_server() -> None:
    from trainers.config import AsyncConfig, SyncConfig
    from trainers.run import build_run_parser, config_from_args, make_parser

    cfg = SyncConfig(algo="ssgd", device="cpu", backend="gloo", overlap=False)
    assert (cfg.device, cfg.backend, cfg.overlap) == ("cpu", "gloo", False)
    assert SyncConfig(algo="ssgd").to_dict()["backend"] == "auto"
    with pytest.raises(ValueError, match="backend must be one of"):
        SyncConfig(algo="ssgd", backend="ucc")
    parser = build_run_parser(make_parser("t"))
    with pytest.raises(ValueError, match="parameter server"):  # its transport is MPI point-to-point
        config_from_args(parser.parse_args(["--algo", "gem", "--backend", "gloo"]))
    assert AsyncConfig(algo="ga", device="cuda", steps=1).device == "cuda"  # workers on GPUs, the server on the CPU
