"""Edges of the trainers' flags: the largest seed every path takes (and the first one refused, in one
line); a flag of another algorithm refused instead of ignored (``trainers run``, ``trainers simulate``, the
parameter server's command); ``--fail-at-step`` on the parameter server fails the last rank by default, as
the synchronous trainers do, or the server itself with ``--fail-rank 0``; and a dying rank (an SSGD rank,
the parameter server) ends the whole MPI job with a non-zero status instead of hanging it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers import run as tr
from trainers.asynchronous.data_streams import step_seed
from trainers.config import SEED_MAX, AsyncConfig, PSOptions, SyncConfig, ps_options
from trainers.errors import TrainerError
from trainers.faults import failing_rank, server_hooks
from trainers.log import read_run_log
from trainers.run import main
from trainers.sync.loop import _derived_seed
from trainers.validators import FLOAT32_MAX

from tests.mpi_job import mpi_env, run_job

REPO = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec")
mpi_only = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")

QUICK = ["--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "64", "--batch", "8", "--steps", "2",
         "--no-progress"]
SIMULATE = ["simulate", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "64", "--batch", "8",
            "--steps", "4", "--workers", "2"]


def _error_line(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """The one line ``... error: ...`` of a command that exits 2."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and " error: " in lines[0], lines
    return lines[0]


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """`trainers run` must refuse before it trains: a dispatch fails the test."""
    monkeypatch.setattr(tr, "dispatch", lambda *a, **k: pytest.fail("trained despite the refused input"))


@pytest.fixture
def three_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher's environment of rank 0 of 3 (the parameter server's config reads the world size)."""
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")


def _mpirun(n: int, args: list[str], timeout: float = 90.0):
    """mpiexec -n n python -m trainers run ARGS (tests/mpi_job.py: never leaves ranks behind)."""
    return run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", str(n), sys.executable, "-m",
                    "trainers.run", "run", *args, "--device", "cpu"], timeout)


# ------------------------------------------------------------------------------------------ the seed


def test_the_largest_seed_is_torchs_and_every_derived_seed_takes_it() -> None:
    torch.Generator().manual_seed(SEED_MAX)  # torch.manual_seed's bound, without touching the global generator
    with pytest.raises(ValueError, match="Overflow"):
        torch.Generator().manual_seed(SEED_MAX + 1)
    assert SyncConfig(algo="ssgd", seed=SEED_MAX).seed == AsyncConfig(steps=1, seed=SEED_MAX).seed == 2**64 - 1
    # the seeds derived per rank and per gradient fit torch; numpy's generators take any seed
    for rank in (0, 1, 1023):
        for part in (1, 2, 3):
            assert 0 <= _derived_seed(SEED_MAX, rank, part) < 2**63
        assert 0 <= step_seed(SEED_MAX, rank, 10**6) < 2**63
    np.random.default_rng([SEED_MAX, 0xDE1A]).random()


@pytest.mark.parametrize("argv", [["run", "--algo", "ssgd", *QUICK], [*SIMULATE]])
def test_the_first_seed_past_the_largest_is_one_line_and_status_2(argv: list[str], capsys: pytest.CaptureFixture,
                                                                  no_training: None) -> None:
    line = _error_line(capsys, [*argv, "--seed", str(SEED_MAX + 1)])
    assert "--seed" in line and f"0..{SEED_MAX}" in line and str(SEED_MAX + 1) in line


def test_the_parameter_servers_run_refuses_it_alike(capsys: pytest.CaptureFixture, no_training: None,
                                                    three_ranks: None) -> None:
    line = _error_line(capsys, ["run", "--algo", "asgd", *QUICK, "--seed", str(SEED_MAX + 1)])
    assert f"seed (--seed) must be an integer in 0..{SEED_MAX}" in line


@pytest.mark.parametrize("argv", [["run", "--algo", "ssgd", *QUICK], [*SIMULATE]])
@pytest.mark.parametrize("flag", ["--lr", "--weight-decay"])
def test_a_step_size_beyond_float32_is_one_line_and_status_2(argv: list[str], flag: str,
                                                             capsys: pytest.CaptureFixture, no_training: None) -> None:
    """1e300 is finite in Python and no float32: torch refused it with a RuntimeError inside the step."""
    line = _error_line(capsys, [*argv, flag, "1e300"])
    assert flag.lstrip("-").replace("-", "_") in line and "3.4028234663852886e+38" in line and "1e+300" in line
    assert FLOAT32_MAX == float(torch.finfo(torch.float32).max)


def test_a_simulation_with_the_largest_seed_runs(capsys: pytest.CaptureFixture) -> None:
    assert main([*SIMULATE, "--seed", str(SEED_MAX)]) == 0
    assert "asgd N=2: 4 gradients" in capsys.readouterr().out


@pytest.mark.slow  # an interpreter that imports torch and starts MPI (one rank, no mpiexec): ~5 s each
@pytest.mark.parametrize("algo", ["ssgd", "terngrad"])
def test_a_one_rank_run_with_the_largest_seed_trains(algo: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "trainers.run", "run", "--algo", algo, *QUICK, "--device", "cpu",
                           "--seed", str(SEED_MAX), "--log", str(tmp_path / "run.jsonl")],
                          cwd=tmp_path, env=mpi_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(read_run_log(tmp_path / "run.jsonl").summaries) == 1


# ------------------------------------------------------------------------- another algorithm's flags


@pytest.mark.parametrize("algo, extra, flag, users", [
    ("ssgd", ["--tern-clip", "2.5"], "--tern-clip", "terngrad"),
    ("ssgd", ["--tern-ternarize-last"], "--tern-ternarize-last", "terngrad"),
    ("ssgd", ["--terngrad-lanes", "int8"], "--terngrad-lanes", "terngrad"),
    ("ssgd", ["--terngrad-exchange", "ps"], "--terngrad-exchange", "terngrad"),
    ("ssgd", ["--daso-b", "3", "--daso-w", "1"], "--daso-b", "daso"),
    ("ssgd", ["--daso-rule", "code"], "--daso-rule", "daso"),
    ("terngrad", ["--daso-warmup-epochs", "0"], "--daso-warmup-epochs", "daso"),
    ("daso", ["--tern-min-elems", "4"], "--tern-min-elems", "terngrad"),
    ("terngrad", ["--overlap", "off"], "--overlap", "ssgd, daso"),
    ("ssgd", ["--ranks-per-node", "2"], "--ranks-per-node", "daso"),
])
def test_a_flag_of_another_synchronous_algorithm_is_refused(algo: str, extra: list[str], flag: str, users: str,
                                                            capsys: pytest.CaptureFixture, no_training: None) -> None:
    line = _error_line(capsys, ["run", "--algo", algo, *QUICK, *extra])
    assert line == f"trainers: error: {flag}: algorithm {algo} does not use it; it goes with {users}"


@pytest.mark.parametrize("extra, flag", [(["--bucket-mb", "4"], "--bucket-mb"), (["--overlap", "off"], "--overlap"),
                                         (["--tern-clip", "none"], "--tern-clip"), (["--daso-max-b", "2"], "--daso-max-b"),
                                         (["--opt", "gap=layer"], "--opt gap"), (["--opt", "kappa=2"], "--opt kappa")])
def test_the_parameter_server_refuses_what_it_does_not_read(extra: list[str], flag: str, capsys: pytest.CaptureFixture,
                                                            no_training: None, three_ranks: None) -> None:
    line = _error_line(capsys, ["run", "--algo", "asgd", *QUICK, *extra])
    assert f"error: {flag}: algorithm asgd does not use it; it goes with " in line


@pytest.mark.parametrize("rule, extra, flag, users", [
    ("asgd", ["--gap", "layer"], "--gap", "ga, dana-ga, adam-ga"),
    ("asgd", ["--kappa", "3"], "--kappa", "gem"),
    ("asgd", ["--gem-code", "authors"], "--gem-code", "gem"),
    ("asgd", ["--no-modulate"], "--no-modulate", "softsync"),
    ("ga", ["--kappa", "1"], "--kappa", "gem"),
    ("gem", ["--gap", "parameter"], "--gap", "ga, dana-ga, adam-ga"),
])
def test_a_rule_setting_of_another_algorithm_is_refused_by_simulate(rule: str, extra: list[str], flag: str, users: str,
                                                                    capsys: pytest.CaptureFixture) -> None:
    line = _error_line(capsys, [*SIMULATE, "--rule", rule, *extra])
    assert line == f"trainers simulate: error: {flag}: algorithm {rule} does not use it; it goes with {users}"


def test_the_parameter_servers_own_command_refuses_them_too() -> None:
    from trainers.asynchronous.cli_args import StrictParser, config_from_args
    from trainers.asynchronous.ps import add_ps_arguments

    parser = StrictParser(prog="t")
    add_ps_arguments(parser)
    with pytest.raises(TrainerError, match="--kappa: algorithm dana does not use it"):
        config_from_args(parser.parse_args(["--algo", "dana", "--steps", "5", "--workers", "2", "--kappa", "2"]))


def _run_config(argv: list[str]) -> SyncConfig:
    return tr.config_from_args(tr.build_run_parser(tr.make_parser("t")).parse_args(argv))


def test_each_flag_still_sets_its_own_algorithm_and_defaults_stay() -> None:
    tern = _run_config(["--algo", "terngrad", "--tern-clip", "none", "--tern-ternarize-last", "--tern-min-elems",
                        "8", "--terngrad-lanes", "int8", "--terngrad-exchange", "ps", "--bucket-mb", "4"])
    assert (tern.tern_clip, tern.tern_fp32_last, tern.tern_min_elems, tern.tern_lanes) == (None, False, 8, "int8")
    assert (tern.terngrad_exchange, tern.bucket_mb) == ("ps", 4.0)
    daso = _run_config(["--algo", "daso", "--daso-b", "2", "--daso-w", "0", "--daso-rule", "code", "--overlap", "off",
                        "--daso-plateau-threshold", "0.1", "--daso-global-dtype", "fp32"])
    assert (daso.daso_b, daso.daso_w, daso.daso_rule, daso.overlap) == (2, 0, "code", False)
    assert (daso.daso_plateau_threshold, daso.daso_global_dtype) == (0.1, "fp32")
    ssgd = _run_config(["--algo", "ssgd", "--bucket-mb", "0.5", "--overlap", "off"])
    assert (ssgd.bucket_mb, ssgd.overlap) == (0.5, False)
    plain = _run_config(["--algo", "ssgd"])
    d = SyncConfig(algo="ssgd")
    assert (plain.tern_clip, plain.bucket_mb, plain.overlap, plain.daso_rule, plain.terngrad_exchange) == \
        (d.tern_clip, d.bucket_mb, d.overlap, d.daso_rule, d.terngrad_exchange)


def test_the_rule_settings_still_set_their_rules_and_default_as_before() -> None:
    from trainers.asynchronous.cli_args import StrictParser, add_async_arguments, config_from_args

    parser = StrictParser(prog="t")
    add_async_arguments(parser, algo_flag="--rule")

    def cfg(*argv: str) -> AsyncConfig:
        return config_from_args(parser.parse_args(["--steps", "5", *argv]))

    assert cfg("--rule", "ga", "--gap", "layer").gap == "layer"
    assert cfg("--rule", "softsync", "--no-modulate").modulate is False
    gem = cfg("--rule", "gem", "--kappa", "2", "--gem-code", "authors")
    assert (gem.kappa, gem.gem_code) == (2.0, "authors")
    plain, d = cfg("--rule", "asgd"), AsyncConfig(steps=5)
    assert (plain.gap, plain.modulate, plain.kappa, plain.gem_code) == (d.gap, d.modulate, d.kappa, d.gem_code)


def test_a_registered_algorithm_takes_every_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tr.ALGORITHMS, "fake", ("nowhere", "run"))
    cfg = _run_config(["--algo", "fake", "--tern-clip", "1.5", "--daso-b", "2", "--daso-w", "1", "--overlap", "off"])
    assert (cfg.tern_clip, cfg.daso_b, cfg.daso_w, cfg.overlap) == (1.5, 2, 1, False)


# ------------------------------------------------------------------------------- failure injection


def test_the_parameter_server_fails_the_last_rank_by_default_as_the_sync_trainers_do() -> None:
    cfg = AsyncConfig(algo="asgd", workers=3, steps=4, fail_at_step=2)
    assert failing_rank(cfg, 4) == 3
    assert ps_options(cfg) == PSOptions(fail_worker=2, fail_after=2)  # rank 3 = worker 2
    server = AsyncConfig(algo="asgd", workers=3, steps=4, fail_at_step=2, fail_rank=0)
    assert ps_options(server) == PSOptions(fail_server_at=2)
    # --fail-rank alone asks for nothing, as with the synchronous trainers
    assert ps_options(AsyncConfig(algo="asgd", workers=3, steps=4, fail_rank=1)) == PSOptions()
    with pytest.raises(TrainerError, match=r"fail_rank must be a rank in 0\.\.3"):
        ps_options(AsyncConfig(algo="asgd", workers=3, steps=4, fail_rank=4, fail_at_step=1))


def test_the_servers_hook_raises_before_that_gradient_only() -> None:
    assert server_hooks(None) == []
    (hook,) = server_hooks(2)
    hook(0)
    hook(1)
    with pytest.raises(RuntimeError, match="injected failure of the server before gradient 2"):
        hook(2)


ASGD = ["--algo", "asgd", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "256", "--batch", "8",
        "--steps", "400", "--no-progress"]


@pytest.mark.slow
@pytest.mark.mpi
@mpi_only
def test_asgd_fail_at_step_alone_fails_the_last_rank_and_ends_the_job() -> None:
    job = _mpirun(2, [*ASGD, "--fail-at-step", "3"])
    assert job.code is not None, f"the job hung:\n{job.output[-3000:]}"
    assert job.code != 0, job.output[-3000:]
    assert "worker 0: deliberate failure (exit)" in job.output  # rank 1, the last of 2


@pytest.mark.slow
@pytest.mark.mpi
@mpi_only
def test_a_dying_ssgd_rank_ends_the_job() -> None:
    job = _mpirun(2, ["--algo", "ssgd", *QUICK, "--steps", "400", "--fail-rank", "1", "--fail-at-step", "2"])
    assert job.code is not None, f"the job hung:\n{job.output[-3000:]}"
    assert job.code != 0, job.output[-3000:]
    assert "injected failure at step 2 on rank 1" in job.output


@pytest.mark.slow
@pytest.mark.mpi
@mpi_only
def test_a_dying_parameter_server_ends_the_job() -> None:
    job = _mpirun(3, [*ASGD, "--fail-rank", "0", "--fail-at-step", "3"])
    assert job.code is not None, f"the job hung:\n{job.output[-3000:]}"
    assert job.code != 0, job.output[-3000:]
    assert "injected failure of the server before gradient 3" in job.output


def test_every_trainers_run_command_plan_prints_parses(capsys: pytest.CaptureFixture, three_ranks: None) -> None:
    """`perfmodel plan` prints `trainers run` commands; each one parses, with the flags of its algorithm only
    (--ranks-per-node in daso's alone)."""
    import json

    from perfmodel.cli import main as perfmodel_main

    rc = perfmodel_main(["plan", "--workload", "resnet50", "--cluster", "dgx1-v100", "--epochs", "1",
                         "--dataset-size", "1000", "--all", "--format", "json"])
    commands = [r["settings"]["trainers_run"] for r in json.loads(capsys.readouterr().out)
                if "trainers_run" in r["settings"]]
    assert rc == 0 and {c.split("--algo ")[1].split()[0] for c in commands} == {"ssgd", "terngrad", "daso", "asgd"}
    for c in commands:
        argv = c.split("trainers run ")[1].split()
        cfg = tr.config_from_args(tr.build_run_parser(tr.make_parser("t")).parse_args(argv))
        assert ("--ranks-per-node 8" in c) == (cfg.algo == "daso")
        assert getattr(cfg, "ranks_per_node", 1) == (8 if cfg.algo == "daso" else 1)


# ------------------------------------------------------------------------- a run log is never written over


def test_a_run_never_writes_over_a_log(tmp_path: Path, capsys: pytest.CaptureFixture, no_training: None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text('{"type": "header"}\n')
    line = _error_line(capsys, ["run", "--algo", "ssgd", *QUICK, "--log", str(log)])
    assert line == (f"trainers: error: --log {log} already holds a run log; --resume continues that run (with its "
                    f"--checkpoint), or give another path or remove it (a run never writes over one)")
    line = _error_line(capsys, [*SIMULATE, "--log", str(log)])
    assert line.startswith(f"trainers simulate: error: --log {log} already holds a run log; give another path")
    assert log.read_text() == '{"type": "header"}\n'  # untouched
    log.write_text("")  # an empty file holds no run: it is written
    dispatched = []
    monkeypatch.setattr(tr, "dispatch", dispatched.append)
    assert main(["run", "--algo", "ssgd", *QUICK, "--log", str(log)]) == 0 and len(dispatched) == 1
    log.write_text('{"type": "header"}\n')  # a rank other than 0 leaves the check to rank 0, the log's writer
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert main(["run", "--algo", "ssgd", *QUICK, "--log", str(log)]) == 0 and len(dispatched) == 2
