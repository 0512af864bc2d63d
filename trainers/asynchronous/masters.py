"""Transport-free master update rules for asynchronous SGD (docs/algorithms.md sections 1, 3, 4).

A rule is a plain object: the MPI parameter server (ps.py) and the simulator
(simulate.py) both drive the same objects, one gradient at a time.

    rule = make_rule("ga", params, n_workers=8, lr=0.1, weight_decay=5e-4)
    x = rule.initial_params_for(w)          # what worker w pulls at start
    ...                                     # worker w computes g on x
    x = rule.apply(w, g)                    # master step(s); the parameters to send back to w
    rule.lr = schedule.lr_at(epoch)         # the trainer updates the rate
    rule.stats                              # staleness histogram, gap statistics

Parameters are ONE flat floating tensor (float32 or float64); an optional layout
``segments = (("conv1.weight", 432), ...)`` names consecutive slices, used by the layer-wise gap.

Registered rules (``RULES``), with the papers' names:

    asgd      theta <- theta - eta*g                                    (Barkai Alg. 2, gamma = 0)
    nag-asgd  v <- gamma*v + g; theta <- theta - eta*(g + gamma*v)      (PyTorch NAG, no dampening;
              nesterov=False gives Alg. 2's heavy ball theta <- theta - eta*v)
    sa        Staleness-Aware, Alg. 3 (variant="step": the step is eta/d) or Alg. 5
              (variant="gradient": g/d enters the momentum), with NAG
    softsync  Zhang's n-softsync: c = floor(N/n) gradients, each scaled by alpha(tau)/eta0
              (1/tau for tau > 0, else 1), averaged, then one step (eq. 2-3)
    ga        Gap-Aware, Alg. 4 with NAG: g/G enters the momentum; G from Alg. 14's C
    dana      DANA, Alg. 6: one momentum per worker, the worker gets the look-ahead
              theta - eta*gamma*sum_j v_j
    dana-sa   Alg. 7 (g/d into the worker's momentum)     dana-ga   Alg. 8 (g/G, G against the
                                                                     look-ahead sent to the worker)
    adam      Alg. 9      adam-sa  Alg. 10 (g/d in the first moment only)
    adam-ga   Alg. 11 (g/G in the first moment only)
    add       theta <- theta + update: the GEM / Downpour master (Hermans et al. 2018); the
              workers (gem.py) send already-scaled updates, no rate, no decay.

Staleness. The master clock i counts weight updates (one per gradient, or one per c gradients for
softsync). A worker sent parameters at clock j whose gradient arrives at clock i has staleness
tau = i - j (Zhang's definition: 0 for a fresh gradient). ``stats["tau_hist"]`` counts these.
Barkai's delay counts the update the gradient itself makes: d = k - iter[i] = tau + 1 >= 1, so SA
divides by d = tau + 1 (every gradient fresh <=> d = 1 <=> SA equals NAG-ASGD), whereas
softsync's alpha(tau) = eta0/tau for tau > 0, else eta0, uses tau itself.

Weight decay (``weight_decay`` hyper) is part of the gradient the worker would compute on the
parameters it was sent: g <- g + wd * theta_sent, before any penalty, so GA divides it by the gap
(Barkai C.5). With one worker this is exactly torch.optim.SGD / Adam's L2 term.

Learning rate is kept outside the momentum buffers (v accumulates gradients, the step is eta*v),
which is Goyal et al.'s momentum correction when ``rule.lr`` changes.

One module per family, each rule with its short ``_update``: asgd_rules (asgd, nag-asgd, sa, softsync, ga),
dana_rules, adam_rules, add_rule; below them master_rule (the base), gap_meter (G) and rule_hypers.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from torch import Tensor

from trainers.asynchronous.adam_rules import Adam, AdamGapAware, AdamStalenessAware
from trainers.asynchronous.add_rule import Add
from trainers.asynchronous.asgd_rules import ASGD, NAGASGD, GapAware, SoftSync, StalenessAware
from trainers.asynchronous.dana_rules import DANA, DANAGapAware, DANAStalenessAware
from trainers.asynchronous.master_rule import MasterRule
from trainers.asynchronous.rule_hypers import Segments
from trainers.errors import TrainerError

__all__ = ["RULES", "make_rule", "rule_names"]

# --------------------------------------------------------------------------- registry


RULES: dict[str, type[MasterRule]] = {
    cls.name: cls
    for cls in (
        ASGD,
        NAGASGD,
        StalenessAware,
        SoftSync,
        GapAware,
        DANA,
        DANAStalenessAware,
        DANAGapAware,
        Adam,
        AdamStalenessAware,
        AdamGapAware,
        Add,
    )
}


def hyper_names(name: str) -> tuple[str, ...]:
    """The hyperparameters master rule ``name`` reads (its Hyper dataclass's fields, in order)."""
    return tuple(f.name for f in fields(RULES[name].Hyper))


def rule_names() -> tuple[str, ...]:
    """The registered rule names, in registry order."""
    return tuple(RULES)


def make_rule(
    name: str, params: Tensor, n_workers: int, *, segments: Segments | None = None, **hyper: Any
) -> MasterRule:
    """Build the master rule ``name`` on a flat parameter tensor (copied) for ``n_workers`` workers.

    ``hyper`` are the rule's hyperparameters (see each rule's Hyper dataclass, e.g. lr, momentum,
    weight_decay, gap, n). Unknown name or hyperparameter, or a bad value: TrainerError (a ValueError) naming it.

    >>> import torch
    >>> r = make_rule("asgd", torch.zeros(3), 2, lr=0.5)
    >>> r.apply(0, torch.tensor([1.0, 2.0, 4.0])).tolist()
    [-0.5, -1.0, -2.0]
    """
    if name not in RULES:
        raise TrainerError(f"unknown master rule {name!r}; choose one of: {', '.join(RULES)}")
    cls = RULES[name]
    allowed = hyper_names(name)
    for key in hyper:
        if key not in allowed:
            raise TrainerError(
                f"unknown hyperparameter {key!r} for rule {name!r}; allowed: {', '.join(allowed) or '(none)'}"
            )
    return cls(params, n_workers, cls.Hyper(**hyper), segments)
