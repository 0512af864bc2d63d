"""Clean interrupts of ``trainers run``: Ctrl-C (SIGINT) or a launcher's SIGTERM ends every rank at once
with status 130 (``INTERRUPTED_STATUS``) and one line from rank 0::

    trainers: interrupted at step 37 of 120; last checkpoint at step 30 (ck.pt); rerun the same command with --resume

No exception travels through the training loop, so no MPI abort (and no Open MPI help text) follows.
A rank blocked inside an MPI call runs no Python signal handler until the call returns, which it never
does once a peer has left; so the signal is read from ``signal.set_wakeup_fd`` (written by the C-level
handler whatever the main thread is doing) by a watcher thread, which prints the line and ends the
process with ``os._exit``. Checkpoints are written atomically and the run log line by line (a torn last
line is cut on --resume), so leaving mid-step loses at most the steps after the last checkpoint.

Under mpiexec: a signal sent to the ranks (``kill -INT``, a batch system's signal) reaches every rank
and the job ends with 130; Open MPI's mpiexec then adds its own note that a process exited with a
non-zero status. Ctrl-C on mpiexec itself makes mpiexec send SIGTERM to the ranks and drop their
output; rank 0 then also writes its line to the controlling terminal (``/dev/tty``), and mpiexec
exits with its own status (1). Open MPI 5.0's mpiexec follows the SIGTERM with SIGKILL 0.25 s later,
so on a heavily loaded machine that line can be lost (docs/cli_behaviour.md).

The training loops report progress with :func:`note_step` and :func:`note_checkpoint` (cheap; nothing
happens without an installed watch), and write each checkpoint inside :func:`checkpoint_write`: a signal
that arrives during the write waits for it to end and be noted, so the line always names the checkpoint
that is on disk (the atomic rename and the note are otherwise two steps a signal can fall between).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["INTERRUPTED_STATUS", "InterruptWatch", "checkpoint_write", "install", "note_step", "note_checkpoint",
           "uninstall"]

INTERRUPTED_STATUS = 130  # 128 + SIGINT, what a shell reports for a Ctrl-C'd command
WRITE_WAIT_S = 120.0  # the longest an interrupt waits for a checkpoint being written (seconds)


@dataclass
class InterruptWatch:
    """What rank 0 says when interrupted: steps done (None: not known, before the loop starts or in a loop
    that does not report them, as the parameter server's), the run's total,
    the step of the last checkpoint on disk (None: none yet) and the checkpoint path (None: not asked for)."""

    rank: int
    checkpoint: str | None = None
    steps_done: int | None = None
    total_steps: int | None = None
    checkpoint_step: int | None = None
    launched: bool = False  # under a launcher (mpiexec): also write the line to the terminal on SIGTERM

    def message(self) -> str:
        """The one line (without the trailing newline)."""
        if self.steps_done is None:  # before the loop started, or a loop that does not report its steps
            where = "interrupted"
        else:
            of = f" of {self.total_steps}" if self.total_steps is not None else ""
            where = f"interrupted at step {self.steps_done}{of}"
        if not self.checkpoint:
            return f"trainers: {where}; no checkpoint (--checkpoint FILE makes one); a rerun starts at step 0"
        if self.checkpoint_step is None:
            return (f"trainers: {where}; no checkpoint written yet (--checkpoint-every N writes them); "
                    f"rerun the same command without --resume")
        return (f"trainers: {where}; last checkpoint at step {self.checkpoint_step} ({self.checkpoint}); "
                f"rerun the same command with --resume")

    def fire(self, signum: int) -> None:
        """Print the line (rank 0) and end this process with INTERRUPTED_STATUS (the first caller does;
        a second, the other of the watcher thread and the main thread's handler, waits for the exit)."""
        if not _FIRED.acquire(blocking=False):
            threading.Event().wait()
        # a checkpoint being written is finished and noted first; the lock is kept, so none starts after
        _WRITE.acquire(timeout=WRITE_WAIT_S)
        if self.rank == 0:
            line = self.message() + "\n"
            try:
                os.write(sys.stderr.fileno(), line.encode())  # not through a buffer the main thread may hold
            except (OSError, ValueError, AttributeError):
                pass
            if self.launched and signum == signal.SIGTERM and not _isatty(sys.stderr):
                _write_tty(line)  # mpiexec drops its ranks' output once Ctrl-C'd itself
        os._exit(INTERRUPTED_STATUS)


_WATCH: InterruptWatch | None = None
_STATE: dict = {}
_FIRED = threading.Lock()
_WRITE = threading.Lock()  # held while a checkpoint is written and noted (see checkpoint_write)


def install(watch: InterruptWatch) -> InterruptWatch:
    """Make SIGINT and SIGTERM end this process through ``watch`` (main thread only; idempotent)."""
    global _WATCH
    _WATCH = watch
    if _STATE or threading.current_thread() is not threading.main_thread():
        return watch  # signals reach the main thread only: elsewhere, leave the handlers as they are
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    _STATE["fds"] = (read_fd, write_fd)
    _STATE["old_fd"] = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    _STATE["old"] = {s: signal.signal(s, _python_handler) for s in (signal.SIGINT, signal.SIGTERM)}

    def watch_pipe() -> None:
        while True:
            try:
                data = os.read(read_fd, 1)
            except OSError:
                return
            if not data:
                return
            if data[0] in (signal.SIGINT, signal.SIGTERM) and _WATCH is not None:
                _WATCH.fire(data[0])

    threading.Thread(target=watch_pipe, name="trainers-interrupts", daemon=True).start()
    return watch


def uninstall() -> None:
    """Restore the previous handlers (the watcher thread ends when its pipe closes)."""
    global _WATCH
    if not _STATE:
        return
    for s, old in _STATE["old"].items():
        signal.signal(s, old)
    signal.set_wakeup_fd(_STATE["old_fd"])
    for fd in _STATE["fds"]:
        os.close(fd)
    _STATE.clear()
    _WATCH = None


def _python_handler(signum: int, frame: object) -> None:
    # The C-level handler has already written signum to the wakeup pipe: the watcher thread acts on it.
    # Here (main thread, when it next runs Python) act too, in case that thread is slow to be scheduled;
    # but not inside a checkpoint write, which this thread must finish first (the watcher waits for it).
    if _WATCH is not None and not _WRITE.locked():
        _WATCH.fire(signum)


def note_step(steps_done: int, total_steps: int | None = None) -> None:
    """The loop has finished ``steps_done`` steps (of ``total_steps``)."""
    if _WATCH is not None:
        _WATCH.steps_done = steps_done
        if total_steps is not None:
            _WATCH.total_steps = total_steps


def note_checkpoint(step: int) -> None:
    """A checkpoint of ``step`` finished steps is on disk (or was restored)."""
    if _WATCH is not None:
        _WATCH.checkpoint_step = step


@contextmanager
def checkpoint_write(step: int) -> Iterator[None]:
    """Wrap the write of a checkpoint of ``step`` finished steps; when the body returns, the checkpoint is
    noted. An interrupt meanwhile waits for both (at most WRITE_WAIT_S), so its line names what is on disk.
    Hold it around the write alone: never around a collective call, which an interrupted peer never joins."""
    with _WRITE:
        yield
        note_checkpoint(step)


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def _write_tty(line: str) -> None:
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        return
    try:
        os.write(fd, line.encode())
    except OSError:
        pass
    finally:
        os.close(fd)
