"""The ``trainers`` command: run | models | datasets, plus registered extra commands (``simulate``).

Usage::

    mpiexec -n 4 trainers run --algo ssgd --model lenet --dataset mnist --batch 64 --epochs 2 \\
        --lr 0.01 --momentum 0.9 --seed 1 --log runs/ssgd.jsonl
    mpiexec -n 4 trainers run --algo daso --ranks-per-node 2 ...   # 2 pretend nodes x 2 ranks
    trainers models
    trainers datasets [mnist cifar10 ...] [--data-root DIR]

Bad input prints one line ``trainers: error: ...`` (on rank 0 only under mpiexec) and exits with 2.
A run whose loss or gradients become non-finite stops on every rank with one line ``trainers: error:
training diverged ...`` and exit status 3 (its run log ends with a summary saying so), unless given
``--allow-divergence`` (it then trains on to its budget and exits 0; the summary still says so).

The algorithms are the two families' own registries, read when needed (:func:`algorithms`):
trainers.sync.SYNC_ALGORITHMS (ssgd, terngrad, daso: ``trainers.sync.run``) and
trainers.asynchronous.config.ALGOS (the parameter server's: ``trainers.asynchronous.ps.run_from_run_config``).
Importing this module imports neither torch nor mpi4py.

Extending it (nothing is imported until used):

- ``ALGORITHMS[name] = (module path, function name)``: ``trainers run --algo name`` imports the module
  and calls ``function(cfg, comm) -> None`` with ``cfg`` a :class:`RunConfig` and ``comm`` an
  ``mpi4py.MPI.Comm`` (``MPI.COMM_WORLD``). The function trains, writes ``cfg.log`` on rank 0 with
  :class:`trainers.log.RunLog`, and raises :class:`UsageError` -- on every rank alike -- for bad input
  it detects (it is printed as ``trainers: error: ...`` and the job exits 2), or
  :class:`DivergenceError` -- on every rank alike -- when training diverged (exit 3); any other exception
  aborts the whole MPI job (``trainers.comm.abort_on_error``). Algorithm-specific settings come as
  ``cfg.options`` (``--opt key=value``, repeatable; read them with :meth:`RunConfig.option`).
- ``COMMANDS[name] = (module path, function name, help)``: ``trainers name ARGS...`` calls
  ``function(argv: list[str]) -> int`` with the arguments after the name (e.g. ``"simulate":
  ("trainers.asynchronous.simulate", "simulate_main", "...")``). Build its parser with :func:`make_parser`
  so that argparse errors raise :class:`TrainerError`; a TrainerError it raises becomes
  ``trainers: error: ...`` and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfmodel.compression import LEVEL_LANES
from trainers import collectives as _collectives
from trainers import device as _devices
from trainers.errors import DIVERGED_STATUS, DivergenceError, TrainerError, UsageError
from trainers.exchanges import DEFAULT_EXCHANGE, EXCHANGES
from trainers.validators import check_choice, check_int, check_milestones, check_number

__all__ = [
    "ALGORITHMS",
    "COMMANDS",
    "algorithms",
    "TrainerError",
    "UsageError",
    "DivergenceError",
    "DIVERGED_STATUS",
    "RunConfig",
    "make_parser",
    "build_run_parser",
    "config_from_args",
    "resolve_algorithm",
    "dispatch",
    "main",
]

ALGORITHMS: dict[str, tuple[str, str]] = {}
"""Algorithms registered from outside the two families: name -> (module, function); the function is
``def run_<algo>(cfg: RunConfig, comm) -> None``. See :func:`algorithms` for the full list."""

COMMANDS: dict[str, tuple[str, str, str]] = {
    "simulate": ("trainers.asynchronous.simulate", "simulate_main",
                 "event-driven simulation of N asynchronous workers"),
}
"""Extra subcommand name -> (module, function, help); the function is ``def main(argv: list[str]) -> int``."""

SYNC_RUN = ("trainers.sync", "run")
ASYNC_RUN = ("trainers.asynchronous.ps", "run_from_run_config")


def algorithms() -> dict[str, tuple[str, str]]:
    """Every algorithm ``trainers run`` knows -> (module, function): the synchronous family's names
    (trainers.sync.SYNC_ALGORITHMS), the asynchronous family's (trainers.asynchronous.config.ALGOS; the
    parameter server, settings beyond RunConfig as ``--opt key=value``, trainers.asynchronous.ps.OPTION_KEYS),
    then ALGORITHMS. Imports torch (the asynchronous registry is built from the master-rule classes)."""
    from trainers.asynchronous.config import ALGOS
    from trainers.sync import SYNC_ALGORITHMS

    return {**{name: SYNC_RUN for name in SYNC_ALGORITHMS}, **{name: ASYNC_RUN for name in ALGOS}, **ALGORITHMS}


def _sync_names() -> tuple[str, ...]:
    from trainers.sync import SYNC_ALGORITHMS  # no torch: the package loads its modules on first use

    return tuple(SYNC_ALGORITHMS)


def _optimizers() -> tuple[str, ...]:
    from trainers.sync.optimizers import OPTIMIZERS  # no torch until an optimizer is built

    return tuple(OPTIMIZERS)


def _daso_rules() -> tuple[str, ...]:
    from trainers.sync.daso_schedule import DASO_RULES  # pure Python

    return tuple(DASO_RULES)


DATASET_CHOICES = ("mnist", "cifar10", "cifar100", "synthetic")
DEVICES = _devices.DEVICES
BACKEND_CHOICES = ("auto", *_collectives.BACKENDS)
DASO_DTYPES = ("bf16", "fp32")
TERN_LANES = LEVEL_LANES  # perfmodel.compression: lanes of the levels sum (auto, packed, int8)


# ------------------------------------------------------------------------------------------ config


@dataclass(frozen=True)
class RunConfig:
    """Everything ``trainers run`` needs; validated on creation (TrainerError naming the field).

    Units: batch = samples per rank per step (the global batch is batch * ranks); lr per step;
    epochs / steps: length of training (give at most one; default 1 epoch); checkpoint_every and
    eval_every in steps (0: checkpoint only at the end / evaluate at epoch ends only); bucket_mb in
    MiB; synthetic_n = training images of the synthetic dataset (its test split has a quarter).
    TernGrad: tern_clip (c of s = c*std, None = max|g|), tern_min_elems (smaller tensors travel in
    fp32), tern_fp32_last (last layer in fp32), terngrad_exchange (a name of the
    trainers.exchanges registry: levels, ps or allgather), tern_lanes (lanes of the levels sum: auto, packed or int8). DASO: ranks_per_node forms the pretend nodes;
    daso_global_dtype is the wire type of the warm-up/cool-down global syncs (cycling-phase syncs
    are fp32, as in HeAT); daso_warmup_epochs / daso_cooldown_epochs default to HeAT's 4 and 4;
    daso_b / daso_w fix B and W in the cycling phase (no plateau cycling); daso_rule = "paper" (halve
    B and W on a plateau) or "code" (the authors' code: W starts at 1 and decreases by 1).
    allow_divergence: train on after a non-finite loss or gradient (default: stop). fail_at_step /
    fail_rank inject a failure (tests). options: extra ``key=value`` settings for registered
    algorithms. mpi_yield: ranks waiting in MPI yield the CPU (Open MPI ``mpi_yield_when_idle``, set
    before MPI starts unless the environment sets it) instead of busy-polling, which steals cores
    from CPU training when ranks share them. device: "cpu", "cuda" (one GPU per
    rank, by local rank) or "auto" (trainers.device); backend: what moves gradients -- "mpi", "gloo",
    "nccl" or "auto" (nccl on GPUs, mpi on CPUs; trainers.collectives); overlap: reduce gradient buckets
    while backprop runs (trainers.grad_buckets).
    """

    algo: str
    model: str = "lenet"
    dataset: str = "mnist"
    batch: int = 64
    epochs: int | None = None
    steps: int | None = None
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 0.0
    nesterov: bool = False
    optimizer: str = "sgd"
    lr_warmup_epochs: float = 0.0
    lr_milestones: tuple[float, ...] = ()
    lr_gamma: float = 0.1
    seed: int = 0
    log: str | None = None
    data_root: str | None = None
    synthetic_n: int = 1024
    augment: bool = False
    threads: int = 1
    eval_every: int = 0
    eval_batch: int = 1000
    checkpoint: str | None = None
    checkpoint_every: int = 0
    resume: bool = False
    progress: bool = True
    mpi_yield: bool = True
    allow_divergence: bool = False
    bucket_mb: float = 25.0
    tern_clip: float | None = 2.5
    tern_min_elems: int = 1
    tern_fp32_last: bool = True
    terngrad_exchange: str = DEFAULT_EXCHANGE
    tern_lanes: str = "auto"
    ranks_per_node: int = 1
    daso_global_dtype: str = "bf16"
    daso_warmup_epochs: int = 4
    daso_cooldown_epochs: int = 4
    daso_max_b: int = 4
    daso_rule: str = "paper"
    daso_b: int | None = None
    daso_w: int | None = None
    daso_plateau_patience: int = 2
    daso_plateau_threshold: float = 0.05
    fail_at_step: int | None = None
    fail_rank: int | None = None
    device: str = "auto"
    backend: str = "auto"
    overlap: bool = True
    options: tuple[tuple[str, str], ...] = field(default=())
    defaults_from: tuple[tuple[str, str], ...] = field(default=())  # (setting, its source): lr, momentum

    def __post_init__(self) -> None:
        if self.algo not in _sync_names() and self.algo not in ALGORITHMS:
            check_choice("algo", self.algo, sorted(algorithms()))  # imports the asynchronous registry (torch)
        if not isinstance(self.model, str) or not self.model:
            raise TrainerError(f"model must be a model name, got {self.model!r}")
        check_choice("dataset", self.dataset, DATASET_CHOICES)
        check_int("batch", self.batch, 1)
        check_int("epochs", self.epochs, 1, none_ok=True)
        check_int("steps", self.steps, 1, none_ok=True)
        if self.epochs is not None and self.steps is not None:
            raise TrainerError("give epochs or steps, not both")
        check_number("lr", self.lr, 0.0, lo_open=True)
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        check_number("weight_decay", self.weight_decay, 0.0)
        if self.nesterov and self.momentum == 0:
            raise TrainerError("nesterov needs momentum > 0")
        check_choice("optimizer", self.optimizer, _optimizers())
        check_number("lr_warmup_epochs", self.lr_warmup_epochs, 0.0)
        object.__setattr__(self, "lr_milestones", check_milestones("lr_milestones", self.lr_milestones))
        check_number("lr_gamma", self.lr_gamma, 0.0, 1.0, lo_open=True)
        check_int("seed", self.seed, 0)
        check_int("synthetic_n", self.synthetic_n, 1)
        check_int("threads", self.threads, 1)
        check_int("eval_every", self.eval_every, 0)
        check_int("eval_batch", self.eval_batch, 1)
        check_int("checkpoint_every", self.checkpoint_every, 0)
        if self.checkpoint_every and not self.checkpoint:
            raise TrainerError("checkpoint_every needs a checkpoint path")
        if self.resume and not self.checkpoint:
            raise TrainerError("resume needs a checkpoint path")
        check_number("bucket_mb", self.bucket_mb, 0.0, lo_open=True)
        check_number("tern_clip", self.tern_clip, 0.0, lo_open=True, none_ok=True)
        check_int("tern_min_elems", self.tern_min_elems, 1)
        check_choice("terngrad_exchange", self.terngrad_exchange, tuple(EXCHANGES))
        check_choice("tern_lanes", self.tern_lanes, TERN_LANES)
        check_int("ranks_per_node", self.ranks_per_node, 1)
        check_choice("daso_global_dtype", self.daso_global_dtype, DASO_DTYPES)
        check_int("daso_warmup_epochs", self.daso_warmup_epochs, 0)
        check_int("daso_cooldown_epochs", self.daso_cooldown_epochs, 0)
        check_int("daso_max_b", self.daso_max_b, 1)
        check_choice("daso_rule", self.daso_rule, _daso_rules())
        check_int("daso_b", self.daso_b, 1, none_ok=True)
        check_int("daso_w", self.daso_w, 0, none_ok=True)
        if (self.daso_b is None) != (self.daso_w is None):
            raise TrainerError("daso_b and daso_w go together (fixed B and W), give both or neither")
        check_int("daso_plateau_patience", self.daso_plateau_patience, 0)
        check_number("daso_plateau_threshold", self.daso_plateau_threshold, 0.0, 1.0, hi_open=True)
        check_int("fail_at_step", self.fail_at_step, 0, none_ok=True)
        check_int("fail_rank", self.fail_rank, 0, none_ok=True)
        check_choice("device", self.device, DEVICES)
        check_choice("backend", self.backend, BACKEND_CHOICES)
        if self.backend not in ("auto", "mpi") and algorithms().get(self.algo) == ASYNC_RUN:
            raise TrainerError(f"the parameter server ({self.algo}) moves parameters and gradients with MPI: "
                             f"--backend mpi (or auto)")
        if not isinstance(self.overlap, bool):
            raise TrainerError(f"overlap must be a bool, got {self.overlap!r}")
        opts = tuple((str(k), str(v)) for k, v in self.options)
        if any(not k for k, _ in opts):
            raise TrainerError("options need a non-empty key (key=value)")
        object.__setattr__(self, "options", opts)

    @property
    def bucket_bytes(self) -> int:
        """Fusion bucket cap in bytes."""
        return max(int(self.bucket_mb * 2**20), 4)

    def option(self, key: str, default: str | None = None) -> str | None:
        """The last ``--opt key=value`` given for key, else default."""
        found = default
        for k, v in self.options:
            if k == key:
                found = v
        return found

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (for the run-log header and checkpoints)."""
        d = dataclasses.asdict(self)
        d["lr_milestones"] = list(self.lr_milestones)
        d["options"] = dict(self.options)
        d["defaults_from"] = dict(self.defaults_from)
        return d


# ----------------------------------------------------------------------------------------- parsers


class _Parser(argparse.ArgumentParser):
    """argparse that raises TrainerError instead of printing usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise TrainerError(message)


def make_parser(prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """A parser whose errors raise TrainerError (for commands registered in COMMANDS)."""
    return _Parser(prog=prog, description=description)


def _int_arg(text: str) -> int:
    """An integer (RunConfig checks its range, naming the field)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    return value


def _clip(text: str) -> float | None:
    if text.lower() in ("none", "max"):
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}") from None


def _milestones(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated epochs like 80,120, got {text!r}") from None


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return text == "on"


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value


def build_run_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``trainers run`` arguments to parser (one flag per RunConfig field)."""
    a = parser.add_argument
    a("--algo", required=True, metavar="ALGO",
      help=f"training algorithm: {', '.join(_sync_names())} (synchronous), or an asynchronous one run by the "
           f"parameter server (asgd, ga, dana, gem, ...; an unknown name lists them all)")
    a("--model", default="lenet", help="model name (see `trainers models`)")
    a("--dataset", default="mnist", choices=DATASET_CHOICES, help="dataset (synthetic: generated, for tests)")
    a("--batch", type=_int_arg, default=64, help="samples per rank per step")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=_int_arg, default=None, help="epochs to train (default 1)")
    length.add_argument("--steps", type=_int_arg, default=None, help="steps to train")
    a("--lr", type=float, default=None, help="learning rate (default: the model's, trainers.model_defaults: "
                                              "lenet 0.01, resnet20 0.1, ...)")
    a("--momentum", type=float, default=None, help="SGD momentum, 0 for none (default: the model's, 0.9 for most)")
    a("--weight-decay", type=float, default=0.0, help="L2 weight decay")
    a("--nesterov", action="store_true", help="Nesterov momentum")
    a("--optimizer", default="sgd", choices=_optimizers(), help="local optimizer")
    a("--lr-warmup-epochs", type=float, default=0.0, help="linear LR warm-up from lr/ranks to lr (epochs)")
    a("--lr-milestones", type=_milestones, default=(), help="epochs at which lr is multiplied by --lr-gamma")
    a("--lr-gamma", type=float, default=0.1, help="LR decay factor at each milestone")
    a("--seed", type=_int_arg, default=0, help="seed of init, data order and stochastic parts")
    a("--log", default=None, help="JSONL run log written by rank 0")
    a("--data-root", default=None, help="dataset folder (default $DSGD_DATA_ROOT, then data/datasets)")
    a("--synthetic-n", type=_int_arg, default=1024, help="training images of --dataset synthetic")
    a("--augment", action="store_true", help="random crops (pad 4) and flips for CIFAR")
    a("--threads", type=_int_arg, default=1, help="torch threads per rank")
    a("--eval-every", type=_int_arg, default=0, help="evaluate every N steps (0: at epoch ends)")
    a("--eval-batch", type=_int_arg, default=1000, help="batch size of evaluation")
    a("--checkpoint", default=None, help="checkpoint file (written atomically by rank 0)")
    a("--checkpoint-every", type=_int_arg, default=0, help="checkpoint every N steps (0: at the end)")
    a("--resume", action="store_true", help="continue from --checkpoint and the existing --log")
    a("--no-progress", dest="progress", action="store_false", help="no progress bar on rank 0")
    a("--mpi-busy-poll", dest="mpi_yield", action="store_false",
      help="let waiting ranks busy-poll (Open MPI default) instead of yielding the CPU")
    a("--bucket-mb", type=float, default=25.0, help="fusion bucket size in MiB (ssgd, fp32 parts)")
    a("--tern-clip", type=_clip, default=2.5, help="TernGrad scaler c*std (c; 'none' for max|g|)")
    a("--tern-min-elems", type=_int_arg, default=1, help="TernGrad: smaller tensors travel in fp32")
    a("--tern-ternarize-last", dest="tern_fp32_last", action="store_false",
      help="TernGrad: ternarize the last layer too (default: it travels in fp32)")
    a("--terngrad-exchange", dest="terngrad_exchange", default=None, choices=tuple(EXCHANGES),
      help=f"TernGrad exchange (trainers.exchanges; default {DEFAULT_EXCHANGE}): levels (integer allreduce), "
           "ps (sharded parameter server), allgather (does not scale)")
    a("--terngrad-lanes", dest="tern_lanes", default="auto", choices=TERN_LANES,
      help="lanes of the levels sum: packed (4-bit, two per byte, at 2..7 ranks; needs --backend mpi), "
           "int8 (native integer types) or auto (packed on MPI, int8 on gloo; default)")
    a("--ranks-per-node", type=_int_arg, default=1, help="ranks per (pretend) node, for DASO")
    a("--daso-global-dtype", default="bf16", choices=DASO_DTYPES,
      help="wire type of the warm-up/cool-down global syncs (cycling-phase syncs are always fp32, as HeAT's)")
    a("--daso-warmup-epochs", type=_int_arg, default=RunConfig.daso_warmup_epochs,
      help="DASO blocking warm-up epochs (default 4: HeAT's DASO)")
    a("--daso-cooldown-epochs", type=_int_arg, default=RunConfig.daso_cooldown_epochs,
      help="DASO blocking cool-down epochs (default 4: HeAT's DASO)")
    a("--daso-max-b", type=_int_arg, default=4, help="DASO initial (maximum) B in the cycling phase")
    a("--daso-rule", default="paper", choices=_daso_rules(), help="B/W cycling rule on plateaus")
    a("--daso-b", type=_int_arg, default=None, help="fix B (batches between global syncs)")
    a("--daso-w", type=_int_arg, default=None, help="fix W (batches to wait; 0 = blocking)")
    a("--daso-plateau-patience", type=_int_arg, default=2,
      help="a plateau is more than this many epochs without relative improvement")
    a("--daso-plateau-threshold", type=float, default=0.05, help="relative improvement that counts")
    a("--device", default="auto", choices=DEVICES,
      help="cpu, cuda (one GPU per rank, chosen by the local rank) or auto (cuda when each rank has a GPU)")
    a("--backend", default="auto", choices=BACKEND_CHOICES,
      help="gradient collectives: mpi, gloo, nccl (torch.distributed, rendezvous over MPI) or auto "
           "(nccl on GPUs, mpi on CPUs)")
    a("--overlap", type=_on_off, default=True, metavar="on|off",
      help="reduce gradient buckets while backprop runs (default on; ssgd)")
    a("--opt", dest="options", type=_option, action="append", default=[],
      help="key=value setting for a registered algorithm (repeatable)")
    a("--allow-divergence", action="store_true",
      help="train on after the loss or gradients become non-finite (default: stop, exit 3)")
    a("--fail-at-step", type=_int_arg, default=None, help=argparse.SUPPRESS)
    a("--fail-rank", type=_int_arg, default=None, help=argparse.SUPPRESS)
    return parser


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """RunConfig from parsed ``trainers run`` arguments (ValueError for bad values)."""
    names = {f.name for f in dataclasses.fields(RunConfig)}
    values = {k: v for k, v in vars(args).items() if k in names}
    values["options"] = tuple(values.get("options") or ())
    from trainers.model_defaults import resolve

    values["lr"], values["momentum"], sources = resolve(values.get("model", "lenet"), values.get("lr"),
                                                        values.get("momentum"))
    values["defaults_from"] = tuple(sources.items())
    if values.get("terngrad_exchange") is None:
        values["terngrad_exchange"] = DEFAULT_EXCHANGE
    elif values.get("algo") != "terngrad":
        raise TrainerError(f"--terngrad-exchange {values['terngrad_exchange']} needs --algo terngrad (algorithm "
                       f"{values.get('algo')} has no ternary exchange)")
    return RunConfig(**values)


# --------------------------------------------------------------------------------------- dispatch


def resolve_algorithm(name: str) -> Callable[[RunConfig, Any], None]:
    """Import and return the run function registered for algorithm ``name``."""
    try:
        module, function = algorithms()[name]
    except KeyError:
        raise UsageError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(algorithms()))}") from None
    return getattr(importlib.import_module(module), function)


def dispatch(cfg: RunConfig, comm: Any = None) -> None:
    """Set torch threads, then run the registered algorithm on comm (default MPI.COMM_WORLD).

    Any exception other than UsageError aborts the MPI job (one line on stderr, exit status 1)."""
    import torch

    from trainers.comm import abort_on_error

    torch.set_num_threads(cfg.threads)
    fn = resolve_algorithm(cfg.algo)
    if comm is None:
        if cfg.mpi_yield:  # read by Open MPI when MPI starts (the import below); an explicit setting wins
            os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    usage: UsageError | DivergenceError | None = None
    with abort_on_error(comm):
        try:
            fn(cfg, comm)
        except (UsageError, DivergenceError) as exc:  # raised on every rank alike: no abort needed
            usage = exc
    if usage is not None:
        raise usage


def _fail(message: str) -> int:
    if _devices.env_world()[0] == 0:
        print(f"trainers: error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    return 2


# ------------------------------------------------------------------------------------ subcommands


def _cmd_run(args: argparse.Namespace) -> int:
    from trainers import interrupts

    cfg = config_from_args(args)
    if cfg.resume and not os.path.isfile(cfg.checkpoint):
        raise TrainerError(f"--resume: checkpoint {cfg.checkpoint} does not exist (without --resume the run "
                           f"starts at step 0)")
    launched = any(rank_key in os.environ for rank_key, _ in _devices.WORLD_ENV)
    interrupts.install(interrupts.InterruptWatch(_devices.env_world()[0], cfg.checkpoint, launched=launched))
    try:
        dispatch(cfg)
    except UsageError as exc:
        return _fail(str(exc))
    except DivergenceError as exc:
        _fail(str(exc))
        return DIVERGED_STATUS
    finally:
        interrupts.uninstall()  # the caller's handlers again (a test calling main in its own process)
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from trainers.models import MODELS, tensor_sizes

    rows = [("model", "parameters", "input", "classes", "dataset")]
    for name, info in MODELS.items():
        n = sum(k for _, k in tensor_sizes(name))
        rows.append((name, f"{n:,}", "x".join(map(str, info.input_shape)), str(info.num_classes), info.dataset))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.rjust(w) if i == 1 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    from trainers.data import DATASETS, DatasetError, DatasetMissing, data_root, load_dataset

    names = args.names or list(DATASETS)
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise TrainerError(f"unknown dataset {unknown[0]!r}; choose from {', '.join(DATASETS)}")
    root = data_root(args.data_root)  # absolute, resolved once
    source = "--data-root" if args.data_root is not None else (
        "$DSGD_DATA_ROOT" if os.environ.get("DSGD_DATA_ROOT") else "default")
    print(f"root: {root} ({source}{'' if root.is_dir() else ', NOT A FOLDER'})")
    missing = corrupt = 0
    for name in names:
        for train in (True, False):
            split = "train" if train else "test"
            try:
                ds = load_dataset(name, root, train=train, verify=not args.no_verify)
            except DatasetMissing as exc:
                missing += 1
                print(f"{name:9s} {split:5s} MISSING  {' '.join(str(exc).split())}")
                continue
            except DatasetError as exc:
                corrupt += 1
                print(f"{name:9s} {split:5s} CORRUPT  {' '.join(str(exc).split())}")
                continue
            i = ds.info
            print(f"{name:9s} {split:5s} ok       n={i.n}{' (SUBSET of %d)' % i.official_n if i.subset else ''} "
                  f"checksum={i.checksum} path={i.path}")
    # exit 2: the root is not a folder, a file is corrupt, or a dataset asked for by name is missing
    # (with no names every dataset is reported, and one that is not there is not an error)
    if not root.is_dir() or corrupt or (missing and args.names):
        what = (f"data root {root} is not a folder" if not root.is_dir() else
                f"{corrupt} corrupt and {missing} missing of {2 * len(names)} dataset splits under {root}")
        print(f"trainers: error: {what}", file=sys.stderr)
        return 2
    return 0


def _root_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trainers", description="Distributed training with MPI: synchronous and "
                     "asynchronous trainers, and the tools around them.")
    from perfmodel.fileio import package_version

    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="train with an algorithm under mpiexec",
                         description="Train a model with a distributed algorithm (start it with mpiexec -n K).")
    build_run_parser(run)
    run.set_defaults(handler=_cmd_run)
    models = sub.add_parser("models", help="list the models with their parameter counts")
    models.set_defaults(handler=_cmd_models)
    datasets = sub.add_parser("datasets", help="verify the dataset files (md5, structure)")
    datasets.add_argument("names", nargs="*",
                          help="datasets to check (default: all; then a missing one is reported, not an error)")
    datasets.add_argument("--data-root", default=None, help="dataset folder (default $DSGD_DATA_ROOT)")
    datasets.add_argument("--no-verify", action="store_true", help="skip the md5 checks")
    datasets.set_defaults(handler=_cmd_datasets)
    for name, (_, _, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


def _external(name: str, argv: list[str]) -> int:
    module, function, _ = COMMANDS[name]
    fn = getattr(importlib.import_module(module), function)
    return int(fn(argv) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trainers`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            return _external(argv[0], argv[1:])
        args = _root_parser().parse_args(argv)
        return args.handler(args)
    except ValueError as exc:  # TrainerError and its subclasses, and the libraries' bad-value errors
        return _fail(str(exc))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
