"""Edges of the reproduce commands and of `perfmodel profile` / `perfmodel emulate`: bad input is one line
on stderr and exit status 2, checked before any run, MPI job or emulated cluster starts
(docs/cli_behaviour.md, "Other commands")."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.cli import main as perfmodel_main
from reproduce import headlines, scale_out, validation, zhang2016
from reproduce.barkai2020 import current_setting

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
SCALE_OUT = RESULTS / "validation" / "scale_out.csv"


def _one_line(err: str) -> str:
    """The single line of ``err`` (no traceback, nothing else printed)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _copy(results: Path, paper: str, table: str, scale: str | None = "smoke", keep=None) -> Path:
    """results/<paper>/<table>.csv from the committed one, its rows relabelled ``scale`` (None: as
    committed), only those ``keep`` selects, or the header alone when scale is "header"."""
    frame = pd.read_csv(RESULTS / paper / f"{table}.csv")
    if scale == "header":
        frame = frame.iloc[0:0]
    elif scale is not None:
        frame["scale"] = scale
    if keep is not None:
        frame = frame[keep(frame)]
    path = results / paper / f"{table}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def _headlines_error(results: Path, paper: str, capsys) -> str:
    assert headlines.main(["--results", str(results), "--papers", paper, "--no-write"]) == 2
    return _one_line(capsys.readouterr().err)


# --------------------------------------------------------------------------- 1. headlines without small rows


def _smoke_run(paper: str, table: str, out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-m", "reproduce", paper, "--scale", "smoke", "--no-progress", "--out",
                          str(out), "--only", table], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr


@pytest.mark.slow  # 10-20 s each
@pytest.mark.parametrize("paper, table", [("barkai2020", "tables4_6"), ("zhang2016", "fig3_accuracy")])
def test_headlines_on_a_smoke_run_names_the_paper_table_and_missing_scale(tmp_path, capsys, paper, table):
    _smoke_run(paper, table, tmp_path)
    line = _headlines_error(tmp_path, paper, capsys)
    assert line.startswith(f"reproduce/headlines: error: {paper}: no rows at the small scale in "
                           f"{tmp_path / paper / table}.csv")
    assert "smoke run's results?" in line and f"rerun python -m reproduce {paper} --scale small" in line


@pytest.mark.parametrize("paper, table", [("wen2017", "fig3_mnist"), ("coquelin2021", "daso_timing")])
def test_headlines_on_smoke_rows_only_is_one_line(tmp_path, capsys, paper, table):
    _copy(tmp_path, paper, table)  # the first table each reads, as a smoke run leaves it
    line = _headlines_error(tmp_path, paper, capsys)
    assert f"{paper}: no rows at the small scale in {tmp_path / paper / table}.csv" in line
    assert "it holds only smoke rows" in line and f"--only {table}" in line


def test_headlines_on_a_header_only_cifarnet_table(tmp_path, capsys):
    _copy(tmp_path, "wen2017", "fig3_mnist", scale=None)
    _copy(tmp_path, "wen2017", "table1_cifarnet", scale="header")
    line = _headlines_error(tmp_path, "wen2017", capsys)
    assert f"wen2017: no rows at the small scale in {tmp_path / 'wen2017' / 'table1_cifarnet.csv'}" in line
    assert "a header and no rows" in line and "rerun python -m reproduce wen2017" in line


def test_barkai_rows_of_an_earlier_learning_rate_only(tmp_path, capsys):
    path = _copy(tmp_path, "barkai2020", "tables4_6", scale=None)
    frame = pd.read_csv(path)
    frame.assign(lr=0.02).to_csv(path, index=False)
    line = _headlines_error(tmp_path, "barkai2020", capsys)
    assert "barkai2020: no small-scale rows at the current lr 0.005 in" in line and "tables4_6.csv" in line


def test_current_setting_keeping_no_row_keeps_every_column():
    frame = pd.DataFrame({"lr": [0.02], "scale": ["small"], "workers": [8]})
    for rows in (frame, frame.iloc[0:0]):  # a row of an earlier lr; no row at all (keep is [])
        kept = current_setting(rows)
        assert kept.empty and list(kept.columns) == ["lr", "scale", "workers"]


def _without(**match: str):
    """A ``keep`` for _copy: every row but those that hold all of ``match`` (column=value)."""
    return lambda f: ~pd.concat([f[c] == v for c, v in match.items()], axis=1).all(axis=1)


@pytest.mark.parametrize("paper, tables, text", [
    ("coquelin2021", (("daso_timing", _without(algo="daso")), ("small_runs", None)),
     "coquelin2021: no round with both an ssgd and a daso row at batch"),  # a KeyError traceback before
    ("coquelin2021", (("daso_timing", None), ("small_runs", _without(algo="ssgd"))),
     "coquelin2021: no small-scale test_accuracy rows of ssgd in {results}/coquelin2021/small_runs.csv"),
    ("wen2017", (("fig3_mnist", None), ("table1_cifarnet", _without(gradients="TernGrad"))),
     "wen2017: no small-scale TernGrad rows at 2 workers and step"),
    ("wen2017", (("fig3_mnist", _without(gradients="TernGrad", optimizer="momentum")), ("table1_cifarnet", None)),
     "wen2017: claim 'TernGrad keeps LeNet/MNIST accuracy (momentum SGD)' has no reading in {results}/wen2017/"
     "fig3_mnist.csv; rerun dsgd-reproduce wen2017 --scale small --only fig3_mnist"),
])
def test_headlines_with_one_sides_rows_missing(tmp_path, capsys, paper, tables, text):
    for table, keep in tables:
        _copy(tmp_path, paper, table, scale=None, keep=keep)
    assert text.format(results=tmp_path) in _headlines_error(tmp_path, paper, capsys)


# --------------------------------------------------------------------------- 2. reproduce.scale_out


@pytest.fixture
def scale_out_error(capsys):
    """python -m reproduce.scale_out ARGV: exit 2, nothing on stdout; its one stderr line."""
    def run(*argv: str) -> str:
        assert scale_out.main(list(argv)) == 2
        out, err = capsys.readouterr()
        assert out == ""
        return _one_line(err)
    return run


def test_scale_out_refuses_a_table_of_other_columns(tmp_path, scale_out_error):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    line = scale_out_error(str(other))
    assert f"{other} is not a scale-out table: it lacks the column(s) scale, remake" in line


def test_scale_out_refuses_a_header_only_table(tmp_path, scale_out_error):
    header = tmp_path / "runs.csv"
    header.write_text(SCALE_OUT.read_text().splitlines()[0] + "\n")
    assert scale_out_error(str(header)) == f"reproduce/scale_out: error: no rows at the small scale in {header}"


def test_scale_out_refuses_an_unknown_scale_and_a_scale_without_rows(scale_out_error):
    line = scale_out_error(str(SCALE_OUT), "--scale", "foo")
    assert "--scale" in line and "invalid choice: 'foo'" in line and "smoke" in line
    assert scale_out_error(str(SCALE_OUT), "--scale", "smoke") == \
        f"reproduce/scale_out: error: no rows at the smoke scale in {SCALE_OUT}"
    assert scale_out_error(str(SCALE_OUT), "--remakes", "99").endswith(f"no rows of remakes 99 in {SCALE_OUT}")


# --------------------------------------------------------------------------- 3. --only naming no table


@pytest.mark.parametrize("only", [",", "", " , "])
def test_only_naming_no_table_is_refused(tmp_path, capsys, only):
    assert zhang2016.main(["--scale", "smoke", "--no-progress", "--out", str(tmp_path), "--only", only]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"reproduce/zhang2016: error: --only {only!r} names no table; choose from fig1_staleness")
    assert not (tmp_path / "zhang2016").exists()


def test_only_unknown_table_keeps_its_text(tmp_path, capsys):
    assert zhang2016.main(["--scale", "smoke", "--no-progress", "--out", str(tmp_path), "--only", "foo"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("reproduce/zhang2016: error: unknown table(s) foo; choose")


def test_validation_only_naming_no_table_is_refused(tmp_path, capsys):
    assert validation.main(["--scale", "smoke", "--no-progress", "--out", str(tmp_path), "--only", ","]) == 2
    assert "--only ',' names no table" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("option,value,text", [("--launcher", "no-such-launcher", "no-such-launcher not found on PATH"),
                                               ("--hostfile", "/nonexistent/hosts", "--hostfile /nonexistent/hosts is "
                                                                                    "not a file")])
def test_a_launcher_that_cannot_start_is_refused_before_any_table(tmp_path, capsys, option, value, text):
    """Checked at once, for a paper whose smoke tables start no MPI run as for the others: it was taken
    silently and only failed (or never mattered) at a real run."""
    assert zhang2016.main(["--scale", "smoke", "--no-progress", "--out", str(tmp_path), option, value]) == 2
    assert _one_line(capsys.readouterr().err).endswith(text)
    assert not (tmp_path / "zhang2016").exists()


# --------------------------------------------------------------------------- 4, 5. perfmodel profile


@pytest.fixture
def no_work(monkeypatch):
    """perfmodel profile's launcher, MPI runs and compute timing fail the test if reached."""
    from perfmodel.lab.profile import cli, compute

    def never(*a, **k):
        pytest.fail("work started before the options were checked")
    for module, name in ((cli, "resolve_launcher"), (cli, "run_comm"), (compute, "profile_compute")):
        monkeypatch.setattr(module, name, never)


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_profile_refuses_a_timeout_that_is_not_finite_and_positive(tmp_path, capsys, no_work, value):
    out = tmp_path / "p.json"
    assert perfmodel_main(["profile", "--no-compute", "--ranks", "1,2", "--nccl", "off", "--timeout", value,
                           "--out", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("perfmodel: error: --timeout must be a finite number of seconds > 0") and not out.exists()


def test_profile_refuses_kernel_load_without_link(tmp_path, capsys, no_work):
    assert perfmodel_main(["profile", "--no-compute", "--ranks", "1,2", "--nccl", "off", "--kernel-load", "3",
                           "--out", str(tmp_path / "p.json")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "--kernel-load" in line and "with --link" in line


@pytest.mark.parametrize("option, value, text", [("--threads", "0", "--threads must be >= 1, got 0"),
                                                 ("--warmup", "-1", "--warmup must be >= 0, got -1"),
                                                 ("--repeats", "0", "--repeats must be >= 3, got 0")])
def test_profile_refuses_bad_compute_counts_before_any_progress_bar(tmp_path, capsys, no_work, option, value, text):
    assert perfmodel_main(["profile", "--workload", "lenet", "--batch", "4,8", "--ranks", "1", "--nccl", "off",
                           option, value, "--out", str(tmp_path / "p.json")]) == 2
    assert _one_line(capsys.readouterr().err) == f"perfmodel: error: {text}"


# --------------------------------------------------------------------------- 6. perfmodel emulate --cleanup


def test_emulate_cleanup_with_a_command_is_refused_before_any_setup(tmp_path, capsys, monkeypatch):
    from perfmodel.lab import emulate

    def never(*a, **k):
        pytest.fail("emulation set-up or clean-up started")
    for name in ("cleanup_stale", "run_in_cluster", "check_host"):
        monkeypatch.setattr(emulate, name, never)
    monkeypatch.setattr(emulate.EmulatedCluster, "__enter__", never)
    touched = tmp_path / "x"
    assert perfmodel_main(["emulate", "--cleanup", "--", "touch", str(touched)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("perfmodel: error: --cleanup") and "runs no command" in line and "touch" in line
    assert not touched.exists()


# --------------------------------------------------------------------------- argparse's own errors: one line

@pytest.mark.parametrize("module, argv", [
    ("reproduce.__main__", []), ("reproduce.__main__", ["nosuchpaper"]), ("reproduce.zhang2016", ["--scale", "foo"]),
    ("reproduce.wen2017", ["--seeds"]), ("reproduce.headlines", ["--format", "xml"]),
    ("reproduce.published", ["--overlap", "x"]), ("reproduce.published_pairs", ["--bogus"]),
    ("reproduce.published_node", ["--bogus"]), ("reproduce.published_whatif", ["--bogus"]),
    ("reproduce.published_intervals", ["--bogus"]), ("reproduce.compute_rates", ["--bogus"]),
    ("reproduce.overlap_tables", ["--bogus"]), ("reproduce.overlap_check", ["--remakes", "x"]),
    ("reproduce.validation_recompute", ["--bogus"]),
])
def test_every_reproduce_command_words_a_bad_option_in_one_line(module: str, argv: list[str], capsys) -> None:
    import importlib

    with pytest.raises(SystemExit) as e:
        rc = importlib.import_module(module).main(argv)
        raise SystemExit(rc)  # a command that refuses by returning 2 rather than through argparse
    assert e.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert " error: " in line and "usage:" not in line
