"""The configuration of one training run: one frozen dataclass per family, sharing one base.

    SharedConfig   what every run has, under one name in both families: the algorithm, the model and its
                   data, the length of training, the local SGD hyperparameters and learning-rate
                   schedule, the seed, the run log, threads, MPI's waiting mode, and the test-only failure injection.
    SyncConfig     ``trainers run --algo ssgd|terngrad|daso`` (and algorithms registered in
                   trainers.run.ALGORITHMS): buckets, TernGrad, DASO, backend, checkpoints.
    AsyncConfig    the asynchronous family (the MPI parameter server, ``trainers run --algo <async>``
                   and ``python -m trainers.asynchronous.ps``, and ``trainers simulate``): workers, the
                   master rule's extra hyperparameters, the data mode, the per-batch delays.
    PSOptions      the parameter server's own settings (no effect on the computation: replay order,
                   watchdog, polling, where to save the parameters, failure injection by worker or of the server).

Every default is written here once: the command-line parsers read them from these classes. Every
class validates itself on creation with trainers.validators and raises trainers.errors.TrainerError
(one line naming the field). ``to_dict()`` is the run log header's ``config`` object; its keys are
the field names (perfmodel.lab.validate and reproduce/ read model, batch, accumulate, threads, bucket_mb,
overlap, ranks_per_node, daso_b, daso_w, tern_lanes, tern_min_elems, tern_fp32_last and the TernGrad exchange:
``terngrad_exchange``, also written under its former key ``tern_exchange`` so that readers of either
key agree).

Units: batch = samples per rank (worker) per step (SyncConfig: per micro-batch, accumulate of them per
step); lr per step; epochs of the whole training set;
steps: SyncConfig, synchronous steps of all ranks; AsyncConfig, gradients applied by the server;
SyncConfig.eval_every in steps, AsyncConfig.eval_every in epochs (AsyncConfig.eval_every_steps in
gradients applied, which wins when > 0); bucket_mb in MiB; delay_mean and worker_timeout in seconds.

Importing this module imports neither torch nor mpi4py: the asynchronous algorithm names
(trainers.asynchronous.algos, built from the torch master rules), the model names (trainers.models)
and the dataset names (trainers.data) are read when an AsyncConfig is created.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfmodel.compression import LEVEL_LANES
from perfmodel.stragglers import CVB_KINDS
from trainers.algorithms import ALGORITHMS
from trainers.collectives import BACKENDS
from trainers.device import DEVICES
from trainers.errors import TrainerError
from trainers.exchanges import DEFAULT_EXCHANGE, EXCHANGES
from trainers.faults import FAIL_MODES, failing_rank
from trainers.sync.daso_schedule import DASO_RULES
from trainers.sync.optimizers import OPTIMIZERS
from trainers.sync.registry import SYNC_ALGORITHMS
from trainers.validators import FLOAT32_MAX, THREADS_MAX, check_choice, check_int, check_milestones, check_number

__all__ = ["SharedConfig", "SyncConfig", "RunConfig", "AsyncConfig", "PSOptions", "DATASET_CHOICES",
           "BACKEND_CHOICES", "DASO_DTYPES", "DATA_MODES", "DELAY_KINDS", "NO_MODEL", "TERNGRAD_EXCHANGE_DEFAULT",
           "LEGACY_KEYS", "SEED_MAX", "DELAY_MEAN_MAX_S", "PS_DEFAULTS", "ASYNC_OPTION_KEYS", "PS_OPTION_KEYS",
           "async_option_fields",
           "ps_options", "defaults"]

DATASET_CHOICES = ("mnist", "cifar10", "cifar100", "synthetic")
BACKEND_CHOICES = ("auto", *BACKENDS)
DASO_DTYPES = ("bf16", "fp32")
DATA_MODES = ("shard", "replicate")
DELAY_KINDS = (*CVB_KINDS, "none")  # the CVB model's named settings, or every batch delay_mean
NO_MODEL = "none"
TERNGRAD_EXCHANGE_DEFAULT = DEFAULT_EXCHANGE  # trainers.exchanges' default (the integer Allreduce of the levels)
LEGACY_KEYS = {"terngrad_exchange": "tern_exchange"}
"""Field -> the key it also goes under in ``to_dict()`` (the run logs written before the rename)."""
SEED_MAX = 2**64 - 1
"""The largest seed: torch.manual_seed's (an unsigned 64-bit integer). Every other use of the seed takes
any integer >= 0: numpy's SeedSequence (default_rng([seed, ...]): data order, synthetic data, batch times),
and the per-rank and per-gradient seeds derived from it reduce to 63 bits (trainers.sync.loop._derived_seed,
trainers.asynchronous.data_streams.step_seed)."""
DELAY_MEAN_MAX_S = 86_400.0
"""The longest mean batch time (``delay_mean``, seconds) an asynchronous run takes: a day."""
PS_DEFAULTS: dict[str, Any] = {"delays": "none", "delay_mean": 0.05}
"""AsyncConfig settings of the real parameter server where they differ from the simulator's: the
workers' batch times are their real compute times (no injected delay)."""


def _options(value: Any) -> tuple[tuple[str, str], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    try:
        opts = tuple((str(k), str(v)) for k, v in items)
    except (TypeError, ValueError):
        raise TrainerError(f"options must be key=value pairs, got {value!r}") from None
    if any(not k for k, _ in opts):
        raise TrainerError("options need a non-empty key (key=value)")
    return opts


@dataclass(frozen=True, kw_only=True)
class SharedConfig:
    """What every run has, with the same name in both families (see the module docstring for units).

    algo: the algorithm. model: a trainers.models name. dataset: mnist, cifar10, cifar100 or
    synthetic (synthetic_n training images shaped like the model's input); data_root: dataset folder
    (None: trainers.data's default). batch: per rank / worker. epochs or steps: the budget. lr,
    momentum, nesterov, weight_decay: the SGD hyperparameters (the master rule's for AsyncConfig).
    lr_warmup_epochs, lr_milestones, lr_gamma: trainers.schedules.LRSchedule. augment: random crops
    and flips (CIFAR). seed: everything. log: the JSONL run log (rank 0). threads: torch threads per
    rank. mpi_yield: ranks waiting in MPI yield the CPU (Open MPI ``mpi_yield_when_idle``, set before
    MPI starts unless the environment sets it) instead of busy-polling, which steals cores from CPU
    training when ranks share them. device: cpu, cuda or auto (trainers.device). allow_divergence:
    train on after a non-finite loss (default: stop, exit 3). fail_at_step / fail_rank: inject a failure (tests). options:
    ``--opt key=value`` settings for registered algorithms (and the parameter server's, PSOptions).
    """

    algo: str
    model: str
    dataset: str
    data_root: str | None = None
    synthetic_n: int = 1024
    batch: int = 64
    epochs: float | None = None
    steps: int | None = None
    lr: float
    momentum: float = 0.9
    nesterov: bool
    weight_decay: float = 0.0
    lr_warmup_epochs: float = 0.0
    lr_milestones: tuple[float, ...] = ()
    lr_gamma: float = 0.1
    augment: bool = False
    seed: int = 0
    log: str | None = None
    threads: int = 1
    mpi_yield: bool = True
    device: str
    allow_divergence: bool = False
    fail_at_step: int | None = None
    fail_rank: int | None = None
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise TrainerError(f"model must be a model name, got {self.model!r}")
        check_int("synthetic_n", self.synthetic_n, 1)
        check_int("batch", self.batch, 1)
        check_int("steps", self.steps, 1, none_ok=True)
        check_number("lr", self.lr, 0.0, FLOAT32_MAX, lo_open=True)
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        check_number("weight_decay", self.weight_decay, 0.0, FLOAT32_MAX)
        check_number("lr_warmup_epochs", self.lr_warmup_epochs, 0.0)
        object.__setattr__(self, "lr_milestones", check_milestones("lr_milestones", self.lr_milestones))
        check_number("lr_gamma", self.lr_gamma, 0.0, 1.0, lo_open=True)
        check_int("seed (--seed)", self.seed, 0, SEED_MAX)
        check_int("threads", self.threads, 1, THREADS_MAX)
        check_choice("device", self.device, DEVICES)
        check_int("fail_at_step", self.fail_at_step, 0, none_ok=True)
        check_int("fail_rank", self.fail_rank, 0, none_ok=True)
        object.__setattr__(self, "options", _options(self.options))

    def option(self, key: str, default: str | None = None) -> str | None:
        """The last ``--opt key=value`` given for key, else default."""
        found = default
        for k, v in self.options:
            if k == key:
                found = v
        return found

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (the run-log header's ``config``, checkpoints), plus each
        renamed field under its former key too (LEGACY_KEYS)."""
        d = dataclasses.asdict(self)
        d["lr_milestones"] = list(self.lr_milestones)
        d["options"] = dict(self.options)
        for name, old in LEGACY_KEYS.items():
            if name in d:
                d[old] = d[name]
        return d


@dataclass(frozen=True, kw_only=True)
class SyncConfig(SharedConfig):
    """The synchronous family (``trainers run``); validated on creation (TrainerError naming the field).

    epochs: an integer (default 1 epoch when neither epochs nor steps is given). eval_every and
    checkpoint_every in steps (0: evaluate at epoch ends only / checkpoint only at the end);
    eval_batch: batch of evaluation. progress: a progress bar on rank 0. optimizer: the local optimizer
    (trainers.sync.optimizers). bucket_mb: fusion bucket cap, MiB. TernGrad: tern_clip (c of s =
    c*std, None = max|g|), tern_min_elems (smaller tensors travel in fp32), tern_fp32_last (last
    layer in fp32), terngrad_exchange (a name of the trainers.exchanges registry: levels, ps or allgather), tern_lanes
    (lanes of the levels sum: auto, packed or int8). DASO: ranks_per_node forms the pretend nodes;
    daso_global_dtype is the wire type of the warm-up/cool-down global syncs (cycling-phase syncs
    are fp32, as in HeAT); daso_warmup_epochs / daso_cooldown_epochs default to HeAT's 4 and 4;
    daso_b / daso_w fix B and W in the cycling phase (no plateau cycling); daso_rule = "paper"
    (halve B and W on a plateau) or "code" (the authors' code). backend: what moves gradients
    (mpi, gloo, nccl or auto: nccl on GPUs, mpi on CPUs; trainers.collectives); overlap: reduce
    gradient buckets while backprop runs (trainers.grad_buckets); accumulate: micro-batches of ``batch``
    samples per rank per update (gradient accumulation: one exchange per update, DDP's ``no_sync`` on
    the others; ssgd and terngrad). defaults_from: (setting, where its
    value came from) for lr and momentum (trainers.model_defaults).
    """

    algo: str
    model: str = "lenet"
    dataset: str = "mnist"
    epochs: int | None = None
    lr: float = 0.01
    nesterov: bool = False
    device: str = "auto"
    optimizer: str = "sgd"
    eval_every: int = 0
    eval_batch: int = 1000
    checkpoint: str | None = None
    checkpoint_every: int = 0
    resume: bool = False
    progress: bool = True
    bucket_mb: float = 25.0
    tern_clip: float | None = 2.5
    tern_min_elems: int = 1
    tern_fp32_last: bool = True
    terngrad_exchange: str = TERNGRAD_EXCHANGE_DEFAULT
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
    backend: str = "auto"
    overlap: bool = True
    accumulate: int = 1
    defaults_from: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.algo not in SYNC_ALGORITHMS and self.algo not in ALGORITHMS:
            check_choice("algo", self.algo, (*SYNC_ALGORITHMS, *ALGORITHMS))
        check_choice("dataset", self.dataset, DATASET_CHOICES)
        check_int("epochs", self.epochs, 1, none_ok=True)
        if self.epochs is not None and self.steps is not None:
            raise TrainerError("give epochs or steps, not both")
        if self.nesterov and self.momentum == 0:
            raise TrainerError("nesterov needs momentum > 0")
        check_choice("optimizer", self.optimizer, tuple(OPTIMIZERS))
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
        check_choice("tern_lanes", self.tern_lanes, LEVEL_LANES)
        check_int("ranks_per_node", self.ranks_per_node, 1)
        check_choice("daso_global_dtype", self.daso_global_dtype, DASO_DTYPES)
        check_int("daso_warmup_epochs", self.daso_warmup_epochs, 0)
        check_int("daso_cooldown_epochs", self.daso_cooldown_epochs, 0)
        check_int("daso_max_b", self.daso_max_b, 1)
        check_choice("daso_rule", self.daso_rule, tuple(DASO_RULES))
        check_int("daso_b", self.daso_b, 1, none_ok=True)
        check_int("daso_w", self.daso_w, 0, none_ok=True)
        if (self.daso_b is None) != (self.daso_w is None):
            raise TrainerError("daso_b and daso_w go together (fixed B and W), give both or neither")
        check_int("daso_plateau_patience", self.daso_plateau_patience, 0)
        check_number("daso_plateau_threshold", self.daso_plateau_threshold, 0.0, 1.0, hi_open=True)
        check_choice("backend", self.backend, BACKEND_CHOICES)
        if not isinstance(self.overlap, bool):
            raise TrainerError(f"overlap must be a bool, got {self.overlap!r}")
        check_int("accumulate", self.accumulate, 1)

    @property
    def step_batch(self) -> int:
        """Samples per rank per update: accumulate micro-batches of batch samples."""
        return self.batch * self.accumulate

    @property
    def bucket_bytes(self) -> int:
        """Fusion bucket cap in bytes."""
        return max(int(self.bucket_mb * 2**20), 4)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["defaults_from"] = dict(self.defaults_from)
        return d


@dataclass(frozen=True, kw_only=True)
class AsyncConfig(SharedConfig):
    """The asynchronous family: one run of the MPI parameter server or of the simulator.

    algo: a name of trainers.asynchronous.algos.ALGOS. workers: N. model: a trainers.models name, or
    "none" for the staleness-only mode (no model, zero-cost zero gradients: only the arrival process
    and the master's bookkeeping run). lr, momentum, nesterov, weight_decay, n (softsync; modulate:
    alpha0/tau, else a constant rate), gap: the master rule's hyperparameters, passed where the rule
    has them; for gem/downpour/adaptive-staleness the worker computes Delta = -lr * (g + weight_decay
    * params) and momentum is GEM's mu. kappa, gem_code: GEM's proxy amplification and its setting
    (trainers.asynchronous.gem.GEM_CODES). epochs (a float) or steps: the budget (exactly one). With
    data="shard" every worker reads its 1/N shard of each epoch's permutation and the run ends after
    round(epochs * gradients_per_epoch) (or steps) gradients in total; with data="replicate" every
    worker reads the whole set in its own order and contributes round(epochs * batches_per_set)
    gradients. delays: CVB kind of the per-batch time model (perfmodel.stragglers.CVB.named) or
    "none" (every batch delay_mean); delay_mean: mu in seconds (PS_DEFAULTS: the parameter server's).
    eval_every: epochs between evaluations (0: only at the end); eval_every_steps: gradients applied
    between evaluations (wins when > 0; ``trainers run --eval-every``); eval_limit: test images used
    (None: all). log_every: gradients per step line (0: about 1000 lines per run).
    """

    algo: str = "asgd"
    workers: int = 4
    model: str = "gem-cnn"
    dataset: str = "synthetic"
    lr: float = 0.1
    nesterov: bool = True
    device: str = "cpu"
    n: int | None = None
    modulate: bool = True
    gap: str = "parameter"
    kappa: float = 1.0
    gem_code: str = "paper"
    data: str = "shard"
    delays: str = "homogeneous"
    delay_mean: float = 1.0
    eval_every: float = 1.0
    eval_every_steps: int = 0
    eval_limit: int | None = None
    log_every: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        from trainers.asynchronous.algos import ALGOS, GAP_MODES, GEM_CODES  # torch: the master rules

        if self.algo not in ALGOS:
            raise TrainerError(f"unknown algorithm {self.algo!r}; choose one of: {', '.join(ALGOS)}")
        check_int("workers", self.workers, 1)
        from trainers.models import MODELS

        if self.model != NO_MODEL and self.model not in MODELS:
            raise TrainerError(f"unknown model {self.model!r}; choose one of: {NO_MODEL}, {', '.join(MODELS)}")
        from trainers.data import DATASETS

        if self.dataset != "synthetic" and self.dataset not in DATASETS:
            raise TrainerError(f"unknown dataset {self.dataset!r}; choose one of: synthetic, {', '.join(DATASETS)}")
        if self.n is not None:
            check_int("n", self.n, 1)
            if self.n > self.workers:
                raise TrainerError(
                    f"n must be in 1..workers={self.workers} (softsync collects floor(workers/n) "
                    f"gradients per update), got n={self.n}"
                )
            if ALGOS[self.algo].master != "softsync":
                raise TrainerError(f"n is the softsync splitting parameter; algorithm {self.algo!r} does not take it")
        check_choice("gap", self.gap, GAP_MODES)
        check_number("kappa", self.kappa, 0.0, lo_open=True)
        check_choice("gem_code", self.gem_code, GEM_CODES)
        if (self.epochs is None) == (self.steps is None):
            raise TrainerError("give exactly one budget: epochs or steps")
        if self.epochs is not None:
            check_number("epochs", self.epochs, 0.0, lo_open=True)
            object.__setattr__(self, "epochs", float(self.epochs))
            if self.model == NO_MODEL:
                raise TrainerError("model 'none' (staleness only) has no data: give steps, not epochs")
        check_choice("data", self.data, DATA_MODES)
        check_choice("delays", self.delays, DELAY_KINDS)
        # the parameter server's workers sleep it out: past a day it is a unit slip (1e300 overflowed time.sleep)
        check_number("delay_mean", self.delay_mean, 0.0, DELAY_MEAN_MAX_S, lo_open=True)
        check_number("eval_every", self.eval_every, 0.0)
        check_int("eval_every_steps", self.eval_every_steps, 0)
        check_int("eval_limit", self.eval_limit, 1, none_ok=True)
        check_int("log_every", self.log_every, 0)

    @property
    def spec(self) -> Any:
        """The algorithm's trainers.asynchronous.algos.AlgoSpec (master rule, worker rule)."""
        from trainers.asynchronous.algos import ALGOS

        return ALGOS[self.algo]


@dataclass(frozen=True, kw_only=True)
class PSOptions:
    """The parameter server's own settings (the computation does not depend on them).

    replay_order: JSON file with {"order": [worker, ...]} (``trainers simulate --record-order``);
    worker_timeout: seconds a worker may stay silent while the server waits for it; poll_s: seconds
    of sleep between polls of a pending receive (idle ranks do not spin); save_params: .npy file for
    the final central parameters; fail_worker / fail_after / fail_mode: testing only, worker
    fail_worker fails before its fail_after-th gradient, by exiting at once ("exit", status 17),
    hanging ("hang") or raising ("raise"), or pushes that gradient with one infinite element and a
    finite loss ("inf-grad"); fail_server_at: testing only, the server raises before it applies
    gradient number fail_server_at (from 0; trainers.faults.server_hooks)."""

    replay_order: str | None = None
    worker_timeout: float = 300.0
    poll_s: float = 0.0005
    save_params: str | None = None
    fail_worker: int | None = None
    fail_after: int = 0
    fail_mode: str = "exit"
    fail_server_at: int | None = None

    def __post_init__(self) -> None:
        check_number("worker_timeout", self.worker_timeout, 0.0, lo_open=True)
        check_number("poll_s", self.poll_s, 0.0, 1.0, hi_open=True)
        check_choice("fail_mode", self.fail_mode, FAIL_MODES)
        check_int("fail_worker", self.fail_worker, 0, none_ok=True)
        check_int("fail_after", self.fail_after, 0)
        check_int("fail_server_at", self.fail_server_at, 0, none_ok=True)


ASYNC_OPTION_KEYS: dict[str, type] = {
    "n": int, "gap": str, "kappa": float, "gem_code": str, "data": str, "delays": str, "delay_mean": float,
    "eval_limit": int, "log_every": int,
}
"""AsyncConfig fields that ``trainers run --algo <async> --opt key=value`` sets (its other fields have flags)."""

PS_OPTION_KEYS: dict[str, tuple[str, type]] = {
    "replay_order": ("replay_order", str), "worker_timeout": ("worker_timeout", float), "poll": ("poll_s", float),
    "save_params": ("save_params", str),
}
"""``--opt key=value`` settings of the parameter server -> (PSOptions field, type); they stay in
AsyncConfig.options and :func:`ps_options` reads them."""


def _typed(key: str, text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise TrainerError(f"--opt {key}={text!r}: expected {kind.__name__}") from None


def async_option_fields(algo: str, options: Any) -> tuple[dict[str, Any], tuple[tuple[str, str], ...]]:
    """Split ``--opt key=value`` pairs of an asynchronous run into AsyncConfig field values
    (ASYNC_OPTION_KEYS, typed; the last one given wins) and the parameter server's (PS_OPTION_KEYS, kept as
    options). TrainerError for an unknown key or a value of the wrong type."""
    values: dict[str, Any] = {}
    server: list[tuple[str, str]] = []
    for key, text in _options(options):
        if key in ASYNC_OPTION_KEYS:
            values[key] = _typed(key, text, ASYNC_OPTION_KEYS[key])
        elif key in PS_OPTION_KEYS:
            _typed(key, text, PS_OPTION_KEYS[key][1])
            server.append((key, text))
        else:
            raise TrainerError(f"unknown --opt {key!r} for {algo}; allowed: "
                               f"{', '.join([*ASYNC_OPTION_KEYS, *PS_OPTION_KEYS])}")
    return values, tuple(server)


def ps_options(cfg: AsyncConfig) -> PSOptions:
    """The parameter server's settings of a ``trainers run`` configuration: its options (PS_OPTION_KEYS)
    and the test-only failure of fail_at_step on the rank of the synchronous trainers' rule
    (trainers.faults.failing_rank: fail_rank, default the last): rank 0, the server, before it applies
    gradient fail_at_step; rank r >= 1, worker r - 1, before its fail_at_step-th gradient."""
    values: dict[str, Any] = {}
    for key, text in cfg.options:
        if key not in PS_OPTION_KEYS:
            raise TrainerError(f"unknown --opt {key!r} for the parameter server; allowed: {', '.join(PS_OPTION_KEYS)}")
        name, kind = PS_OPTION_KEYS[key]
        values[name] = _typed(key, text, kind)
    if cfg.fail_rank is not None and not 0 <= cfg.fail_rank <= cfg.workers:
        raise TrainerError(f"fail_rank must be a rank in 0..{cfg.workers} (0 the server, 1..{cfg.workers} the "
                           f"workers), got {cfg.fail_rank}")
    rank = failing_rank(cfg, cfg.workers + 1)
    if rank == 0:
        values["fail_server_at"] = cfg.fail_at_step
    elif rank is not None:
        values.update(fail_worker=rank - 1, fail_after=cfg.fail_at_step)
    return PSOptions(**values)


RunConfig = SyncConfig
"""The name ``trainers run``'s registered algorithms (trainers.run.ALGORITHMS) know their config by."""


def defaults(cls: type) -> dict[str, Any]:
    """Field name -> default of a config class (fields without one are left out): what the parsers show."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
