"""The `trainers` command: RunConfig validation, the algorithm and command registries (lazy), the models
and datasets subcommands, and bad input -> one line `trainers: error: ...` with exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from trainers.model_defaults import defaults_for

from trainers import run as tr
from trainers.errors import TrainerError, UsageError
from trainers.run import ALGORITHMS, COMMANDS, RunConfig, main

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def _error_line(capsys: pytest.CaptureFixture, argv: list[str], prog: str = "trainers") -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), err
    return lines[0]


# ------------------------------------------------------------------------------------ config


def test_run_config_defaults_and_validation() -> None:
    cfg = RunConfig(algo="ssgd")
    assert cfg.batch == 64 and cfg.epochs is None and cfg.steps is None and cfg.threads == 1
    assert cfg.bucket_bytes == 25 * 2**20
    assert RunConfig(algo="daso", bucket_mb=0.5).bucket_bytes == 2**19
    for kwargs, field in [({"algo": "nope"}, "algo"), ({"batch": 0}, "batch"), ({"momentum": 1.0}, "momentum"),
                          ({"lr": 0.0}, "lr"), ({"dataset": "imagenet"}, "dataset"), ({"steps": 3, "epochs": 1}, "epochs"),
                          ({"daso_b": 2}, "daso_b"), ({"resume": True}, "resume"), ({"checkpoint_every": 5}, "checkpoint_every"),
                          ({"daso_global_dtype": "fp16"}, "daso_global_dtype"), ({"daso_rule": "x"}, "daso_rule"),
                          ({"tern_clip": -1.0}, "tern_clip"), ({"lr_milestones": (5, 3)}, "lr_milestones"),
                          ({"threads": 0}, "threads"), ({"nesterov": True, "momentum": 0.0}, "nesterov")]:
        with pytest.raises(ValueError, match=field):
            RunConfig(**{"algo": "ssgd", **kwargs})


def test_options_and_to_dict() -> None:
    cfg = RunConfig(algo="ssgd", options=(("n", "4"), ("rule", "ga"), ("n", "8")), lr_milestones=(80, 120))
    assert cfg.option("n") == "8" and cfg.option("rule") == "ga" and cfg.option("missing", "d") == "d"
    d = cfg.to_dict()
    assert d["options"] == {"n": "8", "rule": "ga"} and d["lr_milestones"] == [80.0, 120.0]


def test_cli_flags_map_to_config() -> None:
    parser = tr.build_run_parser(tr.make_parser("t"))
    args = parser.parse_args(["--algo", "daso", "--steps", "7", "--ranks-per-node", "2", "--daso-b", "1",
                              "--daso-w", "0", "--daso-global-dtype", "fp32", "--lr-milestones", "2,4", "--no-progress",
                              "--fail-at-step", "3"])
    cfg = tr.config_from_args(args)
    assert (cfg.algo, cfg.steps, cfg.ranks_per_node, cfg.daso_b, cfg.daso_w) == ("daso", 7, 2, 1, 0)
    assert cfg.daso_global_dtype == "fp32"
    # the TernGrad flags go with terngrad (another algorithm refuses them: tests/test_trainer_flag_edges.py)
    tern = tr.config_from_args(parser.parse_args(["--algo", "terngrad", "--tern-clip", "none", "--tern-ternarize-last"]))
    assert tern.tern_clip is None and tern.tern_fp32_last is False
    assert cfg.lr_milestones == (2.0, 4.0) and cfg.options == () and cfg.progress is False
    assert cfg.fail_at_step == 3
    # every RunConfig field has a flag (but defaults_from: where config_from_args took lr and momentum from)
    names = {f.name for f in __import__("dataclasses").fields(RunConfig)} - {"defaults_from"}
    assert dict(cfg.defaults_from)["lr"] in ("the command line", f"{cfg.model}: " + defaults_for(cfg.model).source)
    assert names <= set(vars(args)), names - set(vars(args))


def test_the_defaults_real_runs_use_are_the_papers() -> None:
    """Pinned against their sources, on both paths a run takes (the command line with no flag, and a
    RunConfig built in code), so that a changed default cannot pass unnoticed by tests that build
    their reference with the same default. TernGrad: clip c = 2.5 (Wen et al. 2017, sec. 3.3), for
    the codec (trainers.compress) as for the runs. DASO: 4 warm-up and 4 cool-down epochs (HeAT's
    DASO defaults; the paper prints none), bf16 on the wire in those phases (HeAT's downcast_type)."""
    from trainers.compress import TernGradCodec

    parsed = tr.config_from_args(tr.build_run_parser(tr.make_parser("t")).parse_args(["--algo", "terngrad"]))
    for cfg in (parsed, RunConfig(algo="terngrad")):
        assert cfg.tern_clip == 2.5
        assert (cfg.daso_warmup_epochs, cfg.daso_cooldown_epochs, cfg.daso_global_dtype) == (4, 4, "bf16")
        assert cfg.allow_divergence is False
    assert TernGradCodec().clip == 2.5


# ------------------------------------------------------------------------------------ registries


def test_algorithm_registry_is_lazy_and_resolves() -> None:
    code = ("import sys, trainers.run as r; r.build_run_parser(r.make_parser('x')); "
            "print('torch' in sys.modules, 'trainers.sync.loop' in sys.modules, 'mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_env(), capture_output=True, text=True,
                         timeout=60).stdout.splitlines()
    assert out[0] == "False False False"  # nothing heavy is imported until an algorithm runs
    from trainers.asynchronous import ps
    from trainers.asynchronous.algos import ALGOS
    from trainers.sync import SYNC_ALGORITHMS, runner

    known = tr.algorithms()
    assert set(known) == set(SYNC_ALGORITHMS) | set(ALGOS)  # the two families' own registries
    for name in SYNC_ALGORITHMS:
        assert tr.resolve_algorithm(name) is runner.run
        assert runner.algorithm(name).name == name  # the registered class says the same name
    for name in ALGOS:
        assert tr.resolve_algorithm(name) is ps.run_from_config
    with pytest.raises(UsageError, match="unknown algorithm"):
        tr.resolve_algorithm("nope")


class _FakeComm:
    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1


def test_a_registered_algorithm_is_dispatched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    module = types.ModuleType("fake_async_algo")

    def run_fake(cfg: RunConfig, comm: object) -> None:
        import torch

        calls.append((cfg.algo, cfg.option("rule"), comm, torch.get_num_threads()))
        if cfg.option("rule") == "bad":
            raise UsageError("rule bad is not a rule")

    module.run_fake = run_fake
    monkeypatch.setitem(sys.modules, "fake_async_algo", module)
    monkeypatch.setitem(ALGORITHMS, "fake", ("fake_async_algo", "run_fake"))
    comm = _FakeComm()
    import torch

    threads = torch.get_num_threads()
    try:
        args = tr.build_run_parser(tr.make_parser("t")).parse_args(["--algo", "fake", "--opt", "rule=ga"])
        assert tr.config_from_args(args).options == (("rule", "ga"),)  # --opt is a registered algorithm's
        tr.dispatch(RunConfig(algo="fake", threads=1, options=(("rule", "ga"),)), comm)
        assert calls == [("fake", "ga", comm, 1)]
        with pytest.raises(UsageError, match="rule bad"):  # re-raised, not turned into an MPI abort
            tr.dispatch(RunConfig(algo="fake", options=(("rule", "bad"),)), comm)
    finally:
        torch.set_num_threads(threads)


def test_a_registered_command_gets_its_arguments(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture) -> None:
    module = types.ModuleType("fake_simulate")
    seen = []

    def fake_main(argv: list[str]) -> int:
        parser = tr.make_parser("trainers simulate")
        parser.add_argument("--workers", type=int, required=True)
        args = parser.parse_args(argv)
        seen.append(args.workers)
        return 0

    module.main = fake_main
    monkeypatch.setitem(sys.modules, "fake_simulate", module)
    monkeypatch.setitem(COMMANDS, "simulate", ("fake_simulate", "main", "simulate asynchronous workers"))
    assert main(["simulate", "--workers", "8"]) == 0 and seen == [8]
    line = _error_line(capsys, ["simulate", "--workers", "x"])
    assert "--workers" in line
    assert main(["--help"]) == 0
    assert "simulate" in capsys.readouterr().out


# ------------------------------------------------------------------------------------ subcommands


def test_models_lists_parameter_counts(capsys: pytest.CaptureFixture) -> None:
    from trainers.models import MODELS

    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert set(rows) == set(MODELS)
    assert rows["lenet"][1] == "431,080" and rows["resnet20"][1] == "269,722"
    assert rows["resnet50"][1] == "25,557,032" and rows["resnet20"][2] == "3x32x32"


def test_datasets_reports_and_fails_on_missing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["datasets", "--data-root", str(tmp_path)]) == 0  # every dataset reported: missing is no error
    out = capsys.readouterr().out
    assert out.count("MISSING") == 6  # mnist, cifar10, cifar100 x train, test
    assert out.splitlines()[0] == f"root: {tmp_path} (--data-root)"
    assert main(["datasets", "mnist", "--data-root", str(tmp_path)]) == 2  # asked for by name
    captured = capsys.readouterr()
    assert captured.out.count("MISSING") == 2 and "not found" in captured.out
    assert captured.err == f"trainers: error: 0 corrupt and 2 missing of 2 dataset splits under {tmp_path}\n"
    # the root folder itself missing: status 2 even without names
    assert main(["datasets", "--data-root", str(tmp_path / "nowhere")]) == 2
    captured = capsys.readouterr()
    assert "NOT A FOLDER" in captured.out.splitlines()[0]
    assert captured.err == f"trainers: error: data root {tmp_path / 'nowhere'} is not a folder\n"
    _error_line(capsys, ["datasets", "svhn"])


@pytest.mark.skipif(not (SHARED / "mnist").is_dir(), reason="shared MNIST not present")
def test_datasets_shows_corrupt_files_as_corrupt(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import shutil

    for f in (SHARED / "mnist").glob("*.gz"):
        shutil.copy(f, tmp_path / f.name)
    damaged = tmp_path / "t10k-labels-idx1-ubyte.gz"
    damaged.write_bytes(damaged.read_bytes()[:100])
    for argv in (["datasets"], ["datasets", "mnist"]):  # corrupt is an error with or without names
        assert main([*argv, "--data-root", str(tmp_path)]) == 2
        out = capsys.readouterr().out
        assert "mnist     train ok" in out
        test_line = next(line for line in out.splitlines() if line.startswith("mnist     test"))
        assert test_line.startswith("mnist     test  CORRUPT  ") and str(damaged) in test_line


def test_datasets_root_from_a_relative_env_is_made_absolute_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("DSGD_DATA_ROOT", "../shared/datasets")
    assert main(["datasets"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"root: {tmp_path / 'shared' / 'datasets'} ($DSGD_DATA_ROOT)"


@pytest.mark.skipif(not (SHARED / "mnist").is_dir(), reason="shared MNIST not present")
def test_datasets_verifies_the_shared_files(capsys: pytest.CaptureFixture) -> None:
    assert main(["datasets", "mnist", "cifar10", "--data-root", str(SHARED)]) == 0
    out = capsys.readouterr().out
    assert "mnist     train ok       n=60000 checksum=official" in out
    assert "mnist     test  ok       n=10000 checksum=official" in out
    assert "cifar10   train ok       n=4000 (SUBSET of 50000) checksum=known-subset" in out


@pytest.mark.parametrize("argv, fragment", [
    ([], "required"),
    (["run"], "--algo"),
    (["run", "--algo", "nope"], "algo must be one of"),
    (["run", "--algo", "ssgd", "--batch", "0"], "batch"),
    (["run", "--algo", "ssgd", "--batch", "x"], "integer"),
    (["run", "--algo", "ssgd", "--steps", "3", "--epochs", "1"], "not allowed with"),
    (["run", "--algo", "ssgd", "--tern-clip", "big"], "none"),
    (["run", "--algo", "ssgd", "--opt", "novalue"], "key=value"),
    (["run", "--algo", "ssgd", "--resume"], "resume"),
    (["run", "--algo", "daso", "--daso-b", "2"], "daso_b"),
    (["run", "--algo", "ssgd", "--opt", "foo=bar"], "unknown --opt 'foo' for ssgd; it takes none"),
    (["run", "--algo", "terngrad", "--opt", "foo=bar"], "unknown --opt 'foo' for terngrad; it takes none"),
    (["run", "--algo", "daso", "--opt", "k=v"], "unknown --opt 'k' for daso; it takes none"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_status_2(argv: list[str], fragment: str, capsys: pytest.CaptureFixture) -> None:
    assert fragment in _error_line(capsys, argv)


QUICK_RUN = ["run", "--algo", "ssgd", "--model", "lenet", "--dataset", "synthetic", "--steps", "2", "--no-progress",
             "--synthetic-n", "64"]
QUICK_SIMULATE = ["simulate", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "64", "--steps", "4",
                  "--batch", "8", "--workers", "4"]


@pytest.mark.parametrize("argv, option, prog", [
    ([*QUICK_RUN, "--log", "{dir}"], "--log", "trainers"),
    ([*QUICK_RUN, "--checkpoint", "{dir}", "--checkpoint-every", "1"], "--checkpoint", "trainers"),
    ([*QUICK_RUN, "--checkpoint", "{dir}", "--resume"], "--checkpoint", "trainers"),
    ([*QUICK_SIMULATE, "--record-order", "{dir}"], "--record-order", "trainers simulate"),
    ([*QUICK_SIMULATE, "--log", "{dir}"], "--log", "trainers simulate"),
])
def test_an_output_path_that_is_a_folder_is_refused_before_training(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, argv: list[str],
        option: str, prog: str) -> None:
    """The files a run writes are checked up front: a folder is one line, status 2, before any step."""
    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("trained before checking its output files")

    monkeypatch.setattr(tr, "dispatch", no_training)
    from trainers.asynchronous import simulate
    monkeypatch.setattr(simulate, "simulate", no_training)
    line = _error_line(capsys, [a.replace("{dir}", str(tmp_path)) for a in argv], prog)
    assert f"{option} {tmp_path} is a folder; give a file path" in line


def test_an_output_path_under_a_file_is_refused_before_training(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "dispatch", lambda *a: pytest.fail("trained before checking its output files"))
    (tmp_path / "file").write_text("x")
    line = _error_line(capsys, [*QUICK_RUN, "--checkpoint", str(tmp_path / "file" / "sub" / "ck.pt")])
    assert f"{tmp_path / 'file'} is not a folder" in line


def test_the_parameter_servers_save_params_is_checked_before_training(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "dispatch", lambda *a: pytest.fail("trained before checking its output files"))
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    line = _error_line(capsys, ["run", "--algo", "ga", "--model", "gem-cnn", "--dataset", "synthetic",
                                "--opt", f"save_params={tmp_path}"])
    assert f"--opt save_params {tmp_path} is a folder" in line


@pytest.mark.slow  # two interpreter start-ups that import torch: ~14 s on a busy 2-core machine
def test_bad_input_found_at_start_of_a_run(tmp_path: Path) -> None:
    """Errors found while setting up (unknown model, missing dataset) are one line and status 2 too."""
    for extra, fragment in ((["--model", "nosuch", "--dataset", "synthetic"], "unknown model 'nosuch'"),
                            (["--dataset", "mnist", "--data-root", str(tmp_path)], "not found")):
        proc = subprocess.run([sys.executable, "-m", "trainers.run", "run", "--algo", "ssgd", "--steps", "1", *extra],
                              cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("trainers: error: ") and fragment in lines[0], proc.stderr


def test_cli_error_type() -> None:
    parser = tr.make_parser("x")
    with pytest.raises(TrainerError):
        parser.parse_args(["--nope"])
