"""Worker-side rescaling: GEM's pi on hand examples, the clamp option, kappa, the baselines, and
the three workers driving the "add" master."""

from __future__ import annotations

import pytest
import torch

from trainers.asynchronous.gem import AdaptiveStalenessWorker, DownpourWorker, GEMConfig, GEMWorker, make_worker
from trainers.asynchronous.masters import make_rule

torch.set_num_threads(1)
F64 = torch.float64


def t(*xs: float) -> torch.Tensor:
    return torch.tensor(xs, dtype=F64)


def close(a: torch.Tensor, b, atol: float = 1e-12) -> bool:
    return torch.allclose(a, torch.as_tensor(b, dtype=F64), rtol=0.0, atol=atol)


# commit 1: Delta1 = [-0.5, 0.25, 0], pulled s = [1,1,1], central now [1.25, 0.5, 1.125]
#           -> shift d = [0.25, -0.5, 0.125]
# commit 2: Delta2 = [-0.5, -0.25, 0.5], s = [0,0,0], now [0.5, 0, -1] -> d = [0.5, 0, -1]
COMMIT1 = (t(-0.5, 0.25, 0.0), t(1, 1, 1), t(1.25, 0.5, 1.125))
COMMIT2 = (t(-0.5, -0.25, 0.5), t(0, 0, 0), t(0.5, 0, -1))


def test_gem_pi_by_hand_paper_defaults():
    w = GEMWorker()  # mu 0.9, kappa 1, eps 1e-16, no clamp
    out = w.commit(*COMMIT1)
    # m = Delta1; pi = (|m| - |d|)/(|Delta| + 1e-16)
    #   = [(0.5-0.25)/0.5, (0.25-0.5)/0.25, (0-0.125)/1e-16] = [0.5, -1, -1.25e15]
    assert close(w.last_pi[:2], [0.5, -1.0]) and w.last_pi[2].item() == pytest.approx(-1.25e15)
    assert close(out, [-0.25, -0.25, 0.0])  # pi * Delta: the zero element stays 0
    out = w.commit(*COMMIT2)
    # m = 0.9*[-0.5,0.25,0] + Delta2 = [-0.95, -0.025, 0.5]
    # pi = [(0.95-0.5)/0.5, (0.025-0)/0.25, (0.5-1)/0.5] = [0.9, 0.1, -1]
    assert close(w.m, [-0.95, -0.025, 0.5])
    assert close(w.last_pi, [0.9, 0.1, -1.0])
    assert close(out, [-0.45, -0.025, -0.5])
    assert w.last_stats == pytest.approx({"pi_mean": 0.0, "pi_min": -1.0, "pi_max": 0.9, "pi_nonpositive": 1 / 3})
    assert w.commits == 2


def test_gem_kappa_amplifies_the_proxy():
    w = GEMWorker(GEMConfig(kappa=2.0))
    w.commit(*COMMIT1)
    w.commit(*COMMIT2)
    # pi = [(2*0.95-0.5)/0.5, (2*0.025-0)/0.25, (2*0.5-1)/0.5] = [2.8, 0.2, 0]
    assert close(w.last_pi, [2.8, 0.2, 0.0])


def test_gem_clamp_and_eps_of_the_pull_after_commit_clamp_variant():
    w = GEMWorker(GEMConfig.named("paper-clamp"))
    assert w.config.protocol == "paper"
    assert w.config.eps == 1e-12 and w.config.clamp == (0.0, 5.0)
    out = w.commit(*COMMIT1)
    # unclamped pi = [0.5, -1, -1.25e11] -> clamped to [0.5, 0, 0]
    assert close(w.last_pi, [0.5, 0.0, 0.0], atol=1e-10) and close(out, [-0.25, 0.0, 0.0], atol=1e-10)
    out = w.commit(*COMMIT2)
    # eps = 1e-12 moves pi by ~2e-12 relative: (0.95-0.5)/(0.5+1e-12) = 0.9 - 1.8e-12
    assert close(w.last_pi, [0.9, 0.1, 0.0], atol=1e-10) and close(out, [-0.45, -0.025, 0.0], atol=1e-10)
    # upper bound: kappa 20 on commit 1 gives pi_0 = (20*0.5 - 0.25)/0.5 = 19.5 -> 5
    w = GEMWorker(GEMConfig(kappa=20.0, clamp=(0.0, 5.0)))
    w.commit(*COMMIT1)
    assert w.last_pi[0].item() == 5.0 and w.last_stats["pi_max"] == 5.0


def test_authors_protocol_measures_the_shift_from_the_previous_pull_by_hand():
    # the authors' code pulls theta before committing and keeps it: the next shift d is measured
    # from that pull, so it contains the worker's own commit; paper: from `stale` (after the commit)
    w = GEMWorker(GEMConfig.authors_code())
    assert (w.config.protocol, w.config.eps, w.config.clamp) == ("authors", 1e-12, (0.0, 5.0))
    w.commit(*COMMIT1)  # first commit: no pull of its own yet, d from stale = [0.25, -0.5, 0.125]
    assert close(w.last_pi, [0.5, 0.0, 0.0], atol=1e-10)  # as the paper protocol on commit 1
    now = t(2.0, 0.5, 0.125)
    out = w.commit(t(-0.5, -0.25, 0.5), now.clone(), now)  # stale = now: the paper protocol sees d = 0
    # authors: d = now - [1.25, 0.5, 1.125] = [0.75, 0, -1]; m = [-0.95, -0.025, 0.5]
    # pi = [(0.95-0.75)/0.5, (0.025-0)/0.25, (0.5-1)/0.5 -> 0] = [0.4, 0.1, 0]
    assert close(w.last_pi, [0.4, 0.1, 0.0], atol=1e-10) and close(out, [-0.2, -0.025, 0.0], atol=1e-10)
    p = GEMWorker(GEMConfig.named("paper-clamp"))
    p.commit(*COMMIT1)
    p.commit(t(-0.5, -0.25, 0.5), now.clone(), now)  # d = 0: pi = [0.95/0.5, 0.025/0.25, 0.5/0.5]
    assert close(p.last_pi, [1.9, 0.1, 1.0], atol=1e-10)


def test_authors_denominator_is_abs_of_delta_plus_eps():
    # Delta = -2e-12 alone (d = 0, m = Delta): |Delta + eps| = 1e-12 -> pi = 2; |Delta| + eps = 3e-12 -> 2/3
    delta, zero = t(-2e-12), t(0.0)
    a = GEMWorker(GEMConfig(eps=1e-12, protocol="authors"))
    a.commit(delta, zero, zero)
    p = GEMWorker(GEMConfig(eps=1e-12))
    p.commit(delta, zero, zero)
    assert a.last_pi.item() == pytest.approx(2.0, rel=1e-9) and p.last_pi.item() == pytest.approx(2 / 3, rel=1e-9)


def test_authors_protocol_with_add_master_matches_a_replay_of_the_authors_worker():
    # the authors' worker loop, written out: m <- mu m + Delta; pull theta; d = theta - previous pull;
    # pi = clamp((|m| - |d|) / |Delta + eps|, 0, 5); commit pi Delta; local params = theta + pi Delta
    master = make_rule("add", t(0, 0, 0), 2)
    workers = [make_worker("gem", code="authors"), make_worker("gem", code="authors")]
    held = [master.initial_params_for(0), master.initial_params_for(1)]
    gen = torch.Generator().manual_seed(1)
    theta, m, prev_pull = t(0, 0, 0), [t(0, 0, 0), t(0, 0, 0)], [t(0, 0, 0), t(0, 0, 0)]
    for w in [0, 1, 1, 0, 1, 0, 0]:
        delta = -0.05 * torch.randn(3, generator=gen, dtype=F64)
        held[w] = master.apply(w, workers[w].commit(delta, held[w], master.params.clone()))
        m[w] = 0.9 * m[w] + delta
        d, prev_pull[w] = theta - prev_pull[w], theta.clone()
        pi = ((m[w].abs() - d.abs()) / (delta + 1e-12).abs()).clamp(0.0, 5.0)
        theta = theta + pi * delta
        assert close(held[w], theta, atol=1e-15) and close(workers[w].last_pi, pi, atol=1e-12)


def test_single_gem_worker_with_constant_gradient_is_momentum_sgd():
    # alone, the central shift since its pull is zero, so pi = |m|/|Delta| and the commit is m:
    # 1 + 0.9 + 0.9^2 + ... times Delta, i.e. heavy-ball momentum with constant gradient
    w = GEMWorker(GEMConfig(eps=1e-300))
    delta = t(-0.1, 0.2, 0.3)
    theta = t(0, 0, 0)
    expect = 0.0
    for k in range(5):
        expect = 0.9 * expect + 1.0
        out = w.commit(delta, theta.clone(), theta.clone())
        assert close(out, delta * expect, atol=1e-14)
        theta = theta + out


def test_downpour_and_adaptive_staleness_by_hand():
    d = t(1.0, -2.0, 4.0)
    out = DownpourWorker().commit(d)
    assert torch.equal(out, d) and out is not d
    assert close(AdaptiveStalenessWorker().commit(d, tau=3), [0.25, -0.5, 1.0])
    with pytest.raises(ValueError, match="tau"):
        AdaptiveStalenessWorker().commit(d)


def test_adaptive_staleness_with_add_master():
    master, worker = make_rule("add", t(0, 0, 0), 3), AdaptiveStalenessWorker()
    for w in range(3):
        master.initial_params_for(w)
    # w0 tau 0: +[1,1,1] -> [1,1,1]; w1 tau 1: +[2,2,2]/2 -> [2,2,2]; w2 tau 2: +[3,0,3]/3 -> [3,2,3]
    for w, delta in [(0, t(1, 1, 1)), (1, t(2, 2, 2)), (2, t(3, 0, 3))]:
        out = master.apply(w, worker.commit(delta, tau=master.staleness(w)))
    assert close(out, [3, 2, 3])
    assert master.stats["tau_hist"] == {0: 1, 1: 1, 2: 1}


def test_gem_workers_with_add_master_match_a_manual_replay():
    # two GEM workers on the add master; replay the same arithmetic by hand-written formulas
    master = make_rule("add", t(0, 0, 0), 2)
    workers = [GEMWorker(), GEMWorker()]
    held = [master.initial_params_for(0), master.initial_params_for(1)]
    gen = torch.Generator().manual_seed(0)
    theta, m, pulled = t(0, 0, 0), [t(0, 0, 0), t(0, 0, 0)], [t(0, 0, 0), t(0, 0, 0)]
    for w in [0, 1, 1, 0, 1, 0]:
        delta = -0.05 * torch.randn(3, generator=gen, dtype=F64)
        held[w] = master.apply(w, workers[w].commit(delta, held[w], master.params.clone()))
        m[w] = 0.9 * m[w] + delta
        pi = (m[w].abs() - (theta - pulled[w]).abs()) / (delta.abs() + 1e-16)
        theta = theta + pi * delta
        pulled[w] = theta.clone()
        assert close(held[w], theta, atol=1e-15)


def test_make_worker_and_errors():
    assert isinstance(make_worker("gem", kappa=2.0), GEMWorker)
    assert make_worker("gem", code="authors").config == GEMConfig.authors_code()
    assert make_worker("gem", code="paper-clamp").config.clamp == (0.0, 5.0)
    assert make_worker("gem", code="paper").config == GEMConfig()
    with pytest.raises(ValueError, match="paper-clamp"):
        make_worker("gem", code="clamped")
    with pytest.raises(ValueError, match="protocol"):
        GEMConfig(protocol="pull-first")
    assert isinstance(make_worker("downpour"), DownpourWorker)
    assert make_worker("adaptive-staleness").needs_tau
    with pytest.raises(ValueError, match="downpour"):
        make_worker("hogwild")
    with pytest.raises(ValueError, match="alpha"):
        make_worker("gem", alpha=1.0)
    with pytest.raises(ValueError, match="kappa"):
        GEMConfig(kappa=0.0)
    with pytest.raises(ValueError, match="momentum"):
        GEMConfig(momentum=1.0)
    with pytest.raises(ValueError, match="clamp"):
        GEMConfig(clamp=(5.0, 0.0))
    with pytest.raises(ValueError, match="central_now"):
        GEMWorker().commit(t(1, 1, 1), t(0, 0, 0))
