"""The second round of families judged once (docs/validation.md, "A second round judged once"): byteps_runs.csv,
awsblog_runs.csv, azure_runs.csv, paddle_runs.csv and oneflow_runs.csv, each committed before one prediction
from the single-GPU rates (results/published_<family>/predictions.csv) and, for the rows across nodes, from the
same scheme's one-node run (node_predictions.csv). Each number is on the excerpt line its row cites (for azure,
derived by its generator from the excerpted plots); the frozen predictions are what the model of the judgement
gives; the figures quoted in the docs are those of the frozen files (reproduce.published_judged)."""

import pytest

from reproduce import published as pub
from reproduce import published_judged as pj
from reproduce.published_pairs import PAIR_KEY, SAME_MACHINES_KEY, tally
from tests.judged_checks import JUDGED_EFFECTS, assert_family_figures, assert_node_figures, judged_by, medians
from tests.test_published_judged import PUBLISHED, numbers_on_cited_lines

# family -> rows, rows across nodes, (median |error|, median signed) over all rows and across nodes, the 80%
# band's hits around the frozen predictions on the dev and held-out halves
FIGURES = {
    "byteps": (30, 30, (35.1, 28.1), (35.1, 28.1), {"dev": (5, 14), "held-out": (7, 16)}),
    "awsblog": (24, 12, (4.4, 0.3), (4.2, 2.1), {"dev": (9, 14), "held-out": (5, 10)}),
    "azure": (222, 111, (9.2, 9.2), (31.1, 31.1), {"dev": (66, 111), "held-out": (77, 111)}),
    "paddle": (53, 29, (7.3, 5.1), (7.3, 4.7), {"dev": (26, 28), "held-out": (21, 25)}),
    "oneflow": (55, 22, (1.3, -0.3), (1.9, -1.2), {"dev": (27, 28), "held-out": (27, 27)}),
}
# paddle's NGC PyTorch BERT rows on 32 GPUs with accumulation, judged with a quarter of their accumulation: the
# report's multi-node command passes 8 GPUs per node to run_benchmark.sh (found by a review after the judgement)
CORRECTED = {"d046": 264, "d047": 176, "d048": 132, "d049": 88}
# family -> rows across nodes with a node prediction, (median |error|, signed) from the single-GPU rate and from
# the one-node run
NODE_FIGURES = {"byteps": (0, None, None), "awsblog": (0, None, None), "azure": (111, (31.1, 31.1), (15.2, 15.2)),
                "paddle": (12, (7.0, 4.5), (8.5, 1.6)), "oneflow": (22, (1.9, -1.2), (2.7, -1.6))}


def test_the_registry_holds_the_second_round():
    assert set(FIGURES) <= set(pj.JUDGED) and set(FIGURES) == set(pj.NODE_ROUNDS["second"])


@pytest.mark.parametrize("family", ["byteps", "awsblog", "paddle", "oneflow"])
def test_every_number_is_on_the_excerpt_line_its_row_cites(family):
    # the value on the very line of the cited file at the cited commit (thousands separators dropped: the Horovod
    # README prints "2,073.3"), not just somewhere in the family's excerpts
    assert numbers_on_cited_lines(family, drop_commas=True) == 2 * FIGURES[family][0]
    for r in pub.load_runs(PUBLISHED / f"{family}_runs.csv"):
        assert r["source_url"].startswith("https://github.com/") and len(r["source_url"].split("/")[6]) == 40


def test_azure_values_are_read_off_plots_that_the_excerpts_hold():
    # every azure number is derived from SVG bar geometry by build_azure.py (tests/test_published.py regenerates
    # the CSV from the excerpts); each row says so and cites a plot.svg excerpt that exists
    rows = pub.load_runs(PUBLISHED / "azure_runs.csv")
    assert len(rows) == 222 and all(r["read_from"] == "plot" for r in rows)
    svgs = "\n".join(p.read_text() for p in (PUBLISHED / "excerpts").glob("azure_*.md"))
    assert svgs.count("<rect") >= 222
    assert all("plot.svg" in r["source_url"] or "plot.svg" in r["source_loc"] for r in rows)


@pytest.mark.parametrize("family", sorted(FIGURES))
def test_the_frozen_predictions_and_figures_are_as_reported(family):
    # the frozen predictions are the model of the judgement's, on the rows as judged
    assert_family_figures(family, *FIGURES[family], step=3, as_judged=lambda r: (
        r | {"accumulate": r["accumulate"] // 4} if r["id"] in CORRECTED else r))


@pytest.mark.parametrize("family", sorted(NODE_FIGURES))
def test_the_frozen_node_predictions_are_the_node_predictors(family):
    assert_node_figures(family, *NODE_FIGURES[family], step=5)


def test_azure_across_vms_from_single_gpu_rates_and_from_one_vm():
    judged = pj.node_judged("azure")
    node = [pj.Judged("azure", j.row, p) for j, p in judged]
    assert medians([j.error_pct for j, _ in judged]) == (31.1, 31.1)
    assert medians([j.error_pct for j in node]) == (15.2, 15.2) and pj.inside_band(node) == 93
    # declared before the judgement (a5b5fd5): the TCP rows rest on an assumed 10 GbE; over InfiniBand (FDR, cited)
    tcp = [i for i, (j, _) in enumerate(judged) if j.row["network"] == "eth-10g"]
    ib = [i for i in range(len(judged)) if i not in tcp]
    assert (len(tcp), len(ib)) == (60, 51)
    assert medians([judged[i][0].error_pct for i in ib]) == (7.4, 5.0)
    assert medians([node[i].error_pct for i in ib]) == (3.8, 2.8)
    assert medians([judged[i][0].error_pct for i in tcp]) == (41.7, 41.7)
    assert medians([node[i].error_pct for i in tcp]) == (35.4, 35.4)


@pytest.mark.parametrize("family, key, want", [
    ("byteps", PAIR_KEY, (33, 16)), ("byteps", SAME_MACHINES_KEY, (51, 20)),
    ("azure", PAIR_KEY, (0, 0)), ("azure", SAME_MACHINES_KEY, (174, 126)),
    ("paddle", PAIR_KEY, (28, 22)), ("paddle", SAME_MACHINES_KEY, (28, 22))])
def test_scheme_pairs_ranked_by_the_frozen_predictions(family, key, want):
    t = tally(pj.frozen_pairs(pj.judged_rows(family), key))
    assert (t["pairs"], t["right"]) == want


def test_the_pooled_figures_quoted_in_the_docs():
    rows = [j for f in FIGURES for j in pj.judged_rows(f)]
    across, one = [j for j in rows if j.row["nodes"] > 1], [j for j in rows if j.row["nodes"] == 1]
    assert (len(rows), len(across)) == (384, 204)
    assert medians([j.error_pct for j in rows]) == (6.6, 4.3)
    assert medians([j.error_pct for j in one]) == (3.4, 1.6)
    assert medians([j.error_pct for j in across]) == (18.8, 18.2)
    assert [medians([j.linear_error_pct for j in g])[0] for g in (rows, one, across)] == [16.1, 8.0, 55.4]
    assert (pj.inside_band(rows), pj.inside_band(one), pj.inside_band(across)) == (270, 118, 152)
    # without the rows over the TCP link declared an assumption before the judgement (azure, a5b5fd5)
    known = [j for j in across if not (j.family == "azure" and j.row["network"] == "eth-10g")]
    assert (len(known), medians([j.error_pct for j in known]), medians([j.linear_error_pct for j in known])[0]) == (
        144, (7.8, 4.5), 29.3)
    node = [(j, p) for f in FIGURES for j, p in pj.node_judged(f)]
    assert (len(node), medians([pj.Judged(j.family, j.row, p).error_pct for j, p in node])) == (145, (11.6, 10.5))
    assert pj.inside_band([pj.Judged(j.family, j.row, p) for j, p in node]) == 125  # docs/intervals.md
    node_known = [(j, p) for j, p in node if not (j.family == "azure" and j.row["network"] == "eth-10g")]
    assert (len(node_known), medians([j.error_pct for j, _ in node_known]),
            medians([pj.Judged(j.family, j.row, p).error_pct for j, p in node_known])) == (85, (4.7, 3.4), (3.7, 2.0))
    # the runs file as corrected (CORRECTED's accumulation no longer matches the TF rows': 4 pairs fewer, 3 of
    # them right, than as judged: 65, 41, 44 and 257, 171, 202)
    for key, want in ((PAIR_KEY, (61, 38, 40)), (SAME_MACHINES_KEY, (253, 168, 198))):
        t = tally([p for f in FIGURES for p in pj.frozen_pairs(pj.judged_rows(f), key)])
        assert (t["pairs"], t["right"], t["right_or_tie"]) == want
    every = [j for f in judged_by("second") for j in pj.judged_rows(f)]  # by then
    assert (len(every), medians([j.error_pct for j in every]), pj.inside_band(every)) == (820, (6.4, 3.3), 579)
    assert medians([j.error_pct for j in every if j.row["nodes"] > 1]) == (17.6, 12.0)
    assert medians([j.error_pct for j in every if j.row["nodes"] == 1])[0] == 2.8


def test_azure_pairs_across_vms_from_both_predictors():
    # docs/plan.md: across VMs nearly all right from either predictor, within one VM 42 of 87
    judged = pj.judged_rows("azure")
    node = {j.row["id"]: p for j, p in pj.node_judged("azure", judged)}
    by_gpu = pj.frozen_pairs(judged, SAME_MACHINES_KEY)
    by_node = pj.frozen_pairs(judged, SAME_MACHINES_KEY, node)
    across = [p for p in by_gpu if p.a["nodes"] > 1]
    assert (len(across), sum(p.right for p in across)) == (87, 84)
    assert (len(by_node), sum(p.right for p in by_node)) == (87, 79)
    within = [p for p in by_gpu if p.a["nodes"] == 1]
    assert (len(within), sum(p.right for p in within)) == (87, 42)


def test_the_rows_corrected_after_the_judgement_move_less_than_a_point():
    rows = {j.row["id"]: j for j in pj.judged_rows("paddle")}
    for rid, acc in CORRECTED.items():
        j = rows[rid]
        assert j.row["accumulate"] == acc and "corrected after the judgement" in j.row["note"]
        now = pub.error_pct(pub.predict_row(j.row, effects=JUDGED_EFFECTS).predicted, j.row["samples_per_s"])
        assert abs(now - j.error_pct) < 1.0
    assert all("num_gpus 32 assumed" in rows[r].row["note"] for r in ("d034", "d035", "d036", "d037"))
