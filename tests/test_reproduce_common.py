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
    with pytest.raises(ReproduceError, match="lacks key columns"):
        ResultTable(bad, ("n",))
    with pytest.raises(ReproduceError, match="lacks key column 'n'"):
        ResultTable(tmp_path / "u.csv", ("n",)).add({"m": 1})


def test_difference():
    assert difference(82.5, 83.19) == pytest.approx(-0.69)
    assert difference(None, 1.0) is None
