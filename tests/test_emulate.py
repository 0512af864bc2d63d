"""perfmodel.lab.emulate: rates, specs and Open MPI flags in-process; as root, an emulated cluster set up
and torn down (also when its command fails, is interrupted or is killed) and ranks placed on its nodes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perfmodel.lab import emulate as em
from perfmodel.mpi_algorithms import TUNED_IDS, mca_args
from perfmodel.specs import SpecError

ROOT = Path(__file__).resolve().parents[1]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
HAS_TOOLS = all(shutil.which(t) for t in ("ip", "tc", "unshare"))
needs_root = pytest.mark.skipif(not (IS_ROOT and HAS_TOOLS),
                                reason="an emulated cluster needs root and ip, tc, unshare (iproute2, util-linux)")


def _env() -> dict[str, str]:
    return dict(os.environ, OMP_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def _nothing_left(tag: str) -> None:
    assert em.leftovers(tag) == {"namespaces": [], "links": [], "hosts": []}
    assert not list(Path(tempfile.gettempdir()).glob(f"perfmodel-emulate-{tag}-*"))


# ---------------------------------------------------------------- no root needed


@pytest.mark.parametrize("text, bits", [("1gbit", 1e9), ("250mbit", 250e6), ("10Gbit", 1e10), ("100kbit", 1e5),
                                        ("125mbps", 1e9), ("1000000000", 1e9), ("0.5gbit", 5e8)])
def test_parse_rate(text, bits):
    assert em.parse_rate(text) == pytest.approx(bits)


@pytest.mark.parametrize("text", ["fast", "1 gigabit", "-1gbit", "0mbit", ""])
def test_parse_rate_rejects(text):
    with pytest.raises(em.EmulateError):
        em.parse_rate(text)


def test_spec_validates_and_derives():
    spec = em.EmulationSpec(nodes=2, ranks_per_node=3, rate_bps=1e9)
    assert spec.ranks == 6
    assert spec.rate_text == "1000000000bit"
    assert spec.burst == 16384  # 1 Gbit/s x 131.072 us / 8
    assert em.EmulationSpec(nodes=2, rate_bps=2.5e8).burst == 4096
    assert em.EmulationSpec(nodes=2, rate_bps=1e8).burst == 3028  # 1638 B of the rate: two full frames instead
    assert em.EmulationSpec(nodes=2, rate_bps=1e10).burst == 163840
    assert em.EmulationSpec(nodes=2, rate_bps=1e8, burst_bytes=5000).burst == 5000
    for bad in ({"nodes": 0}, {"nodes": 2, "ranks_per_node": 0}, {"nodes": 2, "rate_bps": 0.0},
                {"nodes": 201}, {"nodes": 2, "burst_bytes": -1}, {"nodes": True}):
        with pytest.raises(SpecError):
            em.EmulationSpec(**bad)


def test_mca_args_name_the_tuned_ids():
    args = mca_args({"allreduce": "ring", "allgather": "bruck"})
    assert args[args.index("coll_tuned_allreduce_algorithm") + 1] == str(TUNED_IDS["allreduce"]["ring"]) == "4"
    assert args[args.index("coll_tuned_allgather_algorithm") + 1] == "2"
    assert args[args.index("coll_tuned_use_dynamic_rules") + 1] == "1"
    assert mca_args({"iallreduce": "binomial"})[-2:] == ["coll_libnbc_iallreduce_algorithm", "2"]
    assert "han" not in args[args.index("coll") + 1].split(",")
    with pytest.raises(SpecError):
        mca_args({"allreduce": "butterfly"})


def test_not_root_is_one_line_and_exit_2():
    if not (IS_ROOT and shutil.which("setpriv")):
        pytest.skip("needs root to drop to another user with setpriv")
    res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                          "perfmodel.cli", "emulate", "--nodes", "2", "--", "true"],
                         capture_output=True, text=True, env=_env(), cwd="/", timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["perfmodel: error: an emulated cluster needs root (network "
                                               "namespaces, veth, tc); run as root"]


# ---------------------------------------------------------------- root: the real thing


@needs_root
def test_context_builds_and_removes_everything_also_on_exceptions():
    tag = str(os.getpid())
    with pytest.raises(RuntimeError, match="boom"):
        with em.EmulatedCluster(em.EmulationSpec(nodes=3, ranks_per_node=2, rate_bps=5e8)) as cl:
            found = em.leftovers(tag)
            assert sorted(found["namespaces"]) == sorted(cl.nodes) and len(cl.nodes) == 3
            assert sorted(found["links"]) == sorted([cl.bridge] + [f"pmv{tag}n{i}" for i in range(3)])
            assert [ln.split()[:2] for ln in found["hosts"]] == [[cl.address(i), cl.nodes[i]] for i in range(3)]
            qdisc = subprocess.run(["ip", "netns", "exec", cl.nodes[1], "tc", "qdisc", "show", "dev", "eth0"],
                                   capture_output=True, text=True).stdout
            assert "tbf" in qdisc and "500Mbit" in qdisc
            args = cl.mpiexec_args()
            assert args[args.index("--host") + 1] == ",".join(f"{h}:2" for h in cl.nodes)
            assert "coll_tuned_allreduce_algorithm" in args and "coll_tuned_use_dynamic_rules" in args
            own = cl.mpiexec_args(forced=False)  # Open MPI's own choice: the components only
            assert not any(a.startswith("coll_tuned") or a.startswith("coll_libnbc") for a in own)
            assert own[own.index("coll") + 1] == "tuned,libnbc,basic,self" and own[:own.index("coll")] == \
                args[:args.index("coll")]
            assert cl.address(0).startswith(em.SUBNET_BASE + ".")
            raise RuntimeError("boom")
    _nothing_left(tag)


@needs_root
@pytest.mark.mpi
def test_ranks_land_on_their_nodes():
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec not on PATH")
    with em.EmulatedCluster(em.EmulationSpec(nodes=2, ranks_per_node=2, rate_bps=1e9)) as cl:
        res = subprocess.run(["mpiexec", "--oversubscribe", "--allow-run-as-root", *cl.mpiexec_args(), "-n", "4",
                              "sh", "-c", 'echo "$OMPI_COMM_WORLD_RANK $(hostname) $(ip -o -4 addr show eth0)"'],
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stderr[-2000:]
        lines = sorted(res.stdout.splitlines())
        assert [ln.split()[:2] for ln in lines] == [["0", cl.nodes[0]], ["1", cl.nodes[0]],
                                                    ["2", cl.nodes[1]], ["3", cl.nodes[1]]]
        for ln in lines:  # each rank sees its node's own address, not the machine's
            node = cl.nodes.index(ln.split()[1])
            assert f"inet {cl.address(node)}/24" in ln
    _nothing_left(str(os.getpid()))


def _default_sigint() -> None:
    # a job started in the background by a non-interactive shell inherits SIGINT ignored (POSIX), and
    # Python then keeps ignoring it: restore the default, as a terminal's Ctrl-C finds it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_cli(*cmd: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfmodel.cli", "emulate", "--nodes", "2", "--ranks-per-node",
                             "1", "--rate", "1gbit", "--", *cmd], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)


def _wait_up(proc: subprocess.Popen) -> str:
    tag = str(proc.pid)
    for _ in range(300):
        if len(em.leftovers(tag)["hosts"]) == 2:
            return tag
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the emulated cluster did not come up in 30 s")


@needs_root
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 130), (signal.SIGINT, 130), (signal.SIGHUP, 130)])
def test_interrupted_command_leaves_nothing(sig, status):
    proc = _start_cli("sh", "-c", "sleep 60")
    tag = _wait_up(proc)
    time.sleep(0.5)  # the command is running inside
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    _nothing_left(tag)


@needs_root
def test_failing_command_keeps_its_status_and_leaves_nothing():
    proc = _start_cli("sh", "-c", 'test -n "$PERFMODEL_MPIEXEC_ARGS" && test "$PERFMODEL_EMULATED_RANKS" = 2 '
                                  '&& exit 3')
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    _nothing_left(str(proc.pid))


@needs_root
def test_cleanup_removes_what_a_killed_owner_left():
    proc = _start_cli("sleep", "8")  # in a session of its own: it outlives its killed owner for 8 s
    tag = _wait_up(proc)
    os.kill(proc.pid, signal.SIGKILL)  # no chance to tear down
    proc.wait(timeout=30)
    assert em.leftovers(tag)["namespaces"]
    removed = em.cleanup_stale()
    assert any(tag in r for r in removed)
    _nothing_left(tag)


def _running(pid: int, what: str) -> bool:
    """Whether pid is a live (not zombie) process whose command line contains ``what``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z" and what in cmdline


def _processes_naming(text: str) -> list[str]:
    """Live processes whose command line contains ``text`` (e.g. a prterun that names the agent's folder)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid() and _running(int(d.name), text):
            found.append(f"{d.name}: {(d / 'cmdline').read_bytes().replace(bytes(1), b' ').decode()[:200]}")
    return found


@needs_root
@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigterm", "sigkill+cleanup"])
def test_killing_a_real_mpi_run_midway_leaves_nothing(tmp_path, how):
    """`perfmodel emulate` running a real mpiexec job (2 nodes x 1 rank, traffic on the 250 Mbit/s link) is
    killed while the ranks run: SIGTERM (it tears down itself), or SIGKILL and then `perfmodel emulate
    --cleanup`. Afterwards: no namespace, link, hosts line or agent folder, and no shell, prterun or rank.
    Output goes to files, not pipes: an orphan holding a pipe would hang the read instead of failing."""
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec not on PATH")
    script = ROOT / "tests" / "mpi_scripts" / "emulate_loop.py"
    # the shell forks mpiexec (prterun) and dies at once on SIGTERM: the case that used to leave prterun behind
    job = (f'echo $$ > {tmp_path}/sh.pid; mpiexec --oversubscribe --allow-run-as-root $PERFMODEL_MPIEXEC_ARGS '
           f'-n 2 {sys.executable} {script} {tmp_path}')
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "perfmodel.cli", "emulate", "--nodes", "2", "--ranks-per-node",
                                 "1", "--rate", "250mbit", "--", "sh", "-c", job], env=_env(),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
    tag = str(proc.pid)
    try:
        for _ in range(900):  # the ranks are up once both markers exist
            if len(list(tmp_path.glob("rank*.pid"))) == 2:
                break
            assert proc.poll() is None, (tmp_path / "err").read_text()[-2000:]
            time.sleep(0.1)
        else:
            raise AssertionError("the ranks did not start in 90 s: " + (tmp_path / "err").read_text()[-2000:])
        ranks = [int((tmp_path / f"rank{r}.pid").read_text()) for r in range(2)]
        shell = int((tmp_path / "sh.pid").read_text())
        assert all(_running(p, "emulate_loop.py") for p in ranks)
        assert _processes_naming(f"perfmodel-emulate-{tag}-")  # prterun names the agent's folder
        assert em.leftovers(tag)["namespaces"]
        if how == "sigterm":
            os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=90) == 130, (tmp_path / "err").read_text()[-2000:]
        else:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert em.leftovers(tag)["namespaces"]  # nobody tore down
            res = subprocess.run([sys.executable, "-m", "perfmodel.cli", "emulate", "--cleanup"], env=_env(),
                                 capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            assert res.returncode == 0 and f"pm{tag}-n0" in res.stdout, res.stdout + res.stderr
        _nothing_left(tag)
        for _ in range(100):  # ended processes may take a moment to be reaped
            left = ([p for p in ranks if _running(p, "emulate_loop.py")] + [shell] * _running(shell, "emulate_loop.py")
                    + _processes_naming(f"perfmodel-emulate-{tag}-"))
            if not left:
                break
            time.sleep(0.1)
        assert not left, left
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        em.cleanup_stale()
