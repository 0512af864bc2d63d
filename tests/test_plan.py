"""`perfmodel plan` (perfmodel.plan, perfmodel.plan_cli): the rows, their arithmetic, ranking, constraints."""

from __future__ import annotations

import json

import pytest

from perfmodel.cli import main
from perfmodel.learning_effect import effect_for, pair_differences
from perfmodel.plan import Constraints, pareto, rank, work_from
from perfmodel.specs import SpecError

ISSUE = ["plan", "--workload", "resnet50", "--cluster", "juwels-booster", "--epochs", "90", "--dataset-size",
         "1281167", "--gpus-max", "512", "--price", "2.5"]
KEYS = {"gpus", "strategy", "samples_per_s", "efficiency", "time_to_train_s", "gpu_hours", "cost",
        "memory_per_gpu_bytes", "fits", "settings"}


def _run(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_issue_command_json_rows_and_arithmetic(capsys):
    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--top", "50"])
    assert rc == 0
    rows = json.loads(out)
    assert len(rows) == 50 and all(KEYS <= set(r) for r in rows)
    samples = 90 * 1281167
    for r in rows:
        assert r["time_to_train_s"] == pytest.approx(samples / r["samples_per_s"])
        assert r["gpu_hours"] == pytest.approx(r["gpus"] * r["time_to_train_s"] / 3600)
        assert r["cost"] == pytest.approx(2.5 * r["gpu_hours"])
        assert r["fits"] and r["memory_per_gpu_bytes"] <= 0.9 * 40 * 2**30
        assert r["settings"]["per_gpu_batch"] == 32
    times = [r["time_to_train_s"] for r in rows]
    assert times == sorted(times)


def test_rank_cost_orders_by_cost(capsys):
    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--rank", "cost", "--top", "30"])
    costs = [r["cost"] for r in json.loads(out)]
    assert rc == 0 and costs == sorted(costs)


def test_plan_row_agrees_with_predict(capsys):
    """The plan's throughput is perfmodel predict's for the same strategy and settings."""
    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--strategy", "ssgd", "--all"])
    rows = [r for r in json.loads(out) if r["label"] == "ssgd ring fp32 25MiB" and r["gpus"] == 64]
    assert rc == 0 and len(rows) == 1
    rc, out, _ = _run(capsys, ["predict", "--workload", "resnet50", "--cluster", "juwels-booster", "--gpus", "64",
                               "--strategy", "ssgd", "--allreduce", "ring", "--batch", "32", "--format", "json"])
    assert rows[0]["samples_per_s"] == pytest.approx(json.loads(out)[0]["throughput"])


def test_table_has_units_and_why_line(capsys):
    rc, out, _ = _run(capsys, ISSUE + ["--top", "3"])
    assert rc == 0
    assert out.splitlines()[1].startswith("# compute: measured")  # juwels-booster's A100 has a published rate
    head = out.splitlines()[3]
    for unit in ("samples/s", "time h", "GPU-h", "cost", "mem/GPU"):
        assert unit in head
    lines = out.splitlines()
    why = [i for i, ln in enumerate(lines) if ln.startswith("# why: ")]
    assert len(why) == 1 and "% of its step" in lines[why[0]]
    assert all(ln.startswith("# note: ") for ln in lines[why[0] + 1:])  # after it only the notes
    assert "GiB" in out


def test_same_update_drops_update_changing_schemes(capsys):
    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--all", "--same-update", "--gpus-max", "16"])
    names = {r["strategy"] for r in json.loads(out)}
    assert rc == 0 and names and not names & {"terngrad", "daso", "asgd"}
    assert all(r["learning_effect"] is None for r in json.loads(out))


def test_gpt2_xl_64_per_gpu_on_v100_is_flagged(capsys):
    argv = ["plan", "--workload", "gpt2-xl", "--estimate", "fp32", "--cluster", "dgx1-v100", "--samples", "1e6",
            "--batch", "64", "--optimizer", "adam"]
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "no plan fits in memory" in err and "16.0 GiB" in err
    rc, out, err = _run(capsys, argv + ["--all", "--format", "json", "--deadline", "1000d"])
    assert rc == 2  # --all prints nothing when nothing is feasible


def test_no_fit_names_the_smaller_batches_and_mixed_precision_it_did_not_search(capsys):
    argv = ["plan", "--workload", "gpt2-xl", "--estimate", "fp32", "--cluster", "dgx1-v100", "--samples", "1e6",
            "--optimizer", "adam", "--gpus-max", "8"]
    rc, _, err = _run(capsys, argv + ["--batch", "64"])
    assert rc == 2 and err.strip().endswith("; try --batch 1-64 or --precision mixed")
    rc, _, err = _run(capsys, argv + ["--batch", "1-64", "--precision", "mixed", "--strategy", "ssgd"])
    assert rc == 2 and "no plan fits in memory" in err and "try" not in err  # nothing left to suggest


@pytest.mark.parametrize("extra,word", [(["--deadline", "3m"], "deadline"), (["--budget", "10"], "budget"),
                                        (["--min-efficiency", "1.0", "--gpus-max", "8"], "efficiency")])
def test_impossible_constraints_name_the_binding_one(capsys, extra, word):
    rc, out, err = _run(capsys, ISSUE + extra)
    if word == "efficiency":  # one GPU always has efficiency 1: the constraint is met there
        assert rc == 0
        return
    assert rc == 2 and len(err.strip().splitlines()) == 1 and word in err and "closest" in err


def test_a_global_batch_no_gpu_count_can_split_names_the_batch_range(capsys):
    # 7 samples per update = b x k x W with b = 32: no W in 1, 2, 3 and k in 1, 2, 4, 8; with b in 1..32, W = 1
    argv = ["plan", "--workload", "resnet50", "--cluster", "juwels-booster", "--samples", "1e9", "--gpus-max", "3",
            "--global-batch", "7"]
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--global-batch 7" in err and "--batch 32 " in err and err.strip().endswith("; try --batch 1-32")
    rc, out, err = _run(capsys, argv + ["--batch", "1-32", "--format", "json"])
    assert rc == 0 and {(r["gpus"], r["batch_per_gpu"] * r["accumulate"]) for r in json.loads(out)} == {(1, 7)}


@pytest.mark.parametrize("bad", [["--epochs", "-1"], ["--deadline", "soon"], ["--batch", "8-2"],
                                 ["--strategy", "zero9"], ["--gpu-memory", "lots"], ["--price", "0"],
                                 ["--min-efficiency", "1.5"], ["--gpus-max", "inf"], ["--top", "inf"],
                                 ["--global-batch", "nan"]])
def test_bad_values_are_one_line_exit_2(capsys, bad):
    rc, out, err = _run(capsys, ISSUE + bad)
    assert rc == 2 and err.startswith("perfmodel: error:") and len(err.strip().splitlines()) == 1


def test_work_forms_and_constraints():
    assert work_from(epochs=2, dataset_size=10).samples == 20
    assert work_from(tokens=2048, seq_len=1024).samples == 2
    assert work_from(samples=5).samples == 5
    for kw in ({}, {"epochs": 2}, {"samples": 1, "tokens": 3, "seq_len": 1}):
        with pytest.raises(SpecError):
            work_from(**kw)
    with pytest.raises(SpecError):
        Constraints(gpus_max=0)


def test_rank_and_pareto_on_hand_rows():
    rows = [{"time_to_train_s": t, "cost": c, "gpu_hours": c, "gpus": g} for t, c, g in
            [(10, 5, 1), (5, 9, 2), (5, 8, 4), (20, 4, 1), (12, 6, 2)]]
    assert [r["gpus"] for r in rank(rows, "time")][:2] == [4, 2]
    assert [r["cost"] for r in rank(rows, "cost")] == [4, 5, 6, 8, 9]
    front = pareto(rows)
    assert [(r["time_to_train_s"], r["cost"]) for r in front] == [(5, 8), (10, 5), (20, 4)]


def test_learning_effect_pairs():
    rows = [{"metric": "test_accuracy", "g": "TernGrad", "w": "2", "rerun_value": "97.0"},
            {"metric": "test_accuracy", "g": "fp32", "w": "2", "rerun_value": "98.5"},
            {"metric": "test_accuracy", "g": "TernGrad", "w": "4", "rerun_value": "90"}]
    assert pair_differences(rows, "g", "TernGrad", "fp32", ("w",)) == [-1.5]
    assert effect_for("ssgd") is None and effect_for("zero3") is None
    tern = effect_for("terngrad")
    assert "pts" in tern["summary"] and tern["source"].startswith("results/wen2017")


def test_plot_writes_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("seaborn")
    path = tmp_path / "plan.png"
    rc, _, _ = _run(capsys, ISSUE + ["--gpus-max", "16", "--plot", str(path)])
    assert rc == 0 and path.read_bytes()[:4] == b"\x89PNG"


def test_predict_flags_gpt2_xl_adam_fp32_64_per_gpu_on_v100(capsys):
    argv = ["predict", "--workload", "gpt2-xl", "--estimate", "fp32", "--cluster", "dgx1-v100", "--batch", "64",
            "--gpus", "8,64", "--strategy", "ssgd,zero3"]
    rc, out, _ = _run(capsys, argv)
    assert rc == 0 and "ssgd does not fit in memory at 8-64 GPUs" in out and "of the v100's 16.0 GiB" in out
    rc, out, err = _run(capsys, argv + ["--format", "json"])
    rows = json.loads(out)
    assert rc == 0 and len(rows) == 4 and not any(r["fits"] for r in rows) and "does not fit" in err
    rc, out, _ = _run(capsys, ["predict", "--workload", "resnet50", "--cluster", "dgx1-v100", "--batch", "64",
                               "--gpus", "8", "--strategy", "ssgd", "--format", "json"])
    assert json.loads(out)[0]["fits"] is True


def test_one_gpu_appears_once(capsys):
    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--all", "--gpus-max", "4"])
    rows = json.loads(out)
    assert rc == 0 and [r["label"] for r in rows if r["gpus"] == 1] == ["one GPU"]


CLUSTER_FILE = """[mine]
gpu = "a100"
gpus_per_node = 8
intra = "nvswitch-a100"
network = "8xib-hdr"
max_nodes = 16
price_per_gpu_hour = 3.0
"""


def test_price_from_cluster_file_and_global_batch(tmp_path, capsys):
    path = tmp_path / "mine.toml"
    path.write_text(CLUSTER_FILE)
    argv = ["plan", "--workload", "resnet50", "--cluster", str(path), "--samples", "1e7", "--global-batch", "4096",
            "--batch", "16-256", "--format", "json", "--all"]
    rc, out, err = _run(capsys, argv)
    rows = json.loads(out)
    assert rc == 0 and rows and "why:" in err
    for r in rows:
        assert r["cost"] == pytest.approx(3.0 * r["gpu_hours"])
        assert r["batch_per_gpu"] * r["accumulate"] * r["gpus"] == 4096
        assert 16 <= r["batch_per_gpu"] <= 256 and r["gpus"] <= 128  # 16 nodes of 8
    assert {r["accumulate"] for r in rows} == {1, 2, 4, 8}
    bad = tmp_path / "bad.toml"
    bad.write_text(CLUSTER_FILE.replace("3.0", "-1"))
    rc, _, err = _run(capsys, [str(bad) if a == str(path) else a for a in argv])
    assert rc == 2 and "price_per_gpu_hour" in err


def test_why_line_follows_the_ranking(capsys):
    rc, out, _ = _run(capsys, ISSUE + ["--rank", "cost", "--top", "2"])
    assert rc == 0 and "more" in out.splitlines()[-1] and "longer" not in out.splitlines()[-1]


def test_plan_interval_is_predicts_band(capsys):
    """A plan row's interval is perfmodel predict's 80% band for the same prediction (one source of bands)."""
    from perfmodel.intervals import load_bands

    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--all", "--gpus-max", "16", "--strategy",
                                        "ssgd,daso,sync-ps"])
    rows = json.loads(out)
    assert rc == 0 and {r["gpus"] for r in rows} >= {1, 4, 16}  # juwels-booster: 4 GPUs per node
    bands, samples = load_bands(), 90 * 1281167
    for r in rows:
        lo, hi = r["interval"]["samples_per_s"]
        if r["gpus"] == 1:
            assert lo == hi == r["samples_per_s"]
            continue
        b = bands.band_for(r["strategy"], 1 if r["gpus"] <= 4 else r["gpus"] // 4)
        assert (lo, hi) == pytest.approx((r["samples_per_s"] * b.q_lo, r["samples_per_s"] * b.q_hi))
        assert r["interval"]["time_to_train_s"] == pytest.approx([samples / hi, samples / lo])
        assert lo <= r["samples_per_s"] * 1.02 and f"{b.rows} development" in r["interval"]["basis"]
    ssgd16 = next(r for r in rows if r["strategy"] == "ssgd" and r["gpus"] == 16)
    rc, out, _ = _run(capsys, ["predict", "--workload", "resnet50", "--cluster", "juwels-booster", "--strategy",
                               "ssgd", "--gpus", "16", "--batch", "32", "--format", "json"])
    (p,) = [x for x in json.loads(out) if x["gpus"] == 16]
    assert p["throughput_lo"] / p["throughput"] == pytest.approx(ssgd16["interval"]["samples_per_s"][0]
                                                                  / ssgd16["samples_per_s"])


def test_estimate_mixed_plans_in_mixed_precision_unless_told(capsys):
    """Compute estimated at mixed precision trains in mixed precision: its memory and wires follow, as with
    --precision mixed; an explicit --precision still wins; the table names the compute source."""
    base = ["plan", "--workload", "resnet50", "--cluster", "juwels-booster", "--samples", "1e6", "--gpus-max", "16",
            "--estimate", "mixed", "--all"]
    implicit, mixed, fp32 = (json.loads(_run(capsys, base + p + ["--format", "json"])[1])
                             for p in ([], ["--precision", "mixed"], ["--precision", "fp32"]))
    assert implicit == mixed and implicit != fp32
    assert not any("fp32" in r["label"] for r in implicit if r["gpus"] > 1)
    assert any("fp32" in r["label"] for r in fp32 if r["gpus"] > 1)
    rc, out, _ = _run(capsys, base[:-1] + ["--top", "1"])
    assert rc == 0 and "; momentum, mixed;" in out.splitlines()[0]
    assert out.splitlines()[1].startswith("# compute: measured: published single-GPU rate")  # the rule's first
    rc, out, _ = _run(capsys, base[:-1] + ["--top", "1", "--cluster", "hgx-b200"])  # no published B200 rate
    assert rc == 0 and out.splitlines()[1].startswith("# compute: ESTIMATE (no published single-GPU rate")


def test_csv_is_the_json_one_value_a_cell(capsys):
    import csv
    import io

    rc, out, _ = _run(capsys, ISSUE + ["--format", "json", "--top", "5"])
    rows = json.loads(out)
    rc2, out, _ = _run(capsys, ISSUE + ["--format", "csv", "--top", "5"])
    table = list(csv.DictReader(io.StringIO(out)))
    assert rc == rc2 == 0 and len(table) == len(rows) == 5
    for j, c in zip(rows, table):
        assert int(c["gpus"]) == j["gpus"] and c["strategy"] == j["strategy"]
        assert float(c["time_to_train_s"]) == pytest.approx(j["time_to_train_s"])
        assert [float(c["samples_per_s_lo"]), float(c["samples_per_s_hi"])] == pytest.approx(
            j["interval"]["samples_per_s"])
        assert [float(c["time_to_train_lo_s"]), float(c["time_to_train_hi_s"])] == pytest.approx(
            j["interval"]["time_to_train_s"])
        assert json.loads(c["settings"]) == j["settings"]
