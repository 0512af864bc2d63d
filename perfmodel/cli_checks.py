"""Checks of `perfmodel predict`'s options against each other, before any prediction.

Refused (CLIError: one line, exit 2): a compute option that --profile would silently drop, a straggler
spread beyond the physical bound of perfmodel.stragglers.MAX_STRAGGLER_CV, a compute time beyond a day
per step. Warned (one line each, returned): options that apply to none of the chosen strategies.
"""

from __future__ import annotations

import argparse
import math
import sys

from .specs import DEFAULT_TERNGRAD_EXCHANGE
from .stragglers import MAX_STRAGGLER_CV, MIN_STRAGGLER_CV, combined_cv

MAX_STEP_COMPUTE_S = 86_400.0
"""The longest compute time per step accepted, in seconds (a day): a longer one is a typo or a unit slip
(--compute-ms takes milliseconds), and its throughput would print as a denormal number."""

MAX_BATCH = 2**31
"""The largest per-GPU batch accepted (a typo beyond it; no GPU holds 2^31 samples)."""

MIN_STEP_COMPUTE_S = 1e-9
"""The shortest compute time per step accepted, in seconds (a nanosecond, far below one GPU kernel launch):
a shorter one is a unit slip, and its throughput would print as a number hundreds of digits long."""


STRATEGY_OPTIONS: tuple[tuple[str, str, object, tuple[str, ...]], ...] = (
    ("--daso-b", "daso_b", 4, ("daso",)),
    ("--daso-w", "daso_w", 1, ("daso",)),
    ("--daso-progress", "daso_progress", None, ("daso",)),
    ("--daso-nb-factor", "daso_nb_factor", None, ("daso",)),
    ("--ps-servers", "ps_servers", 1, ("asgd", "sync-ps", "byteps")),
    ("--ps-update-ms", "ps_update_ms", None, ("asgd",)),
    ("--ps-placement", "ps_placement", "colocated", ("sync-ps", "byteps")),
    ("--ps-local-reduce", "ps_local_reduce", "on", ("sync-ps",)),
    ("--terngrad-min-elems", "terngrad_min_elems", 1, ("terngrad",)),
    ("--terngrad-ternarize-last", "terngrad_fp32_last", True, ("terngrad",)),
    ("--terngrad-encode-rate", "terngrad_encode_rate", 0.0, ("terngrad",)),
    ("--terngrad-decode-rate", "terngrad_decode_rate", 0.0, ("terngrad",)),
    ("--terngrad-convert-rate", "terngrad_convert_rate", 0.0, ("terngrad",)),
    ("--terngrad-ps-aggregate-rate", "terngrad_ps_aggregate_rate", 0.0, ("terngrad",)),
    ("--terngrad-exchange", "terngrad_exchange", DEFAULT_TERNGRAD_EXCHANGE, ("terngrad",)),
    ("--terngrad-lanes", "terngrad_lanes", "int8", ("terngrad",)),
    ("--sync-wait-ms", "sync_wait_ms", None, ("terngrad",)),
)
"""(flag, argparse dest, parser default, the strategies it applies to): a value other than the default
with none of those strategies chosen gets a warning (tests check the defaults against the parser's)."""


class _Error(ValueError):
    """Stand-in when no error class is given (perfmodel.predict_cli passes its CLIError)."""


def check_kernel_ms_per_mb(value: float | None, error: type[ValueError] = _Error) -> float | None:
    """``--kernel-ms-per-mb`` of predict and validate (milliseconds of kernel CPU per MB; None: the link
    profile's): refused (``error``) unless finite and >= 0; returned as given."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise error(f"--kernel-ms-per-mb must be >= 0 and finite, got {value}")
    return value


def check_predict_args(args: argparse.Namespace, error: type[ValueError] = _Error) -> list[str]:
    """Refuse option combinations `perfmodel predict` cannot honour (raises ``error``); return one
    warning line per option that none of the chosen strategies reads."""
    if args.profile and args.workload is None:
        dropped = [flag for flag, value in (("--samples-per-s", args.samples_per_s), ("--compute-ms", args.compute_ms),
                                            ("--estimate", args.estimate)) if value is not None]
        if dropped:
            raise error(f"give --profile or {dropped[0]}, not both: the profile's measured compute time is the "
                        f"workload's (add --workload NAME to set its compute time with {dropped[0]})")
    _check_stragglers(args.stragglers, error)
    _check_compute_time(args, error)
    tuned = [flag for flag, dest in (("--overlap-efficiency", "overlap_efficiency"),
                                     ("--overlap-slowdown", "overlap_slowdown")) if getattr(args, dest, None) is not None]
    if getattr(args, "overlap", None) is not None and tuned:
        raise error(f"give --overlap or {tuned[0]}, not both: --overlap {args.overlap:g} hides a constant share of "
                    f"min(communication, compute) in place of the bucket schedule that {tuned[0]} tunes")
    warnings = []
    chosen = {s.strip() for s in str(args.strategy).split(",") if s.strip()}
    for flag, dest, default, strategies in STRATEGY_OPTIONS:
        if getattr(args, dest, default) != default and not chosen & set(strategies):
            warnings.append(f"{flag} applies to {', '.join(strategies)} only; ignored with --strategy "
                            f"{','.join(sorted(chosen))}")
    if not args.profile and getattr(args, "profile_links", "network") != "network":
        warnings.append("--profile-links applies only with --profile; ignored")
    return warnings


def _check_stragglers(text: str | None, error: type[ValueError]) -> None:
    """A numeric --stragglers CV or CV_TASK,CV_MACHINE must stay within MAX_STRAGGLER_CV combined, each part 0
    or at least MIN_STRAGGLER_CV."""
    if not text:
        return
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        return  # a name, or malformed: the parser of the option reports the latter
    if len(parts) not in (1, 2) or any(not p >= 0 or math.isinf(p) for p in parts):
        return
    if any(0 < p < MIN_STRAGGLER_CV for p in parts):
        raise error(f"--stragglers {text}: a coefficient of variation below {MIN_STRAGGLER_CV:g} is no spread a "
                    f"timer can see (the slowest of 512 chips would be 3e-6 slower); give 0 for none")
    # a part beyond the bound is enough (and 1e300 squared would overflow)
    cv = max(parts) if max(parts) > MAX_STRAGGLER_CV else combined_cv(parts[0], parts[1] if len(parts) == 2 else 0.0)
    if cv > MAX_STRAGGLER_CV:
        raise error(f"--stragglers {text}: the batch times' combined coefficient of variation {cv:.3g} is beyond "
                    f"the physical bound {MAX_STRAGGLER_CV:g} (a gamma time with CV > 1 is most likely 0 s, which "
                    f"no GPU does; CV 1 is exponential times, chips of one GPU model differ by about 0.015)")


def _check_compute_time(args: argparse.Namespace, error: type[ValueError]) -> None:
    """--batch from 1 to MAX_BATCH; --compute-ms, or --batch / --samples-per-s, from a nanosecond to a day per step."""
    if args.batch < 1:
        raise error(f"--batch must be a positive integer, got {args.batch}")
    if args.batch > MAX_BATCH:
        raise error(f"--batch {args.batch:g} is more than {MAX_BATCH:,} samples per GPU per step")
    if args.compute_ms is not None:
        _in_range(args.compute_ms / 1e3, error,
                  f"--compute-ms {args.compute_ms:g} is less than a nanosecond per step; --compute-ms takes milliseconds",
                  f"--compute-ms {args.compute_ms:g} is {args.compute_ms / 3.6e6:.3g} hours per step, more than a day "
                  f"({MAX_STEP_COMPUTE_S * 1e3:.0f} ms); --compute-ms takes milliseconds")
    if args.samples_per_s is not None:
        step = args.batch / args.samples_per_s
        said = f"--samples-per-s {args.samples_per_s:g} makes a step of batch {args.batch} take"
        _in_range(step, error, f"{said} less than a nanosecond", f"{said} {step / 3600:.3g} hours, more than a day")


def _in_range(step_s: float, error: type[ValueError], too_short: str, too_long: str) -> None:
    """Raise ``error`` with ``too_short`` / ``too_long`` for a step outside MIN_STEP_COMPUTE_S..MAX_STEP_COMPUTE_S."""
    if step_s < MIN_STEP_COMPUTE_S:
        raise error(too_short)
    if step_s > MAX_STEP_COMPUTE_S:
        raise error(too_long)


def print_compute_warnings(warnings: tuple[str, ...]) -> None:
    """The compute rule's warnings (sources disagree, model too small) in one line on stderr; predict and
    plan print them once the rest of the command line is known good, so that bad input prints its error
    alone."""
    if warnings:
        print(f"perfmodel: warning: {'; '.join(warnings)}", file=sys.stderr)
