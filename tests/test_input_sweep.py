"""Every numeric option of `perfmodel predict`, `perfmodel plan` and `trainers simulate` given the values
people mistype (0, -1, nan, inf, 1e300, 1e-300, text): each either runs, printing strict JSON where JSON was
asked for, or exits 2 with one `error:` line. Never a traceback.

A wider sweep of this kind found nine inputs that crashed or were taken silently; each has its own test
beside the code it fixed. This one guards the options as a whole: add a new option to its list.
"""

import contextlib
import io
import json

import pytest

from perfmodel.cli import main as perfmodel_main
from trainers.run import main as trainers_main

pytestmark = pytest.mark.slow  # about 460 invocations, in-process

VALUES = ["0", "-1", "nan", "inf", "1e300", "1e-300", "abc"]

PREDICT = ["predict", "--gpus", "8,64", "--format", "json"]
PREDICT_OPTIONS = ["--node-rate", "--accumulate", "--batch", "--terngrad-min-elems", "--terngrad-encode-rate",
                   "--terngrad-decode-rate", "--terngrad-convert-rate", "--terngrad-ps-aggregate-rate",
                   "--terngrad-lanes", "--daso-b", "--daso-w", "--daso-progress", "--daso-nb-factor", "--ps-servers",
                   "--ps-update-ms", "--bucket-mb", "--step-overhead-ms", "--sync-wait-ms", "--cycle-time-ms",
                   "--overlap-efficiency", "--overlap-slowdown", "--first-bucket-mb", "--bucket-copies", "--overlap",
                   "--nics", "--nodes", "--gpu-tflops", "--gpu-mem-bw", "--gpu-memory-gb", "--gpu-capability",
                   "--samples-per-s", "--compute-ms", "--network", "--stragglers", "--gpus-per-node"]

PLAN = ["plan", "--workload", "resnet50", "--cluster", "juwels-booster", "--format", "json"]
PLAN_OPTIONS = ["--gpus-max", "--deadline", "--budget", "--min-efficiency", "--global-batch", "--batch", "--price",
                "--gpu-memory", "--top", "--samples-per-s", "--compute-ms", "--nodes", "--gpu-tflops", "--nics",
                "--gpu-capability"]
PLAN_WORK = ["--epochs", "--dataset-size", "--samples", "--seq-len"]

SIMULATE = ["simulate", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "32", "--batch", "8",
            "--steps", "2", "--workers", "2"]
SIMULATE_OPTIONS = ["--workers", "--batch", "--lr", "--momentum", "--weight-decay", "--n", "--gap", "--kappa",
                    "--steps", "--lr-warmup-epochs", "--lr-milestones", "--lr-gamma", "--delay-mean", "--seed"]


def _check(run, argv: list[str], json_out: bool) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = run(argv)
        except SystemExit as e:  # argparse's own refusals
            rc = e.code
    lines = err.getvalue().splitlines()
    assert rc in (0, 2), (argv, rc, lines[-3:])
    if rc == 2:
        assert len([line for line in lines if " error: " in line]) == 1, (argv, lines)
    elif json_out:
        def refuse(constant: str) -> None:
            raise ValueError(f"{constant} is not JSON")
        json.loads(out.getvalue(), parse_constant=refuse)


@pytest.mark.parametrize("option", PREDICT_OPTIONS)
def test_predict(option):
    for value in VALUES:
        _check(perfmodel_main, [*PREDICT, option, value], json_out=True)


def _plan_argv(option: str, value: str) -> list[str]:
    """plan with ``option value`` and the rest of a work description around it."""
    around = {"--seq-len": ["--tokens", "1e9"], "--epochs": ["--dataset-size", "100000"],
              "--dataset-size": ["--epochs", "1"], "--samples": []}
    return [*PLAN, *around.get(option, ["--epochs", "1", "--dataset-size", "100000"]), option, value]


@pytest.mark.parametrize("option", PLAN_OPTIONS + PLAN_WORK)
def test_plan(option):
    for value in VALUES:
        _check(perfmodel_main, _plan_argv(option, value), json_out=True)


@pytest.mark.parametrize("option", SIMULATE_OPTIONS)
def test_simulate(option, tmp_path):
    for i, value in enumerate(VALUES):
        _check(trainers_main, [*SIMULATE, "--log", str(tmp_path / f"{i}.jsonl"), option, value], json_out=False)
