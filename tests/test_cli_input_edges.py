"""perfmodel predict/plan on inputs at the edges: overrides of a preset's GPU, contradictions, overflow, and
inputs that used to hang. Each bad input is one line and exit status 2."""

import json

import numpy as np
import pytest

from perfmodel.cli import main
from perfmodel.overlap import make_buckets

PLAN = ["plan", "--workload", "resnet50", "--cluster", "juwels-booster", "--epochs", "90",
        "--dataset-size", "1281167"]


def _one_error(capsys, args, *words):
    rc = main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("perfmodel: error:"), (args, err)
    for w in words:
        assert w in err[0], (w, err[0])


def test_gpu_figures_override_the_preset_clusters_own_gpu(capsys):
    args = ["predict", "--cluster", "juwels-booster", "--workload", "resnet50", "--gpus", "4", "--format", "json"]
    assert main(args) == 0
    base = json.loads(capsys.readouterr().out)[0]
    assert main([*args, "--gpu-mem-bw", "2039"]) == 0
    faster_memory = json.loads(capsys.readouterr().out)[0]
    assert faster_memory["cluster"].startswith("juwels-booster (gpu a100")  # still the A100
    # its measured compute time is kept; only the gradient's copies into the buckets (t_copy_s, at the memory
    # bandwidth: 2 x 2 x n x 4 bytes / (0.81 x B)) get faster, by the ratio of the two bandwidths
    assert faster_memory["t_compute_s"] == base["t_compute_s"]
    assert faster_memory["t_copy_s"] == pytest.approx(base["t_copy_s"] * 1555 / 2039, rel=1e-9)
    assert faster_memory["throughput"] > base["throughput"]
    assert main([*args, "--bucket-copies", "0"]) == 0
    no_copies = json.loads(capsys.readouterr().out)[0]
    assert main([*args, "--bucket-copies", "0", "--gpu-mem-bw", "2039"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["throughput"] == no_copies["throughput"]
    # the memory size is the one plan and predict check against: 80 GB = 74.5 GiB, not the preset's 40 GiB
    assert main([*PLAN, "--gpu-memory-gb", "80"]) == 0
    assert "; 74.5 GiB per GPU" in capsys.readouterr().out.splitlines()[0]
    assert main(PLAN) == 0
    assert "; 40.0 GiB per GPU" in capsys.readouterr().out.splitlines()[0]
    # a model that needs more than 40 GiB at this batch fits in 80 GB
    big = ["predict", "--cluster", "juwels-booster", "--workload", "gpt2-xl", "--estimate", "fp32", "--batch", "8",
           "--gpus", "4", "--strategy", "ssgd", "--format", "json"]
    assert main(big) == 0
    small = json.loads(capsys.readouterr().out)[0]
    assert main([*big, "--gpu-memory-gb", "1000"]) == 0
    assert (small["fits"], json.loads(capsys.readouterr().out)[0]["fits"]) == (False, True)


def test_network_nic_count_and_nics_must_agree(capsys):
    base = ["predict", "--cluster", "custom", "--gpu", "v100-pcie", "--gpus-per-node", "4", "--intra", "nvlink2",
            "--workload", "resnet50", "--samples-per-s", "360", "--batch", "64", "--gpus", "4,32"]
    _one_error(capsys, [*base, "--network", "8x25GB/s", "--nics", "2"], "8 NICs", "--nics 2")
    assert main([*base, "--network", "25GB/s", "--nics", "2", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec[0]["cluster"] == "custom"


def test_budget_needs_a_price(capsys):
    _one_error(capsys, [*PLAN, "--budget", "100"], "--budget needs a price")


def test_overflowing_results_are_refused_not_written_as_infinity(capsys):
    _one_error(capsys, [*PLAN, "--price", "1e307", "--format", "json"], "cost", "not a finite number")


def test_a_gpu_range_too_long_to_list_is_refused_at_once(capsys):
    _one_error(capsys, ["predict", "--gpus", "1-99999999"], "99,999,999 counts", ":x2")


def test_buckets_below_float_resolution_still_advance():
    """A cap that adds nothing to the bytes already filled (base + cap == base) closes one tensor per bucket;
    it used to loop forever."""
    sizes = np.array([4e6, 4e6, 4e6])
    b = make_buckets(sizes, np.ones(3), bucket_bytes=1e-9)
    np.testing.assert_array_equal(b.nbytes, sizes)
    np.testing.assert_allclose(b.ready_fraction, [1 / 3, 2 / 3, 1.0])


@pytest.mark.parametrize("kind", ["heterogeneous", "0.1,0.3"])
def test_no_efficiency_above_one_with_spread_asynchronous_workers(capsys, kind):
    assert main(["predict", "--stragglers", kind, "--strategy", "asgd,ssgd", "--gpus", "1,2,4,8",
                 "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert all(r["efficiency"] <= 1 + 1e-12 for r in recs)
    assert [r["speedup"] for r in recs if r["gpus"] == 1] == [pytest.approx(1.0)] * 2


def test_a_compute_time_below_a_nanosecond_is_a_unit_slip(capsys):
    _one_error(capsys, ["predict", "--workload", "resnet50", "--compute-ms", "1e-300", "--gpus", "1,8"],
               "less than a nanosecond", "milliseconds")
    _one_error(capsys, ["predict", "--workload", "resnet50", "--samples-per-s", "1e15", "--batch", "32"],
               "less than a nanosecond")


def test_an_overflowing_link_is_one_line_without_numpy_warnings(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text('[c]\ngpu = "a100"\ngpus_per_node = 8\nnetwork = "8xib-hdr"\n'
                 '[c.intra]\nlatency_s = 0\nbandwidth_Bps = 1e-300\n')
    rc = main(["predict", "--cluster", str(f), "--workload", "resnet50", "--samples-per-s", "1000", "--batch", "32",
               "--gpus", "1,8,16", "--format", "json", "--staging", "host"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert rc == 2 and captured.out == "" and len(err) == 1 and "not a finite number" in err[0], err


def test_plan_sizes_and_durations_need_their_unit(capsys):
    _one_error(capsys, [*PLAN, "--gpu-memory", "32"], "with its unit", "16GiB")
    _one_error(capsys, [*PLAN, "--deadline", "36"], "with its unit", "36h")
    _one_error(capsys, [*PLAN, "--deadline", "1e400h"], "positive duration")


def test_a_node_rate_whose_step_passes_a_day_is_refused(capsys):
    _one_error(capsys, ["predict", "--strategy", "ssgd", "--node-rate", "1e-9", "--gpus", "1,4,8"],
               "more than a day")
    _one_error(capsys, ["predict", "--batch", "99999999999999999999", "--gpus", "1,8"], "samples per GPU per step")


def test_contradictory_flags_are_refused(capsys):
    _one_error(capsys, ["predict", "--strategy", "terngrad", "--gpus", "8", "--terngrad-fp32-last",
                        "--terngrad-ternarize-last"], "not allowed with")
    _one_error(capsys, ["predict", "--overlap", "0.5", "--overlap-efficiency", "0.9"], "not both")
    _one_error(capsys, ["predict", "--overlap", "0.5", "--overlap-slowdown", "3"], "not both")


@pytest.mark.parametrize("name,ok", [("p.pdf", True), ("p.svg", True), ("p.png", True), ("p.jpg", False)])
def test_plot_writes_the_format_its_suffix_names(tmp_path, capsys, name, ok):
    path = tmp_path / name
    rc = main(["predict", "--gpus", "1,8", "--plot", str(path)])
    capsys.readouterr()
    if not ok:
        assert rc == 2 and not path.exists()
        return
    head = path.read_bytes()[:8]
    assert rc == 0 and head.startswith({".pdf": b"%PDF", ".svg": b"<?xml", ".png": b"\x89PNG"}[path.suffix])


def test_nothing_hidden_is_never_negative(capsys):
    assert main(["predict", "--cluster", "dgx1-v100", "--workload", "lenet", "--format", "json"]) == 0
    assert min(r["t_hidden_s"] for r in json.loads(capsys.readouterr().out)) >= 0.0


@pytest.mark.parametrize("batch", ["0", "-1"])
def test_a_batch_below_one_is_one_line_before_any_compute_warning(capsys, batch):
    # --batch 0 used to reach the compute rule's comparison of two step times and divide by zero;
    # with --estimate mixed on a preset that has its own rate, the rule's "sources disagree" warning
    # must not come out ahead of the error either
    _one_error(capsys, ["predict", "--cluster", "dgx1-v100", "--workload", "resnet50", "--estimate", "mixed",
                        "--gpus", "8", "--batch", batch], f"--batch must be a positive integer, got {batch}")


def test_a_bad_strategy_option_prints_its_error_alone_and_good_input_keeps_the_warning(capsys):
    base = ["--cluster", "dgx1-v100", "--workload", "resnet50", "--estimate", "mixed"]
    _one_error(capsys, ["predict", *base, "--gpus", "8", "--bucket-copies", "-1"], "--bucket-copies")
    _one_error(capsys, ["plan", *base, "--samples", "1e6", "--strategy", "nosuch"], "unknown strategy")
    assert main(["predict", *base, "--gpus", "8", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "perfmodel: warning: compute sources disagree" in err and "error" not in err
