"""The launcher that starts ranks: its command line, and the one line worth showing when a job fails.

How ranks are started: ``--launcher "srun --mpi=pmix"``, or the ``DSGD_LAUNCHER`` environment variable,
default ``mpiexec``; a hostfile passes through. Used by everything that starts ranks (``perfmodel
profile``, reproduce/, benchmarks/).

    launcher = resolve_launcher(args.launcher, hostfile=args.hostfile)      # option > env > mpiexec
    argv = launcher.command(4, [sys.executable, "-m", "trainers.run", "run", ...])

The command is ``LAUNCHER [ITS ARGS] [flavour flags] [hostfile] -n RANKS PROGRAM...``. Flavour flags,
by the launcher found (``srun`` by name, MPI launchers by their ``--version`` text):

    openmpi  --oversubscribe (start more ranks than the hostfile's slots; this suite runs more ranks
             than cores on small machines), --allow-run-as-root when running as root, optionally
             ``--bind-to core`` when the ranks fit the usable cores (``none`` otherwise) unless the
             user's arguments place ranks themselves; hostfile: ``--hostfile FILE``
    mpich    (Hydra) hostfile: ``-f FILE``
    slurm    srun places ranks on the job's allocation: no hostfile (an error); ``-n RANKS``
    other    ``-n RANKS``; no hostfile (an error: its flag is unknown)

Failed jobs: the one line worth showing from a failed ``mpiexec`` job, without the launcher's banner.

When a rank exits with a non-zero status, Open MPI's launcher (``mpiexec``/``prterun``) prints a
boxed banner after the rank's own output ("prterun detected that one or more processes exited with
non-zero status ... Process name ... Exit code"; older versions: "Primary job terminated normally, but
1 process returned a non-zero exit code"). Our launches capture the job's output and report the ranks'
own one-line error (``<prog>: error: ...``) instead; a user who starts ``mpiexec`` by hand sees that
line first and the banner below it.

Jobs that never started: Open MPI 5's launcher keeps its session directory in ``/tmp/ompi.<its pid>``
and removes it on a clean exit. A launcher killed with SIGKILL leaves it behind; a later launcher that
happens to get the same process id (Linux reuses ids, by default after 32768) cannot write its PMIx
rendezvous files there, prints "The PMIx server's listener thread failed to start" and exits 213
before any rank ran (removing that directory as it exits). :func:`not_started` recognizes such
output; a caller may start the job once more.

This module imports neither torch nor mpi4py. Errors are :class:`perfmodel.specs.SpecError`.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from perfmodel.specs import SpecError

__all__ = ["LAUNCHER_ENV", "DEFAULT_LAUNCHER", "FLAVORS", "Launcher", "flavor_of", "resolve_launcher",
           "launcher_version", "error_line", "not_started", "stale_session_dirs"]

LAUNCHER_ENV = "DSGD_LAUNCHER"
"""Environment variable holding the launcher command line when ``--launcher`` is not given."""

DEFAULT_LAUNCHER = "mpiexec"

FLAVORS = ("openmpi", "mpich", "slurm", "other")

_PLACEMENT_FLAGS = ("--bind-to", "--map-by", "--rankfile", "--hostfile", "--host", "-H", "--cpu-set")


@functools.lru_cache(maxsize=16)
def launcher_version(executable: str) -> str:
    """First non-empty line of ``EXECUTABLE --version`` ("" when it cannot be run); remembered per path."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [ln.strip() for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    return lines[0] if lines else ""


def flavor_of(executable: str, version: str) -> str:
    """"slurm" for srun, else the MPI launcher's family from its --version text."""
    if os.path.basename(executable) == "srun":
        return "slurm"
    v = version.lower()
    if "open mpi" in v or "openrte" in v or "prte" in v:
        return "openmpi"
    if "hydra" in v or "mpich" in v or "intel" in v:
        return "mpich"
    return "other"


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass(frozen=True)
class Launcher:
    """A launcher command line (``argv``: executable and its own arguments), its flavour and a hostfile.

    ``is_root`` and ``usable_cpus`` describe the machine the command will run on (filled in by
    :func:`resolve_launcher`; given explicitly in tests)."""

    argv: tuple[str, ...]
    flavor: str
    hostfile: str | None = None
    is_root: bool = False
    usable_cpus: int = 1

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(a, str) and a for a in self.argv):
            raise SpecError(f"launcher must be a non-empty command line, got {self.argv!r}")
        if self.flavor not in FLAVORS:
            raise SpecError(f"launcher flavor must be one of {', '.join(FLAVORS)}, got {self.flavor!r}")
        if self.hostfile is not None and self.flavor in ("slurm", "other"):
            where = ("srun places ranks on the job's allocation (give nodes in --launcher, e.g. "
                     "'srun --nodelist=...')" if self.flavor == "slurm"
                     else f"the flag of {self.argv[0]} for it is unknown (put it in --launcher)")
            raise SpecError(f"--hostfile does not apply: {where}")
        if isinstance(self.usable_cpus, bool) or not isinstance(self.usable_cpus, int) or self.usable_cpus < 1:
            raise SpecError(f"usable_cpus must be a positive integer, got {self.usable_cpus!r}")

    def text(self) -> str:
        """The launcher part as one shell-quoted string (for run records)."""
        return shlex.join(self.argv)

    def flags(self, ranks: int, *, bind: bool = False) -> list[str]:
        """The flavour's flags and the hostfile for ``ranks`` ranks (see the module docstring)."""
        out: list[str] = []
        if self.flavor == "openmpi":
            out.append("--oversubscribe")
            if self.is_root:
                out.append("--allow-run-as-root")
            placed = self.hostfile is not None or any(a.startswith(_PLACEMENT_FLAGS) for a in self.argv[1:])
            if bind and not placed:
                out += ["--bind-to", "core" if ranks <= self.usable_cpus else "none"]
            if self.hostfile is not None:
                out += ["--hostfile", self.hostfile]
        elif self.flavor == "mpich" and self.hostfile is not None:
            out += ["-f", self.hostfile]
        return out

    def command(self, ranks: int, program: Sequence[str], *, bind: bool = False) -> list[str]:
        """argv that starts ``program`` on ``ranks`` ranks."""
        if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
            raise SpecError(f"ranks must be a positive integer, got {ranks!r}")
        if not program:
            raise SpecError("program to launch is empty")
        return [*self.argv, *self.flags(ranks, bind=bind), "-n", str(ranks), *program]


def resolve_launcher(option: str | None = None, *, hostfile: str | None = None,
                     env: Mapping[str, str] | None = None,
                     which: Callable[[str], str | None] = shutil.which,
                     version_of: Callable[[str], str] = launcher_version) -> Launcher:
    """The launcher from ``option`` (``--launcher``), else ``$DSGD_LAUNCHER``, else ``mpiexec``.

    The executable must be on PATH (or a path to an executable); SpecError names what is missing.
    ``which`` and ``version_of`` are injectable for tests."""
    env = os.environ if env is None else env
    text = option if option is not None and option.strip() else env.get(LAUNCHER_ENV, "").strip() or DEFAULT_LAUNCHER
    source = "--launcher" if option is not None and option.strip() else (
        LAUNCHER_ENV if env.get(LAUNCHER_ENV, "").strip() else "default launcher")
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise SpecError(f"{source} {text!r} is not a valid command line: {exc}") from None
    if not argv:
        raise SpecError(f"{source} is empty")
    exe = which(argv[0])
    if exe is None:
        hint = " (install Open MPI or MPICH, or pass --launcher)" if argv[0] == DEFAULT_LAUNCHER else ""
        raise SpecError(f"{source}: {argv[0]} not found on PATH{hint}")
    if hostfile is not None and not os.path.isfile(hostfile):
        raise SpecError(f"--hostfile {hostfile} is not a file")
    flavor = flavor_of(argv[0], "" if os.path.basename(argv[0]) == "srun" else version_of(exe))
    return Launcher(tuple([exe, *argv[1:]]), flavor, hostfile, _is_root(), _usable_cpus())


# ---------------------------------------------------------------- failed jobs

#: what Open MPI's launcher prints when it failed before starting any rank (module docstring)
_NOT_STARTED = ("The PMIx server's listener thread failed to start",)


def not_started(output: str) -> bool:
    """Whether a failed job's output says the launcher stopped before any rank ran, so that starting
    the same job again is safe (see "Jobs that never started" above)."""
    return any(text in output for text in _NOT_STARTED)


def stale_session_dirs(tmpdir: str) -> list[str]:
    """Open MPI session directories ``ompi.<pid>`` under ``tmpdir`` whose launcher process is gone.

    Each is left by a launcher killed with SIGKILL and makes a later launcher with the same process id
    fail to start. Directories of live processes (or of ones we may not signal) are not listed."""
    out: list[str] = []
    try:
        names = os.listdir(tmpdir)
    except OSError:
        return out
    for name in names:
        m = re.fullmatch(r"ompi\.(\d+)", name)
        if m is None:
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            out.append(os.path.join(tmpdir, name))
        except (PermissionError, OverflowError):
            pass
    return sorted(out)

#: a line of the launcher's banner, or of its per-rank prefixes, not of our programs
_BANNER = re.compile(
    r"^(-{10,}|={10,}"
    r"|prterun |mpiexec |mpirun |Primary job|a non-zero exit code|process returned|thus causing|"
    r"Per user-direction|the job to be terminated|The first process to do so was|"
    r"Process name:|Exit code:|Process ID:|Hostname:|Node:|Signal:|Local host:|"
    r"\[[^\]]*:\d+\] )")
_OURS = re.compile(r"^[\w./-]+: error: ")


def error_line(output: str, default: str = "(no output)") -> str:
    """The last ``<prog>: error: ...`` line of a job's output; else its last line that is not the
    launcher's banner; else ``default``. A launcher that never started a rank gets its own line."""
    if not_started(output):
        return (f"the launcher stopped before starting any rank ({_NOT_STARTED[0]}): a stale Open MPI "
                f"session directory ompi.<pid> in the temporary directory, left by a killed launcher, "
                f"is the known cause; remove it")
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    ours = [ln for ln in lines if _OURS.match(ln)]
    if ours:
        return ours[-1]
    rest = [ln for ln in lines if not _BANNER.match(ln)]
    return rest[-1] if rest else default


def stop_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """End the process group of a command started with ``start_new_session`` (mpiexec and its ranks), by
    its id: SIGTERM, then SIGKILL if it has not ended within ``timeout`` seconds. Ended means the whole
    group, not only its leader: ``sh -c 'mpiexec ...'`` dies at once on SIGTERM while its mpiexec, in
    the same group, is still shutting its job down (and would be left an orphan)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.05)
    proc.wait()


def _group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a member."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
