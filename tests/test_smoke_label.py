"""Smoke-scale results say so (issue 30): table notes, the rendered report's title and banner, the
line dsgd-reproduce ends with; render's output is quiet (no kernel warning, no colour codes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from reproduce.common import SMOKE_BANNER, ResultTable, wrote_summary

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper"))
import render  # noqa: E402  (paper/render.py)

SHARED = ROOT.parent / "shared" / "datasets"
DATA_ARGS = ["--data-root", str(SHARED)] if SHARED.exists() else []


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def test_a_smoke_row_note_starts_with_the_banner(tmp_path):
    table = ResultTable(tmp_path / "t.csv", ("k", "scale"))
    table.add({"k": 1, "scale": "smoke", "note": "5 steps on synthetic images"})
    table.add({"k": 2, "scale": "small", "note": "1000 steps"})
    table.add({"k": 3, "scale": "smoke"})
    notes = pd.read_csv(tmp_path / "t.csv", keep_default_na=False).set_index("k")["note"]
    assert notes[1] == f"{SMOKE_BANNER}; 5 steps on synthetic images"
    assert notes[2] == "1000 steps" and notes[3] == SMOKE_BANNER


def test_wrote_summary_lists_tables_rows_and_logs(tmp_path):
    since = time.time() - 1
    (tmp_path / "runs").mkdir()
    pd.DataFrame({"a": [1, 2, 3]}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "runs" / "r.jsonl").write_text("{}\n")
    (tmp_path / "t.csv.lock").write_text("")
    line = wrote_summary("p", tmp_path, since, "smoke")
    assert line == f"reproduce/p: wrote t.csv (3 rows), 1 other file (run logs, order files) under {tmp_path} " \
                   f"({SMOKE_BANNER})"
    assert wrote_summary("p", tmp_path, time.time() + 60, "small") == \
        f"reproduce/p: nothing new in {tmp_path}: every row was already there"


def test_label_smoke_prefixes_the_title_and_adds_the_banner():
    import jupytext

    nb = jupytext.read(ROOT / "paper" / "wen2017.py")
    cells = len(nb.cells)
    render.label_smoke(nb)
    assert len(nb.cells) == cells + 1
    assert nb.cells[0].source.startswith("# smoke: TernGrad (Wen et al., 2017)")
    assert nb.cells[1].cell_type == "markdown" and SMOKE_BANNER in nb.cells[1].source


def test_committed_results_are_not_smoke():
    assert "smoke" not in render.result_scales(ROOT / "results", "wen2017")
    assert "small" in render.result_scales(ROOT / "results", "wen2017")


def test_render_error_line_has_no_colour_codes():
    text = "Cell failed\n\x1b[0;31mValueError\x1b[0m: bad \x1b[1;32mthing\x1b[0m\n\n"
    assert render.last_line(text) == "ValueError: bad thing"


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec not on PATH")
def test_smoke_reproduce_and_its_report_carry_the_banner_and_small_does_not(tmp_path):
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, "-m", "reproduce.wen2017", "--scale", "smoke", "--out", str(out),
                          "--no-progress", *DATA_ARGS], capture_output=True, text=True, timeout=600, env=_env(),
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("reproduce/wen2017: wrote ") and "table1_cifarnet.csv" in last
    assert last.endswith(f"({SMOKE_BANNER})")
    t1 = pd.read_csv(out / "wen2017" / "table1_cifarnet.csv")
    assert t1.note.str.startswith(SMOKE_BANNER).all() and t1.note.str.contains("synthetic images").all()
    assert not t1.note.str.contains("4000-image").any()
    for results, build, smoke in ((out, tmp_path / "smoke", True), (ROOT / "results", tmp_path / "small", False)):
        res = subprocess.run([sys.executable, "paper/render.py", "wen2017", "--results", str(results), "--build",
                              str(build)], capture_output=True, text=True, timeout=600, env=_env(), cwd=ROOT)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "without encryption" not in res.stderr and "\x1b[" not in res.stderr, res.stderr
        html = (build / "wen2017.html").read_text()
        assert ("plumbing check, not a reproduction" in html) == smoke
        assert ("smoke: TernGrad" in html) == smoke
