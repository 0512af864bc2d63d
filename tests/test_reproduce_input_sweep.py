"""`dsgd-reproduce PAPER` with a results table it resumes from that is broken: one line naming the file, exit 2.

A sweep of every paper's tables (empty, a folder, not UTF-8, JSON, cut in half, header only, a ragged row;
every non-key column set to text, empty, inf or []) and of the options (--seeds, --only, --launcher,
--hostfile, --out, --data-root, --scale, hermans2018's --workers, validation's --remakes given 0, -1, nan,
inf, 1e300, text, empty, 10^23, a file, a folder, a missing path) found one case: a table with a ragged row
printed pandas' tokenizer error, whose text ends in a newline, so the error took two lines (16 tables)."""

from __future__ import annotations

from pathlib import Path

import pytest

import reproduce.__main__ as rm
from reproduce import zhang2016


def _run(capsys: pytest.CaptureFixture, argv: list[str]) -> list[str]:
    assert rm.main(argv) == 2
    return capsys.readouterr().err.splitlines()


def test_a_ragged_results_table_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    table = tmp_path / "zhang2016" / "fig1_staleness.csv"
    table.parent.mkdir()
    table.write_text("n,metric,scale,value\n1,tau,smoke,0.5\n1,2,3,4,5,6,7\n")
    lines = _run(capsys, ["zhang2016", "--scale", "smoke", "--out", str(tmp_path), "--only", "fig1_staleness",
                          "--no-progress"])
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"reproduce/zhang2016: error: results file {table} is unreadable (Error tokenizing "
                               f"data. C error: Expected 4 fields in line 3, saw 7); move it away to rerun"), lines
    assert table.read_text().endswith("1,2,3,4,5,6,7\n")  # left as it was


def test_any_error_a_table_raises_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args, out):
        raise ValueError("a library's message\nover two lines\n")

    monkeypatch.setitem(zhang2016.TABLES, "fig1_staleness", broken)
    lines = _run(capsys, ["zhang2016", "--scale", "smoke", "--out", str(tmp_path), "--only", "fig1_staleness"])
    assert lines == ["reproduce/zhang2016: error: a library's message over two lines"]


@pytest.fixture
def paper_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of data/paper_tables that the test may break, read instead of the committed one."""
    import shutil

    from reproduce import paper_tables as pt

    copy = tmp_path / "paper_tables"
    shutil.copytree(pt.TABLES_DIR, copy)
    monkeypatch.setattr(pt, "TABLES_DIR", copy)
    pt._load.cache_clear()
    yield copy
    pt._load.cache_clear()


def _rewrite(path: Path, column: str, value: str) -> None:
    import pandas as pd

    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame[column] = value
    frame.to_csv(path, index=False)


def test_a_paper_table_with_a_worker_count_past_2_53_is_one_line(paper_tables: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    _rewrite(paper_tables / "zhang2016.csv", "workers", "1e300")  # pandas' Int64 overflowed: a traceback
    lines = _run(capsys, ["zhang2016", "--scale", "smoke", "--out", str(tmp_path / "out"), "--only", "fig2_speedup",
                          "--no-progress"])
    assert lines == ["reproduce/zhang2016: error: zhang2016.csv line 2: column 'workers' must be a positive integer "
                     "up to 2**53, got '1e300'"]


def test_a_paper_table_lacking_a_row_a_script_reads_is_one_line(paper_tables: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    _rewrite(paper_tables / "barkai2020.csv", "metric", "x")  # a LookupError traceback
    lines = _run(capsys, ["barkai2020", "--scale", "smoke", "--out", str(tmp_path / "out"), "--only", "fig12_speedup",
                          "--no-progress"])
    assert len(lines) == 1 and lines[0].startswith("reproduce/barkai2020: error: no published number in barkai2020 "
                                                   "matches "), lines
    assert lines[0].endswith(f"({paper_tables / 'barkai2020.csv'} lacks the row the script reads)"), lines


# ------------------------------------------------------------------- run logs the scripts reuse


def _log(tmp_path: Path, *records: str) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(['{"type":"header","schema":1,"config":{"algo":"ssgd"}}', *records]) + "\n")
    return path


@pytest.mark.parametrize("record, reader, fragment", [
    ('{"type":"eval","epoch":1.0,"test_loss":1.2,"test_acc":0.5}', "evals_of", "a eval line's step is missing"),
    ('{"type":"eval","step":"x","epoch":1.0,"test_loss":1.2,"test_acc":0.5}', "evals_of", "a eval line's step is 'x'"),
    ('{"type":"eval","step":7,"epoch":1.0,"test_loss":1.2,"test_acc":null}', "evals_of",
     "a eval line's test_acc is None, not a number"),
    ('{"type":"eval","step":7,"epoch":1.0,"test_loss":1.2,"test_acc":0.5,"train_loss":[]}', "evals_of",
     "a eval line's train_loss is [], not a number"),
    ('{"type":"step","step":0,"t_step":0.1}', "epoch_walls", "a step line's epoch is missing"),
    ('{"type":"step","step":0,"epoch":0,"t_step":null}', "epoch_walls", "a step line's t_step is None"),
    ('{"type":"summary","wall_s":"x"}', "log_wall", "a summary line's wall_s is 'x', not a number"),
])
def test_a_reused_log_with_a_field_that_is_not_a_number_is_named(tmp_path: Path, record: str, reader: str,
                                                                fragment: str) -> None:
    """Each was a TypeError or KeyError traceback of dsgd-reproduce coquelin2021 or wen2017 on a log it reused
    (34 cases of a 116-case sweep)."""
    from reproduce import runs
    from reproduce.common import ReproduceError

    path = _log(tmp_path, record)
    with pytest.raises(ReproduceError) as err:
        getattr(runs, reader)(path)
    assert str(err.value).startswith(f"run log {path}: {fragment}")
    assert str(err.value).endswith("move the log away to rerun it")


def test_a_reused_log_reads_as_before(tmp_path: Path) -> None:
    from reproduce import runs

    path = _log(tmp_path, '{"type":"step","step":0,"epoch":0,"t_step":0.25}',
                '{"type":"step","step":1,"epoch":0,"t_step":0.5}',
                '{"type":"eval","step":1,"epoch":1.0,"test_loss":null,"test_acc":0.1,"nonfinite":{"test_loss":"nan"}}',
                '{"type":"summary","wall_s":3.5}')
    assert runs.epoch_walls(path) == {0: 0.75} and runs.log_wall(path) == 3.5
    (ev,) = runs.evals_of(path)
    assert ev["step"] == 1 and ev["test_acc"] == 0.1 and ev["test_loss"] != ev["test_loss"]  # nan: diverged


def test_a_reused_log_whose_config_is_not_an_object_is_made_anew(tmp_path: Path) -> None:
    from reproduce import runs

    path = tmp_path / "run.jsonl"
    path.write_text('{"type":"header","schema":1,"config":[]}\n{"type":"eval","step":1}\n{"type":"summary"}\n')
    assert runs.log_matches(path, {"algo": "ssgd"}) is False  # an AttributeError traceback before
