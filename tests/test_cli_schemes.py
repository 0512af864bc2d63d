"""`perfmodel predict` with the synchronous schemes: options reach the model, sweeps skip what cannot run."""

import json

import pytest

from perfmodel.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sweep_skips_what_a_strategy_cannot_run_with_a_note(capsys):
    code, out, _ = run(capsys, "predict", "--gpus", "4-8", "--strategy", "ssgd,daso", "--cluster", "juwels-booster",
                       "--workload", "resnet50")
    assert code == 0
    assert "# skipped daso at 5, 6, 7 GPUs: daso needs whole nodes" in out
    rows = [line.split()[:2] for line in out.splitlines() if line.startswith(("ssgd", "daso"))]
    assert rows == [["ssgd", str(w)] for w in range(4, 9)] + [["daso", "4"], ["daso", "8"]]
    code, out, err = run(capsys, "predict", "--gpus", "4-8", "--strategy", "ssgd,daso", "--format", "json")
    assert code == 0 and "perfmodel: note: skipped daso at 5, 6, 7 GPUs" in err
    assert [(r["strategy"], r["gpus"]) for r in json.loads(out)][-2:] == [("daso", 4), ("daso", 8)]


def test_default_sweep_prints_every_strategy(capsys):
    code, out, _ = run(capsys, "predict", "--gpus", "4-12", "--format", "json")
    rows = json.loads(out)
    assert code == 0
    assert {r["strategy"] for r in rows} == {"ssgd", "terngrad", "daso", "asgd", "sync-ps", "byteps"}
    assert sorted(r["gpus"] for r in rows if r["strategy"] == "daso") == [4, 8, 12]


@pytest.mark.parametrize("argv", [
    ["--strategy", "sync-ps", "--ps-servers", "4"],
    ["--strategy", "sync-ps", "--ps-servers", "2", "--ps-placement", "dedicated", "--ps-local-reduce", "off"],
    ["--strategy", "byteps"],
    ["--strategy", "byteps", "--ps-servers", "4", "--ps-placement", "dedicated"],
    ["--strategy", "ssgd", "--allreduce", "reduce-broadcast"],
    ["--strategy", "ssgd", "--staging", "host"],
    ["--strategy", "ssgd", "--bucket-mb", "64", "--step-overhead-ms", "1"],
])
def test_scheme_options_run(capsys, argv):
    code, out, _ = run(capsys, "predict", "--workload", "resnet50", "--cluster", "dgx1-v100", "--gpus", "1,8,64",
                       "--format", "json", *argv)
    rows = json.loads(out)
    assert code == 0 and len(rows) == 3 and rows[0]["t_comm_s"] == 0 and rows[2]["t_comm_s"] > 0


def test_options_change_the_prediction(capsys):
    def t_iter(*argv):
        code, out, _ = run(capsys, "predict", "--workload", "resnet50", "--cluster", "dgx1-v100", "--gpus", "64",
                           "--format", "json", "--strategy", "ssgd", *argv)
        assert code == 0
        return json.loads(out)[0]["t_iter_s"]

    base = t_iter()
    assert t_iter("--step-overhead-ms", "2") == pytest.approx(base + 0.002)
    assert t_iter("--staging", "host") > base  # auto picks an MPI ring on host buffers
    assert t_iter("--allreduce", "nccl") == pytest.approx(base)  # auto is nccl on a GPU cluster
    assert t_iter("--overlap", "0") >= base
    # TernGrad's levels exchange with the fp32 classifier: two collectives after the codec's work
    code, out, _ = run(capsys, "predict", "--workload", "resnet50", "--cluster", "dgx1-v100", "--gpus", "64",
                       "--format", "json", "--strategy", "terngrad")
    tern = json.loads(out)[0]["t_iter_s"]
    code, out, _ = run(capsys, "predict", "--workload", "resnet50", "--cluster", "dgx1-v100", "--gpus", "64",
                       "--format", "json", "--strategy", "terngrad", "--sync-wait-ms", "0.5")
    assert code == 0 and json.loads(out)[0]["t_iter_s"] == pytest.approx(tern + 2 * 0.0005)
    assert t_iter("--sync-wait-ms", "0.5") == pytest.approx(base)  # ssgd has no such points


@pytest.mark.parametrize("argv,message", [
    (["--gpus", "100000"], "100000 GPUs need 25000 nodes of 4; cluster terngrad-infiniband has 128"),
    (["--scaling", "strong", "--batch", "1", "--gpus", "512"], "fewer than one sample per GPU"),
    (["--ps-servers", "0", "--strategy", "sync-ps"], "ps_servers must be a positive integer"),
    (["--step-overhead-ms", "-1"], "--step-overhead-ms must be >= 0"),
    (["--step-overhead-ms", "nan"], "--step-overhead-ms must be >= 0"),
    (["--bucket-mb", "inf"], "bucket_mb must be finite"),
    (["--sync-wait-ms", "-1"], "--sync-wait-ms must be >= 0"),
    (["--sync-wait-ms", "inf"], "--sync-wait-ms must be >= 0"),
])
def test_impossible_inputs_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "predict", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("perfmodel: error: ") and message in err, err


def test_strong_scaling_skips_only_the_counts_with_less_than_a_sample(capsys):
    code, out, err = run(capsys, "predict", "--scaling", "strong", "--batch", "256", "--gpus", "128-512:x2",
                         "--strategy", "ssgd", "--format", "json")
    assert code == 0 and [r["gpus"] for r in json.loads(out)] == [128, 256]
    assert "skipped ssgd at 512 GPUs: strong scaling with total batch 256: fewer than one sample per GPU" in err
