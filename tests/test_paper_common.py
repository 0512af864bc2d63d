"""paper/_common.py: how tables and figures read in the rendered reports."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper"))
import _common  # noqa: E402


def test_missing_values_read_as_a_dash_with_a_note():
    frame = pd.DataFrame({"workload": ["alexnet", "vgg-a"], "paper": [np.nan, 2.0],
                          "workers": pd.array([None, 4], dtype="Int64"), "gain": [14.906446, 3.487003]})
    html = _common.table_html(frame)
    assert "NaN" not in html and "&lt;NA&gt;" not in html and "<NA>" not in html
    assert html.count(f"<td>{_common.MISSING}</td>") == 2
    assert _common.MISSING_NOTE in html
    assert "<td>14.91</td>" in html and "<td>3.487</td>" in html  # four significant digits
    assert "<th>0</th>" not in html  # no running row index
    full = _common.table_html(frame.dropna())
    assert _common.MISSING_NOTE not in full


def test_a_meaningful_index_is_kept():
    frame = pd.DataFrame({"mean": [1.0, 2.0]}, index=pd.Index(["ga", "sa"], name="method"))
    assert "<th>ga</th>" in _common.table_html(frame)


@pytest.mark.parametrize("title, short", [
    ("cluster = terngrad-ethernet | workload = alexnet", "terngrad-ethernet · alexnet"),
    ("batch = 4", "batch 4"),
    ("workload = vgg-a", "vgg-a"),
])
def test_facet_titles_are_short(title, short):
    assert _common._facet_title(title) == short


def test_compact_tick_labels():
    got = [_common._compact(v) for v in (1, 4, 0.5, 512, 2048, 1e4, 16384, 1.5e6, 0)]
    assert got == ["1", "4", "0.5", "512", "2048", "10k", "16.4k", "1.5M", ""]


def test_tidy_figure_moves_legends_out_and_labels_log_axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    x = 2.0 ** np.arange(10)
    ax.plot(x, x * 100, label="ssgd")
    ax.plot(x, x * 50, label="terngrad")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title("cluster = terngrad-infiniband | workload = vgg-a")
    ax.legend()
    _common.tidy_figure(fig)
    fig.canvas.draw()
    leg = ax.get_legend().get_window_extent()
    box = ax.get_window_extent()
    assert leg.x0 >= box.x1  # right of the plotted data, not over it
    assert ax.get_title() == "terngrad-infiniband · vgg-a"
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all("^" not in s and "$" not in s for s in labels)  # plain numbers, no 2^k mathtext
    assert len(labels) <= 7
    assert not [t.get_text() for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    plt.close(fig)
