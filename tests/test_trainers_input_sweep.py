"""`trainers run` given the inputs people mistype or files that are not what they claim: one line
``trainers: error: ...`` naming the input, exit 2, never a traceback or an MPI abort (exit 1), and the
files a refused --resume reads are left as they were.

A sweep (every option given 0, -1, nan, inf, 1e300, text, empty, 10^23; a checkpoint and a run log broken
one entry at a time on --resume) found: a count of 10^23 (--steps, --epochs and the other step counts)
taken, training on for ever; --threads 10^23 refused by torch's "Overflow when unpacking long long", and
2^31 - 1 threads ending the process in libgomp; a --synthetic-n too large for memory; the parameter
server's --opt delays=homogeneous --opt delay_mean=1e300 (an OverflowError in a worker's time.sleep, MPI
abort); and a checkpoint of
format 1 without its entries or with entries of other types (config, step, shared, ranks), or a run log on
--resume whose config is not an object or whose eval/resume line has no integer step: each aborted the MPI
job, exit 1, with a KeyError, TypeError or AttributeError line."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from trainers import run as tr
from trainers.checkpoint import CheckpointError, check_run_layout
from trainers.errors import TrainerError
from trainers.log import RunLogError, read_run_log
from trainers.run import main
from trainers.synthetic_data import synthetic
from trainers.validators import COUNT_MAX, THREADS_MAX, check_int

from tests.mpi_job import run_job

MPIEXEC = shutil.which("mpiexec")
QUICK = ["run", "--algo", "ssgd", "--model", "lenet", "--dataset", "synthetic", "--synthetic-n", "64", "--batch",
         "8", "--no-progress"]
HUGE = "99999999999999999999999"


def _error_line(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trainers: error: "), lines
    return lines[0]


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "dispatch", lambda *a, **k: pytest.fail("trained despite the refused input"))


# ------------------------------------------------------------------------------- counts and threads


@pytest.mark.parametrize("flag, field", [("--steps", "steps"), ("--epochs", "epochs"), ("--eval-every", "eval_every"),
                                         ("--eval-batch", "eval_batch"), ("--fail-at-step", "fail_at_step")])
def test_a_count_past_2_53_is_one_line_naming_it(flag: str, field: str, capsys: pytest.CaptureFixture,
                                                 no_training: None) -> None:
    argv = [*QUICK, flag, HUGE] if flag != "--epochs" else [*QUICK, "--epochs", HUGE]
    if flag != "--epochs":
        argv += ["--steps", "2"] if flag != "--steps" else []
    line = _error_line(capsys, argv)
    assert line.startswith(f"trainers: error: {field} must be an integer ") and f"at most 2**53 = {COUNT_MAX}" in line
    assert line.endswith(f"got {HUGE}")


def test_the_parameter_servers_counts_are_bounded_too(capsys: pytest.CaptureFixture, no_training: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    base = ["run", "--algo", "asgd", "--model", "gem-cnn", "--dataset", "synthetic"]
    assert "steps must be an integer >= 1 and at most 2**53" in _error_line(capsys, [*base, "--steps", HUGE])
    assert "eval_limit must be an integer >= 1 and at most 2**53" in _error_line(
        capsys, [*base, "--opt", f"eval_limit={HUGE}"])
    # with --opt delays=KIND the workers sleep out their batch time: 1e300 s overflowed time.sleep (an MPI abort)
    assert _error_line(capsys, [*base, "--opt", "delays=homogeneous", "--opt", "delay_mean=1e300"]) == (
        "trainers: error: delay_mean must be a finite number in (0.0, 86400.0], got 1e+300")


@pytest.mark.parametrize("content", [None, b"", b'{"order": [0, 1', b"\xff\xfe", b"[]", b'{"order": [7]}', "dir"])
def test_a_bad_replay_order_is_refused_before_the_job_starts(content: bytes | str | None, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture, no_training: None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The parameter server's replay order is read on every rank before MPI starts (it was read inside the
    job, after every rank had loaded torch and joined it)."""
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    order = tmp_path / "order.json"
    if content == "dir":
        order.mkdir()
    elif content is not None:
        order.write_bytes(content)
    line = _error_line(capsys, ["run", "--algo", "asgd", "--model", "gem-cnn", "--dataset", "synthetic", "--opt",
                                f"replay_order={order}"])
    assert line.startswith(f"trainers: error: replay order {order}: "), line


@pytest.mark.parametrize("value", [str(THREADS_MAX + 1), str(2**31 - 1), HUGE])
def test_threads_beyond_the_bound_are_refused_before_torch_sees_them(value: str, capsys: pytest.CaptureFixture,
                                                                     no_training: None) -> None:
    line = _error_line(capsys, [*QUICK, "--steps", "2", "--threads", value])
    assert line == f"trainers: error: threads must be an integer in 1..{THREADS_MAX}, got {value}"


def test_the_bounds_themselves_pass() -> None:
    check_int("steps", COUNT_MAX, 1)
    check_int("threads", THREADS_MAX, 1, THREADS_MAX)
    with pytest.raises(TrainerError, match=r"^k must be an integer >= 1, got 0$"):  # the old wording below
        check_int("k", 0, 1)
    with pytest.raises(TrainerError, match=r"^k must be an integer at most 2\*\*53"):
        check_int("k", COUNT_MAX + 1)


def test_a_synthetic_set_too_large_for_memory_names_its_size() -> None:
    for n in (2**40, int(HUGE)):
        with pytest.raises(ValueError, match=rf"^synthetic dataset of n={n} images of 1x28x28: its .* bytes of pixels "
                                             r"cannot be made here \("):
            synthetic("lenet", n=n)


# ----------------------------------------------------------------------- checkpoint and run log layout


def _layout() -> dict:
    return {"format": 1, "config": {"algo": "ssgd"}, "world": 2, "step": 3, "shared": {}, "ranks": [{}, {}]}


@pytest.mark.parametrize("change, fragment", [
    ({"config": []}, "'config' must be a dict, got list"),
    ({"step": "x"}, "'step' must be a int, got str"),
    ({"step": True}, "'step' must be a int, got bool"),
    ({"step": -1}, "step must be >= 0, got -1"),
    ({"shared": None}, "'shared' must be a dict, got NoneType"),
    ({"ranks": {}}, "'ranks' must be a list, got dict"),
    ({"ranks": [{}]}, "'ranks' must hold one state per rank (2), got 1 entries"),
    ({"ranks": [{}, "x"]}, "'ranks' must hold one state per rank (2), got 2 entries"),
    ({"world": None}, "'world' must be a int, got NoneType"),
])
def test_a_checkpoint_not_of_a_run_is_named(change: dict, fragment: str) -> None:
    with pytest.raises(CheckpointError) as err:
        check_run_layout("ck.pt", {**_layout(), **change}, 2)
    assert str(err.value).startswith("checkpoint ck.pt: ") and fragment in str(err.value)


def test_a_missing_entry_is_named_and_a_good_layout_passes() -> None:
    state = _layout()
    del state["shared"]
    with pytest.raises(CheckpointError, match="'shared' must be a dict, got nothing"):
        check_run_layout("ck.pt", state, 2)
    assert check_run_layout("ck.pt", _layout(), 2) == _layout()
    assert check_run_layout("ck.pt", _layout(), 4)["world"] == 2  # another world: the compatibility check says so


def test_a_log_line_without_an_integer_step_is_named(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"type":"header","schema":1}\n{"type":"eval","step":"x"}\n{"type":"step"}\n')
    contents = read_run_log(log)
    with pytest.raises(RunLogError, match=rf"^run log {log}: a eval line's step must be an integer >= 0, got 'x'$"):
        contents.step_of(contents.evals[0])
    with pytest.raises(RunLogError, match="a step line's step must be an integer >= 0, got None"):
        contents.last_step


# --------------------------------------------------------------------- the same under mpiexec (--resume)


def _mpirun(args: list[str], timeout: float = 60.0):
    return run_job([MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-n", "2", sys.executable, "-m", "trainers.run",
                    *QUICK, "--device", "cpu", "--threads", "1", *args], timeout)


def _breaks() -> list[tuple[str, object, str]]:
    """(what is broken, how, what the line says): the checkpoint's and the run log's."""
    def ck(**change):
        def apply(state: dict) -> dict:
            state = {**state, **change}
            return {k: v for k, v in state.items() if v is not _DROP}
        return apply
    return [
        ("checkpoint", ck(shared=_DROP), "'shared' must be a dict, got nothing; not a checkpoint of a trainers run"),
        ("checkpoint", lambda s: {**s, "ranks": s["ranks"][:1]}, "'ranks' must hold one state per rank (2), got 1"),
        ("checkpoint", lambda s: {**s, "shared": {**s["shared"], "epoch_loss": "x"}}, "does not fit this run: "),
        ("log", "eval-step", "a eval line's step must be an integer >= 0, got 'x'"),
    ]


_DROP = object()


@pytest.mark.slow  # 1 + 4 two-rank jobs that import torch: about 50 s on the 2-core machine
@pytest.mark.mpi
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found")
def test_a_broken_checkpoint_or_log_on_resume_is_one_line_and_status_2(tmp_path: Path) -> None:
    ck, log = tmp_path / "ck.pt", tmp_path / "log.jsonl"
    job = _mpirun(["--steps", "2", "--checkpoint", str(ck), "--log", str(log)])
    assert job.code == 0, job.output[-2000:]
    good_ck, good_log = torch.load(ck, weights_only=False), log.read_text()
    for what, how, fragment in _breaks():
        if what == "checkpoint":
            torch.save(how(good_ck), ck)
            log.write_text(good_log)
        else:
            torch.save(good_ck, ck)
            lines = good_log.splitlines()
            lines.append(json.dumps({"type": "eval", "step": "x"}))
            log.write_text("\n".join(lines) + "\n")
        ck_bytes, log_text = ck.read_bytes(), log.read_text()
        job = _mpirun(["--steps", "4", "--checkpoint", str(ck), "--log", str(log), "--resume"])
        ours = [x for x in job.output.splitlines() if x.startswith(("trainers:", "[rank"))]
        assert job.code == 2 and "Traceback" not in job.output, (what, fragment, job.output[-2000:])
        assert len(ours) == 1 and ours[0].startswith("trainers: error: ") and fragment in ours[0], (fragment, ours)
        assert (str(ck) if what == "checkpoint" else str(log)) in ours[0]
        assert ck.read_bytes() == ck_bytes and log.read_text() == log_text  # nothing written is lost
