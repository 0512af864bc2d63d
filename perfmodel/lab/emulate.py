"""An emulated multi-node cluster on one Linux machine: real MPI ranks on "nodes" joined by shaped links.

Each emulated node i is a network namespace ``pm<tag>-n<i>`` with one veth pair: its end ``eth0``
inside the namespace carries 10.213.X.(10+i)/24, the host end joins a bridge ``pmb<tag>`` (10.213.X.1,
where mpiexec itself listens). The node's outgoing traffic is shaped by a token bucket,
``tc qdisc replace dev eth0 root tbf rate R burst B latency 50ms`` (netem is not needed, and not
available in every kernel), so a message of n bytes between two nodes takes about n / R on the wire.
Every node runs its processes in its own UTS namespace with its own hostname (listed in /etc/hosts),
so Open MPI sees N hosts: shared memory inside a node, TCP over the shaped link across nodes.

Open MPI's ssh launcher is replaced by a small agent script (``ip netns exec NS unshare --uts sh -c
'hostname H; ...'``), so ``mpiexec $PERFMODEL_MPIEXEC_ARGS -n N ...`` (see ``mpiexec_args``) starts one
daemon per emulated node and R ranks on each. Only the namespaces' own private subnet is used.

The set-up is undone in reverse order when the context ends, also on exceptions, Ctrl-C, SIGTERM and
SIGHUP (turned into ``EmulationInterrupted`` while the context is open): processes left in the
namespaces are ended by their ids, namespaces, veths and the bridge deleted, the hosts lines removed,
the agent's temporary folder deleted. ``cleanup_stale()`` removes what a SIGKILLed owner left behind
(every object is named after its owner's pid; its command's processes carry its agent's path in
$PERFMODEL_MPIEXEC_ARGS). Needs root, ``ip``, ``tc`` and ``unshare``; otherwise
``EmulateError`` in one line (``perfmodel emulate`` prints it and exits 2).

    perfmodel emulate --nodes 2 --ranks-per-node 2 --rate 1gbit -- perfmodel profile --ranks 4 ...
    with EmulatedCluster(EmulationSpec(nodes=2, ranks_per_node=2, rate_bps=1e9)) as cl:
        subprocess.run(["mpiexec", *cl.mpiexec_args(), "-n", "4", ...])
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .launcher import stop_group
from ..mpi_algorithms import COMPONENTS, FORCED, mca_args
from ..specs import SpecError

__all__ = ["EmulateError", "EmulationInterrupted", "EmulationSpec", "EmulatedCluster", "parse_rate", "check_rate",
           "default_burst", "check_host", "cleanup_stale", "leftovers", "ENV_MPIEXEC_ARGS", "ENV_RANKS", "EAGER_BYTES",
           "eager_args", "shared_machine_args"]

HOSTS_FILE = Path("/etc/hosts")
SUBNET_BASE = "10.213"  # a private (RFC 1918) /16; each cluster takes one free /24 of it
NAME = re.compile(r"^pm[bv]?(\d{1,7})")  # pm<pid>-n<i> namespaces, pmb<pid> bridges, pmv<pid>n<i> veths
MARK = "# perfmodel-emulate pm"
ENV_MPIEXEC_ARGS = "PERFMODEL_MPIEXEC_ARGS"  # what `perfmodel emulate` gives its command
ENV_RANKS = "PERFMODEL_EMULATED_RANKS"
#: tbf's queue limit expressed as time (tc's `latency`): packets waiting longer are dropped. 50 ms is
#: tc-tbf(8)'s example value; large enough that TCP's window, not drops, sets the pace.
TBF_LATENCY = "50ms"
_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(bit|bps)?\s*$", re.IGNORECASE)
#: The rates tc can set, in bits/s: tbf takes a whole number of bytes per second up to 2^64 - 1 (rate64),
#: so from 8 bit/s (below it the rate is 0 bytes/s) to 8 x (2^64 - 1).
RATE_MIN_BPS, RATE_MAX_BPS = 8.0, 8.0 * (2**64 - 1)
#: The deepest token bucket tc takes: tbf's burst is a 32-bit count of bytes.
BURST_MAX_BYTES = 2**32 - 1
#: The most ranks an MPI job holds: a rank is a C int.
RANKS_MAX = 2**31 - 1


class EmulateError(SpecError):
    """The emulated cluster cannot be built here (not root, missing tools, bad spec)."""


class EmulationInterrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while an emulated cluster was up (a KeyboardInterrupt, so that callers
    that stop on Ctrl-C stop on these too, and the context manager still tears down)."""


#: The token bucket's depth (bytes) where the rate needs no more: two full Ethernet frames (the bucket
#: must hold the largest packet; tbf cuts larger GSO packets into frames). A deeper bucket fills while the
#: link idles (a training step's compute) and then lets that many bytes pass at memory speed, which a
#: real link never does. Measured here on 2026-11-23 (2 nodes x 1 rank, Allgather and Allreduce timed
#: after a barrier, and after a barrier and 4 ms idle; benchmarks/emulated_link.py): at 100 Mbit/s a
#: 16 KiB bucket gave 9.1 ms back to back and 7.9 ms after idle for 106 KB (1.3 ms of free bytes, 5-9% of
#: a TernGrad step), 1.7 and 0.4 ms for 20 KB; 3028 B gave 9.1 and 9.0 ms, 1.7 and 1.5 ms. At 250 Mbit/s
#: 4 KiB gave 14.6 ms both for 426 KB (16 KiB: 14.5 and 14.2; wire at 29.9 MB/s of TCP payload 14.2).
MIN_BURST_BYTES = 2 * 1514
#: Above that the bucket holds the rate's bytes of 131 us (16 KiB at 1 Gbit/s, 4 KiB at 250 Mbit/s), so
#: that a link of high rate keeps up while tbf's timer waits for the next tokens. tc-tbf(8) asks for at
#: least one timer tick's worth of bytes at the rate; with high-resolution timers that is below one frame.
BURST_TIME_S = 16 * 1024 * 8 / 1e9
#: Open MPI's TCP transport sends a message above its eager limit (64 KiB by default) by rendezvous: a
#: request, then the data once the receiver has answered. When the emulated nodes' ranks outnumber this
#: machine's cores, the answer waits for the receiving rank's turn on a core, once per ring step: an
#: artifact of the emulation (a real node's rank has its core), not of the link. Measured here on
#: 2026-11-26 (forced ring Allreduce of 233 KB at 100 Mbit/s, one rank per node, /tmp microbenchmark of
#: the 3x1 development layout's TernGrad levels message): 2 nodes 1.07x the wire time with and without;
#: 3 nodes 1.51x by rendezvous, 1.08x with every message eager. So the emulated cluster, its link
#: profile and its one-node profile send every message up to EAGER_BYTES eagerly.
EAGER_BYTES = 8 * 2**20


def eager_args() -> list[str]:
    """mpiexec arguments that send every TCP message up to EAGER_BYTES without a rendezvous handshake."""
    return ["--mca", "btl_tcp_eager_limit", str(EAGER_BYTES), "--mca", "btl_tcp_max_send_size", str(EAGER_BYTES)]


def shared_machine_args() -> list[str]:
    """mpiexec arguments of every rank that shares this machine's cores, the emulated nodes' and a one-node
    profile's alike: no binding, waits that yield the cores, every message eager (eager_args).

    Every node's daemon believes it owns the machine's cores, so it would bind its ranks to the same cores
    and let them busy-poll: ranks waiting in MPI must yield the shared cores (measured here, 2 x 2 ranks,
    Allreduce of 1.7 MB: 80 ms polling, 26 ms yielding, 21 ms wire)."""
    return ["--bind-to", "none", "--mca", "mpi_yield_when_idle", "1", *eager_args()]


def default_burst(rate_bps: float) -> int:
    """Token bucket depth in bytes for a link of rate_bps bits/s: rate x 131 us, at least two full frames."""
    return max(MIN_BURST_BYTES, int(rate_bps * BURST_TIME_S / 8))


def parse_rate(text: str) -> float:
    """Link rate in bits/s from tc's notation: "1gbit", "250mbit", "10Gbit", "100kbit", "1000000000" (bits);
    "bps" suffixes are bytes/s as in tc ("125mbps" = 1 Gbit/s)."""
    m = _RATE.match(str(text))
    if not m:
        raise EmulateError(f"rate must look like 1gbit, 250mbit or 10gbit, got {text!r}")
    value = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    if (m.group(3) or "").lower() == "bps":
        value *= 8
    if value <= 0:
        raise EmulateError(f"rate must be > 0, got {text!r}")
    check_rate(value, f"rate {text!r}")
    return value


def check_rate(bits_per_s: float, what: str) -> None:
    """EmulateError unless tc can shape a link to ``bits_per_s`` (RATE_MIN_BPS to RATE_MAX_BPS); ``what``
    names the value in the message."""
    if not RATE_MIN_BPS <= bits_per_s <= RATE_MAX_BPS:  # also nan
        raise EmulateError(f"{what} is {bits_per_s:g} bit/s; tc shapes a link to 8 bit/s (1 byte/s) up to "
                           f"{RATE_MAX_BPS:.4g} bit/s")


@dataclass(frozen=True)
class EmulationSpec:
    """N nodes of R ranks each, every node's outgoing link shaped to rate_bps bits/s.

    burst_bytes: the token bucket's depth; 0 picks ``default_burst(rate_bps)`` (rate x 131 us, at least 3028 B), so
    that a message takes about n / R whether the link was idle before or not, as on a real wire."""

    nodes: int
    ranks_per_node: int = 1
    rate_bps: float = 1e9
    burst_bytes: int = 0

    def __post_init__(self) -> None:
        for name in ("nodes", "ranks_per_node"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise EmulateError(f"{name} must be a positive integer, got {v!r}")
        if self.nodes > 200:
            raise EmulateError(f"nodes must be <= 200 (one /24), got {self.nodes}")
        if self.nodes * self.ranks_per_node > RANKS_MAX:
            raise EmulateError(f"nodes x ranks_per_node must be <= {RANKS_MAX} (an MPI rank is a C int), got "
                               f"{self.nodes} x {self.ranks_per_node}")
        if isinstance(self.rate_bps, bool) or not isinstance(self.rate_bps, (int, float)) or not self.rate_bps > 0:
            raise EmulateError(f"rate_bps must be > 0, got {self.rate_bps!r}")
        check_rate(self.rate_bps, "rate_bps")
        if (isinstance(self.burst_bytes, bool) or not isinstance(self.burst_bytes, int)
                or not 0 <= self.burst_bytes <= BURST_MAX_BYTES):
            raise EmulateError(f"burst_bytes must be an integer in 0..{BURST_MAX_BYTES} (tc's 32-bit burst), got "
                               f"{self.burst_bytes!r}")

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def burst(self) -> int:
        return self.burst_bytes or default_burst(self.rate_bps)

    @property
    def rate_text(self) -> str:
        """The rate as tc writes it (bits/s)."""
        return f"{int(round(self.rate_bps))}bit"


# ---------------------------------------------------------------- host checks and commands


def check_host() -> None:
    """EmulateError (one line) unless this process is root on Linux with ip, tc and unshare."""
    if not hasattr(os, "geteuid") or not Path("/proc/self/ns/net").exists():
        raise EmulateError("an emulated cluster needs Linux network namespaces")
    if os.geteuid() != 0:
        raise EmulateError("an emulated cluster needs root (network namespaces, veth, tc); run as root")
    missing = [t for t in ("ip", "tc", "unshare") if shutil.which(t) is None]
    if missing:
        raise EmulateError(f"an emulated cluster needs {', '.join(missing)} (iproute2, util-linux)")


def _run(*argv: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise EmulateError(f"`{shlex.join(cmd)}` failed: {why[0]}")
    return proc


def _used_subnets() -> set[str]:
    out = _run("ip", "-o", "-4", "addr", "show", check=False).stdout
    out += _run("ip", "-o", "-4", "route", "show", "table", "all", check=False).stdout
    return set(re.findall(r"\b(\d+\.\d+\.\d+)\.\d+", out))


def _free_subnet(pid: int) -> ipaddress.IPv4Network:
    used = _used_subnets()
    for k in range(254):
        x = (pid + k) % 254 + 1
        if f"{SUBNET_BASE}.{x}" not in used:
            return ipaddress.IPv4Network(f"{SUBNET_BASE}.{x}.0/24")
    raise EmulateError(f"no free /24 left in {SUBNET_BASE}.0.0/16")


def _edit_hosts(remove_tag: str | None = None, add: list[str] = ()) -> None:
    """Append lines to /etc/hosts, or drop the lines marked with a tag, under an exclusive lock
    (in place: /etc/hosts may be a bind mount that cannot be replaced)."""
    with open(HOSTS_FILE, "r+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        lines = fh.read().splitlines(keepends=True)
        if remove_tag is not None:
            lines = [ln for ln in lines if not ln.rstrip().endswith(f"{MARK}{remove_tag}")]
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines += [ln + "\n" for ln in add]
        fh.seek(0)
        fh.write("".join(lines))
        fh.truncate()


def _kill_namespace_pids(ns: str) -> None:
    """End the processes still running in namespace ns (started by this cluster), by their ids."""
    _end_until_gone(lambda: [int(p) for p in _run("ip", "netns", "pids", ns, check=False).stdout.split()
                             if p.isdigit()])


# ---------------------------------------------------------------- the cluster


_AGENT = """#!/bin/sh
# Open MPI's ssh agent for an emulated cluster: run the command on an emulated node, i.e. in its
# network namespace and in a UTS namespace of its own whose hostname is the node's name.
while [ "${{1#-}}" != "$1" ]; do shift; done   # options an ssh would take (none are used)
host="$1"; shift
case "$host" in
{cases}
  *) echo "netns agent: unknown emulated node $host" >&2; exit 255;;
esac
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$1" && shift && exec sh -c "$*"' agent "$host" "$@"
"""


class EmulatedCluster:
    """Context manager: builds the emulated cluster on entry, removes every part of it on exit."""

    def __init__(self, spec: EmulationSpec) -> None:
        self.spec = spec
        self.tag = str(os.getpid())
        self.nodes = [f"pm{self.tag}-n{i}" for i in range(spec.nodes)]  # namespace = hostname
        self.bridge = f"pmb{self.tag}"
        if len(f"pmv{self.tag}n{spec.nodes - 1}") > 15:
            raise EmulateError(f"pid {self.tag} too long for interface names")
        self.subnet: ipaddress.IPv4Network | None = None
        self.agent: Path | None = None
        self._undo: list = []
        self._old_handlers: dict = {}

    # -- addresses
    def address(self, i: int) -> str:
        """Address of emulated node i (private, on this machine only)."""
        assert self.subnet is not None
        return str(self.subnet.network_address + 10 + i)

    def mpiexec_args(self, forced: bool = True) -> list[str]:
        """mpiexec (Open MPI 5, PRRTE) arguments that place ranks_per_node ranks on each emulated node
        (use with -n nodes x ranks_per_node), TCP over the shaped links between nodes and shared memory
        inside one, the collective algorithms of ``mpi_algorithms.FORCED`` (forced False: Open MPI's own
        choice of its ``tuned`` component, which perfmodel.ompi_tuned models)."""
        assert self.subnet is not None and self.agent is not None, "cluster is not up"
        net = str(self.subnet)
        r = self.spec.ranks_per_node
        return ["--prtemca", "plm_ssh_agent", str(self.agent), "--prtemca", "oob_tcp_if_include", net,
                "--host", ",".join(f"{h}:{r}" for h in self.nodes), "--map-by", f"ppr:{r}:node",
                *shared_machine_args(), "--mca", "btl", "tcp,self,sm", "--mca", "btl_tcp_if_include", net,
                *(mca_args(FORCED) if forced else ["--mca", "coll", ",".join(COMPONENTS)])]

    def environment(self) -> dict[str, str]:
        """Variables `perfmodel emulate` gives its command: the mpiexec arguments (space-separated words
        without shell-special characters, so `mpiexec $PERFMODEL_MPIEXEC_ARGS` works) and N x R."""
        return {ENV_MPIEXEC_ARGS: " ".join(self.mpiexec_args()), ENV_RANKS: str(self.spec.ranks)}

    # -- set-up / tear-down
    def __enter__(self) -> "EmulatedCluster":
        check_host()
        if any(leftovers(self.tag).values()):  # names are the pid's: one cluster per process at a time
            raise EmulateError(f"process {self.tag} already has an emulated cluster up")
        self._trap_signals()
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _do(self, undo, *argv: str, ns: str | None = None) -> None:
        """Run one set-up command and remember how to undo it (before running it: a half-made object is
        removed too)."""
        if undo is not None:
            self._undo.append(undo)
        _run(*argv, ns=ns)

    def _setup(self) -> None:
        spec = self.spec
        self.subnet = _free_subnet(os.getpid())
        prefix = self.subnet.prefixlen
        self._do(("ip", "link", "del", self.bridge), "ip", "link", "add", self.bridge, "type", "bridge")
        self._do(None, "ip", "addr", "add", f"{self.subnet.network_address + 1}/{prefix}", "dev", self.bridge)
        self._do(None, "ip", "link", "set", self.bridge, "up")
        for i, ns in enumerate(self.nodes):
            veth = f"pmv{self.tag}n{i}"
            self._do(("netns", ns), "ip", "netns", "add", ns)
            self._do(("ip", "link", "del", veth), "ip", "link", "add", veth, "type", "veth", "peer", "name",
                     "eth0", "netns", ns)
            self._do(None, "ip", "link", "set", veth, "master", self.bridge, "up")
            self._do(None, "ip", "addr", "add", f"{self.address(i)}/{prefix}", "dev", "eth0", ns=ns)
            self._do(None, "ip", "link", "set", "eth0", "up", ns=ns)
            self._do(None, "ip", "link", "set", "lo", "up", ns=ns)
            try:
                self._do(None, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", spec.rate_text,
                         "burst", str(spec.burst), "latency", TBF_LATENCY, ns=ns)
            except EmulateError as e:
                raise EmulateError(f"this kernel cannot shape links with tbf: {e}") from None
        self._undo.append(("hosts",))
        _edit_hosts(add=[f"{self.address(i)} {h} {MARK}{self.tag}" for i, h in enumerate(self.nodes)])
        tmp = Path(tempfile.mkdtemp(prefix=f"perfmodel-emulate-{self.tag}-"))
        self._undo.append(("rmtree", str(tmp)))
        cases = "\n".join(f"  {h}) ns={h};;" for h in self.nodes)
        self.agent = tmp / "netns-agent"
        self.agent.write_text(_AGENT.format(cases=cases), encoding="utf-8")
        self.agent.chmod(0o700)

    def close(self) -> None:
        """Undo every set-up step in reverse order, ignoring steps that are already gone."""
        try:
            while self._undo:
                step = self._undo.pop()
                try:
                    if step[0] == "netns":
                        _kill_namespace_pids(step[1])
                        _run("ip", "netns", "del", step[1], check=False)
                    elif step[0] == "hosts":
                        _edit_hosts(remove_tag=self.tag)
                    elif step[0] == "rmtree":
                        shutil.rmtree(step[1], ignore_errors=True)
                    else:
                        _run(*step, check=False)
                except (OSError, subprocess.SubprocessError):
                    continue
        finally:
            self._restore_signals()

    # -- signals
    def _trap_signals(self) -> None:
        def raise_interrupt(signum, frame):
            raise EmulationInterrupted(f"signal {signal.Signals(signum).name}")

        try:
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, raise_interrupt)
        except ValueError:  # not the main thread: the caller must tear down on its own signals
            self._old_handlers.clear()

    def _restore_signals(self) -> None:
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()


# ---------------------------------------------------------------- leftovers


def _alive(pid: int) -> bool:
    """Whether process pid runs (a zombie, killed but not yet waited for by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _command_pids(tag: str) -> list[int]:
    """Processes of the command that owner ``tag`` ran (its shell, mpiexec and what they started outside
    the namespaces): they carry the owner's $PERFMODEL_MPIEXEC_ARGS, which names its agent's folder."""
    key, mark = f"{ENV_MPIEXEC_ARGS}=".encode(), f"/perfmodel-emulate-{tag}-".encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if any(v.startswith(key) and mark in v for v in env.split(b"\0")):
            pids.append(int(d.name))
    return pids


def _end_pids(pids: list[int]) -> None:
    """SIGTERM these processes, SIGKILL those still running 5 s later."""
    _end_until_gone(lambda: [p for p in pids if _alive(p)])


def _end_until_gone(running: Callable[[], list[int]]) -> None:
    """SIGTERM the processes ``running()`` lists, then SIGKILL those it still lists 5 s later (it is
    asked again every 0.1 s, so it may also list processes started meanwhile)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = running()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        for _ in range(50):
            if not running():
                return
            time.sleep(0.1)


def leftovers(tag: str | None = None) -> dict[str, list[str]]:
    """Emulated-cluster objects on this machine (of one owner pid ``tag``, or all): namespaces, links
    and /etc/hosts lines."""
    def mine(name: str) -> bool:
        m = NAME.match(name)
        return bool(m) and (tag is None or m.group(1) == str(tag))

    ns = [ln.split()[0] for ln in _run("ip", "netns", "list", check=False).stdout.splitlines() if ln.strip()]
    links = re.findall(r"^\d+:\s+([^:@\s]+)", _run("ip", "-o", "link", "show", check=False).stdout, re.M)
    hosts = [ln.strip() for ln in HOSTS_FILE.read_text(encoding="utf-8").splitlines()
             if MARK in ln and (tag is None or ln.rstrip().endswith(f"{MARK}{tag}"))]
    return {"namespaces": [n for n in ns if mine(n)], "links": [n for n in links if mine(n)], "hosts": hosts}


def cleanup_stale() -> list[str]:
    """Remove the emulated-cluster objects whose owner process is gone (e.g. it was SIGKILLed), and end
    the processes its command left running (its mpiexec, outside the namespaces, first); what was removed."""
    check_host()
    found = leftovers()
    dead = {NAME.match(n).group(1) for n in found["namespaces"] + found["links"]}
    dead |= {ln.rsplit(MARK, 1)[1] for ln in found["hosts"]}
    dead = {t for t in dead if not _alive(int(t))}
    removed = []
    for t in sorted(dead):  # the command first: mpiexec ends its job while its daemons still answer
        pids = _command_pids(t)
        _end_pids(pids)
        removed += [f"{len(pids)} processes of {t}'s command"] if pids else []
    for n in found["namespaces"]:
        if NAME.match(n).group(1) in dead:
            _kill_namespace_pids(n)
            _run("ip", "netns", "del", n, check=False)
            removed.append(n)
    for n in found["links"]:
        if NAME.match(n).group(1) in dead and _run("ip", "link", "del", n, check=False).returncode == 0:
            removed.append(n)
    for t in sorted(dead):
        _edit_hosts(remove_tag=t)
        removed += [f"/etc/hosts lines of {t}"] if any(ln.endswith(MARK + t) for ln in found["hosts"]) else []
    for d in Path(tempfile.gettempdir()).glob("perfmodel-emulate-*-*"):
        if d.name.split("-")[2] in dead:
            shutil.rmtree(d, ignore_errors=True)
    return removed


# ---------------------------------------------------------------- running a command on it


def run_in_cluster(spec: EmulationSpec, argv: list[str], *, quiet: bool = False) -> int:
    """Run ``argv`` with the emulated cluster up (its mpiexec arguments in $PERFMODEL_MPIEXEC_ARGS, N x R
    in $PERFMODEL_EMULATED_RANKS); the command's exit status. The cluster is torn down afterwards, also
    when the command fails or this process is interrupted (the command is ended first)."""
    if not argv:
        raise EmulateError("give the command to run after --, e.g. -- perfmodel profile --ranks 4 ...")
    if shutil.which(argv[0]) is None:  # a name on $PATH or a path, as Popen finds it; before any set-up
        raise EmulateError(f"command not found (or not an executable file): {argv[0]!r}")
    with EmulatedCluster(spec) as cl:
        if not quiet:
            print(f"perfmodel emulate: {spec.nodes} nodes x {spec.ranks_per_node} ranks, links "
                  f"{spec.rate_bps / 1e9:g} Gbit/s, subnet {cl.subnet}; ${ENV_MPIEXEC_ARGS} set", flush=True)
        # no stdin: mpiexec forwards it to rank 0 and, reading a terminal that never closes, does not exit
        proc = subprocess.Popen(argv, env=dict(os.environ, **cl.environment()), stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            return proc.wait()
        except BaseException:
            stop_group(proc)
            raise
