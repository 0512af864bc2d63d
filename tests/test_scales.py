"""Scales kept apart (issue 31, part 1): every results table keys its rows by scale, smoke output has its
own folder, and a report shows one scale, named in its title."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reproduce import common
from reproduce.common import MODEL_SCALE, SCALES, ResultTable
from reproduce.zhang2016 import FIG1_N, FIG1_STEPS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper"))
import _common  # noqa: E402
import _scales  # noqa: E402

#: results/<paper>/<table>.csv -> its key, as the reproduce scripts declare it
_TABLE = re.compile(r'ResultTable\(out / "(\w+)\.csv", \(([^)]*)\)\)')


def _declared_keys() -> dict[tuple[str, str], tuple[str, ...]]:
    keys = {}
    for script in (ROOT / "reproduce").glob("*.py"):
        for table, key in _TABLE.findall(script.read_text()):
            keys[(script.stem, table)] = tuple(re.findall(r'"(\w+)"', key))
    return keys


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def test_every_table_keys_its_rows_by_scale():
    keys = _declared_keys()
    assert len(keys) >= 17, sorted(keys)  # the 17 tables of the five papers and the validation
    assert all("scale" in k for k in keys.values()), {t: k for t, k in keys.items() if "scale" not in k}
    with pytest.raises(ValueError, match="must hold 'scale'"):
        ResultTable(Path("t.csv"), ("n", "metric"))


def test_committed_results_load_under_their_keys():
    """Each committed table opens under its script's key, holds each key once and only known scales."""
    keys = _declared_keys()
    seen = 0
    for (paper, table), key in keys.items():
        path = ROOT / "results" / paper / f"{table}.csv"
        if not path.exists():
            continue
        t = ResultTable(path, key)
        frame = t.frame
        assert not frame[list(key)].astype(str).duplicated().any(), f"{path}: a key twice"
        assert set(frame.scale.astype(str)) <= {*SCALES, MODEL_SCALE}, (path, set(frame.scale))
        first = frame.iloc[0]
        assert t.done(**{k: first[k] for k in key})
        other = "paper" if first["scale"] != "paper" else "small"
        assert first["scale"] == MODEL_SCALE or not t.done(**{**{k: first[k] for k in key}, "scale": other})
        seen += 1
    assert seen >= 15


def test_smoke_goes_to_its_own_folder_by_default(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "ROOT", tmp_path / "not-a-checkout")
    monkeypatch.chdir(tmp_path)
    assert common.default_results_dir("smoke") == tmp_path / "results-smoke"
    assert common.default_results_dir("small") == tmp_path / "results"
    from reproduce.zhang2016 import main

    assert main(["--scale", "smoke", "--only", "fig1_staleness", "--no-progress"]) == 0
    assert (tmp_path / "results-smoke" / "zhang2016" / "fig1_staleness.csv").exists()
    assert not (tmp_path / "results").exists()
    # in a checkout, smoke output stays out of the committed results/ (and git ignores its folder)
    assert "results-smoke/" in (ROOT / ".gitignore").read_text().splitlines()


@pytest.mark.slow  # about 15 s: the small-scale staleness simulation
def test_smoke_and_small_into_one_folder_keep_separate_rows(tmp_path):
    def run(scale):
        res = subprocess.run([sys.executable, "-m", "reproduce", "zhang2016", "--scale", scale, "--only",
                              "fig1_staleness", "--out", str(tmp_path), "--no-progress"],
                             capture_output=True, text=True, timeout=120, env=_env(), cwd=ROOT)
        assert res.returncode == 0, res.stderr[-2000:]

    path = tmp_path / "zhang2016" / "fig1_staleness.csv"
    run("smoke")
    smoke_rows = pd.read_csv(path)
    run("small")
    both = pd.read_csv(path)
    per_n = 3 * len(FIG1_N) + 1  # mean, max/n and tail for every n, and the max itself for n = 1
    assert both.scale.value_counts().to_dict() == {"smoke": per_n, "small": per_n}
    for scale in ("smoke", "small"):  # each row counts the gradients of its own scale's simulation
        assert set(both[both.scale == scale].gradients) == {FIG1_STEPS[scale]}
    pd.testing.assert_frame_equal(both[both.scale == "smoke"].reset_index(drop=True), smoke_rows)
    before = path.read_bytes()
    run("smoke")  # finished at both scales: a rerun adds nothing
    assert path.read_bytes() == before


def _fig3_rows(scale: str, fp32: float, tern: float) -> list[dict]:
    return [{"optimizer": "momentum", "gradients": g, "workers": 2, "epoch": 1, "scale": scale, "seed": 1,
             "metric": "test_accuracy", "paper_value": None, "rerun_value": v, "difference": None,
             "settings": "{}", "log": ""} for g, v in (("fp32", fp32), ("TernGrad", tern))]


def test_a_report_reads_one_scale(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "wen2017"
    folder.mkdir()
    pd.DataFrame(_fig3_rows("smoke", 10.0, 20.0) + _fig3_rows("small", 97.0, 98.0)).to_csv(
        folder / "fig3_mnist.csv", index=False)
    pd.DataFrame([{"workload": "lenet", "gpus": 1, "scale": MODEL_SCALE, "rerun_value": 1.0}]).to_csv(
        folder / "fig5_model.csv", index=False)
    monkeypatch.setenv("DSGD_RESULTS", str(tmp_path))
    monkeypatch.delenv(_scales.ENV, raising=False)
    assert _scales.scales_present(folder) == ["smoke", "small"]
    assert set(_common.read_results("wen2017", "fig3_mnist").scale) == {"small"}  # the largest present
    assert len(_common.read_results("wen2017", "fig5_model")) == 1  # the model's rows go with every scale
    monkeypatch.setenv(_scales.ENV, "smoke")
    assert sorted(_common.read_results("wen2017", "fig3_mnist").rerun_value) == [10.0, 20.0]
    monkeypatch.setenv(_scales.ENV, "paper")
    assert _common.read_results("wen2017", "fig3_mnist") is None
    assert "No paper-scale rows" in capsys.readouterr().out
    with pytest.raises(ValueError, match="scale must be one of"):
        _scales.choose_scale(folder, "huge")


@pytest.mark.slow  # executes a notebook in a kernel
def test_rendered_report_names_its_scale_and_never_averages_two(tmp_path):
    results = tmp_path / "results"
    (results / "wen2017").mkdir(parents=True)
    pd.DataFrame(_fig3_rows("smoke", 10.0, 20.0) + _fig3_rows("small", 97.0, 98.5)).to_csv(
        results / "wen2017" / "fig3_mnist.csv", index=False)
    res = subprocess.run([sys.executable, "paper/render.py", "wen2017", "--results", str(results), "--build",
                          str(tmp_path)], capture_output=True, text=True, timeout=300, env=_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    html = (tmp_path / "wen2017.html").read_text()
    assert re.search(r"<title>TernGrad[^<]*— small scale</title>", html)
    assert re.search(r"<h1[^>]*>TernGrad[^<]*— small scale", html)
    # the paired pivot: TernGrad - fp32 of the small rows (+1.5), not of a mix with smoke (+6.25)
    assert "<td>1.5</td>" in html and "<td>98.5</td>" in html
    assert "<td>6.25</td>" not in html and "<td>58.5</td>" not in html and "<td>20</td>" not in html
