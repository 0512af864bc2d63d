"""Six edges left over by the input hunt, each one line on stderr and exit 2 (or, for reproduce.published,
files that are not overwritten): another --runs file's predictions go to a folder of their own; a profile
with a time of 0 is refused as corrupt; `trainers ps` checks its output files before training; a DASO
step line without its phase is left out with a note; a bandwidth that overflows says so; a value option
followed by a negative-looking value (``--deadline -1h``) gets the option's own message."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.cli import DASH_VALUE_COMMANDS, build_parser, main
from perfmodel.cli_guard import glue_dash_values, value_options
from reproduce import published as pub
from test_validate import write_log
from test_profile_schema import make_profile

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "tests" / "data" / "quickstart"


# ---------------------------------------------------------------- 1. reproduce.published --runs OTHER.csv


def test_the_default_results_folder_follows_the_runs_file():
    assert pub.default_out(pub.RUNS) == pub.OUT
    assert pub.default_out(Path(os.path.relpath(pub.RUNS))) == pub.OUT  # the same file, named relatively
    assert pub.default_out(Path("data/published/pcie_runs.csv")) == pub.OUT / "pcie_runs"


def test_another_runs_file_leaves_the_committed_predictions_alone(tmp_path, monkeypatch, capsys):
    out = tmp_path / "published"
    out.mkdir()
    committed = {name: f"committed {name}\n" for name in ("predictions.csv", "measured_vs_predicted.png")}
    for name, text in committed.items():
        (out / name).write_text(text)
    monkeypatch.setattr(pub, "OUT", out)
    with open(ROOT / "data" / "published" / "pcie_runs.csv", newline="") as f:
        lines = f.read().splitlines()
    few = tmp_path / "few_runs.csv"
    few.write_text("\n".join(lines[:6]) + "\n")
    assert pub.main(["--runs", str(few)]) == 0
    assert {name: (out / name).read_text() for name in committed} == committed
    with open(out / "few_runs" / "predictions.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 5
    assert (out / "few_runs" / "measured_vs_predicted.png").read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {out / 'few_runs' / 'predictions.csv'}" in capsys.readouterr().out


def test_git_ignores_another_runs_files_results_folder():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    path = pub.default_out(ROOT / "data" / "published" / "pcie_runs.csv") / "predictions.csv"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT)
    kept = subprocess.run(["git", "check-ignore", "-q", str(pub.OUT / "predictions.csv")], cwd=ROOT)
    assert ignored.returncode == 0 and kept.returncode == 1


# ---------------------------------------------------------------- 2. show-profile on a time of 0


def _zero_profile(tmp_path, where: str) -> Path:
    """The quickstart profile with the allreduce's median (and quartile) times, or a compute row's, at 0."""
    data = json.loads((QUICKSTART / "profile.json").read_text())
    if where == "allreduce":
        op = data["comm"][1]["ops"]["allreduce"]
        for key in ("median_s", "p25_s", "p75_s"):
            op[key] = [0.0] * len(op["sizes_bytes"])
    else:
        data["compute"]["rows"][0]["total"].update(median_s=0.0, p25_s=0.0, min_s=0.0)
    path = tmp_path / f"zero_{where}.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("where, needle", [
    ("allreduce", "comm[1].ops.allreduce: allreduce: times must be finite and > 0 (a time of 0 is not a measurement)"),
    ("compute", "compute.rows[0]: batch must be >= 1 and its total time > 0, got 16 and 0.0"),
])
def test_show_profile_refuses_a_time_of_0_in_one_line(tmp_path, where, needle):
    path = _zero_profile(tmp_path, where)
    p = subprocess.run([sys.executable, "-m", "perfmodel", "show-profile", str(path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == f"perfmodel: error: {path}: {needle}\n"


def test_show_profile_of_a_good_profile_prints_no_warning():
    p = subprocess.run([sys.executable, "-m", "perfmodel", "show-profile", str(QUICKSTART / "profile.json")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "" and "allreduce fitted vs measured" in p.stdout


# ---------------------------------------------------------------- 3. trainers ps checks its output files


@pytest.mark.parametrize("option", ["--log", "--save-params"])
@pytest.mark.parametrize("kind", ["folder", "under a file"])
def test_ps_checks_its_output_files_before_training(tmp_path, option, kind):
    target = tmp_path
    if kind == "under a file":
        (tmp_path / "plain").write_text("")
        target = tmp_path / "plain" / "out.jsonl"
    env = dict(os.environ, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="3")  # rank 0 of 3, as mpiexec sets
    p = subprocess.run([sys.executable, "-m", "trainers.asynchronous.ps", "--algo", "asgd", "--model", "none",
                        "--steps", "5", option, str(target)], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    why = "is a folder; give a file path" if kind == "folder" else f"{tmp_path / 'plain'} is not a folder"
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.startswith(f"trainers ps: error: {option} {target}") and why in p.stderr
    assert len(p.stderr.splitlines()) == 1


# ---------------------------------------------------------------- 4. validate: a DASO step without its phase


@pytest.fixture
def profile(tmp_path):
    from perfmodel.lab.profile.profile_file import save_profile

    path = tmp_path / "p.json"
    save_profile(make_profile(), path)
    return str(path)


NO_FIXED_PHASE = {"ranks_per_node": 2, "daso_b": None, "daso_w": None}  # the header of a cycling run


@pytest.mark.parametrize("name, broken", [
    ("null_b.jsonl", {"B": None, "W": 1}),
    ("null_w.jsonl", {"B": 2, "W": None}),
    ("missing.jsonl", {}),
    ("text.jsonl", {"B": "2", "W": 1}),
    ("zero_b.jsonl", {"B": 0, "W": 1}),
])
def test_a_daso_step_without_its_phase_is_left_out_with_one_note(tmp_path, profile, capsys, name, broken):
    extra = {i: {"B": 2, "W": 1} for i in range(11)} | {4: broken}
    log = write_log(tmp_path / name, "daso", 4, 16, [0.01] * 11, extra=extra, cfg=NO_FIXED_PHASE)
    assert main(["validate", log, "--profile", profile, "--cores", "4", "--skip", "1", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    left_out = [x for x in err.splitlines() if "left out" in x]
    assert len(left_out) == 1 and f"{name}: 1 of 10 step lines" in left_out[0]
    assert "the DASO phase (B, W) missing, null or not an integer" in left_out[0]
    (row,) = json.loads(out)["runs"]
    command = row["predict_command"]  # the dropped step's phase is not guessed as (1, 0)
    assert row["steps"] == 9 and "--daso-b 2 --daso-w 1" in command and "--daso-b 1 " not in command


def test_a_daso_log_without_any_phase_is_one_error_line(tmp_path, profile, capsys):
    extra = {i: {"B": None, "W": None} for i in range(11)}
    log = write_log(tmp_path / "nophase.jsonl", "daso", 4, 16, [0.01] * 11, extra=extra, cfg=NO_FIXED_PHASE)
    assert main(["validate", log, "--profile", profile, "--skip", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"perfmodel: error: run log {log}: 0 of the 10 step lines after the warm-up")
    assert "and a DASO phase (B, W), need 3" in err


# ---------------------------------------------------------------- 5. a bandwidth that overflows


@pytest.mark.parametrize("option, value", [("--network", "1e400Gb/s"), ("--network", "8x1e308GB/s"),
                                           ("--intra", "1e400GB/s")])
def test_an_infinite_bandwidth_says_it_is_not_finite(capsys, option, value):
    assert main(["predict", option, value]) == 2
    assert capsys.readouterr().err == (f"perfmodel: error: {option} '{value}': bandwidth must be a finite number > 0 "
                                       f"(it overflows to infinity)\n")


def test_a_negative_bandwidth_keeps_its_message(capsys):
    assert main(["predict", "--network", "-3Gb/s"]) == 2
    assert capsys.readouterr().err == "perfmodel: error: --network '-3Gb/s': bandwidth must be > 0\n"


# ---------------------------------------------------------------- 6. --deadline -1h


@pytest.mark.parametrize("argv, needle", [
    (["plan", "--deadline", "-1h"], "argument --deadline: must be a positive duration with its unit"),
    (["plan", "--budget", "-1e3"], "argument --budget: must be a number > 0, got '-1e3'"),
    (["plan", "--price", "-1e-2"], "argument --price: must be a number > 0, got '-1e-2'"),
    (["plan", "--min-efficiency", "-5e-1"], "argument --min-efficiency: must be a number > 0, got '-5e-1'"),
    (["predict", "--samples-per-s", "-1e3"], "argument --samples-per-s: must be a number > 0, got '-1e3'"),
    (["validate", "x.jsonl", "--profile", "p.json", "--kernel-ms-per-mb", "-1e-3"],
     "--kernel-ms-per-mb must be >= 0 and finite, got -0.001"),
])
def test_a_negative_looking_value_gets_the_options_own_message_either_spelling(capsys, argv, needle):
    assert main(argv) == 2
    spaced = capsys.readouterr().err
    glued = argv[:-2] + [f"{argv[-2]}={argv[-1]}"]
    assert main(glued) == 2
    assert spaced == capsys.readouterr().err
    assert len(spaced.splitlines()) == 1 and spaced.startswith("perfmodel: error: ") and needle in spaced
    assert "expected one argument" not in spaced


def test_only_one_value_options_are_glued_and_nothing_after_a_bare_double_dash():
    options = value_options(build_parser(), DASH_VALUE_COMMANDS)
    assert {"--deadline", "--budget", "--price", "--min-efficiency", "--network", "--intra"} <= options
    assert "--all" not in options and "--same-update" not in options  # flags take no value
    argv = ["plan", "--deadline", "-1h", "--", "--deadline", "-1h"]
    assert glue_dash_values(argv, options) == ["plan", "--deadline=-1h", "--", "--deadline", "-1h"]
    assert glue_dash_values(["plan", "--all", "-1"], options) == ["plan", "--all", "-1"]
