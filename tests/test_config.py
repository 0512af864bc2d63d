"""trainers.config: one configuration per family on one shared base -- the same names for the same things,
validation on creation, every default read from one place by the parsers, the run-log keys the readers
use, and the import graph of the configuration and the loops (no circle, no CLI module below a loop)."""

from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainers.config import (LEGACY_KEYS, PS_DEFAULTS, AsyncConfig, PSOptions, SharedConfig, SyncConfig, defaults,
                             ps_options)
from trainers.errors import TrainerError

REPO = Path(__file__).resolve().parents[1]


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


# ------------------------------------------------------------------------------------------ fields


def test_both_families_share_the_base_fields_under_the_same_names() -> None:
    shared = _names(SharedConfig)
    assert shared <= _names(SyncConfig) and shared <= _names(AsyncConfig)
    assert {"lr_warmup_epochs", "lr_milestones", "lr_gamma", "log", "threads", "device"} <= shared
    # the names AsyncConfig had before (warmup_epochs, milestones, lr_decay) are gone: one name each
    assert not {"warmup_epochs", "milestones", "lr_decay"} & _names(AsyncConfig)
    # the family-only fields do not leak into the other family
    assert "terngrad_exchange" in _names(SyncConfig) and "terngrad_exchange" not in _names(AsyncConfig)
    assert "workers" in _names(AsyncConfig) and "workers" not in _names(SyncConfig)


@pytest.mark.parametrize("cls,base", [(SyncConfig, {"algo": "ssgd"}), (AsyncConfig, {"algo": "ga", "steps": 4})])
@pytest.mark.parametrize("field,value", [("batch", 0), ("lr", 0.0), ("momentum", 1.0), ("lr_gamma", 0.0),
                                         ("lr_milestones", (5, 3)), ("threads", 0), ("device", "tpu"),
                                         ("seed", -1), ("fail_rank", -1), ("options", (("", "x"),))])
def test_a_shared_field_is_checked_alike_in_both_families(cls, base, field, value) -> None:
    with pytest.raises(TrainerError, match=field if field != "options" else "non-empty key"):
        cls(**base, **{field: value})


def test_each_family_checks_its_own_fields() -> None:
    for kwargs, needle in [({"algo": "ga"}, "algo"), ({"terngrad_exchange": "carrier-pigeon"}, "terngrad_exchange"),
                           ({"epochs": 1.5}, "epochs"), ({"daso_b": 2}, "daso_b")]:
        with pytest.raises(TrainerError, match=needle):
            SyncConfig(**{"algo": "ssgd", **kwargs})
    for kwargs, needle in [({"algo": "ssgd"}, "unknown algorithm"), ({"workers": 0}, "workers"),
                           ({"n": 2}, "does not take it"), ({"epochs": 1.0}, "exactly one budget"),
                           ({"eval_every_steps": -1}, "eval_every_steps"), ({"delays": "x"}, "delays")]:
        with pytest.raises(TrainerError, match=needle):
            AsyncConfig(**{"algo": "ga", "steps": 4, **kwargs})
    with pytest.raises(TrainerError, match="poll_s"):
        PSOptions(poll_s=1.0)


def test_configs_are_frozen_and_an_async_config_round_trips_through_its_dict() -> None:
    cfg = AsyncConfig(algo="softsync", n=2, workers=4, steps=10, lr_milestones=[1, 2], options={"poll": "0.1"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0  # type: ignore[misc]
    assert cfg.lr_milestones == (1.0, 2.0) and cfg.options == (("poll", "0.1"),)
    assert AsyncConfig(**cfg.to_dict()) == cfg  # what trainers simulate --record-order writes, read back
    assert AsyncConfig(algo="ga", epochs=2).epochs == 2.0 and isinstance(AsyncConfig(algo="ga", epochs=2).epochs, float)


# ------------------------------------------------------------------------------------------ defaults


def test_the_run_parser_takes_every_default_from_the_sync_config() -> None:
    """Two paths to the same run: ``trainers run --algo X`` with nothing else, and SyncConfig built in code
    with the model's lr and momentum (the only defaults the parser resolves itself)."""
    from trainers.model_defaults import defaults_for
    from trainers.run import build_run_parser, config_from_args, make_parser

    for algo in ("ssgd", "terngrad", "daso"):
        parsed = config_from_args(build_run_parser(make_parser("t")).parse_args(["--algo", algo]))
        d = defaults_for(SyncConfig.model)
        built = SyncConfig(algo=algo, lr=d.lr, momentum=d.momentum)
        assert dataclasses.replace(parsed, defaults_from=()) == built
    assert SyncConfig(algo="terngrad").terngrad_exchange == "levels" == defaults(SyncConfig)["terngrad_exchange"]


def test_the_async_parsers_take_every_default_from_the_async_config() -> None:
    from trainers.asynchronous.cli_args import StrictParser, add_async_arguments, config_from_args
    from trainers.asynchronous.ps import add_ps_arguments
    from trainers.model_defaults import defaults_for

    d = defaults_for(AsyncConfig.model)
    sim = StrictParser(prog="t")
    add_async_arguments(sim)
    assert config_from_args(sim.parse_args(["--steps", "5"])) == AsyncConfig(steps=5, lr=d.lr, momentum=d.momentum)
    ps = StrictParser(prog="t")
    add_ps_arguments(ps)
    args = ps.parse_args(["--steps", "5", "--workers", "4"])
    assert config_from_args(args) == AsyncConfig(steps=5, lr=d.lr, momentum=d.momentum, **PS_DEFAULTS)
    assert (args.worker_timeout, args.poll) == (PSOptions().worker_timeout, PSOptions().poll_s)
    # the former schedule flags still parse, into the shared names
    old = sim.parse_args(["--steps", "5", "--warmup-epochs", "0.5", "--milestones", "1,2", "--lr-decay", "0.2"])
    assert (old.lr_warmup_epochs, old.lr_milestones, old.lr_gamma) == (0.5, (1.0, 2.0), 0.2)


def test_run_arguments_of_an_async_algorithm_match_the_parameter_servers_own_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``trainers run --algo ga`` under 4 ranks and ``python -m trainers.asynchronous.ps --algo ga`` with
    the same settings build the same AsyncConfig, but for what only trainers run has (its device default,
    evaluations in gradients)."""
    from trainers.asynchronous.cli_args import StrictParser, config_from_args as ps_config
    from trainers.asynchronous.ps import add_ps_arguments
    from trainers.run import build_run_parser, config_from_args, make_parser

    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    common = ["--algo", "ga", "--model", "gem-cnn", "--dataset", "synthetic", "--batch", "8", "--steps", "30",
              "--lr", "0.02", "--seed", "3", "--device", "cpu", "--eval-every", "0"]
    run_args = [*common[:-2], "--nesterov", "--opt", "gap=layer"]  # the run command's nesterov default is off
    run_cfg = config_from_args(build_run_parser(make_parser("t")).parse_args(run_args))
    parser = StrictParser(prog="t")
    add_ps_arguments(parser)
    ps_args = parser.parse_args([*common, "--workers", "3", "--gap", "layer", "--momentum", "0.9"])
    ps_cfg = ps_config(ps_args)
    assert dataclasses.replace(run_cfg, eval_every=0.0) == ps_cfg  # run: evaluate once an epoch unless asked


# ------------------------------------------------------------------------------------------ run log


def test_the_log_config_keeps_the_keys_its_readers_use() -> None:
    read = ("algo", "model", "batch", "threads", "bucket_mb", "overlap", "tern_lanes", "tern_exchange",
            "tern_min_elems", "tern_fp32_last", "daso_b", "daso_w", "ranks_per_node")  # perfmodel.lab.validate
    d = SyncConfig(algo="terngrad", terngrad_exchange="ps", threads=2).to_dict()
    assert set(read) <= set(d)
    assert d["tern_exchange"] == d["terngrad_exchange"] == "ps" and d["threads"] == 2
    assert LEGACY_KEYS == {"terngrad_exchange": "tern_exchange"}
    a = AsyncConfig(algo="ga", steps=3, batch=8).to_dict()
    assert (a["model"], a["batch"], a["threads"]) == ("gem-cnn", 8, 1) and "tern_exchange" not in a


def test_ps_options_read_the_server_settings_and_the_failure_injection() -> None:
    cfg = AsyncConfig(algo="ga", workers=3, steps=4, options=(("worker_timeout", "9"), ("save_params", "p.npy")),
                      fail_rank=3, fail_at_step=2)
    assert ps_options(cfg) == PSOptions(worker_timeout=9.0, save_params="p.npy", fail_worker=2, fail_after=2)
    with pytest.raises(TrainerError, match=r"fail_rank must be a rank in 0\.\.3 \(0 the server"):
        ps_options(dataclasses.replace(cfg, fail_rank=4))
    with pytest.raises(TrainerError, match="unknown --opt 'n'"):
        ps_options(dataclasses.replace(cfg, options=(("n", "2"),)))


def test_evaluations_every_n_gradients_equal_the_epoch_fraction_they_replace() -> None:
    from trainers.asynchronous.config import make_plan

    train = [0] * 384  # make_plan reads the length only: 3 workers x ceil(128 / 16) = 24 gradients an epoch
    steps = AsyncConfig(algo="ga", workers=3, batch=16, steps=100, eval_every_steps=7)
    epochs = AsyncConfig(algo="ga", workers=3, batch=16, steps=100, eval_every=7 / 24)
    assert make_plan(steps, train).eval_points == make_plan(epochs, train).eval_points
    assert make_plan(steps, train).eval_points[:3] == (7, 14, 21) and make_plan(steps, train).eval_points[-1] == 100


# ------------------------------------------------------------------------------------------ imports


def _imports(path: Path, package: str) -> set[str]:
    """Every trainers.* module a file imports, at module level or inside functions (absolute names)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m.split(".")[0] == "trainers"}


def _graph() -> dict[str, set[str]]:
    modules = {}
    for path in (REPO / "trainers").rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_pkg else parts)
        modules[name] = (path, name if is_pkg else name.rsplit(".", 1)[0])
    graph = {}
    for name, (path, package) in modules.items():
        graph[name] = {m for m in _imports(path, package) if m in modules and m != name}
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for m in graph.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def test_no_import_circle_through_the_configuration_the_cli_or_the_loops() -> None:
    graph = _graph()
    for name in ("trainers.run", "trainers.config", "trainers.algorithms", "trainers.sync", "trainers.sync.loop",
                 "trainers.sync.runner", "trainers.asynchronous.ps", "trainers.asynchronous.ps_server",
                 "trainers.asynchronous.ps_worker", "trainers.asynchronous.config", "trainers.asynchronous.cli_args"):
        assert name not in _reach(graph, name), f"{name} imports itself through {sorted(_reach(graph, name))}"
    cli = {"trainers.run", "trainers.asynchronous.cli_args"}
    for loop in ("trainers.sync.loop", "trainers.sync.runner", "trainers.asynchronous.ps_server",
                 "trainers.asynchronous.ps_worker"):  # (trainers.asynchronous.simulate is a command itself)
        assert not cli & _reach(graph, loop) - {loop}, f"{loop} reaches a command-line module"


def test_the_configuration_imports_neither_torch_nor_mpi4py() -> None:
    code = ("import sys, trainers.config as c; c.SyncConfig(algo='ssgd'); "
            "print('torch' in sys.modules, 'mpi4py' in sys.modules, 'trainers.sync.loop' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["False", "False", "False"], out.stderr
