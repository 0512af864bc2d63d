"""The sixth round of families judged once (docs/validation.md, "A sixth round judged once"): lambda2_runs.csv and
logs_runs.csv, transcribed blind, committed (fbe5db5) after the declaration of what would judge them (feb548e, the
model of f39ef5a) and before one prediction from both predictors (d4c1c0a). The declared candidate, the two-socket
layout for 4-GPU PCIe nodes, is judged here on the rows it applies to and loses: it is dropped."""

import pytest

from reproduce import published as pub
from reproduce import published_judged as pj
from tests.judged_checks import (assert_family_figures, assert_judged_by, assert_node_figures, assert_round_figures,
                                 medians, one_node_layout_errors)

ROUND = ("lambda2", "logs")
# family -> rows, rows across nodes, (median |error|, signed) over all rows and across nodes, the committed band's
# hits on the dev and held-out halves
FIGURES = {
    "lambda2": (113, 0, (0.9, 0.1), None, {"dev": (53, 53), "held-out": (60, 60)}),
    "logs": (14, 10, (6.6, -1.0), (34.5, 34.5), {"dev": (3, 6), "held-out": (5, 8)}),
}
# family -> rows across nodes with a node prediction, (median |error|, signed) from the single-GPU rate and from
# the one-node run
NODE_FIGURES = {"lambda2": (0, None, None), "logs": (10, (34.5, 34.5), (34.5, 34.5))}


def test_the_registry_holds_the_sixth_round():
    assert set(ROUND) <= set(pj.JUDGED) and pj.NODE_ROUNDS["sixth"] == ROUND and list(pj.NODE_ROUNDS)[4] == "sixth"


@pytest.mark.parametrize("family", ROUND)
def test_the_frozen_predictions_and_figures_are_as_reported(family):
    assert_family_figures(family, *FIGURES[family], step=3 if family == "lambda2" else 1)


@pytest.mark.parametrize("family", ROUND)
def test_the_frozen_node_predictions_are_the_node_predictors(family):
    assert_node_figures(family, *NODE_FIGURES[family], step=1)


def test_the_pooled_figures_quoted_in_the_docs():
    rows = assert_round_figures(ROUND, 127, 10, (1.2, 0.0), (0.9, -0.1), (34.5, 34.5), [2.6, 2.5, 61.3], {
        "dev": (59, (1.1, -0.1), 3, (39.5, 39.5)), "held-out": (68, (1.2, 0.0), 7, (34.0, 34.0))})
    across, one = [j for j in rows if j.row["nodes"] > 1], [j for j in rows if j.row["nodes"] == 1]
    assert (pj.inside_band(rows), pj.inside_band(one), pj.inside_band(across)) == (121, 114, 7)
    assert not [p for f in ROUND for p in pj.frozen_pairs(pj.judged_rows(f))]  # no scheme pairs in this round
    # the logs' step: within 4 VMs -8% to -1%, from 8 VMs on +34% to +57% (docs/validation.md)
    logs = {j.row["id"]: j for j in pj.judged_rows("logs")}
    near = [j.error_pct for j in logs.values() if j.row["nodes"] <= 4]
    far = [j.error_pct for j in logs.values() if j.row["nodes"] >= 8]
    assert (round(min(near)), round(max(near)), round(min(far)), round(max(far))) == (-8, -1, 34, 57)
    # the measured step itself: 32 GPUs on 8 VMs run at 1.27x (batch 32) and 1.46x (batch 64) the 16-GPU rate
    assert round(logs["v005"].row["samples_per_s"] / logs["v004"].row["samples_per_s"], 2) == 1.27
    assert round(logs["v012"].row["samples_per_s"] / logs["v011"].row["samples_per_s"], 2) == 1.46


def test_inside_pcie_nodes_the_model_was_not_too_fast_this_round():
    # the note of perfmodel predict on a PCIe preset quotes these: 99 one-node rows over PCIe, 0.9% (-0.1%)
    pcie = [j for f in ROUND for j in pj.judged_rows(f) if j.row["nodes"] == 1 and j.row["intra"].startswith("pcie")]
    assert len(pcie) == 99 and medians([j.error_pct for j in pcie]) == (0.9, -0.1)
    assert {j.row["gpus"] for j in pcie} == {2, 4, 8}
    assert sum(abs(j.error_pct) > 5 for j in pcie) == 13


def test_the_declared_two_socket_candidate_loses_and_is_dropped():
    # declared (8a5981a, feb548e): the default for one-node rows of 4-GPU PCIe machines if it lowers their median
    # |error|. This round has 8 such rows (Lambda's TRX40 RTX A5000 workstation, ChainerMN's Azure VMs in one VM):
    # 1.1% (-1.1%) as the model prices them, 3.1% (-3.1%) with the layout.
    four = []
    for family, changed in (("lambda2", 4), ("logs", 14)):
        four += [(r, before, after) for r, before, after in one_node_layout_errors(family, changed)
                 if r["gpus_per_node"] == 4 and r["intra"].startswith("pcie")]
    before, after = medians([b for _, b, _ in four]), medians([a for _, _, a in four])
    assert (len(four), before, after) == (8, (1.1, -1.1), (3.1, -3.1))
    assert after[0] > before[0]  # the rule: not adopted


def test_every_judged_family_and_the_rounds_judged_from_both_predictors():
    assert_judged_by("sixth", 1281, (4.6, 2.2), 930, (14.9, 9.3), (2.1, 0.8), 247, (19.3, 17.5), (11.0, 5.9))


def test_the_new_presets_carry_the_rows_specs():
    # every row names a preset that gpus.toml holds; the PCIe workstation cards are the eighteen presets of f39ef5a
    rows = pub.load_runs(pj.runs_path("lambda2"))
    assert {r["gpu"] for r in rows if r["intra"].startswith("pcie")} == {
        "rtx2080ti", "quadro-rtx8000", "rtx3070", "rtx3080", "rtx3090", "rtx4090", "rtx-a4000", "rtx-a4500",
        "rtx-a5000", "rtx-a5500", "rtx-a6000", "a40", "rtx6000-ada", "a100-pcie", "a100-80gb-pcie", "h100-pcie"}
    assert all(r["nodes"] == 1 for r in rows)
