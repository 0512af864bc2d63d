"""Communication hooks end to end under mpiexec (2 ranks), checked against a plain mpi4py loop."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perfmodel.lab.profile.cli import mpiexec_command, run_comm
from perfmodel.lab.profile.profile_file import comm_profile_from_dict, load_profile
from perfmodel.lab.profile.schema import ProfileError
from perfmodel.lab.profile.to_specs import profile_cluster, profile_links

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec")
pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not on PATH")]


def _mpiexec(n, *args, timeout=120, cwd=None):
    version = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=30).stdout
    argv = mpiexec_command(MPIEXEC, n, [], version=version)
    flags = argv[1:argv.index("-n")]  # the profiler's own launch flags (binding included)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([MPIEXEC, *flags, "-n", str(n), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd or ROOT)


def test_comm_module_end_to_end(tmp_path):
    out = tmp_path / "comm.json"
    res = _mpiexec(2, sys.executable, "-m", "perfmodel.lab.profile.comm", "--min-bytes", "8", "--max-bytes", "1Mi",
                   "--repeats", "7", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    cp = comm_profile_from_dict(json.loads(out.read_text()), str(out))
    assert cp.ranks == 2 and cp.backend == "mpi" and cp.library.startswith(("Open MPI", "MPICH", "Intel"))
    assert set(cp.ops) == {"pingpong", "allreduce", "iallreduce", "bcast", "reduce", "allgather", "alltoall", "ps"}
    assert len(cp.load_avg) == 2 and cp.compute is None  # no model given: no concurrent compute timing
    assert cp.kernel_load is None  # not asked for
    for op in cp.ops.values():
        assert op.sizes_bytes == tuple(2**k for k in range(3, 21))
        assert op.repeats >= 5 and all(i >= 1 for i in op.iters)
        med = np.array(op.median_s)
        assert np.all(np.array(op.min_s) <= med) and np.all(med <= np.array(op.max_s))
        assert np.all(med > 1e-8) and np.all(med < 0.1)
        np.testing.assert_allclose(op.algbw_Bps, np.array(op.sizes_bytes) / med)
        # at 2 ranks every nccl-tests bus-bandwidth factor is 1; the parameter server's counts the
        # PS_ROUNDS = 2 pushes of its one worker
        np.testing.assert_allclose(op.busbw_Bps, (2.0 if op.op == "ps" else 1.0) * np.array(op.algbw_Bps))
        fitted = op.fit.time(op.sizes_bytes)
        err = np.max(np.abs(fitted - med) / med)
        assert err == pytest.approx(op.fit.piecewise_max_rel_err, rel=1e-6)
    # (no assertion on how the times compare across sizes: under load an 8 B median can exceed a 1 MiB
    # one; the speed goals live in benchmarks/, the test checks what the code computes from the times)
    # The piecewise fit stops at the fewest segments within the 15% tolerance; on a noisy machine the
    # tolerance may be out of reach, and then it must have tried every segment count (8 for 18 sizes).
    # How close it gets is the machine's noise, not the code's: no threshold on it here.
    for op in cp.ops.values():
        assert op.fit.piecewise_max_rel_err <= 0.15 or len(op.fit.segments) == 8, op.op


PLAIN = textwrap.dedent("""
    # Independent measurement: the perfmodel hooks and a plain mpi4py loop, alternated in one job.
    import json, sys
    import numpy as np
    from mpi4py import MPI
    from perfmodel.lab.profile.comm import CommConfig, run_benchmarks

    comm = MPI.COMM_WORLD
    SIZES = (2**20, 16 * 2**20)

    def plain(nbytes, reps=15):
        a = np.ones(nbytes // 4, dtype=np.float32)
        b = np.empty_like(a)
        for _ in range(3):
            comm.Allreduce(a, b)
        times = []
        for _ in range(reps):
            comm.Barrier()
            t0 = MPI.Wtime()
            comm.Allreduce(a, b)
            times.append(comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX))
        return float(np.median(times))

    ours, theirs = [], []
    for _ in range(3):
        prof = run_benchmarks(CommConfig(sizes=SIZES, ops=("allreduce",)))
        if comm.rank == 0:
            ours.append(prof.ops["allreduce"].median_s)
        theirs.append([plain(n) for n in SIZES])
    if comm.rank == 0:
        print(json.dumps({"ours": np.median(ours, axis=0).tolist(), "plain": np.median(theirs, axis=0).tolist()}))
""")


def test_allreduce_agrees_with_a_plain_mpi4py_loop(tmp_path):
    # Timings on a shared 2-core machine are noisy: a disagreement must persist over three jobs.
    script = tmp_path / "plain.py"
    script.write_text(PLAIN)
    seen = []
    for _ in range(3):
        res = _mpiexec(2, sys.executable, str(script), timeout=180)
        assert res.returncode == 0, res.stderr[-2000:]
        got = json.loads(res.stdout.strip().splitlines()[-1])
        ratios = np.array(got["ours"]) / np.array(got["plain"])
        seen.append(f"ours {got['ours']} plain {got['plain']}")
        if np.all(np.abs(ratios - 1) < 0.20):
            return
    pytest.fail("1 MiB and 16 MiB disagree by 20% or more in three jobs: " + "; ".join(seen))


def test_torch_distributed_path_with_gloo(tmp_path):
    """The code NCCL uses (torch.distributed), run on CPU tensors with gloo."""
    pytest.importorskip("torch")
    out = tmp_path / "gloo.json"
    res = _mpiexec(2, sys.executable, "-m", "perfmodel.lab.profile.comm", "--backend", "gloo", "--sizes", "8,4Ki,256Ki",
                   "--repeats", "5", "--out", str(out), timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    cp = comm_profile_from_dict(json.loads(out.read_text()), str(out))
    assert cp.backend == "gloo" and cp.library.startswith("gloo") and cp.ranks == 2
    assert set(cp.ops) == {"pingpong", "allreduce", "iallreduce", "bcast", "reduce", "allgather", "alltoall", "ps"}
    assert all(op.sizes_bytes == (8, 4096, 262144) for op in cp.ops.values())


TINYNETS = textwrap.dedent("""
    import torch
    def mlp():
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
""")


def test_the_kernel_load_is_measured_between_two_ranks(tmp_path):
    """--kernel-load: both ranks exchange 1 MiB each way until the time is up (the same count on both,
    so the run ends), then sleep as long; rank 0 reads /proc/stat around both windows."""
    if not os.access("/proc/stat", os.R_OK):
        pytest.skip("no /proc/stat on this system: the kernel load is not measured")
    out = tmp_path / "comm.json"
    res = _mpiexec(2, sys.executable, "-m", "perfmodel.lab.profile.comm", "--sizes", "8,64", "--ops", "pingpong",
                   "--repeats", "5", "--kernel-load", "0.5", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    kl = comm_profile_from_dict(json.loads(out.read_text()), str(out)).kernel_load
    assert kl is not None
    exchanges = kl.bytes_sent / (2 * 2**20)
    assert exchanges == int(exchanges) and exchanges >= 1
    assert kl.busy_wall_s >= 0.5 and kl.idle_wall_s >= 0.5
    assert kl.busy_kernel_s >= 0 and kl.idle_kernel_s >= 0 and kl.s_per_byte >= 0


@pytest.mark.slow  # a profile over MPI with the block operations: 10-25 s on 2 cores
def test_block_operations_and_the_step_timed_on_all_ranks_at_once(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "tinynets.py").write_text(TINYNETS)
    out = tmp_path / "comm3.json"
    env_path = os.pathsep.join([str(ROOT), str(tmp_path)])
    version = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=30).stdout
    argv = mpiexec_command(MPIEXEC, 3, [], version=version)
    flags = argv[1:argv.index("-n")]
    res = subprocess.run([MPIEXEC, *flags, "-n", "3", sys.executable, "-m", "perfmodel.lab.profile.comm", "--ops",
                          "allgather,alltoall,ps", "--sizes", "8,4Ki,64Ki", "--repeats", "5", "--model", "tinynets:mlp",
                          "--input-shape", "1,8,8", "--batch", "4,8", "--compute-repeats", "5", "--out", str(out)],
                         capture_output=True, text=True, timeout=180, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=env_path, OMP_NUM_THREADS="1"))
    assert res.returncode == 0, res.stderr[-2000:]
    cp = comm_profile_from_dict(json.loads(out.read_text()), str(out))
    assert cp.ranks == 3 and set(cp.ops) == {"allgather", "alltoall", "ps"}
    for name, op in cp.ops.items():  # OSU's block size; nccl-tests' busbw = (p-1) x block / t at 3 ranks;
        # the parameter server's: the 2 workers x 2 pushes it receives per call
        np.testing.assert_allclose(op.busbw_Bps, (4.0 if name == "ps" else 2.0) * np.array(op.algbw_Bps))
    cc = cp.compute
    assert cc is not None and cc.batches == (4, 8) and cc.repeats == 5 and cc.threads == 1
    assert all(0 < m <= x for m, x in zip(cc.mean_s, cc.max_s)) and all(v >= 0 for v in cc.cv)
    # TernGrad's codec on the 3 ranks at once, with what its synchronization points cost in its loop
    assert cc.codec is not None and cc.codec.workers == 3 and cc.codec.sync_wait_s >= 0


def test_failures_come_back_as_one_line(tmp_path):
    with pytest.raises(ProfileError, match=r"mpi benchmark on 2 ranks failed \(exit \d+\): .*unknown op 'gather'") as e:
        run_comm(MPIEXEC, 2, backend="mpi", module_args=["--sizes", "8", "--ops", "gather"], extra=[],
                 version="", timeout=120)
    assert "\n" not in str(e.value)
    with pytest.raises(ProfileError, match="did not finish within 0.5 s"):
        run_comm(MPIEXEC, 2, backend="mpi", module_args=["--max-bytes", "64Mi"], extra=[], version="", timeout=0.5)


@pytest.mark.slow
def test_profile_command_with_ranks_1_and_2(tmp_path):
    (tmp_path / "tinynets.py").write_text(textwrap.dedent("""
        import torch
        def mlp():
            return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    """))
    out = tmp_path / "profile.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    res = subprocess.run([sys.executable, "-m", "perfmodel.lab.profile.cli", "profile", "--model", "tinynets:mlp",
                          "--input-shape", "1,8,8", "--batch", "4,8", "--repeats", "3", "--ranks", "1,2",
                          "--max-bytes", "64Ki", "--comm-repeats", "5", "--extra-sizes", "allreduce=4432",
                          "--out", str(out)],
                         capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "allreduce fitted vs measured (2 ranks" in res.stdout and f"wrote {out}" in res.stdout
    prof = load_profile(out)
    assert [c.ranks for c in prof.comm] == [1, 2]
    assert "-n 2" in prof.comm[1].launch and "--bind-to" in prof.comm[1].launch
    # a CPU profile times the step on both ranks at once too, at the same batch sizes and repeats
    assert prof.comm[1].compute.batches == (4, 8) and prof.comm[1].compute.repeats == 3
    # and right after an Allreduce of the model's fp32 gradient (--compute-after grad, the default)
    assert prof.comm[1].compute.after_bytes == (4432,) and len(prof.comm[1].compute.after_mean_s[0]) == 2
    # and backprop and an Allreduce of the gradient alone and together (perfmodel.lab.profile.overlap_timing)
    ov = prof.comm[1].compute.overlap
    assert ov.nbytes == 4432 and ov.batches == (4, 8) and ov.repeats == 3
    assert all(len(v) == 2 and min(v) > 0 for v in (ov.compute_s, ov.comm_s, ov.both_compute_s, ov.both_comm_s))
    assert all(min(s) >= 0 for s in (ov.slowdowns(4), ov.slowdowns(8)))
    assert "training step on all 2 ranks at once" in res.stdout
    assert prof.machine.mpi_library and prof.machine.mpiexec_version
    link = profile_links(prof)["network"]
    cl = profile_cluster(prof)
    assert cl.network == link and cl.name == "local"
    # the link reproduces the Allreduce measured at the model's gradient size (ring, p = 2): the median
    # interpolated between the two measured sizes around it
    ar = prof.comm[1].ops["allreduce"]
    n = prof.model.gradient_bytes
    lo = max(i for i, s in enumerate(ar.sizes_bytes) if s <= n)
    (x0, x1), (y0, y1) = ar.sizes_bytes[lo:lo + 2], ar.median_s[lo:lo + 2]
    assert 2 * link.alpha + n * link.beta == pytest.approx(y0 + (y1 - y0) * (n - x0) / (x1 - x0), rel=1e-9)
    # --extra-sizes timed the Allreduce at the gradient's 4432 bytes itself (1108 parameters), and the
    # other operations only at the powers of two: the link is the measured time there
    assert n == 4432 and x0 == n and 4432 not in prof.comm[1].ops["pingpong"].sizes_bytes
    assert 2 * link.alpha + n * link.beta == pytest.approx(y0, rel=1e-9)


def test_global_iallreduce_runs_on_the_first_rank_of_each_node(tmp_path):
    # 4 ranks on 2 pretend nodes (host names node0, node0, node1, node1): DASO's global group is
    # ranks 0 and 2; an Iallreduce of ones on it sums to 2 there, ranks 1 and 3 are off it
    out = tmp_path / "group.json"
    res = _mpiexec(4, sys.executable, str(ROOT / "tests" / "mpi_scripts" / "global_group.py"), str(out),
                   timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["leaders"] == [[0, 2]] * 4
    assert got["group_sizes"] == [2, 0, 2, 0]
    assert got["sums"] == [2.0, 0.0, 2.0, 0.0]
    assert got["nodes"] == 2 and got["hosts"] == ["node0", "node1"]
    assert set(got["ops"]) == {"iallreduce", "global_iallreduce"}
    g, a = got["ops"]["global_iallreduce"], got["ops"]["iallreduce"]
    assert g["sizes"] == [8, 4096, 65536]
    # bus bandwidth on the group of 2 nodes: factor 2(2-1)/2 = 1; on all 4 ranks 2(4-1)/4 = 1.5
    np.testing.assert_allclose(g["busbw"], g["algbw"])
    np.testing.assert_allclose(a["busbw"], 1.5 * np.array(a["algbw"]))


def test_global_iallreduce_is_not_timed_on_one_host(tmp_path):
    out = tmp_path / "comm.json"
    res = _mpiexec(2, sys.executable, "-m", "perfmodel.lab.profile.comm", "--max-bytes", "64",
                   "--ops", "iallreduce,global_iallreduce", "--repeats", "3", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    cp = comm_profile_from_dict(json.loads(out.read_text()), str(out))
    assert set(cp.ops) == {"iallreduce"} and cp.nodes == 1
