"""The seventh round of families judged once (docs/validation.md, "A seventh round judged once"): hvdissues_runs.csv
and repos_runs.csv, transcribed blind and committed (cef14bb) after the declaration of what would judge them (2986d4a,
the model of 18de244) and before one prediction from both predictors (62f2763). fwdocs_runs.csv, a second
transcription of repos' tables, is a check (tests/test_published.py), not judged."""

import pytest

from reproduce import published_exposure as pe
from reproduce import published_judged as pj
from reproduce.published_pairs import tally
from perfmodel.exposure import load_exposure
from tests.judged_checks import assert_family_figures, assert_judged_by, assert_round_figures, medians

ROUND = ("hvdissues", "repos")
# family -> rows, rows across nodes, (median |error|, signed) over all rows and across nodes, the committed band's
# hits on the dev and held-out halves
FIGURES = {
    "hvdissues": (6, 1, (1.1, -0.5), (0.3, -0.3), {"dev": (1, 2), "held-out": (3, 4)}),
    "repos": (29, 0, (5.9, 5.9), None, {"dev": (17, 19), "held-out": (8, 10)}),
}


def test_the_registry_holds_the_seventh_round_and_not_the_check():
    assert set(ROUND) <= set(pj.JUDGED) and pj.NODE_ROUNDS["seventh"] == ROUND
    assert list(pj.NODE_ROUNDS)[-1] == "seventh" and "fwdocs" not in pj.JUDGED


@pytest.mark.parametrize("family", ROUND)
def test_the_frozen_predictions_and_figures_are_as_reported(family):
    assert_family_figures(family, *FIGURES[family])


def test_no_row_has_a_one_node_run_to_predict_from():
    # the one row across nodes ran one GPU per machine: no node of several GPUs to measure first
    assert all(not pj.node_judged(f) for f in ROUND)


def test_the_pooled_figures_quoted_in_the_docs():
    rows = assert_round_figures(ROUND, 35, 1, (5.0, 4.6), (5.5, 4.6), (0.3, -0.3), [10.7, 10.9, 5.4], {
        "dev": (21, (4.7, 4.4), 1, (0.3, -0.3))})
    held = [j for j in rows if j.row["half"] == "held-out"]
    assert len(held) == 14 and medians([j.error_pct for j in held]) == (6.4, 6.4)
    assert all(j.row["nodes"] == 1 for j in held)
    assert pj.inside_band(rows) == 29
    # the one miss of the issue threads: Inception-v3 on 8 K80 reading ImageNet, whose author wrote that
    # 'Preprocessing has slowed down the training process': +46%; the other five within 9%
    threads = {j.row["id"]: j.error_pct for j in pj.judged_rows("hvdissues")}
    assert round(threads["z006"]) == 46 and max(abs(e) for k, e in threads.items() if k != "z006") < 9


def test_tensorpacks_tables_replicated_nccl_is_what_the_model_makes_too_fast():
    # on the DGX-1 P100: replicated NCCL (tf.contrib.nccl) +8.9% (tensorpack) and +10.1% (tf_cnn_benchmarks),
    # the parameter server on the host +4.7% and +0.6%; the error grows with the GPUs (2: 3.1%, 8: 9.0%)
    rows = pj.judged_rows("repos")
    dgx = [j for j in rows if j.row["system"] == "dgx1-p100"]

    def med(scheme, tensorpack):
        return medians([j.error_pct for j in dgx if j.row["scheme"] == scheme
                        and j.row["framework"].startswith("tensorpack") == tensorpack])

    assert (med("tf-replicated-nccl", True), med("tf-replicated-nccl", False)) == ((8.9, 8.9), (10.1, 10.1))
    assert (med("tf-ps-cpu", True), med("tf-ps-cpu", False)) == ((4.7, 4.7), (0.6, 0.6))
    by_gpus = {g: medians([j.error_pct for j in rows if j.row["gpus"] == g])[0] for g in (2, 4, 8)}
    assert by_gpus == {2: 3.1, 4: 7.3, 8: 9.0}


def test_the_row_across_nodes_sits_in_the_exposure_tables_first_bin():
    # declared: the exposure table is the expectation across nodes; one row cannot test it
    (x,) = pe.exposed_rows([pj.runs_path("hvdissues")])
    b = load_exposure().bin_for(x["exposed"])
    assert (b.lo, b.hi) == (0.0, 0.05) and round(x["exposed"], 3) == 0.046 and round(x["error"], 1) == -0.3
    assert b.q10 < x["ratio"] < b.q90


def test_the_scheme_pairs_of_tensorpacks_tables():
    # one machine: 25 of 46 ranked as measured, 37 counting the 12 misses measured within 2.5% as ties
    pairs = pj.frozen_pairs(pj.judged_rows("repos"))
    assert tally(pairs) == {"pairs": 46, "right": 25, "tied_misses": 12, "right_or_tie": 37}
    # every pair is replicated NCCL against the parameter server on the host (the pair key does not hold the
    # framework or input pipeline, whose single-GPU rates differ by up to 4%); the model puts replicated NCCL
    # first in 40 of them, measured it is first in 19 (9 of the 30 pairs at 4 and 8 GPUs)
    assert all((p.a["scheme"], p.b["scheme"]) == ("tf-replicated-nccl", "tf-ps-cpu") for p in pairs)
    assert sum(p.predicted_a > p.predicted_b for p in pairs) == 40
    assert sum(p.a["samples_per_s"] > p.b["samples_per_s"] for p in pairs) == 19
    big = [p for p in pairs if p.a["gpus"] >= 4]
    assert (len(big), sum(p.a["samples_per_s"] > p.b["samples_per_s"] for p in big)) == (30, 9)
    assert not pj.frozen_pairs(pj.judged_rows("hvdissues"))


def test_every_judged_family_and_the_rounds_judged_from_both_predictors():
    assert_judged_by("seventh", 1316, (4.6, 2.3), 959, (14.9, 9.2), (2.3, 1.0), 247, (19.3, 17.5), (11.0, 5.9))
