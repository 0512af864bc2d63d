"""The checks every round of judged families makes (tests/test_published_judged*.py): medians of errors as the
docs quote them, a family's frozen predictions and figures, its frozen node predictions, a round's pooled figures,
and the one-node rows priced with a vendor's layout."""

from __future__ import annotations

import numpy as np

from reproduce import published as pub
from reproduce import published_judged as pj
from reproduce import published_node as pn

# the effects of the model these files were judged with (all of reproduce.published.EFFECTS at 3704387)
JUDGED_EFFECTS = ("gpu-variability", "horovod-cycle", "overlap-interference", "partial-node-rings", "bucket-copies")
TWO_SOCKETS = pub.ROOT / "data" / "topologies" / "two_sockets_4gpu.txt"


def judged_by(round_name: str) -> list[str]:
    """The families judged by the end of round ``round_name``: every JUDGED family but the later rounds' (the
    NODE_ROUNDS keys come in the order of the rounds)."""
    names = list(pj.NODE_ROUNDS)
    later = {f for r in names[names.index(round_name) + 1:] for f in pj.NODE_ROUNDS[r]}
    return [f for f in pj.JUDGED if f not in later]


def assert_judged_by(round_name: str, n: int, whole, band: int, across, one, node_n: int, by_gpu, by_node) -> None:
    """Every family judged by the end of round ``round_name``, pooled: n rows, the medians (|error|, signed) over
    all rows, the band's hits, the medians across nodes and in one node; the rows across nodes of the rounds
    judged from both predictors: node_n rows, the medians from the single-GPU rate and from the one-node run."""
    families = judged_by(round_name)
    every = [j for f in families for j in pj.judged_rows(f)]
    assert (len(every), medians([j.error_pct for j in every]), pj.inside_band(every)) == (n, whole, band)
    assert medians([j.error_pct for j in every if j.row["nodes"] > 1]) == across
    assert medians([j.error_pct for j in every if j.row["nodes"] == 1]) == one
    node = [(j, p) for f in pj.NODE_JUDGED if f in families for j, p in pj.node_judged(f)]
    assert (len(node), medians([j.error_pct for j, _ in node]),
            medians([pj.Judged(j.family, j.row, p).error_pct for j, p in node])) == (node_n, by_gpu, by_node)


def medians(errors: list[float]) -> tuple[float, float]:
    """(median |error|, median signed error), percent to one decimal, as the docs print them."""
    return round(float(np.median(np.abs(errors))), 1), round(float(np.median(errors)), 1)


def assert_family_figures(family: str, n: int, across: int, whole, across_fig, hits: dict, step: int = 1,
                          as_judged=lambda row: row) -> list[pj.Judged]:
    """The family's frozen predictions: n rows (``across`` across nodes), every ``step``-th what the model of the
    judgement gives on the row ``as_judged`` returns, the medians (|error|, signed) over all rows and across nodes
    (None: no row across), the committed band's (hits, rows) per declared half; its judged rows."""
    rows = pj.judged_rows(family)
    assert len(rows) == n and sum(j.row["nodes"] > 1 for j in rows) == across
    for j in rows[::step]:
        predicted = pub.predict_row(as_judged(j.row), effects=JUDGED_EFFECTS).predicted
        assert abs(predicted / j.predicted - 1) < 1e-6, j.row["id"]
    assert medians([j.error_pct for j in rows]) == whole
    if across_fig is not None:
        assert medians([j.error_pct for j in rows if j.row["nodes"] > 1]) == across_fig
    for half, (inside, total) in hits.items():
        in_half = [j for j in rows if j.row["half"] == half]
        assert (pj.inside_band(in_half), len(in_half)) == (inside, total)
    return rows


def assert_node_figures(family: str, n: int, by_gpu, by_node, step: int) -> None:
    """The family's frozen node predictions: n rows, every ``step``-th what the node predictor gives now, the medians
    (|error|, signed) from the single-GPU rate and from the one-node run."""
    nodes = pn.node_rows(pub.load_runs(pj.runs_path(family)))
    judged = pj.node_judged(family)
    assert len(judged) == n
    for j, p in judged[::step]:
        assert abs(pn.predict_from_node(j.row, nodes).predicted / p - 1) < 1e-6, j.row["id"]
    if n:
        assert medians([j.error_pct for j, _ in judged]) == by_gpu
        assert medians([pj.Judged(family, j.row, p).error_pct for j, p in judged]) == by_node


def assert_round_figures(families: tuple[str, ...], n: int, n_across: int, whole, one, across, linear: list,
                         halves: dict) -> list[pj.Judged]:
    """A round's pooled figures: rows and rows across nodes, the medians over all rows, in one node and across
    nodes, the linear guess's median |error| over the three, and per declared half (rows, medians, rows across
    nodes, medians across nodes); the round's judged rows."""
    rows = [j for f in families for j in pj.judged_rows(f)]
    far, near = [j for j in rows if j.row["nodes"] > 1], [j for j in rows if j.row["nodes"] == 1]
    assert (len(rows), len(far)) == (n, n_across)
    assert (medians([j.error_pct for j in rows]), medians([j.error_pct for j in near]),
            medians([j.error_pct for j in far])) == (whole, one, across)
    assert [medians([j.linear_error_pct for j in g])[0] for g in (rows, near, far)] == linear
    for half, want in halves.items():
        sub = [j for j in rows if j.row["half"] == half]
        sub_far = [j for j in sub if j.row["nodes"] > 1]
        assert (len(sub), medians([j.error_pct for j in sub]), len(sub_far),
                medians([j.error_pct for j in sub_far])) == want
    return rows


def one_node_layout_errors(family: str, changed: int) -> list[tuple[dict, float, float]]:
    """The family's one-node rows with their errors (percent) as published and priced with the two-socket layout
    (reproduce.published_whatif.with_layout, host CPU broadwell), after checking it changed ``changed`` rows."""
    from reproduce.published_whatif import with_layout

    rows = pub.load_runs(pj.runs_path(family))
    laid, n = with_layout(rows, TWO_SOCKETS, "broadwell")
    assert n == changed
    return [(r, pub.error_pct(pub.predict_row(r).predicted, r["samples_per_s"]),
             pub.error_pct(pub.predict_row(l).predicted, r["samples_per_s"]))
            for r, l in zip(rows, laid) if r["nodes"] == 1]
