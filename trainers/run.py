"""The ``trainers`` command: run | models | datasets, plus registered extra commands (``simulate``).

Usage::

    mpiexec -n 4 trainers run --algo ssgd --model lenet --dataset mnist --batch 64 --epochs 2 \\
        --lr 0.01 --momentum 0.9 --seed 1 --log runs/ssgd.jsonl
    mpiexec -n 4 trainers run --algo daso --ranks-per-node 2 ...   # 2 pretend nodes x 2 ranks
    trainers models
    trainers datasets [mnist cifar10 ...] [--data-root DIR]

Bad input prints one line ``trainers: error: ...`` (on rank 0 only under mpiexec) and exits with 2; so
does a flag that only another algorithm reads (:data:`ALGO_FLAGS`), and a seed past 2**64 - 1.
A run whose loss or gradients become non-finite stops on every rank with one line ``trainers: error:
training diverged ...`` and exit status 3 (its run log ends with a summary saying so), unless given
``--allow-divergence`` (it then trains on to its budget and exits 0; the summary still says so).

The algorithms are the two families' own registries, read when needed (trainers.algorithms):
trainers.sync.registry.SYNC_ALGORITHMS (ssgd, terngrad, daso: ``trainers.sync.runner.run``) and
trainers.asynchronous.algos.ALGOS (the parameter server's: ``trainers.asynchronous.ps.run_from_config``).
The arguments become one configuration (trainers.config): a :class:`SyncConfig` for a synchronous or
registered algorithm, an :class:`AsyncConfig` for the parameter server's (:func:`config_from_args`).
Importing this module imports neither torch nor mpi4py.

Extending it (nothing is imported until used):

- ``ALGORITHMS[name] = (module path, function name)``: ``trainers run --algo name`` imports the module
  and calls ``function(cfg, comm) -> None`` with ``cfg`` a :class:`SyncConfig` and ``comm`` an
  ``mpi4py.MPI.Comm`` (``MPI.COMM_WORLD``). The function trains, writes ``cfg.log`` on rank 0 with
  :class:`trainers.log.RunLog`, and raises :class:`UsageError` -- on every rank alike -- for bad input
  it detects (it is printed as ``trainers: error: ...`` and the job exits 2), or
  :class:`DivergenceError` -- on every rank alike -- when training diverged (exit 3); any other exception
  aborts the whole MPI job (``trainers.comm.abort_on_error``). Algorithm-specific settings come as
  ``cfg.options`` (``--opt key=value``, repeatable; read them with :meth:`SyncConfig.option`).
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
from typing import Any

from perfmodel.compression import LEVEL_LANES
from trainers import device as _devices
from trainers.algorithms import ALGORITHMS, algorithms, family
from trainers.config import (BACKEND_CHOICES, DASO_DTYPES, DATASET_CHOICES, PS_DEFAULTS, AsyncConfig, RunConfig,
                             SyncConfig, async_option_fields, defaults)
from trainers.exchanges import DEFAULT_EXCHANGE, EXCHANGES
from trainers.errors import DIVERGED_STATUS, DivergenceError, TrainerError, UsageError, refuse_on_rank0
from trainers.sync.daso_schedule import DASO_RULES
from trainers.sync.optimizers import OPTIMIZERS
from trainers.sync.registry import SYNC_ALGORITHMS
from trainers.validators import check_new_log, check_output_file, unused_option

__all__ = [
    "ALGORITHMS",
    "COMMANDS",
    "algorithms",
    "TrainerError",
    "UsageError",
    "DivergenceError",
    "DIVERGED_STATUS",
    "RunConfig",
    "SyncConfig",
    "AsyncConfig",
    "make_parser",
    "build_run_parser",
    "config_from_args",
    "resolve_algorithm",
    "dispatch",
    "main",
]

COMMANDS: dict[str, tuple[str, str, str]] = {
    "simulate": ("trainers.asynchronous.simulate", "simulate_main",
                 "event-driven simulation of N asynchronous workers"),
}
"""Extra subcommand name -> (module, function, help); the function is ``def main(argv: list[str]) -> int``."""

DEVICES = _devices.DEVICES
TERN_LANES = LEVEL_LANES  # perfmodel.compression: lanes of the levels sum (auto, packed, int8)


class _Unset:
    """The parser default of a flag of ALGO_FLAGS: not given (the configuration's default applies)."""

    def __repr__(self) -> str:
        return "<not given>"


UNSET = _Unset()

ALGO_FLAGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bucket_mb": ("--bucket-mb", ("ssgd", "terngrad", "daso")),
    "overlap": ("--overlap", ("ssgd", "daso")),  # terngrad ternarizes after backprop: nothing to overlap
    "ranks_per_node": ("--ranks-per-node", ("daso",)),  # DASO's node groups; the run log records it
    "tern_clip": ("--tern-clip", ("terngrad",)),
    "tern_min_elems": ("--tern-min-elems", ("terngrad",)),
    "tern_fp32_last": ("--tern-ternarize-last", ("terngrad",)),
    "terngrad_exchange": ("--terngrad-exchange", ("terngrad",)),
    "tern_lanes": ("--terngrad-lanes", ("terngrad",)),
    **{f.name: ("--" + f.name.replace("_", "-"), ("daso",))  # every daso_* field of SyncConfig
       for f in dataclasses.fields(SyncConfig) if f.name.startswith("daso_")},
}
"""SyncConfig field -> (flag, the algorithms that read it). The flag's parser default is UNSET, and
:func:`config_from_args` refuses it, given, with any other algorithm of the two families (one registered
in ALGORITHMS reads what it likes)."""


# ----------------------------------------------------------------------------------------- parsers


class _Parser(argparse.ArgumentParser):
    """argparse that raises TrainerError instead of printing usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise TrainerError(message)


def make_parser(prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """A parser whose errors raise TrainerError (for commands registered in COMMANDS)."""
    return _Parser(prog=prog, description=description)


def _int_arg(text: str) -> int:
    """An integer (the configuration checks its range, naming the field)."""
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
    """Add the ``trainers run`` arguments to parser (one flag per SyncConfig field; defaults from trainers.config)."""
    a = parser.add_argument
    d = defaults(SyncConfig)  # every default once, in trainers.config
    a("--algo", required=True, metavar="ALGO",
      help=f"training algorithm: {', '.join(SYNC_ALGORITHMS)} (synchronous), or an asynchronous one run by the "
           f"parameter server (asgd, ga, dana, gem, ...; an unknown name lists them all)")
    a("--model", default=d["model"], help="model name (see `trainers models`)")
    a("--dataset", default=d["dataset"], choices=DATASET_CHOICES, help="dataset (synthetic: generated, for tests)")
    a("--batch", type=_int_arg, default=d["batch"],
      help="samples per rank per micro-batch (per step with --accumulate 1)")
    a("--accumulate", type=_int_arg, default=d["accumulate"], metavar="A",
      help="micro-batches per step: gradient accumulation, one exchange per A micro-batches (ssgd, terngrad)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=_int_arg, default=d["epochs"], help="epochs to train (default 1)")
    length.add_argument("--steps", type=_int_arg, default=d["steps"], help="steps to train")
    a("--lr", type=float, default=None, help="learning rate (default: the model's, trainers.model_defaults: "
                                              "lenet 0.01, resnet20 0.1, ...)")
    a("--momentum", type=float, default=None, help="SGD momentum, 0 for none (default: the model's, 0.9 for most)")
    a("--weight-decay", type=float, default=d["weight_decay"], help="L2 weight decay")
    a("--nesterov", action="store_true", help="Nesterov momentum")
    a("--optimizer", default=d["optimizer"], choices=tuple(OPTIMIZERS), help="local optimizer")
    a("--lr-warmup-epochs", type=float, default=d["lr_warmup_epochs"],
      help="linear LR warm-up from lr/ranks to lr (epochs)")
    a("--lr-milestones", type=_milestones, default=d["lr_milestones"],
      help="epochs at which lr is multiplied by --lr-gamma")
    a("--lr-gamma", type=float, default=d["lr_gamma"], help="LR decay factor at each milestone")
    a("--seed", type=_int_arg, default=d["seed"], help="seed of init, data order and stochastic parts (0..2**64-1)")
    a("--log", default=d["log"], help="JSONL run log written by rank 0")
    a("--data-root", default=d["data_root"], help="dataset folder (default $DSGD_DATA_ROOT, then data/datasets)")
    a("--synthetic-n", type=_int_arg, default=d["synthetic_n"], help="training images of --dataset synthetic")
    a("--augment", action="store_true", help="random crops (pad 4) and flips for CIFAR")
    a("--threads", type=_int_arg, default=d["threads"], help="torch threads per rank")
    a("--eval-every", type=_int_arg, default=d["eval_every"], help="evaluate every N steps (0: at epoch ends)")
    a("--eval-batch", type=_int_arg, default=d["eval_batch"], help="batch size of evaluation")
    a("--checkpoint", default=d["checkpoint"], help="checkpoint file (written atomically by rank 0)")
    a("--checkpoint-every", type=_int_arg, default=d["checkpoint_every"], help="checkpoint every N steps (0: at the end)")
    a("--resume", action="store_true", help="continue from --checkpoint and the existing --log")
    a("--no-progress", dest="progress", action="store_false", help="no progress bar on rank 0")
    a("--mpi-busy-poll", dest="mpi_yield", action="store_false",
      help="let waiting ranks busy-poll (Open MPI default) instead of yielding the CPU")
    # the flags of ALGO_FLAGS default to UNSET: config_from_args refuses them with another algorithm
    a("--bucket-mb", type=float, default=UNSET,
      help=f"fusion bucket size in MiB (ssgd, daso; terngrad's fp32 parts; default {d['bucket_mb']:g})")
    a("--tern-clip", type=_clip, default=UNSET,
      help=f"TernGrad scaler c*std (c; 'none' for max|g|; default {d['tern_clip']:g})")
    a("--tern-min-elems", type=_int_arg, default=UNSET, help="TernGrad: smaller tensors travel in fp32")
    a("--tern-ternarize-last", dest="tern_fp32_last", action="store_false", default=UNSET,
      help="TernGrad: ternarize the last layer too (default: it travels in fp32)")
    a("--terngrad-exchange", dest="terngrad_exchange", default=UNSET, choices=tuple(EXCHANGES),
      help=f"TernGrad exchange (trainers.exchanges; default {DEFAULT_EXCHANGE}): levels (integer allreduce), "
           "ps (sharded parameter server), "
           "allgather (does not scale)")
    a("--terngrad-lanes", dest="tern_lanes", default=UNSET, choices=TERN_LANES,
      help="lanes of the levels sum: packed (4-bit, two per byte, at 2..7 ranks; needs --backend mpi), "
           "int8 (native integer types) or auto (packed on MPI, int8 on gloo; default)")
    a("--ranks-per-node", type=_int_arg, default=UNSET, help="ranks per (pretend) node, for DASO (default 1)")
    a("--daso-global-dtype", default=UNSET, choices=DASO_DTYPES,
      help="wire type of the warm-up/cool-down global syncs (cycling-phase syncs are always fp32, as HeAT's)")
    a("--daso-warmup-epochs", type=_int_arg, default=UNSET,
      help="DASO blocking warm-up epochs (default 4: HeAT's DASO)")
    a("--daso-cooldown-epochs", type=_int_arg, default=UNSET,
      help="DASO blocking cool-down epochs (default 4: HeAT's DASO)")
    a("--daso-max-b", type=_int_arg, default=UNSET, help="DASO initial (maximum) B in the cycling phase")
    a("--daso-rule", default=UNSET, choices=tuple(DASO_RULES), help="B/W cycling rule on plateaus")
    a("--daso-b", type=_int_arg, default=UNSET, help="fix B (batches between global syncs)")
    a("--daso-w", type=_int_arg, default=UNSET, help="fix W (batches to wait; 0 = blocking)")
    a("--daso-plateau-patience", type=_int_arg, default=UNSET,
      help="a plateau is more than this many epochs without relative improvement")
    a("--daso-plateau-threshold", type=float, default=UNSET, help="relative improvement that counts")
    a("--device", default=d["device"], choices=DEVICES,
      help="cpu, cuda (one GPU per rank, chosen by the local rank) or auto (cuda when each rank has a GPU)")
    a("--backend", default=d["backend"], choices=BACKEND_CHOICES,
      help="gradient collectives: mpi, gloo, nccl (torch.distributed, rendezvous over MPI) or auto "
           "(nccl on GPUs, mpi on CPUs)")
    a("--overlap", type=_on_off, default=UNSET, metavar="on|off",
      help="reduce gradient buckets while backprop runs (default on; ssgd, daso)")
    a("--opt", dest="options", type=_option, action="append", default=[],
      help="key=value setting for a registered algorithm (repeatable)")
    a("--allow-divergence", action="store_true",
      help="train on after the loss or gradients become non-finite (default: stop, exit 3)")
    a("--fail-at-step", type=_int_arg, default=d["fail_at_step"], help=argparse.SUPPRESS)
    a("--fail-rank", type=_int_arg, default=d["fail_rank"], help=argparse.SUPPRESS)
    return parser


def config_from_args(args: argparse.Namespace) -> SyncConfig | AsyncConfig:
    """The configuration of parsed ``trainers run`` arguments (TrainerError for bad values): a SyncConfig
    for a synchronous (or registered) algorithm, an AsyncConfig for the parameter server's, built from
    the fields of the same names. For the parameter server: workers = the MPI ranks minus one (from the
    launcher's environment), --eval-every N = eval_every_steps, no length = 1 epoch, PS_DEFAULTS, and
    --opt key=value sets its fields (trainers.config.ASYNC_OPTION_KEYS) or the server's (PS_OPTION_KEYS).
    ssgd, terngrad and daso take no --opt (an error); an algorithm registered in ALGORITHMS reads its own."""
    from trainers.model_defaults import resolve

    values = dict(vars(args))
    algo = values.get("algo")
    kind = family(algo)
    if kind is None:
        raise TrainerError(f"algo must be one of {', '.join(sorted(algorithms()))}; got {algo!r}")
    _refuse_flags_of_other_algorithms(algo, values)
    values = {k: v for k, v in values.items() if v is not UNSET}  # not given: the config's default
    values["lr"], values["momentum"], sources = resolve(values.get("model", defaults(SyncConfig)["model"]),
                                                        values.get("lr"), values.get("momentum"))
    if kind != "sync" and values.get("accumulate", 1) != 1:
        raise TrainerError(f"--accumulate {values['accumulate']}: the parameter server ({algo}) applies every "
                           f"gradient as it comes; gradient accumulation runs with ssgd and terngrad")
    if kind == "sync":
        if algo in SYNC_ALGORITHMS and algo not in ALGORITHMS and values.get("options"):
            raise TrainerError(f"unknown --opt {values['options'][0][0]!r} for {algo}; it takes none (--opt sets "
                               f"the parameter server's algorithms and registered ones; {algo} has flags)")
        values["defaults_from"] = tuple(sources.items())
        return SyncConfig(**_fields_of(SyncConfig, values))
    if values.get("backend") not in ("auto", "mpi"):
        raise TrainerError(f"the parameter server ({algo}) moves parameters and gradients with MPI: "
                           f"--backend mpi (or auto)")
    size = _devices.env_world()[1] or 1
    if size < 2:
        raise TrainerError("the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work): "
                           "start it with mpiexec -n K, K >= 2")
    fields, server = async_option_fields(algo, values.get("options") or ())
    from trainers.asynchronous.algos import check_settings_used

    check_settings_used(algo, {k: f"--opt {k}" for k in fields})
    values.update(PS_DEFAULTS, workers=size - 1, eval_every_steps=values.pop("eval_every", 0), options=server)
    if values.get("epochs") is None and values.get("steps") is None:
        values["epochs"] = 1.0
    values.update(fields)
    return AsyncConfig(**_fields_of(AsyncConfig, values))


def _refuse_flags_of_other_algorithms(algo: str, values: dict[str, Any]) -> None:
    """TrainerError for a flag of ALGO_FLAGS given (not UNSET) with an algorithm of the two families that
    does not read it."""
    if algo in ALGORITHMS:
        return
    for name, (flag, users) in ALGO_FLAGS.items():
        if values.get(name, UNSET) is not UNSET and algo not in users:
            raise unused_option(flag, algo, users)


def _fields_of(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """The entries of values that are fields of the dataclass cls."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in values.items() if k in names}


# --------------------------------------------------------------------------------------- dispatch


def resolve_algorithm(name: str) -> Callable[[Any, Any], None]:
    """Import and return the run function registered for algorithm ``name``."""
    try:
        module, function = algorithms()[name]
    except KeyError:
        raise UsageError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(algorithms()))}") from None
    return getattr(importlib.import_module(module), function)


def dispatch(cfg: SyncConfig | AsyncConfig, comm: Any = None) -> None:
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
    return refuse_on_rank0(_devices.env_world()[0], f"trainers: error: {' '.join(str(message).split())}")


# ------------------------------------------------------------------------------------ subcommands


def _cmd_run(args: argparse.Namespace) -> int:
    from trainers import interrupts

    cfg = config_from_args(args)
    checkpoint, resume = (cfg.checkpoint, cfg.resume) if isinstance(cfg, SyncConfig) else (None, None)
    rank = _devices.env_world()[0]
    for option, path in output_files(cfg):  # before any training: a run must not fail at its end
        check_output_file(option, path)
    if rank == 0:  # the log's writer; a rank 0 that refuses ends the launcher's job
        check_new_log(cfg.log, resume)
    if resume and not os.path.isfile(checkpoint):
        raise TrainerError(f"--resume: checkpoint {checkpoint} does not exist (without --resume the run "
                           f"starts at step 0)")
    if isinstance(cfg, AsyncConfig):  # the server's options and replay order, on every rank before MPI starts
        _check_server_inputs(cfg)
    launched = any(rank_key in os.environ for rank_key, _ in _devices.WORLD_ENV)
    interrupts.install(interrupts.InterruptWatch(rank, checkpoint, launched=launched))
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


def _check_server_inputs(cfg: AsyncConfig) -> None:
    """TrainerError for a parameter-server option or replay-order file that run_from_config would refuse
    inside the MPI job (trainers.config.ps_options, trainers.asynchronous.ps_messages.load_order)."""
    from trainers.asynchronous.ps_messages import load_order
    from trainers.config import ps_options

    options = ps_options(cfg)
    if options.replay_order:
        load_order(options.replay_order, cfg.workers)


def output_files(cfg: SyncConfig | AsyncConfig) -> list[tuple[str, str | None]]:
    """(option, path) of every file a run writes: the run log, and the checkpoint (synchronous) or the
    parameter server's final parameters (``--opt save_params``)."""
    if isinstance(cfg, SyncConfig):
        return [("--log", cfg.log), ("--checkpoint", cfg.checkpoint)]
    return [("--log", cfg.log), ("--opt save_params", dict(cfg.options).get("save_params"))]


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
