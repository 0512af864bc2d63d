"""reproduce/common: results written row by row, atomically; reruns skip finished rows."""

import pandas as pd
import pytest

from reproduce.common import ReproduceError, ResultTable, difference


def test_rows_persist_and_reruns_skip(tmp_path):
    path = tmp_path / "zhang2016" / "fig1.csv"
    t = ResultTable(path, ("n", "scale"))
    assert not t.done(n=1, scale="smoke")
    t.add({"n": 1, "scale": "smoke", "value": 0.5})
    t.add({"n": 2, "scale": "smoke", "value": 1.5})
    again = ResultTable(path, ("n", "scale"))  # a new process reading what the old one left
    assert again.done(n=1, scale="smoke") and again.done(n="2", scale="smoke")
    assert not again.done(n=1, scale="small")
    again.add({"n": 1, "scale": "smoke", "value": 99.0})  # finished: not redone, not duplicated
    df = pd.read_csv(path)
    assert df.value.tolist() == [0.5, 1.5]
    assert not list(path.parent.glob(".*.tmp"))  # no temporary files left behind


def test_unreadable_or_foreign_results_are_named(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ReproduceError, match=r"lacks key columns \['n', 'scale'\]"):
        ResultTable(bad, ("n", "scale"))
    with pytest.raises(ReproduceError, match="lacks key column 'n'"):
        ResultTable(tmp_path / "u.csv", ("n", "scale")).add({"m": 1, "scale": "small"})


def test_difference():
    assert difference(82.5, 83.19) == pytest.approx(-0.69)
    assert difference(None, 1.0) is None


def test_two_writers_keep_each_others_rows(tmp_path):
    """Two processes opened the table before either wrote (e.g. one per seed): no row is lost."""
    path = tmp_path / "t.csv"
    a, b = ResultTable(path, ("seed", "scale")), ResultTable(path, ("seed", "scale"))
    a.add({"seed": 0, "scale": "small", "value": 1.0})
    b.add({"seed": 1, "scale": "small", "value": 2.0})  # b never saw seed 0 in memory; it merges with the file
    b.add({"seed": 0, "scale": "small", "value": 9.0})  # finished by a: skipped
    assert sorted(pd.read_csv(path).itertuples(index=False, name=None)) == [(0, "small", 1.0), (1, "small", 2.0)]


def _fill(path, seed, rows):
    t = ResultTable(path, ("seed", "i", "scale"))
    for i in range(rows):
        t.add({"seed": seed, "i": i, "scale": "small"})


def test_concurrent_processes_lose_nothing(tmp_path):
    import multiprocessing as mp

    path = tmp_path / "t.csv"
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_fill, args=(path, s, 25)) for s in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    df = pd.read_csv(path)
    assert len(df) == 75 and not df.duplicated(["seed", "i"]).any()


def test_seed_lists():
    from reproduce.common import parser, seeds_of

    p = parser("x", "x")
    assert seeds_of(p.parse_args([]), (0,)) == (0,)
    assert seeds_of(p.parse_args(["--seeds", "1,2"]), (0,)) == (1, 2)
    with pytest.raises(SystemExit) as e:
        p.parse_args(["--seeds", "a"])
    assert e.value.code == 2
