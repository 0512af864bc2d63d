"""Every reproduce script at --scale smoke, then every paper notebook executed through nbconvert on
the results it wrote; a rerun of a finished script redoes nothing."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "reproduce").glob("*.py")  # the scripts, not their helper modules
                 if "\nTABLES = {" in p.read_text())
NOTEBOOKS = sorted(p.stem for p in (ROOT / "paper").glob("*.py") if not p.stem.startswith("_") and p.stem != "render")
SHARED = ROOT.parent / "shared" / "datasets"
DATA_ARGS = ["--data-root", str(SHARED)] if SHARED.exists() else []  # the offline datasets, where present


def _run(args, timeout):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def smoke_folder(tmp_path_factory):
    """The results folder every script writes into, and each script's finished run (exit status, stderr)."""
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec not on PATH")
    return tmp_path_factory.mktemp("results"), {}


def _smoke(smoke_folder, name: str) -> Path:
    """The results folder after reproduce/<name>.py ran into it at smoke scale: run once, on its first
    test, so each script's run counts against that test's own timeout, not against one for all six."""
    out, runs = smoke_folder
    if name in SCRIPTS and name not in runs:
        res = _run(["-m", f"reproduce.{name}", "--scale", "smoke", "--out", str(out), "--no-progress", *DATA_ARGS],
                   600)
        runs[name] = (res.returncode, res.stderr[-3000:])
    if name in runs:
        code, err = runs[name]
        assert code == 0, f"reproduce/{name}.py: {err}"
    return out


def test_there_is_a_script_and_a_notebook_per_paper():
    for paper in ("zhang2016", "wen2017", "barkai2020", "hermans2018", "coquelin2021"):
        assert paper in SCRIPTS and paper in NOTEBOOKS, paper
    assert "validation" in SCRIPTS and "validation" in NOTEBOOKS


@pytest.mark.mpi
@pytest.mark.slow  # each script at smoke scale: minutes of MPI start-ups
@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.timeout(900)  # a script's first test runs it, under its own 600 s limit
def test_smoke_results_have_the_rerun_beside_the_paper(smoke_folder, name):
    tables = list((_smoke(smoke_folder, name) / name).glob("*.csv"))
    assert tables, f"reproduce/{name}.py wrote no table"
    for t in tables:
        df = pd.read_csv(t)
        assert len(df) > 0, t
        if name != "validation":
            assert {"paper_value", "rerun_value", "difference", "settings"} <= set(df.columns), t


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.timeout(900)  # a script's first test runs it, under its own 600 s limit
def test_rerun_skips_finished_rows(smoke_folder, name):
    smoke_results = _smoke(smoke_folder, name)
    before = {t.name: t.read_bytes() for t in (smoke_results / name).glob("*.csv")}
    res = _run(["-m", f"reproduce.{name}", "--scale", "smoke", "--out", str(smoke_results), "--no-progress",
                *DATA_ARGS], 120)
    assert res.returncode == 0, res.stderr[-2000:]
    after = {t.name: t.read_bytes() for t in (smoke_results / name).glob("*.csv")}
    assert after == before


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
@pytest.mark.timeout(900)
def test_notebook_executes(smoke_folder, tmp_path, name):
    res = _run(["paper/render.py", name, "--results", str(_smoke(smoke_folder, name)), "--build", str(tmp_path)], 600)
    assert res.returncode == 0, res.stderr[-3000:]
    html = (tmp_path / f"{name}.html").read_text()
    assert "<img" in html, f"paper/{name}.py drew no figure from the smoke results"


def test_bad_arguments_are_one_line_exit_2():
    res = _run(["-m", "reproduce.wen2017", "--only", "nope"], 60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "unknown table" in res.stderr
