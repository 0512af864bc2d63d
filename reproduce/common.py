"""What every reproduce script shares: scales, the results table, the command line.

A results table is results/<paper>/<table>.csv, one row per configuration, with the paper's value,
the rerun value, their difference, the scale and the exact settings. Every table keys its rows by
scale ("smoke", "small", "paper"; "model" for rows the performance model computes, the same at every
scale), so a run at another scale into the same folder adds its own rows and never skips, overwrites
or joins another scale's. Smoke output goes to results-smoke/ by default, never into the committed
results/ (docs/scales.md). It is rewritten atomically after
every finished row (a temporary file, then a rename), and a rerun skips rows whose key is already
there: an interrupted script loses at most the row it was computing and redoes nothing finished.
Writers hold an exclusive lock on <table>.csv.lock (filelock) and merge with what is on disk, so two
processes filling disjoint rows of one table (say, one per seed) keep each other's rows. Files get the
user's normal permissions (perfmodel.fileio). Ctrl-C ends a script with one line and exit 130; the row
being computed is not written, and its run log, if any, is left incomplete, so a rerun redoes that run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd
from filelock import FileLock

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.fileio import atomic_path

ROOT = Path(__file__).resolve().parent.parent
SCALES = ("smoke", "small", "paper")
SMOKE_BANNER = "smoke: a plumbing check, not a reproduction"
"""What every table row, figure and report made at --scale smoke says (a few steps on synthetic data)."""


class ReproduceError(ValueError):
    """Bad arguments or missing inputs for a reproduce script."""


def one_line(error: object) -> str:
    """An error's text on one line (pandas' parser errors end in a newline; a library's may span lines)."""
    return " ".join(str(error).split())


#: the scale of rows the performance model computes: they do not depend on --scale
MODEL_SCALE = "model"


def default_results_dir(scale: str = "small") -> Path:
    """results/ (results-smoke/ for the smoke scale, so a plumbing check never lands among the committed
    results) of the source tree when the package runs from a checkout (editable install or PYTHONPATH),
    else in the current directory (a regular install)."""
    name = "results-smoke" if scale == "smoke" else "results"
    if (ROOT / "pyproject.toml").is_file() and (ROOT / "reproduce").is_dir():
        return ROOT / name
    return Path.cwd() / name


@dataclass
class ResultTable:
    """A CSV of finished rows keyed by ``key`` columns, "scale" among them; ``add`` appends one row and
    rewrites atomically."""

    path: Path
    key: tuple[str, ...]

    def __post_init__(self) -> None:
        if "scale" not in self.key:
            raise ValueError(f"results table {Path(self.path).name}: its key {self.key} must hold 'scale'")
        self.path = Path(self.path)
        self.frame = self._read()

    def _read(self) -> pd.DataFrame:
        if not self.path.exists():
            return pd.DataFrame()
        try:
            frame = pd.read_csv(self.path, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            raise ReproduceError(f"results file {self.path} is unreadable ({one_line(e)}); move it away to "
                                 f"rerun") from None
        missing = [k for k in self.key if k not in frame.columns]
        if missing:
            raise ReproduceError(f"results file {self.path} lacks key columns {missing}; move it away to rerun")
        return frame

    def _key_of(self, row: dict) -> tuple[str, ...]:
        return tuple(str(row[k]) for k in self.key)

    def done(self, **key: Any) -> bool:
        """Whether a row with this key is already finished."""
        if self.frame.empty:
            return False
        want = self._key_of(key)
        have = self.frame[list(self.key)].astype(str).itertuples(index=False, name=None)
        return want in set(have)

    def add(self, row: dict) -> None:
        """Append one finished row and write the whole table atomically."""
        for k in self.key:
            if k not in row:
                raise ReproduceError(f"row lacks key column {k!r}")
        if row.get("scale") == "smoke":  # a smoke row says so, whatever its script's note
            note = str(row.get("note") or "")
            row = {**row, "note": SMOKE_BANNER + (f"; {note}" if note else "")}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path.with_name(self.path.name + ".lock")):
            frame = self._read()  # rows another process finished since we last looked
            self.frame = frame
            if self.done(**{k: row[k] for k in self.key}):
                return
            merged = pd.concat([frame, pd.DataFrame([row])], ignore_index=True)
            with atomic_path(self.path, suffix=".tmp") as tmp:
                merged.to_csv(tmp, index=False)
            self.frame = merged


def settings_text(settings: dict) -> str:
    """The exact settings of a row as a compact, sorted JSON string."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"))


def difference(rerun: float | None, paper: float | None) -> float | None:
    """rerun - paper where both are known."""
    if rerun is None or paper is None or pd.isna(rerun) or pd.isna(paper):
        return None
    return float(rerun) - float(paper)


def int_list(what: str, minimum: int, example: str) -> Callable[[str], tuple[int, ...]]:
    """An argparse type for a comma-separated list of integers >= minimum ("seeds", 0, "0,1,2")."""
    def parse(text: str) -> tuple[int, ...]:
        try:
            values = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be integers, e.g. {example} (got {text!r})") from None
        if not values or any(v < minimum for v in values):
            raise argparse.ArgumentTypeError(f"{what} must be a non-empty list of integers >= {minimum} "
                                             f"(got {text!r})")
        return values
    return parse


_seed_list = int_list("seeds", 0, "0,1,2")


def seeds_of(args: argparse.Namespace, default: tuple[int, ...]) -> tuple[int, ...]:
    """The seeds to run: --seeds if given, else the table's default for this scale."""
    return args.seeds if getattr(args, "seeds", None) else default


def parser(paper: str, description: str) -> argparse.ArgumentParser:
    p = OneLineExitParser(prog=f"reproduce/{paper}.py", description=description)
    p.add_argument("--scale", choices=SCALES, default="smoke",
                   help="smoke: seconds, for CI; small: reduced real runs on a CPU; paper: the paper's settings")
    p.add_argument("--out", default=None, help="results folder (default results/; smoke: results-smoke/)")
    p.add_argument("--data-root", default=None, help="datasets folder (default $DSGD_DATA_ROOT or data/datasets)")
    p.add_argument("--only", default=None, help="comma list of the tables to run (default all)")
    p.add_argument("--seeds", default=None, type=_seed_list,
                   help="comma list of seeds for the tables that repeat runs (default: the scale's own)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--launcher", default=None,
                   help="command that starts the ranks of real runs, e.g. 'srun --mpi=pmix' (default $DSGD_LAUNCHER, "
                        "then mpiexec)")
    p.add_argument("--hostfile", default=None, help="hostfile handed to the launcher")
    return p


def run_tables(paper: str, tables: dict[str, Callable[[argparse.Namespace, Path], None]],
               args: argparse.Namespace) -> int:
    """Run the selected tables of one paper; bad input or missing data is one line and exit 2."""
    out = Path(args.out) if args.out else default_results_dir(getattr(args, "scale", "small"))
    wanted = list(tables) if args.only is None else [t.strip() for t in args.only.split(",") if t.strip()]
    from reproduce.launch_setting import use_launcher

    use_launcher(getattr(args, "launcher", None), getattr(args, "hostfile", None))
    unknown = [t for t in wanted if t not in tables]
    started = time.time()
    try:
        if unknown:
            raise ReproduceError(f"unknown table(s) {', '.join(unknown)}; choose from {', '.join(tables)}")
        if not wanted:
            raise ReproduceError(f"--only {args.only!r} names no table; choose from {', '.join(tables)}")
        if getattr(args, "launcher", None) is not None or getattr(args, "hostfile", None) is not None:
            from perfmodel.lab.launcher import resolve_launcher

            # what the user named is checked now, not at the first real run (tables of simulations have
            # none, and a smoke rerun that finds every row finished starts none either)
            resolve_launcher(args.launcher, hostfile=args.hostfile)
        for name in wanted:
            tables[name](args, out / paper)
    except (ValueError, OSError) as e:
        print(f"reproduce/{paper}: error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # the row being computed was never added; a run it started is killed with the process group
        # and its log stays incomplete, so a rerun skips the finished rows and redoes that run
        print(f"\nreproduce/{paper}: interrupted; finished rows are in {out / paper}, rerun to continue",
              file=sys.stderr)
        return 130
    print(wrote_summary(paper, out / paper, started, getattr(args, "scale", None)))
    return 0


def wrote_summary(paper: str, folder: Path, since: float, scale: str | None = None) -> str:
    """One line: the files under ``folder`` written since ``since`` (time.time()), CSV rows counted."""
    written = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".lock")
                     and p.stat().st_mtime >= since) if folder.is_dir() else []
    tables = [p for p in written if p.suffix == ".csv"]
    rows = {p: max(len(pd.read_csv(p, keep_default_na=False)), 0) for p in tables}
    smoke = f" ({SMOKE_BANNER})" if scale == "smoke" else ""
    if not written:
        return f"reproduce/{paper}: nothing new in {folder}: every row was already there{smoke}"
    listed = [f"{p.relative_to(folder)} ({rows[p]} rows)" for p in tables]
    others = len(written) - len(tables)
    if others:
        listed.append(f"{others} other file{'s' if others > 1 else ''} (run logs, order files)")
    return f"reproduce/{paper}: wrote {', '.join(listed)} under {folder}{smoke}"


def progress(iterable: Iterable, args: argparse.Namespace, desc: str, total: int | None = None):
    """A tqdm bar unless --no-progress."""
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, disable=args.no_progress, leave=False)


def emulated_check_main(argv: list[str] | None, *, name: str, doc: str, table: str, out: Path, remakes: int,
                        check: Callable[[Path, int], Path], report: Callable[[Path], str]) -> int:
    """The command line of an out-of-sample check on emulated nodes (reproduce.overlap_check,
    reproduce.accumulation_check): --remakes N runs remakes 0..N-1 (``check``), --report prints the
    committed ``table``'s medians only (``report``); bad input and failed runs are one line, exit 2."""
    ap = OneLineExitParser(prog=f"python -m reproduce.{name}", description=doc.split("\n\n")[0])
    ap.add_argument("--remakes", type=int, default=remakes,
                    help=f"remakes 0..N-1, each with its own profiles (default {remakes})")
    ap.add_argument("--out", type=Path, default=out, help="results folder (default: %(default)s)")
    ap.add_argument("--report", action="store_true", help="only print the medians of the committed table")
    args = ap.parse_args(argv)
    from perfmodel.lab.emulate import EmulateError
    from perfmodel.lab.validate import ValidateError

    if args.remakes < 1:
        print(f"{name}: error: --remakes must be >= 1, got {args.remakes}", file=sys.stderr)
        return 2
    try:
        path = args.out / table if args.report else check(args.out, args.remakes)
        if not path.exists():
            raise ReproduceError(f"no table at {path}")
        print(report(path))
    except (ReproduceError, ValidateError, EmulateError) as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 2
    return 0
