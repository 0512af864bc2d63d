"""trainers.asynchronous.simulate: determinism, the event clock against the vectorized arrival times, staleness
against hand-derived histograms and Zhang et al.'s measurements, one worker against torch.optim.SGD,
gap versus delay, the async-over-sync speedup against perfmodel.stragglers' closed form, the run log
and the command line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers.log import read_run_log
from trainers.asynchronous.ps import load_order
from trainers.asynchronous.simulate import expected_speedup, finish_times, simulate, simulate_main, speedup_table
from trainers.asynchronous.config import make_plan
from trainers.config import AsyncConfig
from trainers.asynchronous.data_streams import BatchStream, DelaySchedule, load_data, step_seed
from trainers.asynchronous.flat_model import FlatModel
from trainers.errors import TrainerError


def small(**kw) -> AsyncConfig:
    values = dict(workers=4, model="gem-cnn", dataset="synthetic", synthetic_n=256, batch=16, lr=0.05,
                  steps=40, eval_every=0.0, eval_limit=32, seed=1)
    values.update(kw)
    return AsyncConfig(**values)


def hist(result) -> dict[int, int]:
    return {int(k): v for k, v in result.stats["tau_hist"].items()}


# --------------------------------------------------------------------------- determinism and clocks


def test_same_seed_is_bitwise_identical_and_another_seed_is_not() -> None:
    cfg = small(algo="ga", delays="heterogeneous", weight_decay=1e-4)
    a, b = simulate(cfg), simulate(cfg)
    assert torch.equal(a.params, b.params)
    assert a.order == b.order and a.stats["tau_hist"] == b.stats["tau_hist"] and a.t_async == b.t_async
    c = simulate(small(algo="ga", delays="heterogeneous", weight_decay=1e-4, seed=2))
    assert c.order != a.order and not torch.allclose(c.params, a.params)


@pytest.mark.parametrize("kind", ["homogeneous", "heterogeneous"])
def test_event_clock_equals_the_vectorized_arrival_times(kind: str) -> None:
    cfg = AsyncConfig(algo="asgd", workers=7, model="none", steps=500, delays=kind, seed=4)
    res = simulate(cfg)
    t_async, t_sync = finish_times(DelaySchedule(cfg), make_plan(cfg, None))
    assert res.summary["t_sim_end"] == t_async  # the S-th smallest arrival time, exactly
    rows = DelaySchedule(cfg).rows(-(-500 // 7))
    assert t_sync == pytest.approx(rows.max(axis=1).sum(), rel=1e-12)
    # a worker's arrivals are the running sums of its own column, so the order is their merge
    done = np.cumsum(DelaySchedule(cfg).rows(200), axis=0)
    events = sorted((done[k, w], w) for w in range(7) for k in range(200))[:500]
    assert res.order == [w for _, w in events]


def test_replicate_mode_gives_every_worker_its_own_budget() -> None:
    cfg = small(algo="asgd", workers=3, synthetic_n=64, batch=32, steps=None, epochs=3.0, data="replicate",
                delays="heterogeneous")
    res = simulate(cfg)
    assert Counter(res.order) == {0: 6, 1: 6, 2: 6}  # 3 epochs x 64/32 batches each
    t_async, t_sync = finish_times(DelaySchedule(cfg), make_plan(cfg, load_data(cfg)[0]))
    assert res.summary["t_sim_end"] == t_async == res.t_async
    rows = DelaySchedule(cfg).rows(6)
    assert t_async == pytest.approx(rows.sum(axis=0).max()) and t_sync == pytest.approx(rows.max(axis=1).sum())


def test_batch_stream_covers_the_shard_in_order() -> None:
    cfg = small(workers=4, synthetic_n=100, batch=8)
    train, _ = load_data(cfg)
    s = BatchStream(train, cfg, 2)
    assert s.batches_per_epoch == 4  # 25 images: 8 + 8 + 8 + 1
    ys = torch.cat([s.next()[1] for _ in range(4)])
    from trainers.batching import shard_indices

    assert torch.equal(ys, train.labels[torch.from_numpy(shard_indices(100, 2, 4, cfg.seed, 0))])


# --------------------------------------------------------------------------- staleness


def test_constant_delays_give_hand_derived_staleness() -> None:
    # every batch takes exactly 1 s: each round all 5 workers arrive together, in worker order
    res = simulate(AsyncConfig(algo="asgd", workers=5, model="none", steps=20, delays="none"))
    assert res.order == [0, 1, 2, 3, 4] * 4
    assert hist(res) == {0: 1, 1: 1, 2: 1, 3: 1, 4: 16}  # first round 0..4, then N - 1
    # 1-softsync (c = N = 5): the 5th arrival updates; workers 0..3 pulled before it, worker 4 after
    res = simulate(AsyncConfig(algo="softsync", n=1, workers=5, model="none", steps=20, delays="none"))
    assert hist(res) == {0: 5 + 3, 1: 4 * 3} and res.stats["updates"] == 4


@pytest.mark.parametrize("n", [1, 2, 4, 30])
def test_zhang_softsync_staleness_with_30_learners(n: int) -> None:
    """Zhang et al. 2016: n-softsync with 30 learners has mean staleness about n and
    P(tau > 2n) below 1e-4; we require mean within 15% of n and P(tau > 2n) < 1e-3."""
    res = simulate(AsyncConfig(algo="softsync", n=n, workers=30, model="none", steps=24000, seed=n))
    h = hist(res)
    total = sum(h.values())
    assert total == 24000
    assert abs(res.stats["tau_mean"] - n) <= 0.15 * n
    assert sum(c for t, c in h.items() if t > 2 * n) / total < 1e-3
    if n == 1:
        assert set(h) <= {0, 1, 2}


# --------------------------------------------------------------------------- against plain SGD


def test_one_worker_nag_asgd_is_torch_sgd_with_nesterov() -> None:
    cfg = small(algo="nag-asgd", workers=1, steps=25, momentum=0.9, weight_decay=1e-3)
    res = simulate(cfg)
    train, _ = load_data(cfg)
    fm = FlatModel.build(cfg)
    opt = torch.optim.SGD(fm.model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True, weight_decay=1e-3)
    stream = BatchStream(train, cfg, 0)
    for k in range(25):
        x, y = stream.next()
        fm.flat_grad.zero_()
        torch.manual_seed(step_seed(cfg.seed, 0, k))  # the same dropout masks
        torch.nn.functional.cross_entropy(fm.model(x), y).backward()
        opt.step()
    assert torch.allclose(res.params, fm.flat, atol=1e-6, rtol=0)
    assert not torch.allclose(res.params, fm.initial, atol=1e-3)


def test_one_downpour_worker_equals_one_asgd_worker() -> None:
    """The worker-side path (Delta = -lr g, master adds) against the master-side one."""
    a = simulate(small(algo="downpour", workers=1, steps=20))
    b = simulate(small(algo="asgd", workers=1, steps=20))
    assert torch.allclose(a.params, b.params, atol=1e-6, rtol=0)


@pytest.mark.parametrize("code", ["paper-clamp", "authors"])
def test_gem_workers_train_and_report_pi(code: str) -> None:
    """GEM with pi clamped to [0, 5] (pull after commit, and the authors' pull before commit) with
    6 workers; the paper's unclamped pi can go negative, which feeds the central shift back into the
    updates (see the module notes)."""
    res = simulate(small(algo="gem", gem_code=code, workers=6, steps=200))
    assert not res.summary["diverged"] and torch.isfinite(res.params).all()
    assert 0 < res.summary["pi_mean"] < 5
    assert res.evals[-1]["test_loss"] < 2.0  # below chance-level cross-entropy ln 10 = 2.30


# --------------------------------------------------------------------------- gap versus delay


def test_gap_is_below_delay_for_gap_aware(tmp_path: Path) -> None:
    """Barkai et al. Fig. 4: the mean gap stays below the mean delay (tau + 1)."""
    log = tmp_path / "ga.jsonl"
    res = simulate(small(algo="ga", workers=8, steps=96, eval_every=0.5, synthetic_n=512), log_path=log)
    s = res.summary
    assert s["delay_mean"] == pytest.approx(s["tau_mean"] + 1)
    assert 1.0 <= s["gap_mean"] < s["delay_mean"]
    evals = read_run_log(log).evals
    assert len(evals) == 6 and all(1.0 <= e["gap_mean"] < e["delay_mean"] for e in evals)  # 32 per epoch


# --------------------------------------------------------------------------- speedup


def test_speedup_matches_the_closed_form() -> None:
    rows = speedup_table([8, 64, 1024], steps_per_worker=60, seeds=(0, 1, 2))
    homo = [r for r in rows if r["kind"] == "homogeneous"]
    hetero = [r for r in rows if r["kind"] == "heterogeneous"]
    for r in homo:
        assert r["speedup_sim"] == pytest.approx(r["speedup_closed_form"], rel=0.015)
    assert homo[0]["speedup_sim"] < homo[1]["speedup_sim"] < homo[2]["speedup_sim"]
    # heterogeneous: the machine means are drawn once per run, so runs vary; large N is close
    assert hetero[-1]["speedup_sim"] == pytest.approx(hetero[-1]["speedup_closed_form"], rel=0.12)
    assert hetero[-1]["speedup_sim"] > 4 * homo[-1]["speedup_sim"]
    assert expected_speedup(1, "homogeneous")[0] == pytest.approx(1.0, abs=1e-3)


# --------------------------------------------------------------------------- run log and CLI


def test_run_log_format(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    simulate(small(algo="sa", steps=30, log_every=10, eval_every=0.5), log_path=log)
    c = read_run_log(log)
    assert c.header["simulated"] is True and c.header["algo"] == "sa" and c.header["workers"] == 4
    assert [r["step"] for r in c.steps] == [10, 20, 30]
    for r in c.steps:
        assert r["gradients"] == 10 and r["samples"] == 160 and r["t_compute"] > 0 and r["t_step"] > 0
    assert [e["step"] for e in c.evals] == [8, 16, 24, 30]  # per epoch: 4 workers x 64/16 batches
    s = c.summaries[-1]
    assert sum(s["tau_hist"].values()) == s["gradients"] == 30 and "tau = i - j" in s["staleness_definition"]


def test_cli_runs_and_records_the_order(tmp_path: Path, capsys) -> None:
    order = tmp_path / "order.json"
    code = simulate_main(["--rule", "dana-ga", "--workers", "3", "--model", "gem-cnn", "--dataset", "synthetic",
                          "--synthetic-n", "96", "--batch", "16", "--steps", "12", "--eval-every", "0",
                          "--record-order", str(order), "--log", str(tmp_path / "r.jsonl")])
    assert code == 0
    assert "dana-ga N=3: 12 gradients" in capsys.readouterr().out
    assert len(load_order(str(order), 3)) == 12
    assert AsyncConfig(**json.loads(order.read_text())["config"]).algo == "dana-ga"


DIVERGING = ["--rule", "asgd", "--workers", "4", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "256",
             "--batch", "16", "--lr", "50", "--steps", "40", "--eval-limit", "32"]  # NaN loss after 8 gradients


def _strict_lines(path: Path) -> list[dict]:
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")
    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def test_a_diverging_run_stops_with_one_line_status_3_and_a_strict_json_log(tmp_path: Path, capsys) -> None:
    log = tmp_path / "div.jsonl"
    assert simulate_main([*DIVERGING, "--log", str(log)]) == 3
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("trainers simulate: error: training diverged: non-finite loss or gradient in gradient 9 (after 8 applied)")
    lines = _strict_lines(log)  # every line parses without NaN / Infinity
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["diverged"] is True and summary["diverged_at"] == 9
    assert summary["gradients"] == 8 and summary["t_sync"] is None and summary["nonfinite"]["t_sync"] == "nan"
    assert summary["final_test_loss"] is None and summary["nonfinite"]["final_test_loss"] == "nan"
    # asked to accept it: the same run is an outcome, status 0, the same log
    log2 = tmp_path / "div2.jsonl"
    assert simulate_main([*DIVERGING, "--log", str(log2), "--allow-divergence"]) == 0
    assert "diverged=True" in capsys.readouterr().out
    again = _strict_lines(log2)
    assert [r for r in again if r["type"] != "summary"][1:] == [r for r in lines if r["type"] != "summary"][1:]
    assert again[-1]["diverged"] is True and again[-1]["diverged_at"] == 9


def test_a_non_finite_gradient_with_a_finite_loss_is_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    import trainers.asynchronous.simulate as sim

    real, calls = sim.FlatModel.gradient, []

    def poisoned(self, params, x, y, seed):  # the 5th gradient gets an infinite element; its loss stays finite
        g, loss = real(self, params, x, y, seed)
        calls.append(1)
        if len(calls) == 5:
            g = g.clone()
            g[0] = float("inf")
        return g, loss

    monkeypatch.setattr(sim.FlatModel, "gradient", poisoned)
    res = simulate(small(algo="asgd", steps=20))
    assert res.summary["diverged"] is True and res.summary["diverged_at"] == 5 and res.summary["gradients"] == 4


@pytest.mark.parametrize("args,needle", [
    (["--rule", "nosuch", "--steps", "5"], "unknown algorithm 'nosuch'"),
    (["--rule", "softsync", "--n", "5", "--workers", "4", "--steps", "5"], "n must be in 1..workers=4"),
    (["--rule", "ga", "--n", "2", "--steps", "5"], "does not take it"),
    (["--rule", "ga"], "give a budget"),
    (["--rule", "ga", "--model", "none", "--epochs", "1"], "give steps"),
    (["--rule", "ga", "--dataset", "imagenet", "--steps", "5"], "unknown dataset"),
    (["--rule", "ga", "--delays", "bursty", "--steps", "5"], "delays must be one of"),
])
def test_cli_bad_configuration_is_one_line_and_status_2(args: list[str], needle: str, capsys) -> None:
    assert simulate_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trainers simulate: error:") and needle in err[0]


def test_config_validation_names_the_argument() -> None:
    with pytest.raises(TrainerError, match="workers"):
        AsyncConfig(workers=0, steps=1)
    with pytest.raises(TrainerError, match="momentum"):
        AsyncConfig(momentum=1.0, steps=1)
    with pytest.raises(TrainerError, match="exactly one budget"):
        AsyncConfig(steps=5, epochs=1.0)


# --------------------------------------------------------------------------- trainers run / simulate


class _Comm:
    def __init__(self, size: int) -> None:
        self.size = size

    def Get_size(self) -> int:
        return self.size

    def Get_rank(self) -> int:
        return 0


def test_trainers_cli_registers_every_async_algorithm_and_simulate() -> None:
    from trainers import run
    from trainers.asynchronous import ps
    from trainers.asynchronous.algos import ALGOS

    for name in ALGOS:
        assert run.resolve_algorithm(name) is ps.run_from_config
    module, function, _ = run.COMMANDS["simulate"]
    assert (module, function) == ("trainers.asynchronous.simulate", "simulate_main")
    assert run.main(["simulate", "--rule", "softsync", "--n", "9", "--workers", "4", "--steps", "5"]) == 2


@pytest.mark.parametrize("size,options,needle", [
    (1, (), "at least 2 MPI ranks"),
    (3, ("--opt", "n=2"), "does not take it"),
    (3, ("--opt", "bogus=1"), "unknown --opt 'bogus'"),
    (3, ("--opt", "delay_mean=fast"), "expected float"),
    (3, ("--opt", "poll=often"), "expected float"),
])
def test_run_arguments_of_the_parameter_server_bad_input_is_one_error(
        monkeypatch: pytest.MonkeyPatch, size: int, options: tuple, needle: str) -> None:
    from trainers.run import build_run_parser, config_from_args, make_parser

    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", str(size))
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    args = build_run_parser(make_parser("t")).parse_args(["--algo", "ga", "--dataset", "synthetic", "--model",
                                                          "gem-cnn", *options])
    with pytest.raises(ValueError, match=needle):
        config_from_args(args)


def test_run_arguments_build_the_parameter_servers_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """``trainers run --algo <async>`` gives an AsyncConfig: the shared fields by name, workers = ranks - 1,
    the server's defaults, --eval-every in gradients, --opt into fields or kept for the server; the
    server's options and the failure injection reach PSOptions; a wrong rank count is a UsageError."""
    from trainers.asynchronous.ps import run_from_config
    from trainers.config import PS_DEFAULTS, AsyncConfig, ps_options
    from trainers.errors import UsageError
    from trainers.run import build_run_parser, config_from_args, make_parser

    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    argv = ["--algo", "softsync", "--dataset", "synthetic", "--model", "gem-cnn", "--lr", "0.03", "--batch", "8",
            "--lr-milestones", "2,3", "--lr-gamma", "0.5", "--eval-every", "7", "--opt", "n=3", "--opt", "poll=0.01",
            "--opt", "replay_order=order.json", "--fail-rank", "2", "--fail-at-step", "5", "--threads", "2"]
    cfg = config_from_args(build_run_parser(make_parser("t")).parse_args(argv))
    assert isinstance(cfg, AsyncConfig)
    assert (cfg.algo, cfg.workers, cfg.lr, cfg.batch, cfg.n, cfg.threads) == ("softsync", 3, 0.03, 8, 3, 2)
    assert (cfg.lr_milestones, cfg.lr_gamma, cfg.eval_every_steps, cfg.epochs) == ((2.0, 3.0), 0.5, 7, 1.0)
    assert (cfg.delays, cfg.delay_mean) == (PS_DEFAULTS["delays"], PS_DEFAULTS["delay_mean"])
    assert cfg.options == (("poll", "0.01"), ("replay_order", "order.json"))
    opt = ps_options(cfg)
    assert (opt.poll_s, opt.replay_order, opt.fail_worker, opt.fail_after) == (0.01, "order.json", 1, 5)
    with pytest.raises(UsageError, match="number of MPI ranks minus one"):
        run_from_config(cfg, _Comm(3))
    with pytest.raises(UsageError, match="at least 2 MPI ranks"):
        run_from_config(cfg, _Comm(1))


def test_softsync_constant_rate_option_reaches_the_rule():
    import torch

    from trainers.config import AsyncConfig
    from trainers.asynchronous.flat_model import build_rule

    for modulate in (True, False):
        cfg = AsyncConfig(algo="softsync", model="none", workers=4, n=2, modulate=modulate, steps=10)
        assert build_rule(cfg, torch.zeros(3)).hyper.modulate is modulate
