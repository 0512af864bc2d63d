"""reproduce/hermans2018: the 100-worker sweep resumes where it stopped and keeps to --workers (no runs:
the simulation is replaced by a stub that records what it was asked to run)."""

import argparse

import pandas as pd
import pytest

import reproduce.hermans2018 as h


def _stub(calls: list[str], interrupt_at: int | None = None):
    def simulate(run, out, args):
        if run.reuse_only:  # as the real one: a too-long run without its log is skipped
            raise FileNotFoundError(out / "runs" / f"{run.name}.jsonl")
        calls.append(run.name)
        if interrupt_at is not None and len(calls) == interrupt_at:
            raise KeyboardInterrupt
        acc = {"gem": 0.9, "downpour": 0.1135}[run.rule]
        summary = {"final_test_acc": acc, "gradients": int(run.workers * run.epochs_per_worker * 937.5),
                   "tau_mean": 99.0, "_log": f"runs/{run.name}.jsonl", "_evals": [], "_losses": [2.3, 1.0]}
        return h._config(run, False), summary, 1.0

    return simulate


def test_n100_sweep_resumes_after_an_interruption_and_redoes_nothing(tmp_path, monkeypatch):
    args = argparse.Namespace(scale="small", seeds=(0,), with_n100=False, workers=(100,), no_progress=True)
    calls: list[str] = []
    monkeypatch.setattr(h, "simulate", _stub(calls, interrupt_at=3))
    with pytest.raises(KeyboardInterrupt):
        h.workers_sweep(args, tmp_path)
    f = f"{h.N100_F:g}"
    assert calls == [f"gem-paper_n100_f{f}_lr0.05_s0", f"gem-authors_n100_f{f}_lr0.05_s0",
                     f"gem-paper-clamp_n100_f{f}_lr0.05_s0"]
    done = pd.read_csv(tmp_path / "workers_sweep.csv")
    assert done.protocol.tolist() == ["paper", "authors"]  # the interrupted run left no row
    calls.clear()
    monkeypatch.setattr(h, "simulate", _stub(calls))
    h.workers_sweep(args, tmp_path)
    assert calls == [f"gem-paper-clamp_n100_f{f}_lr0.05_s0", f"downpour_n100_f{f}_lr0.05_s0"]
    rows = pd.read_csv(tmp_path / "workers_sweep.csv", keep_default_na=False)
    assert rows.workers.eq(100).all() and rows.epochs_per_worker.eq(h.N100_F).all()
    assert rows.protocol.tolist() == ["paper", "authors", "paper-clamp", "n/a"]
    assert rows.outcome.tolist() == ["stable", "stable", "stable", "collapsed"]
    assert rows.note.str.startswith(f"REDUCED: every worker {f} of an epoch").all()
    assert (rows.paper_value == "").all()  # the published 99.38% is for one full epoch per worker
    calls.clear()
    h.workers_sweep(args, tmp_path)  # everything finished: nothing started again
    assert calls == [] and len(pd.read_csv(tmp_path / "workers_sweep.csv")) == 4


def test_n100_runs_get_a_timeout_by_their_length():
    run = h.SimRun("gem", 100, h.N100_F, protocol="paper")
    assert h.timeout_s(run, "small") == pytest.approx(max(900.0, 100 * h.N100_F * 60_000 / 64 / h.MIN_RATE))
    assert h.timeout_s(h.SimRun("gem", 5, h.SMALL_F, protocol="paper"), "small") == 900.0
    assert h.timeout_s(h.SimRun("gem", 100, 1.0, protocol="paper"), "small") == h.FULL_EPOCH_TIMEOUT_S
