"""Gradient accumulation (``trainers run --accumulate A``): A micro-batches of --batch samples per step,
one exchange per step. SSGD's update equals the update of a per-rank batch of A x --batch samples (a
single-process torch loop), its run log counts A x --batch samples per rank and the same bytes per
step as the large batch; TernGrad agrees with its large-batch run; the other algorithms refuse it.
`perfmodel plan` prints the accumulation in its `trainers run` command, and `perfmodel validate` predicts
an accumulated run with it. The MPI runs of overlap off and of TernGrad are in the slow step."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainers.config import SyncConfig
from trainers.errors import TrainerError
from trainers.log import read_run_log
from trainers.run import build_run_parser, config_from_args, make_parser

from tests.test_sync_mpi import EQ, EQ_ARGS, max_diff, mpi_only, reference, run_mpi, train_dump


def _args(extra: list[str], drop: tuple[str, ...] = ("--batch",)) -> list[str]:
    """EQ_ARGS without the flags in ``drop`` (and their values), then ``extra``."""
    out, i = [], 0
    while i < len(EQ_ARGS):
        if EQ_ARGS[i] in drop:
            i += 2
            continue
        out.append(EQ_ARGS[i])
        i += 1
    return [*out, *extra]


def test_config_counts_micro_batches_and_refuses_bad_values() -> None:
    cfg = SyncConfig(algo="ssgd", batch=4, accumulate=4)
    assert (cfg.step_batch, cfg.to_dict()["accumulate"]) == (16, 4)
    assert SyncConfig(algo="ssgd", batch=4).step_batch == 4
    for bad in (0, -1, 1.5, True):
        with pytest.raises(TrainerError, match="accumulate"):
            SyncConfig(algo="ssgd", accumulate=bad)


def test_resume_needs_the_same_accumulation_and_older_logs_count_as_one() -> None:
    from types import SimpleNamespace

    from trainers.errors import UsageError
    from trainers.sync.loop import Trainer

    older = SyncConfig(algo="ssgd", batch=4).to_dict()
    del older["accumulate"]  # run logs and checkpoints written before --accumulate
    check = Trainer._check_compatible
    check(SimpleNamespace(cfg=SyncConfig(algo="ssgd", batch=4), world=2), older, 2, "checkpoint c")
    with pytest.raises(UsageError, match="checkpoint c was written with accumulate=1, this run has 2"):
        check(SimpleNamespace(cfg=SyncConfig(algo="ssgd", batch=4, accumulate=2), world=2), older, 2, "checkpoint c")


def test_the_parameter_server_refuses_accumulation() -> None:
    args = build_run_parser(make_parser("t")).parse_args(["--algo", "asgd", "--accumulate", "2"])
    with pytest.raises(TrainerError, match="parameter server .* ssgd and terngrad"):
        config_from_args(args)


@pytest.mark.mpi
@mpi_only
@pytest.mark.parametrize("overlap", ["on", pytest.param("off", marks=pytest.mark.slow)])
def test_ssgd_accumulation_equals_the_large_batch(overlap: str, tmp_path: Path) -> None:
    world, micro, a = 2, 4, 4
    assert micro * a == EQ["batch"]
    log = tmp_path / "acc.jsonl"
    ranks = train_dump(world, tmp_path / "acc", _args(["--batch", str(micro), "--accumulate", str(a),
                                                       "--overlap", overlap, "--log", str(log)]))
    ref = reference(world, EQ["batch"], EQ["steps"], EQ["lr"], EQ["momentum"], EQ["seed"], EQ["n"])
    for r in range(world):
        assert max_diff(ranks[r]["model"], ref) < 1e-5
        assert max_diff(ranks[r]["model"], ranks[0]["model"]) == 0.0
    run = read_run_log(log)
    assert run.header["config"]["accumulate"] == a and run.header["samples_per_step"] == world * micro * a
    # 1024 samples / (2 ranks x 16): 32 steps per epoch, as the large batch's
    assert run.header["steps_per_epoch"] == EQ["n"] // (world * EQ["batch"])
    n = sum(p.numel() for p in ranks[0]["model"].values())
    ring = 2 * (world - 1) / world * 4 * n  # one ring allreduce of the fp32 gradient per step, not A
    assert {s["samples"] for s in run.steps} == {world * micro * a}
    assert [s["bytes_sent"] for s in run.steps] == pytest.approx([ring] * len(run.steps))


@pytest.mark.mpi
@pytest.mark.slow
@mpi_only
def test_terngrad_accumulation_matches_the_large_batch(tmp_path: Path) -> None:
    base = [a if a != "ssgd" else "terngrad" for a in _args(["--steps", "6"], drop=("--batch", "--steps"))]
    logs = {}
    for micro, a in ((16, 1), (8, 2)):
        logs[a] = tmp_path / f"a{a}.jsonl"
        train_dump(2, tmp_path / f"a{a}", [*base, "--batch", str(micro), "--accumulate", str(a), "--log", str(logs[a])])
    one, two = (read_run_log(logs[a]).steps for a in (1, 2))
    assert [s["bytes_sent"] for s in one] == [s["bytes_sent"] for s in two]
    assert [s["samples"] for s in two] == [32] * 6
    # the same stochastic codes of nearly the same gradients (summed in two halves): the same losses
    assert [s["loss"] for s in two] == pytest.approx([s["loss"] for s in one], rel=1e-4)


@pytest.mark.mpi
@mpi_only
def test_daso_refuses_accumulation_with_one_line_and_status_2(tmp_path: Path) -> None:
    code, out, _ = run_mpi(2, ["-m", "trainers.run", "run", "--algo", "daso", "--model", "lenet", "--dataset",
                               "synthetic", "--batch", "8", "--accumulate", "2", "--steps", "2", "--no-progress"])
    assert code == 2, out[-2000:]
    lines = [ln for ln in out.splitlines() if ln.startswith("trainers: error:")]
    assert lines and "--accumulate 2: --algo daso exchanges every micro-batch" in lines[0]
    assert "Traceback" not in out


def test_plan_launches_accumulated_rows_with_the_trainers_that_run_them() -> None:
    from perfmodel.launch_settings import launch_settings
    from perfmodel.specs import Strategy

    def run(name: str, accumulate: int) -> str | None:
        return launch_settings(Strategy(name), gpus=8, gpus_per_node=4, batch_per_gpu=16, accumulate=accumulate,
                               model="resnet50", optimizer="sgd").get("trainers_run")

    assert "--batch 16 --accumulate 4 " in run("ssgd", 4) and "--batch 16 --accumulate 2 " in run("terngrad", 2)
    assert "--accumulate" not in run("ssgd", 1) and "--accumulate" not in run("daso", 1)
    assert run("daso", 2) is None and run("asgd", 2) is None  # the trainers exchange every micro-batch there
    # the printed command parses, and gives the accumulation asked for
    argv = run("ssgd", 4).split("trainers run ")[1].split()
    cfg = config_from_args(build_run_parser(make_parser("t")).parse_args(argv))
    assert (cfg.batch, cfg.accumulate, cfg.step_batch) == (16, 4, 64)


def test_validate_predicts_an_accumulated_run_with_its_micro_batches() -> None:
    from dataclasses import replace

    from perfmodel.lab.validate import RunMeasurement, Scenario, predict_commands, predict_run

    def argv(accumulate: int | None) -> list[str]:
        cfg = {"algo": "ssgd", "model": "lenet", "batch": 8, "overlap": True, "bucket_mb": 25.0, "ranks_per_node": 1}
        if accumulate is not None:
            cfg["accumulate"] = accumulate
        run = RunMeasurement("log", "ssgd", "lenet", 2, 8, 1, 20, 1.0, 0.0, 0.0, 0.0, 1.0, cfg, {}, 0.0, "mpi", 0)
        ((args, _),) = predict_commands(run, Scenario("p.json", ("l.json",), 1, 0, 2))
        return args

    got = argv(4)
    assert got[got.index("--batch") + 1] == "8" and got[got.index("--accumulate") + 1] == "4"
    assert "--accumulate" not in argv(1) and "--accumulate" not in argv(None)  # run logs before the option
    # the predicted throughput counts every micro-batch's samples: 2 ranks x 8 x 4 per step
    profile = str(Path(__file__).resolve().parents[1] / "results" / "validation" / "profile_lenet_small.json")
    cfg = {"algo": "ssgd", "model": "lenet", "batch": 8, "overlap": True, "bucket_mb": 25.0, "accumulate": 4}
    run = RunMeasurement("log", "ssgd", "lenet", 2, 8, 1, 20, 1.0, 0.0, 0.0, 0.0, 1.0, cfg, {}, 0.0, "mpi", 0)
    pred = predict_run(run, Scenario(profile))
    assert pred["throughput"] == pytest.approx(2 * 8 * 4 / pred["t_step_s"], rel=1e-12)
    one = predict_run(replace(run, config={**cfg, "accumulate": 1}), Scenario(profile))
    assert 2.5 * one["t_step_s"] < pred["t_step_s"] < 4 * one["t_step_s"]  # the exchange once, not 4 times
