"""trainers.asynchronous.ps under mpiexec: replaying the simulator's arrival order gives the simulator's parameters;
a free-running server applies exactly its budget and stops every worker; bad configuration gets one
line and status 2; a worker that exits, raises or hangs ends the job instead of hanging it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from trainers.log import read_run_log
from trainers.asynchronous.simulate import simulate
from trainers.config import AsyncConfig

from tests.mpi_job import run_job

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "tests" / "mpi_ps"
MPIEXEC = shutil.which("mpiexec")

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")]


def run_mpi(n: int, args: list[str], timeout: float = 120.0) -> tuple[int | None, str, float]:
    """mpiexec -n n python ARGS. Returns (returncode or None on timeout, output, seconds). Never leaves
    ranks behind (tests/mpi_job.py)."""
    job = run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", str(n), sys.executable, *args], timeout)
    return job.code, job.output, job.seconds


def _base(**kw) -> AsyncConfig:
    values = dict(workers=3, model="gem-cnn", dataset="synthetic", synthetic_n=384, batch=16, lr=0.05,
                  steps=30, eval_every=0.5, eval_limit=32, seed=3)
    values.update(kw)
    return AsyncConfig(**values)


# The four families: master-side momentum with gap (ga), per-worker momentum and look-ahead
# (dana-ga), gradients buffered c at a time (softsync), worker-side rescaling with a round trip for
# the central parameters (gem); and weight decay, a schedule, heterogeneous delays.
REPLAY = {
    "ga": _base(algo="ga", weight_decay=1e-3, delays="heterogeneous", lr_warmup_epochs=0.5, lr_milestones=(1.0,)),
    "dana-ga": _base(algo="dana-ga", delays="heterogeneous"),
    "softsync": _base(algo="softsync", n=1, momentum=0.5),
    "gem": _base(algo="gem", delays="heterogeneous"),
}


@pytest.mark.slow  # ~14 s
def test_replay_of_the_simulated_order_gives_the_simulated_parameters(tmp_path: Path) -> None:
    jobs, sims = [], {}
    for name, cfg in REPLAY.items():
        sim = simulate(cfg)
        sims[name] = sim
        order = tmp_path / f"{name}.order.json"
        order.write_text(json.dumps({"order": sim.order}))
        jobs.append({"config": cfg.to_dict(), "replay_order": str(order), "save_params": str(tmp_path / f"{name}.npy"),
                     "log": str(tmp_path / f"{name}.jsonl")})
    # a free run of ga: its order differs from the simulator's, and so must its parameters
    free = dict(REPLAY["ga"].to_dict(), delays="none")
    jobs.append({"config": free, "replay_order": None, "save_params": str(tmp_path / "free.npy")})
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    code, out, _ = run_mpi(4, [str(SCRIPTS / "replay_jobs.py"), str(tmp_path / "jobs.json")], timeout=180)
    assert code == 0, out
    for name, sim in sims.items():
        assert len(set(sim.order)) == 3 and len(sim.order) == 30
        got = np.load(tmp_path / f"{name}.npy")
        ref = sim.params.numpy()
        assert np.abs(got - ref).max() <= 1e-6, name
        log = read_run_log(tmp_path / f"{name}.jsonl")
        s = log.summaries[-1]
        assert s["replayed"] is True and s["gradients"] == 30
        assert s["tau_hist"] == sim.stats["tau_hist"]
        assert log.evals[-1]["test_acc"] == pytest.approx(sim.evals[-1]["test_acc"])
    assert np.abs(np.load(tmp_path / "free.npy") - sims["ga"].params.numpy()).max() > 1e-4


@pytest.mark.slow  # ~11 s
def test_free_running_server_applies_its_budget_and_stops_everyone(tmp_path: Path) -> None:
    log = tmp_path / "ps.jsonl"
    # through the documented entry point: trainers run --algo ga, the server's settings as --opt
    code, out, _ = run_mpi(4, ["-m", "trainers.run", "run", "--algo", "ga", "--model", "gem-cnn", "--dataset",
                               "synthetic", "--synthetic-n", "384", "--batch", "16", "--lr", "0.05", "--nesterov",
                               "--steps", "45", "--eval-every", "12", "--no-progress", "--opt", "delays=heterogeneous",
                               "--opt", "delay_mean=0.02", "--opt", "eval_limit=32", "--log", str(log)])
    assert code == 0, out
    contents = read_run_log(log)
    head, s = contents.header, contents.summaries[-1]
    assert head["simulated"] is False and head["ranks"] == 4 and head["workers"] == 3
    assert head["config"]["delays"] == "heterogeneous" and head["config"]["nesterov"] is True
    assert s["gradients"] == 45 and sum(s["per_worker_gradients"]) == 45
    assert sum(s["tau_hist"].values()) == 45
    # after the 45th gradient the two other workers are still computing: each push is answered STOP
    assert s["discarded"] == 2
    assert s["delay_mean"] == pytest.approx(s["tau_mean"] + 1)
    assert 0 < s["tau_mean"] < 10 and s["gap_mean"] >= 1.0
    assert [e["step"] for e in contents.evals] == [12, 24, 36, 45]  # per epoch: 3 workers x 128/16 batches
    assert contents.steps[-1]["step"] == 45 and all(r["t_idle"] >= 0 for r in contents.steps)


@pytest.mark.parametrize("ranks,args,needle", [
    (1, ["--algo", "ga", "--steps", "5"], "at least 2 MPI ranks"),
    (2, ["--algo", "nosuch", "--steps", "5"], "unknown algorithm 'nosuch'"),
    (2, ["--algo", "softsync", "--n", "2", "--steps", "5"], "n must be in 1..workers=1"),
])
def test_bad_configuration_one_line_status_2(ranks: int, args: list[str], needle: str) -> None:
    code, out, _ = run_mpi(ranks, ["-m", "trainers.asynchronous.ps", *args], timeout=60)
    assert code == 2, out
    ours = [line for line in out.splitlines() if line.startswith("trainers ps: error:")]
    assert len(ours) == 1 and needle in ours[0], out
    assert "Traceback" not in out


@pytest.mark.parametrize("mode,extra", [("exit", []), ("raise", []), ("hang", ["--worker-timeout", "3"])])
def test_a_failing_worker_ends_the_job(mode: str, extra: list[str]) -> None:
    code, out, secs = run_mpi(3, ["-m", "trainers.asynchronous.ps", "--algo", "asgd", "--model", "none",
                                  "--steps", "100000", "--delays", "homogeneous", "--delay-mean", "0.005", "--fail-worker", "1",
                                  "--fail-after", "5", "--fail-mode", mode, *extra], timeout=90)
    assert code is not None, f"the job hung:\n{out}"
    assert code != 0, out
    assert f"worker 1: deliberate failure ({mode})" in out
    if mode == "hang":
        assert "worker 1 (rank 2) silent for" in out, out
    if mode == "raise":
        assert "RuntimeError: worker 1: deliberate failure" in out


@pytest.mark.slow
@pytest.mark.parametrize("entry", [["-m", "trainers.run", "run"], ["-m", "trainers.asynchronous.ps"]])
def test_a_diverging_parameter_server_run_stops_every_rank_with_status_3(tmp_path: Path, entry: list[str]) -> None:
    args = [*entry, "--algo", "asgd", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "256",
            "--batch", "16", "--lr", "50", "--steps", "60", "--log", str(tmp_path / "ps.jsonl")]
    code, out, _ = run_mpi(3, args)
    assert code == 3, out[-3000:]  # not None: no rank left waiting
    ours = [x for x in out.splitlines() if "training diverged" in x]
    assert len(ours) == 1 and "pass --allow-divergence" in ours[0] and "Traceback" not in out, out[-3000:]

    def refuse(token: str) -> None:
        raise ValueError(token)
    summary = [json.loads(x, parse_constant=refuse) for x in (tmp_path / "ps.jsonl").read_text().splitlines()][-1]
    assert summary["type"] == "summary" and summary["diverged"] is True and summary["gradients"] < 60
    (tmp_path / "ps.jsonl").unlink()  # a run never writes over a log
    code, out, _ = run_mpi(3, [*args, "--allow-divergence"])
    assert code == 0, out[-3000:]


@pytest.mark.slow
def test_a_non_finite_push_with_a_finite_loss_is_divergence_too(tmp_path: Path) -> None:
    # worker 1 pushes its 4th gradient with one infinite element: the server applies none of it
    log = tmp_path / "ps.jsonl"
    code, out, _ = run_mpi(3, ["-m", "trainers.asynchronous.ps", "--algo", "asgd", "--model", "lenet",
                               "--dataset", "synthetic",
                               "--synthetic-n", "256", "--batch", "16", "--lr", "0.01", "--steps", "40",
                               "--fail-worker", "1", "--fail-after", "3", "--fail-mode", "inf-grad",
                               "--log", str(log), "--save-params", str(tmp_path / "p.npy")])
    assert code == 3, out[-3000:]
    summary = read_run_log(log).summaries[-1]
    assert summary["diverged"] is True and summary["gradients"] < 40
    assert summary["per_worker_gradients"][1] == 3  # its first 3 gradients, not the poisoned one
    assert np.isfinite(np.load(tmp_path / "p.npy")).all()


def _lenet_workload():
    from perfmodel.specs import ComputeTime, Workload
    from trainers.models import tensor_sizes

    sizes = tensor_sizes("lenet")
    return Workload("lenet", tuple(n for _, n in sizes), {"cpu": ComputeTime("linear", t0_s=2e-3, t1_s=1e-4)},
                    tensor_names=tuple(k for k, _ in sizes))


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3])
def test_trainer_bytes_per_exchange_equal_the_model_and_the_log_validates(tmp_path: Path, workers: int) -> None:
    """What the parameter server moves per gradient (its payload counters: the fp32 gradient pushed, the
    fp32 parameters pulled) is the model's asgd bytes_per_gpu; the log is validated as a PS run."""
    from perfmodel.specs import Cluster, Link
    from perfmodel.scaling import predict
    from perfmodel.lab.validate import measure_run, run_strategies

    log = tmp_path / f"asgd-{workers}.jsonl"
    code, out, _ = run_mpi(workers + 1, ["-m", "trainers.run", "run", "--algo", "asgd", "--model", "lenet",
                                         "--dataset", "synthetic", "--synthetic-n", "128", "--batch", "4", "--steps",
                                         "12", "--seed", "5", "--no-progress", "--log", str(log)])
    assert code == 0, out[-3000:]
    contents = read_run_log(log)
    assert contents.header["exchange"] == "push-pull" and contents.header["workers"] == workers
    exchanged = [s["bytes_exchanged"] for s in contents.steps]
    # LeNet: 431_080 fp32 parameters; a gradient answered with STOP has no pull
    assert len(exchanged) == 12 and set(exchanged) <= {2 * 4 * 431_080, 4 * 431_080}
    assert exchanged.count(4 * 431_080) <= 1 and exchanged[:12 - workers].count(2 * 4 * 431_080) == 12 - workers
    timed = [s["t_comm"] for s in contents.steps if s["t_comm"] is not None]
    assert len(timed) >= 12 - workers and all(t > 0 for t in timed)  # each worker's first gradient reports none
    run = measure_run(log, skip=0)
    assert (run.workers, run.ranks, run.t_compress_s) == (workers, workers + 1, 0.0)
    link, free = Link(1e-5, 1e9), Link(0.0, float("inf"))  # CPU ranks: no device->host copy
    cluster = Cluster("local", 1, intra=link, host=free, network=link, gpu="cpu")
    ((strategy, _, _),) = run_strategies(run)  # what `perfmodel validate` predicts the run as
    pred = predict(_lenet_workload(), cluster, strategy, [run.workers], batch=run.batch)
    assert pred.bytes_per_gpu[0] == run.bytes_per_step == 2 * 4 * 431_080
    # by hand: t_c(4) + push + pull over the 1 GB/s link, below the server's cap of 1e9 / n exchanges/s
    assert pred.t_iter_s[0] == pytest.approx(2e-3 + 4e-4 + 2 * (1e-5 + 4 * 431_080 / 1e9))
