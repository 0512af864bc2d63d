"""Installed layout: package data found in a wheel's place or the checkout's, the dsgd-reproduce entry,
one-line errors from a failed launch, Ctrl-C on a reproduce run."""

import argparse
import sys

import pandas as pd
import pytest

import perfmodel.presets as presets
import reproduce.paper_tables as paper_tables
from reproduce.__main__ import main as reproduce_main
from reproduce.common import ResultTable, run_tables
from reproduce.runs import run_checked, run_command
from reproduce.common import ReproduceError


def test_presets_prefer_the_installed_copy(tmp_path, monkeypatch):
    monkeypatch.delenv("DSGD_PRESETS", raising=False)
    checkout = presets.presets_dir()
    assert (checkout / "workloads.toml").is_file()  # the source tree's data/presets here
    fake = tmp_path / "perfmodel"
    (fake / "_presets").mkdir(parents=True)
    monkeypatch.setattr(presets, "__file__", str(fake / "presets.py"))
    assert presets.presets_dir() == (fake / "_presets").resolve()
    monkeypatch.setenv("DSGD_PRESETS", str(tmp_path))
    assert presets.presets_dir() == tmp_path


def test_paper_tables_prefer_the_installed_copy(tmp_path, monkeypatch):
    assert (paper_tables.TABLES_DIR / "wen2017.csv").is_file()
    fake = tmp_path / "reproduce"
    (fake / "_paper_tables").mkdir(parents=True)
    monkeypatch.setattr(paper_tables, "__file__", str(fake / "paper_tables.py"))
    assert paper_tables._tables_dir() == (fake / "_paper_tables").resolve()


def test_every_data_file_is_declared_as_package_data():
    """pyproject's package-data globs, expanded as setuptools expands them (glob, recursive), cover every
    file of data/presets and data/paper_tables the code reads, so a regular install carries them."""
    import glob
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cfg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs, globs = cfg["package-dir"], cfg["package-data"]
    assert set(dirs) <= set(cfg["packages"]) and set(globs) == set(dirs)
    for pkg, folder in dirs.items():
        base = root / folder
        shipped = {Path(p).resolve() for g in globs[pkg] for p in glob.glob(str(base / g), recursive=True)}
        wanted = {p.resolve() for p in base.rglob("*")
                  if p.is_file() and p.suffix in (".toml", ".json", ".csv", ".md")}
        assert wanted and wanted <= shipped, sorted(str(p.relative_to(base)) for p in wanted - shipped)


def test_dsgd_reproduce_dispatches_and_refuses_unknown_papers(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        reproduce_main(["nosuch"])
    assert e.value.code == 2
    assert reproduce_main([]) == 2
    out = tmp_path / "res"
    assert reproduce_main(["wen2017", "--scale", "smoke", "--only", "nosuch", "--out", str(out)]) == 2
    assert "unknown table(s) nosuch" in capsys.readouterr().err


def test_a_failed_launch_reports_the_programs_line_not_the_banner():
    script = ("import sys; print('trainers: error: bad --lr', file=sys.stderr); "
              "print('-' * 70 + '\\nprterun detected that one or more processes exited with non-zero status,\\n"
              "   Exit code:    2\\n' + '-' * 70, file=sys.stderr); sys.exit(2)")
    with pytest.raises(ReproduceError, match=r"^demo: failed \(exit 2\): trainers: error: bad --lr$"):
        run_checked([sys.executable, "-c", script], 60, "demo")


def _args(out):
    return argparse.Namespace(out=str(out), only=None)


def test_ctrl_c_ends_with_one_line_and_keeps_finished_rows(tmp_path, capsys):
    def table(args, folder):
        t = ResultTable(folder / "t.csv", ("i", "scale"))
        t.add({"i": 0, "scale": "small", "v": 1.0})
        raise KeyboardInterrupt  # as if Ctrl-C came while row 1 was computed

    assert run_tables("demo", {"t": table}, _args(tmp_path)) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("reproduce/demo: interrupted")
    assert pd.read_csv(tmp_path / "demo" / "t.csv").i.tolist() == [0]


def test_ctrl_c_during_a_run_leaves_no_partial_log(tmp_path, monkeypatch):
    log = tmp_path / "run.jsonl"

    def interrupted(cmd, timeout_s, what):
        log.write_text('{"kind": "header"}\n{"kind": "step"}\n')  # the run had started logging
        raise KeyboardInterrupt

    monkeypatch.setattr("reproduce.runs.run_checked", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_command(["true"], log, {}, 10, "demo")
    assert not log.exists()


@pytest.mark.parametrize("how", ["module", "script", "entry"])
def test_scripts_start_from_any_directory(tmp_path, how):
    """With the package importable (as after `pip install`; here through PYTHONPATH), each way of
    starting a script works from a folder outside the checkout."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    argv = {"module": ["-m", "reproduce.wen2017"], "script": [str(root / "reproduce" / "wen2017.py")],
            "entry": ["-m", "reproduce", "wen2017"]}[how]
    out = tmp_path / "res"
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, *argv, "--scale", "smoke", "--only", "fig5_model", "--out", str(out),
                          "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = pd.read_csv(out / "wen2017" / "fig5_model.csv")
    assert len(rows) > 0 and not (tmp_path / "results").exists()  # --out, not the current directory


def test_every_package_of_the_source_tree_is_declared():
    """A non-editable install carries only the packages pyproject names: a subpackage left out
    (perfmodel.lab, trainers.exchanges) would import from a checkout and fail from a wheel."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    declared = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(root).parts) for top in ("perfmodel", "trainers", "reproduce")
             for p in (root / top).rglob("__init__.py")}
    assert found <= declared, sorted(found - declared)
