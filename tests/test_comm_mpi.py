"""trainers.comm: flat buckets, bf16 bit conversion and abort logic in-process; the collectives under
mpiexec -n 2 and -n 4 (scripts in tests/mpi_scripts/, checked against values computed here)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from trainers import comm as tc
from trainers.compress import TernGradCodec, encode_codes

from perfmodel.lab.launcher import stop_group
from tests.mpi_job import mpi_env, run_job

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "tests" / "mpi_scripts"
MPIEXEC = shutil.which("mpiexec")
U32 = 2.0**-24  # float32 unit roundoff
U16 = tc.BF16_UNIT_ROUNDOFF


def _load_inputs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mpi_inputs", SCRIPTS / "mpi_inputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


inputs = _load_inputs()


def run_mpi(n: int, script: str, *args: str, timeout: float = 120.0) -> tuple[int | None, str, float]:
    """Run a script under mpiexec -n n. Returns (returncode, or None on timeout; output; wall-clock time.time()
    when the job ended or was killed). Never leaves ranks behind (tests/mpi_job.py)."""
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", str(n), sys.executable,
                   str(SCRIPTS / script), *args], timeout)
    return job.code, job.output, job.ended


# ------------------------------------------------------------------------------- in-process: no MPI


def test_import_does_not_initialize_mpi() -> None:
    code = "import sys, trainers.comm; print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_flat_buckets_layout_and_views() -> None:
    arrays = inputs.bucket_tensors(0)
    tensors = [torch.from_numpy(a) for a in arrays]
    fb = tc.FlatBuckets(tensors, bucket_bytes=inputs.BUCKET_BYTES)
    # 64 floats per bucket: [12 + 17], [50 + 1], [200 alone, oversized], [21]
    assert [b.numel() for b in fb.buckets] == [29, 51, 200, 21]
    assert fb.bucket_of == [0, 0, 1, 1, 2, 3]
    assert fb.nbytes == 4 * sum(a.size for a in arrays)
    for v, a in zip(fb.views, arrays):
        assert v.shape == a.shape and v.dtype == torch.float32 and np.array_equal(v.numpy(), a)
    fb.buckets[1].fill_(3.0)  # views alias bucket memory
    assert torch.all(fb.views[2] == 3.0) and torch.all(fb.views[3] == 3.0)
    out = [torch.zeros_like(t) for t in tensors]
    fb.copy_out(out)
    assert torch.all(out[2] == 3.0) and np.array_equal(out[4].numpy(), arrays[4])
    fb.copy_in(tensors)
    assert np.array_equal(fb.views[2].numpy(), arrays[2])
    with pytest.raises(ValueError, match="shape"):
        fb.copy_in([t.reshape(-1) for t in tensors])
    assert len(tc.FlatBuckets(tensors).buckets) == 1  # default cap: 25 MiB
    assert tc.DEFAULT_BUCKET_BYTES == 25 * 1024 * 1024
    with pytest.raises(ValueError, match="bucket_bytes"):
        tc.FlatBuckets(tensors, bucket_bytes=2)
    with pytest.raises(ValueError, match="floating-point"):
        tc.FlatBuckets([torch.zeros(3, dtype=torch.int64)])


def test_flat_buckets_bind_grads_receive_backward() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    x, y = torch.randn(8, 6), torch.randn(8, 3)
    params = list(model.parameters())
    expected = torch.autograd.grad(torch.nn.functional.mse_loss(model(x), y), params)
    fb = tc.FlatBuckets([torch.zeros_like(p) for p in params], bucket_bytes=4 * 40)
    assert len(fb.buckets) > 1
    fb.bind_grads(params)
    for _ in range(2):  # backward accumulates in place into the bucket memory
        torch.nn.functional.mse_loss(model(x), y).backward()
    for p, v, e in zip(params, fb.views, expected):
        assert p.grad.data_ptr() == v.data_ptr()
        assert torch.allclose(v, 2 * e, atol=1e-6)
    flat = torch.cat([b for b in fb.buckets])
    assert torch.allclose(flat, 2 * torch.cat([e.reshape(-1) for e in expected]), atol=1e-6)


def test_bf16_bit_conversion_matches_torch() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.standard_normal(20000).astype(np.float32) * np.float32(10.0) ** rng.integers(-30, 30, 20000),
        np.array([0.0, -0.0, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40, 1.0 + 2**-8, 1.0 + 3 * 2**-8], np.float32),
    ]).astype(np.float32)
    ours = tc.f32_to_bf16_bits(x)
    theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(ours, theirs)  # round to nearest, ties to even, like torch
    back = tc.bf16_bits_to_f32(ours)
    assert np.array_equal(back, torch.from_numpy(x).to(torch.bfloat16).float().numpy())
    finite = np.isfinite(x) & (np.abs(x) > 1e-37) & (np.abs(x) < 3e38)
    assert np.all(np.abs(back[finite] - x[finite]) <= U16 * np.abs(x[finite]))
    assert np.isnan(tc.bf16_bits_to_f32(tc.f32_to_bf16_bits(np.array([np.nan], np.float32))))[0]


class FakeComm:
    """Stands in for a communicator: Abort records the code instead of ending the process."""

    def __init__(self) -> None:
        self.aborted: list[int] = []

    def Get_rank(self) -> int:
        return 3

    def Get_size(self) -> int:
        return 8

    def Abort(self, code: int) -> None:
        self.aborted.append(code)


def test_abort_on_error_logic(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeComm()
    with pytest.raises(KeyError):
        with tc.abort_on_error(fake):
            {}["missing\nkey"]
    line = capsys.readouterr().err
    assert fake.aborted == [1]
    assert line.count("\n") == 1 and line.startswith("[rank 3/8] KeyError: 'missing\\nkey' (test_comm_mpi.py:")

    @tc.abort_on_error(fake, exit_code=7)
    def decorated() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        decorated()
    assert fake.aborted == [1, 7] and "RuntimeError: boom" in capsys.readouterr().err

    with pytest.raises(SystemExit):
        with tc.abort_on_error(fake):
            sys.exit(2)  # non-zero exit status is kept
    with pytest.raises(SystemExit):
        with tc.abort_on_error(fake):
            sys.exit(0)  # a clean exit is not an error
    assert fake.aborted == [1, 7, 2] and capsys.readouterr().err.startswith("[rank 3/8] SystemExit: 2 (")

    hook = tc.abort_on_error(fake)
    old = sys.excepthook
    try:
        hook.install()
        assert sys.excepthook == hook.handle
        sys.excepthook(ValueError, ValueError("bad"), None)
    finally:
        sys.excepthook = old
    assert fake.aborted == [1, 7, 2, 1] and capsys.readouterr().err == "[rank 3/8] ValueError: bad\n"
    with pytest.raises(ValueError, match="exit_code"):
        tc.abort_on_error(fake, exit_code=0)


# ------------------------------------------------------------------------------------ under mpiexec

mpi = pytest.mark.mpi
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")


@pytest.fixture(scope="module", params=[2, 4], ids=["np2", "np4"])
def results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    if MPIEXEC is None:
        pytest.skip("mpiexec not found")
    pytest.importorskip("mpi4py")
    out = tmp_path_factory.mktemp(f"comm{request.param}") / "results.json"
    code, log, _ = run_mpi(request.param, "comm_checks.py", str(out), timeout=120)
    assert code == 0, log[-3000:]
    data = json.loads(out.read_text())
    assert data["size"] == request.param
    return data


@mpi
def test_bucketed_allreduce_mean(results: dict) -> None:
    p = results["size"]
    got = results["buckets"]
    assert got["bucket_sizes"] == [29, 51, 200, 21] and got["rank_spread"] == 0.0
    per_rank = [inputs.bucket_tensors(r) for r in range(p)]
    for i, mean in enumerate(got["mean"]):
        xs = np.stack([a[i].reshape(-1) for a in per_rank])
        exact = xs.astype(np.float64).mean(axis=0)
        # p float32 terms summed in any order: |error| <= (p-1) u sum|x| (times 1.001 for u^2 terms); /p exact
        bound = 1.001 * (p - 1) * U32 * np.abs(xs).astype(np.float64).sum(axis=0) / p
        assert np.all(np.abs(np.array(mean) - exact) <= bound)
        if p == 2:  # one float32 addition: bit-exact with numpy
            assert np.array_equal(np.array(mean, np.float32), (xs[0] + xs[1]) / np.float32(2))


@mpi
def test_node_groups_membership(results: dict) -> None:
    p = results["size"]
    groups = results["node_groups"]
    for rpn in (1, 2):
        for r, info in enumerate(groups[str(rpn)]):
            node = r // rpn
            assert info["local"] == [node * rpn + i for i in range(rpn)]
            assert info["global"] == [r % rpn + k * rpn for k in range(p // rpn)]
            assert info["local_rank"] == r % rpn and info["global_rank"] == node
    assert groups["error"] == f"world size {p} is not divisible by ranks_per_node={p + 1}"


@mpi
@pytest.mark.parametrize("method", ["op", "allgather"])
def test_bf16_allreduce_within_precision_bound(results: dict, method: str) -> None:
    p = results["size"]
    got = results["bf16"][method]
    assert got["dtype"] == "torch.float32" and got["rank_spread"] == 0.0
    xs = np.stack([inputs.vector(r) for r in range(p)]).astype(np.float64)
    exact = xs.mean(axis=0)
    scale = np.abs(xs).sum(axis=0) / p
    mean = np.array(got["mean"])
    err = np.abs(mean - exact)
    u2 = U16 + 2 * U32  # one bf16 rounding after a float32 addition that may itself round
    bound = {"op": ((1 + u2) ** p - 1) * scale + U32 * np.abs(exact),
             "allgather": (U16 + p * 2 * U32) * scale}[method]
    assert np.all(err <= bound)
    assert np.max(err / scale) > 2.0**-12  # far above float32 rounding: bf16 really travelled
    if method == "allgather":  # only the inputs were rounded: float32 sum of the bf16 values
        rounded = np.stack([torch.from_numpy(inputs.vector(r)).bfloat16().double().numpy() for r in range(p)])
        assert np.all(np.abs(mean - rounded.mean(axis=0)) <= p * U32 * scale)
    ints = np.stack([inputs.small_integers(r) for r in range(p)]).astype(np.float64).mean(axis=0)
    assert np.array_equal(np.array(got["ints"]), ints)  # bf16-exact inputs and sums: exact result


@mpi
def test_iallreduce_sum(results: dict) -> None:
    p = results["size"]
    got = results["iallreduce"]
    assert got["shape"] == [25, 40] and got["other"] == p and got["test_after_wait"] is True
    assert got["rank_spread"] == 0.0
    xs = np.stack([inputs.vector(r) for r in range(p)]).astype(np.float64)
    bound = 1.001 * (p - 1) * U32 * np.abs(xs).sum(axis=0)
    assert np.all(np.abs(np.array(got["sum"]) - xs.sum(axis=0)) <= bound)  # values at the start, not x*-7


@mpi
def test_terngrad_allgather_exchange_equals_local_decode(results: dict) -> None:
    """The allgather exchange object under mpiexec: recompute every rank's ternary codes here (the
    counter-based stream: tensor k draws from element offset_k of the rank's key), sum and decode."""
    p = results["size"]
    got = results["terngrad"]
    codec = TernGradCodec(min_tensor_elems=inputs.TERNGRAD_MIN_ELEMS)
    named = [[(n, torch.from_numpy(g)) for n, g in inputs.terngrad_grads(r)] for r in range(p)]
    plan = codec.plan(named[0])
    assert got["plan"] == list(plan) == [True, False, True, True, False, False]
    local = np.stack([codec.scalers([g for _, g in nm], plan) for nm in named])
    shared = local.max(axis=0)
    assert np.array_equal(np.array(got["shared"], np.float32), shared)  # allreduce_max
    terns = [[g.numpy().reshape(-1) for (_, g), t in zip(nm, plan) if t] for nm in named]
    scal = [float(s) for s, t in zip(shared, plan) if t]
    sizes = [t.size for t in terns[0]]
    # the ring Allgather of every rank's packed codes: p-1 blocks of sum ceil(n_k / 4) bytes sent
    assert got["bytes_sent"] == got["wire_bytes"] == (p - 1) * sum(math.ceil(n / 4) for n in sizes)
    assert sum(math.ceil(n / 4) for n in sizes) == 54 + 141 + 9
    assert got["rank_spread"] == 0.0
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for k, (s, n) in enumerate(zip(scal, sizes)):
        codes = [encode_codes(terns[r][k], np.array([0, n]), np.array([s]), inputs.terngrad_seed(r), int(offsets[k]))
                 for r in range(p)]
        expected = np.sum(codes, axis=0, dtype=np.int64) * s / p
        mean = np.array(got["means"][k])
        assert got["shapes"][k] == list(named[0][[i for i, t in enumerate(plan) if t][k]][1].shape)
        assert np.all(np.abs(mean - expected) <= 4 * U32 * s)
        levels = mean * p / s  # integers in -p..p: at most 2p+1 levels
        assert np.allclose(levels, np.round(levels), atol=1e-5) and np.abs(np.round(levels)).max() <= p
        assert len(np.unique(mean)) <= 2 * p + 1


def _failed_at(log: str) -> float:
    stamps = [float(ln.split()[-1]) for ln in log.splitlines() if ln.lstrip("\x00").startswith("FAILING AT ")]
    assert len(stamps) == 1, f"rank 1 did not reach its failure:\n{log[-2000:]}"
    return stamps[0]


@mpi
@needs_mpiexec
@pytest.mark.parametrize("mode, status", [("context", 1), ("excepthook", 1), ("exit2", 2)])
def test_abort_ends_the_job(mode: str, status: int) -> None:
    """Rank 1 fails while rank 0 waits in a Barrier: the job must end, non-zero, within 20 s of the failure
    (the overall timeout is longer only to absorb slow start-up on a loaded machine)."""
    code, log, ended = run_mpi(2, "abort_check.py", mode, timeout=60)
    assert code is not None, f"job hung:\n{log[-2000:]}"
    assert code == status, log[-2000:]
    assert ended - _failed_at(log) < 20.0
    lines = [ln for ln in log.splitlines() if ln.lstrip("\x00").startswith("[rank 1/2] ")]
    assert len(lines) == 1, log[-2000:]
    assert ("SystemExit: 2" if mode == "exit2" else f"RuntimeError: deliberate failure in mode {mode}") in lines[0]


@mpi
@needs_mpiexec
@pytest.mark.slow  # ~9 s: waits out the hang
def test_without_abort_the_job_hangs(tmp_path: Path) -> None:
    """Control for the test above: with no handler, the same failure leaves rank 0 waiting.

    Waits for rank 1's failure line, then checks the job is still running 5 s later, and ends it."""
    log_path = tmp_path / "log.txt"
    cmd = [MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", "2", sys.executable,
           str(SCRIPTS / "abort_check.py"), "none"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=mpi_env(), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while b"FAILING AT" not in log_path.read_bytes() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        failed = b"FAILING AT" in log_path.read_bytes()
        time.sleep(5.0)
        still_running = proc.poll() is None
    finally:
        stop_group(proc, timeout=15)
    text = log_path.read_text(errors="replace")
    assert failed, text[-2000:]
    assert still_running, text[-2000:]
