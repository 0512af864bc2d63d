"""Real runs for the reproduce scripts: start `trainers run` with the launcher (``--launcher``,
``$DSGD_LAUNCHER``, else mpiexec: perfmodel.lab.launcher), reuse finished run logs, read what the logs measured.

A run is skipped when its log is complete (summary and final evaluation present) and its header
configuration equals the one wanted, so an interrupted reproduce script redoes only unfinished runs.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from reproduce.common import ReproduceError
from reproduce.launch_setting import launch_setting


#: header-config keys that do not change what a run computes
IGNORED_CONFIG = ("log", "data_root", "progress", "checkpoint", "checkpoint_every", "resume", "no_progress")


def data_root(args: argparse.Namespace) -> str | None:
    """--data-root, else $DSGD_DATA_ROOT, else None (the trainers' default data/datasets)."""
    return args.data_root or os.environ.get("DSGD_DATA_ROOT")


def require_data(args: argparse.Namespace, sub: str) -> str:
    """The data root holding folder `sub` (e.g. 'mnist'); ReproduceError in one line when it is missing."""
    root = data_root(args)
    cands = [Path(root)] if root else [Path(__file__).resolve().parents[1] / "data" / "datasets"]
    for c in cands:
        if (c / sub).exists():
            return str(c)
    raise ReproduceError(f"dataset folder {sub!r} not found under {', '.join(map(str, cands))}; pass --data-root")


def log_matches(path: Path, want: dict) -> bool:
    """Whether `path` is a complete run log (a summary and a final eval) whose header config has `want`."""
    from trainers.log import RunLogError, read_run_log

    if not path.exists():
        return False
    try:
        log = read_run_log(path)
    except RunLogError:
        return False
    cfg = log.header.get("config", {})
    if not isinstance(cfg, dict):  # not a trainers run's header: of another configuration, made anew
        return False
    for k, v in want.items():
        if k in IGNORED_CONFIG:
            continue
        have = cfg.get(k)
        if isinstance(v, float) or isinstance(have, float):
            try:
                if abs(float(have) - float(v)) > 1e-12:
                    return False
            except (TypeError, ValueError):
                return False
        elif have != v:
            return False
    return bool(log.summaries) and bool(log.evals)


def run_checked(cmd: list[str], timeout_s: float, what: str) -> float:
    """Run ``cmd`` with one torch/BLAS thread; its wall seconds. A failure or time-out raises
    ReproduceError with one line naming ``what`` and the command's own error line (mpiexec's banner,
    which follows it in the captured output, is left out: perfmodel.lab.launcher). A launcher that failed
    before any rank ran (perfmodel.lab.launcher.not_started) is started once more."""
    from perfmodel.lab.launcher import error_line, not_started

    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for attempt in (1, 2):  # a launcher that stopped before any rank ran is started once more
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env,
                                  stdin=subprocess.DEVNULL)  # mpiexec forwards stdin to rank 0
        except subprocess.TimeoutExpired:
            raise ReproduceError(f"{what}: timed out after {timeout_s:.0f} s: {shlex.join(cmd)}") from None
        if proc.returncode == 0 or attempt == 2 or not not_started(f"{proc.stdout or ''}{proc.stderr or ''}"):
            break
    if proc.returncode != 0:
        line = error_line(f"{proc.stdout or ''}\n{proc.stderr or ''}")
        raise ReproduceError(f"{what}: failed (exit {proc.returncode}): {line[:300]}")
    return time.perf_counter() - t0


def run_command(cmd: list[str], log: Path, want: dict, timeout_s: float, what: str) -> float | None:
    """Run `cmd` (which writes `log`) unless a matching complete log is there; wall seconds, None if reused.
    A log there that is incomplete or of another configuration is removed first and made anew.

    A failing or timed-out run, or one that leaves no complete matching log, raises ReproduceError.
    """
    if log_matches(log, want):
        return None
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)  # incomplete, or of another configuration: replaced (trainers never write over a log)
    try:
        wall = run_checked(cmd, timeout_s, what)
    except KeyboardInterrupt:
        log.unlink(missing_ok=True)  # Ctrl-C: no partial run log left behind
        raise
    if not log_matches(log, want):
        raise ReproduceError(f"{what}: finished but {log} is not a complete log of the wanted configuration")
    return wall


def mpi_command(ranks: int, train_args: list[str], entry: tuple[str, ...] = ("trainers.run", "run"),
                extra: list[str] = ()) -> list[str]:
    """LAUNCHER -n ranks python -m <entry> ... (default `trainers run`; ("trainers.asynchronous.ps",) for the parameter
    server), LAUNCHER as reproduce.launch_setting.use_launcher set it; extra: further launcher arguments (e.g. an
    emulated cluster's placement); ReproduceError when the launcher is missing."""
    from dataclasses import replace

    from perfmodel.lab.launcher import resolve_launcher
    from perfmodel.specs import SpecError

    try:
        launcher_text, hostfile = launch_setting()
        launcher = resolve_launcher(launcher_text, hostfile=hostfile)
    except SpecError as exc:
        raise ReproduceError(f"{exc}; the real-run tables need MPI (or pass --only for model tables)") from None
    if extra:
        launcher = replace(launcher, argv=(*launcher.argv, *extra))
    return launcher.command(ranks, [sys.executable, "-m", *entry, *train_args])


def train_args(cfg: dict) -> list[str]:
    """`trainers run` flags from a config dict using the header's key names (None and False are left out)."""
    out: list[str] = []
    for k, v in cfg.items():
        if v is None or v is False:
            continue
        flag = "--" + k.replace("_", "-")
        out += [flag] if v is True else [flag, str(v)]
    return out


def diverged(path: Path) -> bool:
    """Whether a run log holds a non-finite training or test loss."""
    from trainers.log import RunLogError, read_run_log

    try:
        log = read_run_log(path)
    except RunLogError:
        return False
    from trainers.log import value_of

    losses = [value_of(s, "loss") for s in log.steps] + [value_of(e, "test_loss") for e in log.evals]
    return any(v is not None and not math.isfinite(v) for v in losses) or \
        any(v is not None and v > 1e6 for v in losses)


def number_of(path: Path, record: dict, key: str) -> float:
    """``record[key]`` of a reused run log as a float (nan, inf where the line flags it non-finite); a
    ReproduceError naming the log, the line's type and the key when it is missing or not a number (a log
    edited or of another program would otherwise be a TypeError or KeyError deep in a table)."""
    from trainers.log import value_of

    try:
        value = value_of(record, key)
    except (TypeError, ValueError, AttributeError):
        value = None
    if value is None:
        raise ReproduceError(f"run log {path}: a {record.get('type')} line's {key} is "
                             f"{'missing' if key not in record else repr(record[key])}, not a number; move the log "
                             f"away to rerun it")
    return value


#: the numbers every evaluation line of a synchronous trainer holds (train_loss too where present)
EVAL_KEYS = ("step", "epoch", "test_loss", "test_acc")


def log_wall(path: Path) -> float | None:
    """The wall seconds a run log's summary reports (rank 0), None when it has none."""
    from trainers.log import read_run_log

    summaries = read_run_log(path).summaries
    return number_of(path, summaries[-1], "wall_s") if summaries and "wall_s" in summaries[-1] else None


def evals_of(path: Path) -> list[dict]:
    """The evaluation lines of a run log, EVAL_KEYS (and train_loss where present) as numbers: the step an
    int, the others floats, nan where the line flags a non-finite value."""
    from trainers.log import read_run_log

    out = []
    for ev in read_run_log(path).evals:
        keys = EVAL_KEYS + (("train_loss",) if "train_loss" in ev else ())
        numbers = {k: number_of(path, ev, k) for k in keys}
        if not float(numbers["step"]).is_integer() or numbers["step"] < 0:
            raise ReproduceError(f"run log {path}: an eval line's step is {ev['step']!r}, not a step number; move "
                                 f"the log away to rerun it")
        out.append({**ev, **numbers, "step": int(numbers["step"])})
    return out


def epoch_walls(path: Path) -> dict[int, float]:
    """Measured wall seconds per epoch (rank 0's sum of t_step over the epoch's steps), from a run log."""
    from trainers.log import read_run_log

    out: dict[int, float] = {}
    for s in read_run_log(path).steps:
        epoch, t_step = number_of(path, s, "epoch"), number_of(path, s, "t_step")
        if not epoch.is_integer():
            raise ReproduceError(f"run log {path}: a step line's epoch is {s['epoch']!r}, not an epoch number; "
                                 f"move the log away to rerun it")
        out[int(epoch)] = out.get(int(epoch), 0.0) + t_step
    return out
