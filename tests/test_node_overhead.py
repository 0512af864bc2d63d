"""The framework's step overhead from one node's measured rate (perfmodel.node_overhead, predict --node-rate)
and the published runs across nodes predicted from their one-node runs (reproduce.published_node)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import replace

import pytest

from perfmodel.node_overhead import node_step_overhead, node_step_seconds
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload

PSI = 1_000_000  # parameters: 4 MB of fp32 gradient


def _cluster(g=4, nodes=8):
    return Cluster("toy", g, Link(1e-6, 1e10), Link(1e-6, 1e10), Link(1e-5, 1e9), gpu="x", max_nodes=nodes)


def _wl(k=1):
    # 1 ms per sample on one GPU: a batch of 32 computes in 32 ms
    return Workload("toy", (PSI // 2, PSI // 2), {"x": ComputeTime("linear", t1_s=1e-3)}, accumulate=k)


def test_overhead_is_the_measured_step_beyond_the_models_hand_case():
    # no overlap: the model's step on one node of 4 GPUs is compute + the intra-node ring allreduce,
    # 32 ms + 2 x 3 x (1 us + 1 MB / 10 GB/s) = 32 ms + 0.606 ms = 32.606 ms
    s = Strategy("ssgd", allreduce="ring", overlap=0.0)
    t_model = node_step_seconds(_wl(), _cluster(), s, 32)
    assert t_model == pytest.approx(0.032 + 2 * 3 * (1e-6 + 4.0 * PSI / 4 / 1e10))
    # measured 4 x 32 samples in 40 ms: 3200 samples/s; the overhead is 40 - 32.606 ms
    assert node_step_overhead(_wl(), _cluster(), s, 32, 3200.0) == pytest.approx(0.040 - t_model)


def test_with_its_overhead_the_node_is_predicted_as_measured_and_the_overhead_carries_across_nodes():
    s = Strategy("ssgd")  # the computed overlap, the default schedule
    wl, c = _wl(k=2), _cluster()
    measured = 4 * 32 * 2 / 0.090  # 4 GPUs x 32 samples x 2 micro-batches in 90 ms
    o = node_step_overhead(wl, c, s, 32, measured)
    assert o > 0
    with_o = Strategy("ssgd", step_overhead_s=o)
    p = predict(wl, c, with_o, [1, 4, 16], batch=32)
    bare = predict(wl, c, s, [1, 4, 16], batch=32)
    assert p.throughput[1] == pytest.approx(measured)  # identity on the node that was measured
    assert p.t_iter_s[2] == pytest.approx(bare.t_iter_s[2] + o)  # the same seconds on 4 nodes
    assert p.t_iter_s[0] == pytest.approx(bare.t_iter_s[0])  # one GPU has no exchange and no overhead


def test_a_node_faster_than_the_model_adds_nothing():
    s = Strategy("ssgd", allreduce="ring", overlap=0.0)
    assert node_step_overhead(_wl(), _cluster(), s, 32, 4 * 32 / 0.030) == 0.0  # 30 ms < 32.606 ms


@pytest.mark.parametrize("rate", [0.0, -5.0, float("inf"), float("nan"), True])
def test_bad_rates_are_refused(rate):
    with pytest.raises(SpecError, match="positive finite"):
        node_step_overhead(_wl(), _cluster(), Strategy("ssgd"), 32, rate)


def test_one_gpu_per_node_is_refused():
    with pytest.raises(SpecError, match="1 GPU per node"):
        node_step_overhead(_wl(), _cluster(g=1), Strategy("ssgd"), 32, 100.0)


def _predict(*extra):
    cmd = [sys.executable, "-m", "perfmodel", "predict", "--workload", "resnet50", "--cluster", "dgx1-v100",
           "--strategy", "ssgd", "--batch", "64", "--gpus", "8,16,64", "--format", "json", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_cli_node_rate_equals_the_step_overhead_it_prints():
    a = _predict("--node-rate", "2000")
    assert a.returncode == 0, a.stderr
    note = [x for x in a.stderr.splitlines() if "--node-rate" in x]
    assert len(note) == 1
    ms = note[0].rsplit("--step-overhead-ms ", 1)[1]
    b = _predict("--step-overhead-ms", ms)
    assert b.returncode == 0, b.stderr
    ra, rb = json.loads(a.stdout), json.loads(b.stdout)
    assert [r["throughput"] for r in ra] == pytest.approx([r["throughput"] for r in rb], rel=1e-12)
    assert ra[0]["throughput"] == pytest.approx(2000.0)  # the node itself: as measured


@pytest.mark.parametrize("extra, words", [
    (("--node-rate", "-3"), "positive finite"),
    (("--node-rate", "2000", "--step-overhead-ms", "5"), "not both"),
    (("--node-rate", "2000", "--strategy", "ssgd,sync-ps"), "one --strategy"),
    (("--node-rate", "2000", "--scaling", "strong"), "--scaling weak"),
])
def test_cli_bad_node_rate_is_one_line_and_exit_2(extra, words):
    r = _predict(*extra)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.stderr


# ------------------------------------------------------------------ published runs across nodes

published = pytest.importorskip("reproduce.published")
from reproduce import published_node as pn  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return published.load_runs(published.RUNS)


def test_node_rows_are_whole_single_nodes(rows):
    nodes = pn.node_rows(rows)
    assert nodes and all(r["nodes"] == 1 and r["gpus"] == r["gpus_per_node"] >= 2 for r in nodes.values())


def test_each_node_row_is_reproduced_where_it_was_slower_than_the_model(rows):
    # identity: the node's own prediction with its overhead is its measured rate; where o = 0 the model's
    # one-node step was already the longer one, so its rate is at most the measured
    for node in list(pn.node_rows(rows).values())[:25]:
        o = pn.overhead_of(node)
        p = predict(published.build_workload(node), published.build_cluster(node),
                    replace(published.build_strategy(node), step_overhead_s=o), [node["gpus"]],
                    batch=node["batch_per_gpu"])
        if o > 0:
            assert p.throughput[0] == pytest.approx(node["samples_per_s"], rel=1e-9)
        else:
            assert p.throughput[0] <= node["samples_per_s"] * (1 + 1e-9)


def test_single_node_rows_and_rows_without_a_node_run_get_no_prediction(rows):
    nodes = pn.node_rows(rows)
    one = next(r for r in rows if r["nodes"] == 1)
    assert pn.predict_from_node(one, nodes).predicted is None
    lone = next(r for r in rows if r["nodes"] > 1 and tuple(r[k] for k in pn.NODE_KEY) not in nodes)
    assert "no run of this scheme" in pn.predict_from_node(lone, nodes).reason


def test_pairs_across_nodes_figures(rows):
    # measured (docs/plan.md section 6): right per group from the one-node runs; fewer fails
    from reproduce.published_pairs import groups, pairs, tally

    nodes = pn.node_rows(rows)
    via = groups([p for p in pairs(rows, lambda r: pn.predict_from_node(r, nodes)) if p.a["nodes"] > 1])
    got = {name: (tally(g)["pairs"], tally(g)["right"]) for name, g in via.items()}
    want = {"all": (114, 102), "dev": (18, 16), "held-out": (96, 86), "both held-out": (34, 33)}
    for name, (n, right) in want.items():
        assert got[name][0] == n and got[name][1] >= right


def _row(rid, batch, nodes, framework="f"):
    base = {k: "x" for k in pn.NODE_KEY} | {"framework": framework}
    return base | {"id": rid, "batch_per_gpu": batch, "nodes": nodes, "gpus_per_node": 8, "gpus": 8 * nodes}


def test_nearest_other_batch_takes_the_closest_node_run_smaller_on_ties():
    rows = [_row("n32", 32, 1), _row("n64", 64, 1), _row("n96", 96, 1), _row("n128", 128, 1),
            _row("a", 64, 2), _row("b", 96, 4), _row("c", 48, 2), _row("d", 64, 2, framework="g"),
            _row("g32", 32, 1, framework="g")]
    got = {rid: node["id"] for rid, node in pn.nearest_other_batch(rows).items()}
    # a: 32 and 96 are both 32 away, the smaller wins; b: 64 and 128 both 32 away; c has no node run at
    # its own batch; d's scheme has a node run at another batch only; node rows are not predicted
    assert got == {"a": "n32", "b": "n64"}


def test_batch_transfer_figures(rows):
    # measured (docs/plan.md section 6): the overhead of a node run at the nearest other batch predicts the
    # rows across nodes about as well as the one at their own batch (0.6 points worse on the dev rows)
    via, alone = pn.outcomes(rows)
    moved = pn.batch_transfer(rows, via, alone)
    assert {h: len(v["node, other batch"]) for h, v in moved.items()} == {"dev": 62, "held-out": 82}
    med = {h: {k: statistics.median(map(abs, v)) for k, v in m.items()} for h, m in moved.items()}
    for h in pn.HALVES:
        assert med[h]["node, other batch"] <= med[h]["node, same batch"] + 0.007
    assert med["held-out"]["node, other batch"] == pytest.approx(0.085, abs=0.0015)


def test_missing_runs_file_is_one_line(capsys, tmp_path):
    assert pn.main(["--runs", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("published_node: error:")


# ------------------------------------------------------------------ perfmodel plan --node-rate

def _plan(*extra):
    cmd = [sys.executable, "-m", "perfmodel", "plan", "--workload", "resnet50", "--cluster", "dgx1-v100",
           "--epochs", "1", "--dataset-size", "1281167", "--gpus-max", "32", "--batch", "64",
           "--strategy", "ssgd,sync-ps", "--all", "--format", "json", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_plan_node_rate_sets_each_candidates_one_node_rate_and_leaves_the_others():
    bare, rated = _plan(), _plan("--node-rate", "ssgd=2000")
    assert bare.returncode == 0 and rated.returncode == 0, rated.stderr
    a, b = json.loads(bare.stdout), json.loads(rated.stdout)
    at8 = [r for r in b if r["strategy"] == "ssgd" and r["gpus"] == 8]
    assert at8 and all(r["samples_per_s"] == pytest.approx(2000.0) for r in at8)  # the node, as measured
    assert all("ms" in r["label"] for r in b if r["strategy"] == "ssgd" and r["gpus"] > 1)
    key = lambda r: (r["label"], r["gpus"])  # noqa: E731
    ps_a = sorted((key(r), r["samples_per_s"]) for r in a if r["strategy"] == "sync-ps")
    ps_b = sorted((key(r), r["samples_per_s"]) for r in b if r["strategy"] == "sync-ps")
    assert ps_a == ps_b  # a strategy without a node rate is predicted as before
    one_a = [r["samples_per_s"] for r in a if r["gpus"] == 1]
    one_b = [r["samples_per_s"] for r in b if r["gpus"] == 1]
    assert one_a == pytest.approx(one_b)  # one GPU has no step overhead


@pytest.mark.parametrize("value, words", [("ssgd=-1", "rate > 0"), ("foo=3", "unknown strategy"),
                                          ("ssgd", "rate > 0"), ("zero3=100", "does not include")])
def test_plan_bad_node_rate_is_one_line_and_exit_2(value, words):
    r = _plan("--node-rate", value)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.stderr


def test_the_printed_80pct_band_still_covers_70_to_90pct_of_held_out_node_predictions(rows):
    # measured: dev 90/128 (70.3%), held out 114/145 (78.6%); the bands are the single-GPU predictor's
    n, d = pn.band_coverage(rows, pn.outcomes(rows)[0])["held-out"]
    assert d == 145 and 0.70 <= n / d <= 0.90
