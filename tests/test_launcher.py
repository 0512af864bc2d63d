"""perfmodel.lab.launcher: the command lines it builds for mpiexec (Open MPI, MPICH), srun and others, from
--launcher, DSGD_LAUNCHER or the default, with and without a hostfile."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.lab.launcher import LAUNCHER_ENV, Launcher, flavor_of, resolve_launcher
from perfmodel.specs import SpecError

PROG = ["python", "-m", "trainers.run", "run", "--algo", "ssgd"]
OMPI = "mpiexec (Open MPI) 5.0.11"
HYDRA = "HYDRA build details:"


def _which(name: str) -> str:
    return f"/opt/bin/{Path(name).name}"


def _resolve(option=None, env=None, version=OMPI, hostfile=None) -> Launcher:
    return resolve_launcher(option, env=env or {}, hostfile=hostfile, which=_which, version_of=lambda exe: version)


def test_default_is_mpiexec_with_open_mpi_flags() -> None:
    launcher = _resolve()
    assert launcher.flavor == "openmpi" and launcher.argv == ("/opt/bin/mpiexec",)
    cmd = Launcher(launcher.argv, "openmpi", is_root=False).command(2, PROG)
    assert cmd == ["/opt/bin/mpiexec", "--oversubscribe", "-n", "2", *PROG]
    root = Launcher(launcher.argv, "openmpi", is_root=True).command(4, PROG)
    assert root == ["/opt/bin/mpiexec", "--oversubscribe", "--allow-run-as-root", "-n", "4", *PROG]


def test_option_beats_environment_beats_default() -> None:
    env = {LAUNCHER_ENV: "mpirun --mca btl tcp,self"}
    assert _resolve(env=env).argv == ("/opt/bin/mpirun", "--mca", "btl", "tcp,self")
    assert _resolve("srun --mpi=pmix", env=env).argv == ("/opt/bin/srun", "--mpi=pmix")
    assert _resolve("  ", env=env).argv[0] == "/opt/bin/mpirun"  # blank option: not given


def test_srun_command_and_no_hostfile(tmp_path: Path) -> None:
    launcher = _resolve("srun --mpi=pmix", version="")
    assert launcher.flavor == "slurm"
    assert launcher.command(8, PROG) == ["/opt/bin/srun", "--mpi=pmix", "-n", "8", *PROG]
    hosts = tmp_path / "hosts"
    hosts.write_text("node1 slots=4\n")
    with pytest.raises(SpecError, match="srun places ranks"):
        _resolve("srun", hostfile=str(hosts))


def test_hostfile_passes_through(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("node1 slots=4\nnode2 slots=4\n")
    ompi = Launcher(("/opt/bin/mpiexec",), "openmpi", str(hosts), is_root=False)
    assert ompi.command(8, PROG, bind=True) == ["/opt/bin/mpiexec", "--oversubscribe", "--hostfile", str(hosts),
                                                 "-n", "8", *PROG]  # the hostfile places ranks: no binding
    hydra = _resolve(version=HYDRA, hostfile=str(hosts))
    assert hydra.flavor == "mpich"
    assert hydra.command(8, PROG) == ["/opt/bin/mpiexec", "-f", str(hosts), "-n", "8", *PROG]
    with pytest.raises(SpecError, match="not a file"):
        _resolve(hostfile=str(tmp_path / "missing"))


def test_binding_follows_the_usable_cores_unless_the_user_places_ranks() -> None:
    two = Launcher(("mpiexec",), "openmpi", usable_cpus=2)
    assert two.command(2, PROG, bind=True)[:4] == ["mpiexec", "--oversubscribe", "--bind-to", "core"]
    assert two.command(3, PROG, bind=True)[:4] == ["mpiexec", "--oversubscribe", "--bind-to", "none"]
    user = Launcher(("mpiexec", "--map-by", "socket"), "openmpi", usable_cpus=2)
    assert user.command(2, PROG, bind=True) == ["mpiexec", "--map-by", "socket", "--oversubscribe", "-n", "2", *PROG]


def test_flavors_from_version_text() -> None:
    assert flavor_of("/usr/bin/mpiexec", OMPI) == "openmpi"
    assert flavor_of("/usr/bin/mpiexec", "prterun (Open MPI) 5.0") == "openmpi"
    assert flavor_of("mpiexec.hydra", HYDRA) == "mpich"
    assert flavor_of("/usr/bin/srun", "") == "slurm"
    assert flavor_of("aprun", "") == "other"
    assert Launcher(("aprun",), "other").command(2, PROG) == ["aprun", "-n", "2", *PROG]


def test_bad_input_is_one_spec_error() -> None:
    with pytest.raises(SpecError, match="not found on PATH"):
        resolve_launcher("no-such-launcher-xyz", env={}, which=lambda n: None)
    with pytest.raises(SpecError, match="not a valid command line"):
        _resolve("srun 'unclosed")
    with pytest.raises(SpecError, match="positive integer"):
        Launcher(("mpiexec",), "openmpi").command(0, PROG)
    with pytest.raises(SpecError, match="flavor"):
        Launcher(("mpiexec",), "lam")


def test_real_mpiexec_is_found_and_recognised() -> None:
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec not found")
    launcher = resolve_launcher(None, env={})
    assert launcher.flavor in ("openmpi", "mpich")
    out = subprocess.run(launcher.command(1, [sys.executable, "-c", "print('ok')"]), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok"


def test_import_pulls_in_neither_torch_nor_mpi4py() -> None:
    code = "import sys, perfmodel.lab.launcher; print('torch' in sys.modules, 'mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_reproduce_runs_start_through_the_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec not found")
    from reproduce.common import ReproduceError
    from reproduce.launch_setting import use_launcher
    from reproduce.runs import mpi_command

    monkeypatch.setenv(LAUNCHER_ENV, "mpiexec --bind-to none")
    try:
        use_launcher(None)
        cmd = mpi_command(2, ["--algo", "ssgd"])
        assert cmd[0] == shutil.which("mpiexec") and cmd[1:3] == ["--bind-to", "none"]
        assert cmd[-8:] == ["-n", "2", sys.executable, "-m", "trainers.run", "run", "--algo", "ssgd"]
        use_launcher("no-such-launcher-xyz")
        with pytest.raises(ReproduceError, match="no-such-launcher-xyz not found"):
            mpi_command(2, [])
    finally:
        use_launcher(None)


@pytest.mark.parametrize("args,message", [
    (["--launcher", "no-such-launcher-xyz", "--ranks", "1,2", "--no-compute"], "no-such-launcher-xyz not found"),
    (["--launcher", "mpiexec", "--mpiexec", "mpiexec", "--ranks", "1,2", "--no-compute"], "not both"),
    (["--device", "cuda", "--workload", "lenet", "--ranks", "1"], "no CUDA GPU"),
])
def test_profile_launcher_and_device_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    if "cuda" in args:
        import torch

        if torch.cuda.is_available():
            pytest.skip("CUDA is present: --device cuda is valid here")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "perfmodel.cli", "profile", *args, "--out", str(tmp_path / "p.json")],
                         capture_output=True, text=True, timeout=120, cwd=root,
                         env={**os.environ, "PYTHONPATH": str(root)})
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("perfmodel: error:")]
    assert out.returncode == 2 and len(lines) == 1 and message in lines[0], out.stderr[-2000:]
    assert "Traceback" not in out.stderr


_MEMBER = """
import pathlib, signal, sys, time
def term(*_):
    time.sleep(float(sys.argv[2]))  # shutting its job down, as mpiexec does on SIGTERM
    pathlib.Path(sys.argv[1], "done").write_text("done")
    sys.exit(0)
signal.signal(signal.SIGTERM, term if float(sys.argv[2]) >= 0 else signal.SIG_IGN)
pathlib.Path(sys.argv[1], "ready").write_text("ready")
time.sleep(60)
"""


@pytest.mark.parametrize("shutdown_s", [1.0, -1.0])  # -1: the member ignores SIGTERM
def test_stop_group_ends_the_whole_group_not_only_its_leader(tmp_path: Path, shutdown_s: float) -> None:
    """`sh -c 'mpiexec ...'` in a session of its own: the shell dies at SIGTERM at once, its child keeps
    shutting down (1 s) or ignores SIGTERM; stop_group returns only when that child is gone too."""
    import time

    from perfmodel.lab.launcher import stop_group

    script = tmp_path / "member.py"
    script.write_text(_MEMBER)
    proc = subprocess.Popen(["sh", "-c", f'"{sys.executable}" "{script}" "{tmp_path}" {shutdown_s} & '
                                         f'echo $! > "{tmp_path}/pid"; wait'], start_new_session=True)
    for _ in range(300):
        if (tmp_path / "ready").exists() and (tmp_path / "pid").exists():
            break
        time.sleep(0.05)
    member = int((tmp_path / "pid").read_text())
    try:
        stop_group(proc, timeout=3.0)
        stat = Path(f"/proc/{member}/stat")
        state = stat.read_text().split(") ")[-1][0] if stat.exists() else "gone"
        done = (tmp_path / "done").exists()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # nothing is left to kill unless stop_group failed
        except ProcessLookupError:
            pass
    assert proc.returncode is not None
    assert state in ("gone", "Z")  # ended (a zombie only until init reaps it)
    assert done == (shutdown_s >= 0)  # finished its shutdown, or was SIGKILLed


# ---------------------------------------------------------------- jobs that never started


def _stale_tool_files(base: Path, pids: range) -> None:
    """What a launcher killed with SIGKILL leaves: its session directory with the PMIx rendezvous file."""
    import socket

    for pid in pids:
        (base / f"ompi.{pid}").mkdir()
        (base / f"ompi.{pid}" / f"pmix.{socket.gethostname()}.tool").write_text("")


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs mpiexec")
def test_a_stale_session_dir_stops_mpiexec_before_any_rank_and_is_recognized(tmp_path: Path) -> None:
    """The CI failure, reproduced: Open MPI's session directories ompi.<pid> (with the rendezvous file a
    killed launcher leaves) are laid out for the next 2000 process ids in a TMPDIR of our own; mpiexec,
    given one of those ids, exits 213 before any rank ran. not_started recognizes it, error_line names
    the cause, stale_session_dirs lists the others, and with them removed the same job runs."""
    from perfmodel.lab.launcher import error_line, not_started, stale_session_dirs

    launcher = resolve_launcher(None, env={})
    if launcher.flavor != "openmpi":
        pytest.skip(f"the session directories are Open MPI's; found {launcher.flavor}")
    here = os.getpid()
    ahead = range(here + 1, min(here + 2001, int(Path("/proc/sys/kernel/pid_max").read_text())))
    if len(ahead) < 500:
        pytest.skip(f"process ids wrap around soon after {here}")
    _stale_tool_files(tmp_path, ahead)
    job = launcher.command(1, [sys.executable, "-c", "print('rank ran')"])
    env = dict(os.environ, TMPDIR=str(tmp_path))
    first = subprocess.run(["sh", "-c", 'echo "pid=$$"; exec "$@"', "sh", *job], capture_output=True, text=True,
                           env=env, timeout=60)
    pid = int(first.stdout.split()[0].removeprefix("pid="))
    if pid not in ahead:
        pytest.skip(f"mpiexec got process id {pid}, outside the {len(ahead)} laid out (a busy machine)")
    output = first.stdout + first.stderr
    assert first.returncode == 213 and "rank ran" not in output
    assert not_started(output)
    assert "stale Open MPI session directory" in error_line(output)
    stale = stale_session_dirs(str(tmp_path))
    assert len(stale) >= len(ahead) - 100  # the failed launcher removed its own on exit; some ids are live again
    for path in stale:
        shutil.rmtree(path)
    again = subprocess.run(job, capture_output=True, text=True, env=env, timeout=60)
    assert again.returncode == 0 and "rank ran" in again.stdout


def test_stale_session_dirs_lists_only_dead_launchers(tmp_path: Path) -> None:
    from perfmodel.lab.launcher import stale_session_dirs

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (f"ompi.{dead.pid}", f"ompi.{os.getpid()}", "ompi.vm.0", "ompi.12x"):
        (tmp_path / name).mkdir()
    assert stale_session_dirs(str(tmp_path)) == [str(tmp_path / f"ompi.{dead.pid}")]
    assert stale_session_dirs(str(tmp_path / "missing")) == []


def test_not_started_is_only_the_launchers_own_failure() -> None:
    from perfmodel.lab.launcher import error_line, not_started

    rank_failed = "train: error: --batch must be positive\nprterun detected that one or more processes exited"
    assert not not_started(rank_failed) and error_line(rank_failed) == "train: error: --batch must be positive"
    assert not not_started("")


def test_reproduce_runs_start_a_job_again_only_when_no_rank_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    """reproduce.runs.run_checked: a launcher that stopped before any rank ran is started once more (and
    only once); a job whose rank failed is not repeated."""
    from reproduce import runs

    never = ("--------\nThe PMIx server's listener thread failed to start. We cannot\ncontinue.\n--------\n")
    calls: list[list[str]] = []

    def fake(outcomes):
        def run(cmd, **kw):
            calls.append(cmd)
            code, err = outcomes[len(calls) - 1]
            return subprocess.CompletedProcess(cmd, code, "", err)
        return run

    monkeypatch.setattr(runs.subprocess, "run", fake([(213, never), (0, "")]))
    assert runs.run_checked(["mpiexec", "x"], 10, "job") >= 0 and len(calls) == 2
    calls.clear()
    monkeypatch.setattr(runs.subprocess, "run", fake([(213, never), (213, never), (0, "")]))
    with pytest.raises(runs.ReproduceError, match="stopped before starting any rank"):
        runs.run_checked(["mpiexec", "x"], 10, "job")
    assert len(calls) == 2
    calls.clear()
    monkeypatch.setattr(runs.subprocess, "run", fake([(1, "train: error: bad"), (0, "")]))
    with pytest.raises(runs.ReproduceError, match="train: error: bad"):
        runs.run_checked(["mpiexec", "x"], 10, "job")
    assert len(calls) == 1


def test_the_mpi_tests_job_runner_retries_only_a_launcher_that_never_started(tmp_path: Path) -> None:
    """tests/mpi_job.run_job, which the MPI tests start mpiexec with: the not-started output twice (then
    its status), a rank's failure once, a time-out as None with the group ended."""
    from tests.mpi_job import run_job

    tries = tmp_path / "tries"
    never = f"echo x >> {tries}; echo \"The PMIx server's listener thread failed to start. We cannot\"; exit 213"
    job = run_job(["sh", "-c", never], timeout=30)
    assert job.code == 213 and tries.read_text().count("x") == 2
    tries.unlink()
    job = run_job(["sh", "-c", f"echo x >> {tries}; echo 'train: error: bad'; exit 1"], timeout=30)
    assert job.code == 1 and tries.read_text().count("x") == 1 and "train: error: bad" in job.output
    job = run_job(["sh", "-c", "echo started; sleep 30"], timeout=1.0)
    assert job.code is None and "started" in job.output and job.seconds < 20
