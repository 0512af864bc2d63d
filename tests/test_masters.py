"""Master update rules: hand-computed steps on 3-element vectors, the papers' identities, tau
bookkeeping, the gap variants, agreement with torch.optim, and argument errors."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.asynchronous.masters import RULES, make_rule, rule_names

torch.set_num_threads(1)
F64 = torch.float64


def t(*xs: float) -> torch.Tensor:
    return torch.tensor(xs, dtype=F64)


def close(a: torch.Tensor, b, atol: float = 1e-12) -> bool:
    b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=F64)
    return torch.allclose(a.to(F64), b.to(F64), rtol=0.0, atol=atol)


# ------------------------------------------------------------------ hand-computed updates


def test_asgd_by_hand():
    r = make_rule("asgd", t(1, 2, 3), 2, lr=0.5)
    # theta1 = [1,2,3] - 0.5*[1,0,-2] = [0.5, 2, 4]
    assert close(r.apply(0, t(1, 0, -2)), [0.5, 2, 4])
    # w1's gradient is stale (computed on theta0); asgd ignores that: theta2 = theta1 - 0.5*[2,2,2]
    assert close(r.apply(1, t(2, 2, 2)), [-0.5, 1, 3])
    r.lr = 0.25  # the trainer changes the rate: theta3 = theta2 - 0.25*[4,-4,0] = [-1.5, 2, 3]
    out = r.apply(0, t(4, -4, 0))
    assert close(out, [-1.5, 2, 3]) and close(r.params, [-1.5, 2, 3])
    assert r.clock == 3


def test_nag_asgd_by_hand():
    r = make_rule("nag-asgd", t(1, 2, 3), 1, lr=0.1, momentum=0.5)
    # v = [1,2,4]; dir = g + 0.5 v = [1.5,3,6]; theta1 = [1,2,3] - 0.1*dir = [0.85,1.7,2.4]
    assert close(r.apply(0, t(1, 2, 4)), [0.85, 1.7, 2.4])
    # v = 0.5*[1,2,4] + [2,0,-2] = [2.5,1,0]; dir = [2,0,-2] + 0.5*[2.5,1,0] = [3.25,0.5,-2]
    # theta2 = [0.85-0.325, 1.7-0.05, 2.4+0.2] = [0.525, 1.65, 2.6]
    assert close(r.apply(0, t(2, 0, -2)), [0.525, 1.65, 2.6])


def test_heavy_ball_asgd_by_hand():
    r = make_rule("nag-asgd", t(1, 2, 3), 1, lr=0.1, momentum=0.5, nesterov=False)
    # Alg. 2: v = [1,2,4]; theta1 = [0.9,1.8,2.6]; v = [2.5,1,0]; theta2 = [0.65,1.7,2.6]
    assert close(r.apply(0, t(1, 2, 4)), [0.9, 1.8, 2.6])
    assert close(r.apply(0, t(2, 0, -2)), [0.65, 1.7, 2.6])


def test_sa_alg3_by_hand():
    r = make_rule("sa", t(1, 2, 3), 2, lr=0.1, momentum=0.5)
    # w0 at clock 0, sent at 0: tau 0, delay d = 1 -> a plain NAG step: theta1 = [0.85,1.7,2.4]
    assert close(r.apply(0, t(1, 2, 4)), [0.85, 1.7, 2.4])
    # w1 sent at 0, clock 1: d = 2. v = [2.5,1,0]; dir = [3.25,0.5,-2]
    # theta2 = theta1 - (0.1/2)*dir = [0.85-0.1625, 1.7-0.025, 2.4+0.1] = [0.6875, 1.675, 2.5]
    assert close(r.apply(1, t(2, 0, -2)), [0.6875, 1.675, 2.5])
    # w0 sent at 1, clock 2: d = 2. v = 0.5*[2.5,1,0] + [-2,4,0] = [-0.75,4.5,0]
    # dir = [-2,4,0] + 0.5*v = [-2.375, 6.25, 0]; theta3 = theta2 - 0.05*dir = [0.80625, 1.3625, 2.5]
    assert close(r.apply(0, t(-2, 4, 0)), [0.80625, 1.3625, 2.5])
    assert r.stats["tau_hist"] == {0: 1, 1: 2}


def test_sa_alg5_gradient_variant_by_hand():
    r = make_rule("sa", t(1, 2, 3), 2, lr=0.1, momentum=0.5, variant="gradient")
    assert close(r.apply(0, t(1, 2, 4)), [0.85, 1.7, 2.4])  # d = 1: same as NAG
    # d = 2: g' = [1,0,-1]; v = 0.5*[1,2,4] + g' = [1.5,1,1]; dir = g' + 0.5 v = [1.75,0.5,-0.5]
    # theta2 = theta1 - 0.1*dir = [0.675, 1.65, 2.45]
    assert close(r.apply(1, t(2, 0, -2)), [0.675, 1.65, 2.45])


def test_softsync_c1_by_hand():
    r = make_rule("softsync", t(0, 0, 0), 3, lr=0.3, n=3)  # c = floor(3/3) = 1
    # w0 tau 0 -> alpha = eta0: theta1 = -0.3*[3,6,9] = [-0.9,-1.8,-2.7]
    assert close(r.apply(0, t(3, 6, 9)), [-0.9, -1.8, -2.7])
    # w1 sent at 0, clock 1: tau 1 -> eta0/1: theta2 = theta1 - 0.3*[1,1,1] = [-1.2,-2.1,-3.0]
    assert close(r.apply(1, t(1, 1, 1)), [-1.2, -2.1, -3.0])
    # w2 tau 2 -> eta0/2: theta3 = theta2 - 0.3*[1,2,3] = [-1.5,-2.7,-3.9]
    assert close(r.apply(2, t(2, 4, 6)), [-1.5, -2.7, -3.9])
    # w0 sent at 1, clock 3: tau 2: theta4 = theta3 - 0.3*[1.5,0,-1.5] = [-1.95,-2.7,-3.45]
    assert close(r.apply(0, t(3, 0, -3)), [-1.95, -2.7, -3.45])
    assert r.stats["tau_hist"] == {0: 1, 1: 1, 2: 2}


def test_softsync_c2_buffers_and_returns_current_params():
    r = make_rule("softsync", t(0, 0, 0), 4, lr=0.5, n=2)  # c = floor(4/2) = 2
    assert r.c == 2
    # w0 (tau 0) is buffered; it gets the current (unchanged) parameters back at once
    out = r.apply(0, t(1, 0, 0))
    assert out is not None and close(out, [0, 0, 0]) and r.clock == 0
    # w1 (tau 0) completes the buffer: theta1 = -0.5*([1,0,0]+[0,1,0])/2 = [-0.25,-0.25,0]
    assert close(r.apply(1, t(0, 1, 0)), [-0.25, -0.25, 0]) and r.clock == 1
    # w2, w3 were sent theta0: tau 1 each (alpha = eta0/1): u = ([2,2,2]+[0,0,4])/2 = [1,1,3]
    assert close(r.apply(2, t(2, 2, 2)), [-0.25, -0.25, 0])
    # theta2 = theta1 - 0.5*[1,1,3] = [-0.75,-0.75,-1.5]
    assert close(r.apply(3, t(0, 0, 4)), [-0.75, -0.75, -1.5])
    # w0 sent at clock 0, now 2: tau 2 -> [4,0,0]/2; w1 sent at 1: tau 1 -> [0,2,0]
    # u = ([2,0,0]+[0,2,0])/2 = [1,1,0]; theta3 = theta2 - 0.5*u = [-1.25,-1.25,-1.5]
    r.apply(0, t(4, 0, 0))
    assert close(r.apply(1, t(0, 2, 0)), [-1.25, -1.25, -1.5])
    s = r.stats
    assert s["tau_hist"] == {0: 2, 1: 3, 2: 1} and s["updates"] == 3 and s["gradients"] == 6 and s["c"] == 2


def test_softsync_c_is_floor_when_n_does_not_divide_N():
    r = make_rule("softsync", t(0, 0, 0), 5, lr=0.5, n=2)  # c = floor(5/2) = 2 (not ceil = 3)
    assert r.c == 2
    assert close(r.apply(0, t(1, 0, 0)), [0, 0, 0]) and r.clock == 0  # buffered
    # the 2nd gradient completes the update: theta1 = -0.5*([1,0,0]+[0,1,0])/2 = [-0.25,-0.25,0]
    assert close(r.apply(1, t(0, 1, 0)), [-0.25, -0.25, 0]) and r.clock == 1
    # w2, w3 sent theta0, clock 1: tau 1 each; u = ([2,2,2]+[0,0,4])/2 = [1,1,3]
    assert close(r.apply(2, t(2, 2, 2)), [-0.25, -0.25, 0]) and r.clock == 1
    # theta2 = theta1 - 0.5*[1,1,3] = [-0.75,-0.75,-1.5]
    assert close(r.apply(3, t(0, 0, 4)), [-0.75, -0.75, -1.5]) and r.clock == 2
    # w4 sent theta0, clock 2: tau 2 -> buffered as [2,0,0]/2; parameters unchanged
    assert close(r.apply(4, t(2, 0, 0)), [-0.75, -0.75, -1.5])
    s = r.stats
    assert s["updates"] == 2 and s["gradients"] == 5 and s["buffered"] == 1 and s["tau_hist"] == {0: 2, 1: 2, 2: 1}


def test_softsync_momentum_by_hand():
    r = make_rule("softsync", t(0, 0, 0), 1, lr=0.1, momentum=0.5)
    # v = [1,2,3]; theta1 = [-0.1,-0.2,-0.3]; v = 0.5*[1,2,3] + [1,1,1] = [1.5,2,2.5]
    # theta2 = theta1 - 0.1*v = [-0.25,-0.4,-0.55]
    r.apply(0, t(1, 2, 3))
    assert close(r.apply(0, t(1, 1, 1)), [-0.25, -0.4, -0.55])


def _ew(f, *vs):
    """Element-wise plain-float arithmetic over equal-length lists (the 'hand' side)."""
    return [f(*xs) for xs in zip(*vs)]


def test_ga_parameterwise_with_alg14_c_by_hand():
    eta, beta, eps, gamma = 0.1, 0.999, 1e-8, 0.5
    r = make_rule("ga", t(1, 2, 3), 2, lr=eta, momentum=gamma, nesterov=False)
    g1, g2 = [1.0, -2.0, 0.5], [2.0, 2.0, -1.0]
    # step 1 (w0, fresh): u = gamma*0 + g1; m = 0.001*g1^2; m^ = m/(1-0.999) = g1^2
    # C = 0.1*(|g1| + 1e-8) = [0.1, 0.2, 0.05]; theta = theta_sent -> G = 1; v = g1
    # theta1 = [1,2,3] - 0.1*g1 = [0.9, 2.2, 2.95]
    assert close(r.apply(0, t(*g1)), [0.9, 2.2, 2.95])
    assert close(r._meter.coefficient(), [0.1 + 1e-9, 0.2 + 1e-9, 0.05 + 1e-9])
    assert close(r.last_gap, [1, 1, 1])
    # step 2 (w1, sent theta0) at a smaller rate: eta_max stays 0.1 (largest so far)
    r.lr = 0.05
    u = _ew(lambda v, g: gamma * v + g, g1, g2)  # [2.5, 1, -0.75]
    m = _ew(lambda a, b: beta * (1 - beta) * a * a + (1 - beta) * b * b, g1, u)  # [0.007249, 0.004996, 0.00081225]
    m_hat = [x / (1 - beta**2) for x in m]  # [3.62631, 2.49925, 0.40633]
    c = [eta * (math.sqrt(x) + eps) for x in m_hat]  # [0.190429, 0.158090, 0.0637439]
    diff = [0.1, 0.2, 0.05]  # |theta1 - theta0|
    gap = _ew(lambda d, cc: d / cc + 1, diff, c)  # [1.52513, 2.26510, 1.78439]
    v = _ew(lambda a, b, gg: gamma * a + b / gg, g1, g2, gap)
    theta2 = _ew(lambda th, vv: th - 0.05 * vv, [0.9, 2.2, 2.95], v)
    assert close(torch.tensor(gap, dtype=F64), [1.52513, 2.26510, 1.78439], atol=1e-5)
    assert close(r.apply(1, t(*g2)), theta2)
    assert close(r._meter.coefficient(), c)
    s = r.stats
    assert math.isclose(s["gap_mean"], (1.0 + sum(gap) / 3) / 2, rel_tol=1e-12)
    assert math.isclose(s["gap_max"], max(gap), rel_tol=1e-12)
    assert s["c_eta_max"] == 0.1


def test_weight_decay_uses_the_parameters_the_worker_was_sent():
    r = make_rule("asgd", t(1, 2, 3), 2, lr=0.5, weight_decay=0.1)
    # w0: g + 0.1*theta0 = [0.1,0.2,0.3]; theta1 = [1,2,3] - 0.5*[0.1,0.2,0.3] = [0.95,1.9,2.85]
    assert close(r.apply(0, t(0, 0, 0)), [0.95, 1.9, 2.85])
    # w1 still holds theta0, so its decay term is 0.1*theta0 again (not 0.1*theta1):
    # theta2 = theta1 - 0.05*[1,2,3] = [0.9,1.8,2.7]
    assert close(r.apply(1, t(0, 0, 0)), [0.9, 1.8, 2.7])


def test_ga_divides_weight_decay_by_the_gap():
    r = make_rule("ga", t(1, 2, 3), 2, lr=0.1, momentum=0.0, weight_decay=1.0)
    # w0, g = 0: g_eff = 1.0*theta0 = [1,2,3]; G = 1; theta1 = theta0 - 0.1*theta0 = [0.9,1.8,2.7]
    assert close(r.apply(0, t(0, 0, 0)), [0.9, 1.8, 2.7])
    # w1 holds theta0, g = 0: g_eff = [1,2,3] again; m^ = (0.999*0.001 + 0.001)*theta0^2 / 0.001999
    # = theta0^2, so C = 0.1*(theta0 + 1e-8) ~ [0.1,0.2,0.3] = |theta1 - theta0| -> G ~ 2 everywhere
    # theta2 = theta1 - 0.1*[1,2,3]/2 = [0.85,1.7,2.55]
    assert close(r.apply(1, t(0, 0, 0)), [0.85, 1.7, 2.55], atol=1e-9)
    assert close(r.last_gap, [2, 2, 2], atol=1e-7)


def _layer_and_global_two_steps(gap_mode: str):
    r = make_rule(
        "ga", t(1, 2, 3), 2, lr=0.1, momentum=0.0, nesterov=False, gap=gap_mode, segments=(("a", 2), ("b", 1))
    )
    r.apply(0, t(3, 4, 1))  # theta1 = [0.7, 1.6, 2.9]; m^ = g1^2 = [9, 16, 1]; G = 1
    return r


def test_ga_layerwise_by_hand():
    beta = 0.999
    r = _layer_and_global_two_steps("layer")
    g1, g2 = [3.0, 4.0, 1.0], [0.0, 3.0, 2.0]
    # step 2: m^ = (0.999*0.001*g1^2 + 0.001*g2^2) / (1 - 0.999^2) = [4.49775, 12.49825, 2.50075]
    m_hat = _ew(lambda a, b: (beta * (1 - beta) * a * a + (1 - beta) * b * b) / (1 - beta**2), g1, g2)
    # layer a = elements 0,1: C_a = 0.1*(sqrt(4.49775 + 12.49825) + 1e-8) = 0.412262; ||[0.3,0.4]|| = 0.5
    c_a = 0.1 * (math.sqrt(m_hat[0] + m_hat[1]) + 1e-8)
    # layer b = element 2: C_b = 0.1*(sqrt(2.50075) + 1e-8) = 0.158138; ||[0.1]|| = 0.1
    c_b = 0.1 * (math.sqrt(m_hat[2]) + 1e-8)
    g_a, g_b = 0.5 / c_a + 1, 0.1 / c_b + 1  # 2.21283, 1.63236
    assert abs(g_a - 2.21283) < 1e-5 and abs(g_b - 1.63236) < 1e-5
    out = r.apply(1, t(*g2))
    assert close(r.last_gap, [g_a, g_a, g_b])
    assert close(out, [0.7 - 0.1 * 0 / g_a, 1.6 - 0.1 * 3 / g_a, 2.9 - 0.1 * 2 / g_b])
    assert math.isclose(r.stats["gap_max"], g_a, rel_tol=1e-12)


def test_ga_global_by_hand():
    beta = 0.999
    r = _layer_and_global_two_steps("global")
    g1, g2 = [3.0, 4.0, 1.0], [0.0, 3.0, 2.0]
    m_hat = _ew(lambda a, b: (beta * (1 - beta) * a * a + (1 - beta) * b * b) / (1 - beta**2), g1, g2)
    # C = 0.1*(sqrt(sum m^) + 1e-8) = 0.1*sqrt(19.4967) = 0.441551; ||theta1 - theta0|| = sqrt(0.26)
    c = 0.1 * (math.sqrt(sum(m_hat)) + 1e-8)
    gap = math.sqrt(0.26) / c + 1  # 2.15480
    assert abs(gap - 2.15480) < 1e-5
    out = r.apply(1, t(*g2))
    assert close(out, [0.7, 1.6 - 0.3 / gap, 2.9 - 0.2 / gap])
    assert math.isclose(r.stats["gap_mean"], (1 + gap) / 2, rel_tol=1e-12)


def test_dana_by_hand():
    r = make_rule("dana", t(1, 2, 3), 2, lr=0.1, momentum=0.5)
    assert close(r.initial_params_for(0), [1, 2, 3]) and close(r.initial_params_for(1), [1, 2, 3])
    # w0: v0 = [1,2,4]; theta1 = [0.9,1.8,2.6]; look-ahead = theta1 - 0.1*0.5*(v0+v1) = [0.85,1.7,2.4]
    assert close(r.apply(0, t(1, 2, 4)), [0.85, 1.7, 2.4])
    # w1: v1 = [2,0,-2]; theta2 = theta1 - 0.1*v1 = [0.7,1.8,2.8]; sum v = [3,2,2]
    # look-ahead = [0.7-0.15, 1.8-0.1, 2.8-0.1] = [0.55,1.7,2.7]
    assert close(r.apply(1, t(2, 0, -2)), [0.55, 1.7, 2.7])
    # w0: v0 = 0.5*[1,2,4] + [0,2,0] = [0.5,3,2]; theta3 = theta2 - 0.1*v0 = [0.65,1.5,2.6]
    # sum v = [2.5,3,0]; look-ahead = [0.65-0.125, 1.5-0.15, 2.6] = [0.525,1.35,2.6]
    assert close(r.apply(0, t(0, 2, 0)), [0.525, 1.35, 2.6])
    assert close(r.params, [0.65, 1.5, 2.6])


def test_dana_sa_by_hand():
    r = make_rule("dana-sa", t(1, 2, 3), 2, lr=0.1, momentum=0.5)
    assert close(r.apply(0, t(1, 2, 4)), [0.85, 1.7, 2.4])  # d = 1: as DANA
    # w1: d = 2, g/2 = [1,0,-1] = v1; theta2 = [0.8,1.8,2.7]; sum v = [2,2,3]
    # look-ahead = theta2 - 0.05*[2,2,3] = [0.7,1.7,2.55]
    assert close(r.apply(1, t(2, 0, -2)), [0.7, 1.7, 2.55])
    # w0 sent at clock 1, now 2: d = 2, g/2 = [0,1,0]; v0 = [0.5,1,2] + [0,1,0] = [0.5,2,2]
    # theta3 = theta2 - 0.1*v0 = [0.75,1.6,2.5]; sum v = [1.5,2,1]; look-ahead = [0.675,1.5,2.45]
    assert close(r.apply(0, t(0, 2, 0)), [0.675, 1.5, 2.45])


def test_dana_ga_by_hand_gap_against_lookahead():
    eta, beta, eps, gamma = 0.1, 0.999, 1e-8, 0.5
    r = make_rule("dana-ga", t(1, 2, 3), 2, lr=eta, momentum=gamma)
    g1, g2, g3 = [1.0, -2.0, 0.5], [2.0, 2.0, -1.0], [1.0, 1.0, 1.0]
    # step 1 (w0): G = 1; v0 = g1; theta1 = [0.9,2.2,2.95]; look-ahead sent = theta1 - 0.05*g1
    la0 = [0.85, 2.3, 2.925]
    assert close(r.apply(0, t(*g1)), la0)
    # step 2 (w1, holding theta0): u = 0.5*v1 + g2 = g2; m^ = (0.999*0.001*g1^2 + 0.001*g2^2)/(1-0.999^2)
    m = _ew(lambda a, b: beta * (1 - beta) * a * a + (1 - beta) * b * b, g1, g2)
    gap2 = _ew(lambda d, mm: abs(d) / (eta * (math.sqrt(mm / (1 - beta**2)) + eps)) + 1, [-0.1, 0.2, -0.05], m)
    v1 = _ew(lambda g, gg: g / gg, g2, gap2)
    theta2 = _ew(lambda th, v: th - eta * v, [0.9, 2.2, 2.95], v1)
    vsum = _ew(lambda a, b: a + b, g1, v1)
    la1 = _ew(lambda th, s: th - eta * gamma * s, theta2, vsum)
    assert close(r.apply(1, t(*g2)), la1)
    # step 3 (w0, holding the look-ahead la0): u = 0.5*v0 + g3 = [1.5, 0, 1.25]; gap vs la0
    u3 = _ew(lambda v, g: gamma * v + g, g1, g3)
    m = _ew(lambda mm, uu: beta * mm + (1 - beta) * uu * uu, m, u3)
    gap3 = _ew(lambda th, s, mm: abs(th - s) / (eta * (math.sqrt(mm / (1 - beta**3)) + eps)) + 1, theta2, la0, m)
    v0 = _ew(lambda v, g, gg: gamma * v + g / gg, g1, g3, gap3)
    theta3 = _ew(lambda th, v: th - eta * v, theta2, v0)
    vsum = _ew(lambda a, b: a + b, v0, v1)
    la0 = _ew(lambda th, s: th - eta * gamma * s, theta3, vsum)
    assert close(r.apply(0, t(*g3)), la0)
    assert close(r.last_gap, gap3)
    assert close(r.params, theta3)


def _adam_step2(g1, g2, first_input, b1=0.9, b2=0.999, eps=1e-8):
    """Hand form of Adam's second step; first_input = what enters the first moment at step 2."""
    m = _ew(lambda a, b: b1 * (1 - b1) * a + (1 - b1) * b, g1, first_input)
    s = _ew(lambda a, b: b2 * (1 - b2) * a * a + (1 - b2) * b * b, g1, g2)
    return _ew(lambda mm, ss: (mm / (1 - b1**2)) / (math.sqrt(ss / (1 - b2**2)) + eps), m, s)


G1, G2 = [1.0, -2.0, 0.5], [2.0, 2.0, -1.0]
# step 1 of every Adam variant: m^ = g1, s^ = g1^2, step = 0.01*g1/(|g1| + 1e-8) ~ 0.01*sign(g1)
THETA1_ADAM = [1 - 0.01 * (1 / (1 + 1e-8)), 2 + 0.01 * (2 / (2 + 1e-8)), 3 - 0.01 * (0.5 / (0.5 + 1e-8))]


def test_adam_by_hand():
    r = make_rule("adam", t(1, 2, 3), 2, lr=0.01)
    assert close(r.apply(0, t(*G1)), THETA1_ADAM)
    # m = 0.09*g1 + 0.1*g2 = [0.29,0.02,-0.055]; m^ = m/0.19; s^ = (0.000999 g1^2 + 0.001 g2^2)/0.001999
    # step = m^/(sqrt(s^)+eps) = [0.965182, 0.0526316, -0.366104]
    step = _adam_step2(G1, G2, G2)
    assert close(torch.tensor(step, dtype=F64), [0.965182, 0.0526316, -0.366104], atol=1e-6)
    assert close(r.apply(1, t(*G2)), _ew(lambda th, st: th - 0.01 * st, THETA1_ADAM, step))


def test_adam_sa_by_hand():
    r = make_rule("adam-sa", t(1, 2, 3), 2, lr=0.01)
    r.apply(0, t(*G1))  # d = 1: as Adam
    # w1: d = 2, only the first moment sees g2/2; the second moment sees g2
    step = _adam_step2(G1, G2, [x / 2 for x in G2])
    assert close(r.apply(1, t(*G2)), _ew(lambda th, st: th - 0.01 * st, THETA1_ADAM, step))


def test_adam_ga_by_hand():
    beta, eta = 0.999, 0.01
    r = make_rule("adam-ga", t(1, 2, 3), 2, lr=eta)
    r.apply(0, t(*G1))
    # C tracks Adam's unpenalized step direction: u1 = g1/(|g1|+eps) ~ sign(g1), u2 = step of test_adam
    u1 = [g / (abs(g) + 1e-8) for g in G1]
    u2 = _adam_step2(G1, G2, G2)
    m_hat = _ew(lambda a, b: (beta * (1 - beta) * a * a + (1 - beta) * b * b) / (1 - beta**2), u1, u2)
    diff = _ew(lambda a, b: abs(a - b), THETA1_ADAM, [1, 2, 3])  # ~ 0.01 each: one Adam step
    gap = _ew(lambda d, mm: d / (eta * (math.sqrt(mm) + 1e-8)) + 1, diff, m_hat)
    step = _adam_step2(G1, G2, _ew(lambda g, gg: g / gg, G2, gap))
    assert close(r.apply(1, t(*G2)), _ew(lambda th, st: th - eta * st, THETA1_ADAM, step))
    assert close(r.last_gap, gap)


def test_add_by_hand_and_staleness():
    r = make_rule("add", t(1, 2, 3), 2)
    assert close(r.apply(0, t(0.5, 0, -1)), [1.5, 2, 2])  # theta + update
    assert r.staleness(1) == 1 and r.staleness(0) == 0
    assert close(r.apply(1, t(1, 1, 1)), [2.5, 3, 3])
    assert r.stats["tau_hist"] == {0: 1, 1: 1}


# ------------------------------------------------------------------ identities


def _quad(seed: int, d: int = 3):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(d, d, generator=gen, dtype=F64)
    a = a @ a.T / d + torch.eye(d, dtype=F64)
    b = torch.randn(d, generator=gen, dtype=F64)
    noise = torch.randn(200, d, generator=gen, dtype=F64) * 0.3
    return lambda x, k: a @ x - b + noise[k]


def _drive_fresh(rule, order, grad_fn):
    """Each gradient is computed on parameters the worker pulls just before: every tau = 0."""
    outs = []
    for k, w in enumerate(order):
        x = rule.pull(w)
        outs.append(rule.apply(w, grad_fn(x, k)))
    return outs


def _drive_async(rule, order, grad_fn, check_stale: bool = False):
    """Workers start from initial_params_for and compute on what they were sent last."""
    held = {w: rule.initial_params_for(w) for w in range(rule.n_workers)}
    outs = []
    for k, w in enumerate(order):
        x = held[w]
        if check_stale and rule._sent is not None:
            assert torch.equal(x, rule._sent[w])  # stale_params equals what was sent
        held[w] = rule.apply(w, grad_fn(x, k), stale_params=x.clone() if check_stale else None)
        outs.append(held[w])
    return outs


ORDER = [int(i) for i in torch.randint(0, 4, (40,), generator=torch.Generator().manual_seed(3))]


def _same(outs_a, outs_b, atol=1e-12):
    assert len(outs_a) == len(outs_b)
    for a, b in zip(outs_a, outs_b):
        assert torch.allclose(a, b, rtol=0.0, atol=atol)


@pytest.mark.parametrize("gap", ["parameter", "layer", "global"])
def test_ga_with_zero_gap_equals_nag_asgd(gap):
    x0 = t(0.5, -1.0, 2.0)
    ga = make_rule("ga", x0, 4, lr=0.05, weight_decay=0.01, gap=gap, segments=(("w", 2), ("b", 1)))
    nag = make_rule("nag-asgd", x0, 4, lr=0.05, weight_decay=0.01)
    f = _quad(0)
    _same(_drive_fresh(ga, ORDER, f), _drive_fresh(nag, ORDER, f))
    assert ga.stats["gap_max"] == 1.0


def test_ga_with_huge_c_equals_nag_asgd_under_staleness():
    x0 = t(0.5, -1.0, 2.0)
    ga = make_rule("ga", x0, 4, lr=0.05, eta_max=1e300)  # G = |diff|/C + 1 == 1 in float64
    nag = make_rule("nag-asgd", x0, 4, lr=0.05)
    f = _quad(1)
    _same(_drive_async(ga, ORDER, f), _drive_async(nag, ORDER, f))
    assert ga.stats["tau_max"] > 1


@pytest.mark.parametrize("variant", ["step", "gradient"])
def test_sa_with_every_delay_one_equals_nag_asgd(variant):
    x0 = t(0.5, -1.0, 2.0)
    sa = make_rule("sa", x0, 4, lr=0.05, variant=variant, weight_decay=0.01)
    nag = make_rule("nag-asgd", x0, 4, lr=0.05, weight_decay=0.01)
    f = _quad(2)
    _same(_drive_fresh(sa, ORDER, f), _drive_fresh(nag, ORDER, f))
    assert sa.stats["tau_hist"] == {0: len(ORDER)}  # tau = 0 <=> Barkai's delay = 1


@pytest.mark.parametrize(("penalized", "plain"), [("dana-sa", "dana"), ("adam-sa", "adam")])
def test_penalties_vanish_without_staleness(penalized, plain):
    x0 = t(0.5, -1.0, 2.0)
    lr = 0.01 if "adam" in plain else 0.05
    a, b = make_rule(penalized, x0, 4, lr=lr), make_rule(plain, x0, 4, lr=lr)
    f = _quad(4)
    _same(_drive_fresh(a, ORDER, f), _drive_fresh(b, ORDER, f))


@pytest.mark.parametrize(("penalized", "plain"), [("dana-ga", "dana"), ("adam-ga", "adam")])
def test_gap_rules_with_huge_c_equal_their_plain_rule(penalized, plain):
    # DANA-GA's gap is measured against the look-ahead, so it is not zero even for fresh pulls;
    # with C -> infinity every G is exactly 1 and the plain rule must come out, stale or not.
    x0 = t(0.5, -1.0, 2.0)
    lr = 0.01 if "adam" in plain else 0.05
    a, b = make_rule(penalized, x0, 4, lr=lr, eta_max=1e300), make_rule(plain, x0, 4, lr=lr)
    f = _quad(4)
    _same(_drive_async(a, ORDER, f), _drive_async(b, ORDER, f))


def test_sa_differs_from_nag_when_stale():
    x0 = t(0.5, -1.0, 2.0)
    f = _quad(2)
    a = _drive_async(make_rule("sa", x0, 4, lr=0.05), ORDER, f)
    b = _drive_async(make_rule("nag-asgd", x0, 4, lr=0.05), ORDER, f)
    assert not torch.allclose(a[-1], b[-1], atol=1e-6)


def test_dana_with_one_worker_equals_nag():
    x0 = t(0.5, -1.0, 2.0)
    f = _quad(5)
    order = [0] * 40
    dana = make_rule("dana", x0, 1, lr=0.05, momentum=0.9, weight_decay=0.01)
    nag = make_rule("nag-asgd", x0, 1, lr=0.05, momentum=0.9, weight_decay=0.01)
    _same(_drive_async(dana, order, f), _drive_async(nag, order, f))
    # an independent path: torch.optim.SGD with Nesterov momentum on the same gradients
    p = torch.nn.Parameter(x0.clone())
    opt = torch.optim.SGD([p], lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)
    for k in range(40):
        p.grad = f(p.detach().clone(), k)
        opt.step()
    assert torch.allclose(nag.params, p.detach(), rtol=0.0, atol=1e-12)


def test_adam_with_one_worker_equals_torch_adam():
    x0 = t(0.5, -1.0, 2.0)
    f = _quad(6)
    rule = make_rule("adam", x0, 1, lr=0.01, weight_decay=0.01, betas=(0.8, 0.99), eps=1e-6)
    _drive_async(rule, [0] * 30, f)
    p = torch.nn.Parameter(x0.clone())
    opt = torch.optim.Adam([p], lr=0.01, weight_decay=0.01, betas=(0.8, 0.99), eps=1e-6)
    for k in range(30):
        p.grad = f(p.detach().clone(), k)
        opt.step()
    assert torch.allclose(rule.params, p.detach(), rtol=0.0, atol=1e-12)


def test_softsync_n_equals_N_constant_rate_is_downpour():
    from trainers.asynchronous.gem import DownpourWorker

    x0 = t(0.5, -1.0, 2.0)
    f = _quad(7)
    soft = make_rule("softsync", x0, 4, lr=0.05, n=4, modulate=False)
    asgd = make_rule("asgd", x0, 4, lr=0.05)
    out_soft = _drive_async(soft, ORDER, f)
    _same(out_soft, _drive_async(asgd, ORDER, f))
    # Downpour as Hermans et al. run it: workers commit -eta*g to an "add" master
    add, worker = make_rule("add", x0, 4), DownpourWorker()
    held = {w: add.initial_params_for(w) for w in range(4)}
    outs = []
    for k, w in enumerate(ORDER):
        held[w] = add.apply(w, worker.commit(-0.05 * f(held[w], k)))
        outs.append(held[w])
    _same(out_soft, outs)
    assert soft.stats["tau_max"] > 1  # the arrivals really were stale


def test_stale_params_argument_matches_bookkeeping():
    x0 = t(0.5, -1.0, 2.0)
    f = _quad(8)
    for name in ("ga", "dana-ga", "adam-ga", "softsync"):
        kw = {"lr": 0.01, "weight_decay": 0.01}
        a = _drive_async(make_rule(name, x0, 4, **kw), ORDER, f, check_stale=True)
        b = _drive_async(make_rule(name, x0, 4, **kw), ORDER, f)
        _same(a, b, atol=0.0)


# ------------------------------------------------------------------ layouts of the gap


def test_layerwise_with_unit_layers_equals_parameterwise_and_one_layer_equals_global():
    x0 = t(0.5, -1.0, 2.0)
    f = _quad(9)
    unit = (("a", 1), ("b", 1), ("c", 1))
    runs = {
        "param": make_rule("ga", x0, 4, lr=0.05, gap="parameter"),
        "unit": make_rule("ga", x0, 4, lr=0.05, gap="layer", segments=unit),
        "global": make_rule("ga", x0, 4, lr=0.05, gap="global"),
        "one": make_rule("ga", x0, 4, lr=0.05, gap="layer", segments=(("all", 3),)),
    }
    outs = {k: _drive_async(r, ORDER, f) for k, r in runs.items()}
    _same(outs["param"], outs["unit"], atol=1e-12)
    _same(outs["global"], outs["one"], atol=1e-12)
    assert not torch.allclose(outs["param"][-1], outs["global"][-1], atol=1e-6)
    assert runs["param"].stats["gap_max"] > 1.0


# ------------------------------------------------------------------ tau bookkeeping


@pytest.mark.parametrize("name", [n for n in RULES if n != "softsync"])
def test_tau_histogram_on_scripted_arrivals(name):
    r = make_rule(name, t(0.1, 0.2, 0.3), 3)
    for w in range(3):
        r.initial_params_for(w)
    # clock: 0 -> w0 tau 0 | 1 -> w1 tau 1 | 2 -> w2 tau 2 | 3 -> w0 (sent 1) tau 2 |
    #        4 -> w0 (sent 4) tau 0 | 5 -> w1 (sent 2) tau 3
    for w in [0, 1, 2, 0, 0]:
        r.apply(w, t(0.01, -0.02, 0.03))
    assert r.staleness(1) == 3 and r.staleness(0) == 0
    r.apply(1, t(0.01, -0.02, 0.03))
    s = r.stats
    assert s["tau_hist"] == {0: 2, 1: 1, 2: 2, 3: 1}
    assert s["tau_mean"] == pytest.approx(8 / 6) and s["tau_max"] == 3
    assert s["updates"] == 6 == r.clock and s["gradients"] == 6
    r.reset_stats()
    assert r.stats["tau_hist"] == {} and r.clock == 6


# ------------------------------------------------------------------ dtype, ownership, errors


@pytest.mark.parametrize("name", list(RULES))
def test_every_rule_runs_in_float32_and_returns_owned_copies(name):
    x0 = torch.tensor([0.5, -1.0, 2.0])
    r = make_rule(name, x0, 2, segments=(("a", 2), ("b", 1)))
    x = r.initial_params_for(0)
    out = r.apply(0, torch.tensor([0.1, 0.2, 0.3]))
    assert out.dtype == torch.float32 and out.shape == (3,)
    before = r.params.clone()
    out.add_(100.0)
    x.add_(100.0)
    assert torch.equal(r.params, before)  # the caller owns what it was sent
    assert torch.equal(x0, torch.tensor([0.5, -1.0, 2.0]))  # the rule copied its input


def test_unknown_rule_lists_the_names():
    with pytest.raises(ValueError) as e:
        make_rule("gap-aware", t(1, 2, 3), 2)
    names = ("asgd", "nag-asgd", "sa", "softsync", "ga", "dana", "dana-sa", "dana-ga", "adam", "adam-sa", "adam-ga", "add")
    for name in names:
        assert name in str(e.value)
    assert set(rule_names()) == set(RULES)


@pytest.mark.parametrize(
    ("name", "hyper", "word"),
    [
        ("ga", {"gamma": 0.9}, "gamma"),
        ("add", {"lr": 0.1}, "lr"),
        ("nag-asgd", {"momentum": 1.0}, "momentum"),
        ("asgd", {"lr": -0.1}, "lr"),
        ("asgd", {"weight_decay": float("nan")}, "weight_decay"),
        ("ga", {"gap": "row"}, "gap"),
        ("ga", {"c_beta": 1.0}, "c_beta"),
        ("dana-ga", {"eta_max": 0.0}, "eta_max"),
        ("sa", {"variant": "delay"}, "variant"),
        ("softsync", {"n": 0}, "n"),
        ("softsync", {"n": 5}, "n"),
        ("adam", {"betas": (1.0, 0.9)}, "betas"),
        ("adam-ga", {"eps": -1.0}, "eps"),
        ("ga", {"gap": "layer"}, "segments"),
    ],
)
def test_bad_hyperparameters_name_themselves(name, hyper, word):
    with pytest.raises(ValueError, match=word):
        make_rule(name, t(1, 2, 3), 4, **hyper)


def test_bad_inputs():
    with pytest.raises(ValueError, match="segments"):
        make_rule("ga", t(1, 2, 3), 2, gap="layer", segments=(("a", 2), ("b", 2)))
    with pytest.raises(ValueError, match="params"):
        make_rule("asgd", torch.zeros(2, 2), 2)
    with pytest.raises(ValueError, match="n_workers"):
        make_rule("asgd", t(1, 2, 3), 0)
    r = make_rule("asgd", t(1, 2, 3), 2)
    with pytest.raises(ValueError, match="worker"):
        r.apply(2, t(1, 1, 1))
    with pytest.raises(ValueError, match="grad"):
        r.apply(0, t(1, 1))
    with pytest.raises(ValueError, match="lr"):
        r.lr = -1.0
