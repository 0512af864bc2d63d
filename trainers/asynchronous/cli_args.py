"""The command-line options of the asynchronous trainers (``trainers simulate``, ``python -m
trainers.asynchronous.ps``): one option per :class:`AsyncConfig` field, parsed strictly (an argparse
error raises TrainerError, one line)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields

from trainers.asynchronous.algos import ALGOS, RULE_SETTINGS, check_settings_used
from trainers.config import NO_MODEL, AsyncConfig, defaults
from trainers.errors import TrainerError
from trainers.model_defaults import resolve

__all__ = ["StrictParser", "add_async_arguments", "config_from_args", "parse_or_status"]


_RULE_FLAGS = {"modulate": "--no-modulate", "gap": "--gap", "kappa": "--kappa", "gem_code": "--gem-code"}


class StrictParser(argparse.ArgumentParser):
    """argparse whose errors raise TrainerError (one line, no usage dump) instead of exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise TrainerError(message)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def add_async_arguments(parser: argparse.ArgumentParser, *, algo_flag: str = "--algo") -> None:
    """Add the AsyncConfig options to ``parser`` (the algorithm flag is --algo or --rule)."""
    d = defaults(AsyncConfig)
    parser.add_argument(algo_flag, dest="algo", default=d["algo"], metavar="ALGO",
                        help=f"asynchronous algorithm: {', '.join(ALGOS)} (default {d['algo']})")
    parser.add_argument("--workers", type=int, default=d["workers"], help="asynchronous workers N")
    parser.add_argument("--model", default=d["model"],
                        help=f"network (trainers.models) or '{NO_MODEL}' for staleness only (default {d['model']})")
    parser.add_argument("--dataset", default=d["dataset"], help="mnist, cifar10, cifar100 or synthetic")
    parser.add_argument("--data-root", default=None, help="dataset folder (default: trainers.data's)")
    parser.add_argument("--synthetic-n", type=int, default=d["synthetic_n"], help="synthetic training images")
    parser.add_argument("--batch", type=int, default=d["batch"], help="per-worker batch size")
    parser.add_argument("--lr", type=float, default=None, help="learning rate eta (default: the model's, "
                                                                 "trainers.model_defaults)")
    parser.add_argument("--momentum", type=float, default=None,
                        help="momentum gamma, GEM: mu (default: the model's, trainers.model_defaults)")
    parser.add_argument("--no-nesterov", dest="nesterov", action="store_false", help="heavy-ball momentum")
    parser.add_argument("--weight-decay", type=float, default=d["weight_decay"], help="L2 coefficient")
    parser.add_argument("--n", type=int, default=None, help="softsync splitting parameter n (1..N)")
    # the rule settings default to None, "not given" (config_from_args: AsyncConfig's default, or refused
    # with an algorithm that does not read them)
    parser.add_argument("--no-modulate", dest="modulate", action="store_false", default=None,
                        help="softsync: constant rate instead of alpha0/tau (Zhang's unmodulated baseline)")
    parser.add_argument("--gap", default=None,
                        help=f"gap rules (ga, dana-ga, adam-ga): parameter, layer or global (default {d['gap']})")
    parser.add_argument("--kappa", type=float, default=None,
                        help=f"GEM proxy amplification (default {d['kappa']:g})")
    parser.add_argument("--gem-code", default=None,
                        help="GEM setting: paper (pull after commit, no clamp; default), paper-clamp (pull after "
                             "commit, pi clamped to [0,5]) or authors (pull before commit, |Delta+eps|, clamp [0,5])")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--epochs", type=float, default=None, help="budget in epochs")
    budget.add_argument("--steps", type=int, default=None, help="budget in gradients applied")
    parser.add_argument("--data", default=d["data"], help="shard (1/N of each epoch per worker) or replicate")
    parser.add_argument("--lr-warmup-epochs", "--warmup-epochs", dest="lr_warmup_epochs", type=float,
                        default=d["lr_warmup_epochs"], help="linear warm-up from lr/N (epochs)")
    parser.add_argument("--lr-milestones", "--milestones", dest="lr_milestones", type=_floats,
                        default=d["lr_milestones"], help="epochs of lr decay, e.g. 80,120")
    parser.add_argument("--lr-gamma", "--lr-decay", dest="lr_gamma", type=float, default=d["lr_gamma"],
                        help="factor at each milestone")
    parser.add_argument("--delays", default=d["delays"], help="batch times: homogeneous, heterogeneous or none")
    parser.add_argument("--delay-mean", type=float, default=d["delay_mean"], help="mean batch time mu, seconds")
    parser.add_argument("--eval-every", type=float, default=d["eval_every"], help="epochs between evaluations")
    parser.add_argument("--eval-every-steps", type=int, default=d["eval_every_steps"],
                        help="gradients applied between evaluations (wins over --eval-every when > 0)")
    parser.add_argument("--eval-limit", type=int, default=None, help="test images to evaluate on")
    parser.add_argument("--augment", action="store_true", help="random crop and flip (CIFAR)")
    parser.add_argument("--log-every", type=int, default=d["log_every"], help="gradients per step line (0: auto)")
    parser.add_argument("--seed", type=int, default=d["seed"], help="seed of everything (0..2**64-1)")
    parser.add_argument("--log", default=None, help="JSONL run log to write")


def config_from_args(args: argparse.Namespace) -> AsyncConfig:
    """AsyncConfig from parsed add_async_arguments options (TrainerError on a bad value, or on a rule
    setting given to an algorithm that does not read it: algos.check_settings_used)."""
    names = {f.name for f in fields(AsyncConfig)}
    values = {k: v for k, v in vars(args).items() if k in names and not (k in RULE_SETTINGS and v is None)}
    check_settings_used(values.get("algo", defaults(AsyncConfig)["algo"]),
                        {k: _RULE_FLAGS[k] for k in RULE_SETTINGS if k in values})
    if values.get("epochs") is None and values.get("steps") is None:
        raise TrainerError("give a budget: --epochs E or --steps S")
    values["lr"], values["momentum"], args.defaults_from = resolve(values.get("model", defaults(AsyncConfig)["model"]),
                                                                   values.get("lr"), values.get("momentum"))
    return AsyncConfig(**values)


def parse_or_status(parser: StrictParser, argv: Sequence[str] | None, *, show_error: bool = True
                    ) -> argparse.Namespace | int:
    """The parsed arguments, or the command's exit status: 2 for bad input (one line ``PROG: error: ...``
    on stderr when ``show_error``, e.g. on MPI rank 0 only), 0 after --help."""
    try:
        return parser.parse_args(argv)
    except TrainerError as exc:
        if show_error:
            print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
