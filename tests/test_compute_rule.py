"""The compute rule (perfmodel.compute_rule), unlisted GPUs, and TernGrad's codec from memory traffic."""

import csv
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from perfmodel import presets
from perfmodel.cli import main
from perfmodel.cluster_input import ClusterOptions, resolve_cluster
from perfmodel.codec_memory import MEMORY_EFFICIENCY
from perfmodel.compression import ternary_split
from perfmodel.compute_rule import activation_elements, launch_bound, load_measured_rates, load_rule
from perfmodel.library import load_model
from perfmodel.scaling import predict
from perfmodel.specs import SpecError, Strategy
from perfmodel.workload_input import ComputeOptions, resolve_workload
from reproduce import compute_rates
from reproduce.halves import half, is_held_out

ROOT = Path(__file__).resolve().parent.parent


def test_activation_elements_by_hand():
    # conv 3->64, 7x7, stride 2 on 224x224: 9408 weights applied at 112x112 positions, 64 output channels
    # (the bn weight after it); a 10x10 linear with no FLOP-free tensor after it: sqrt(100) = 10 outputs
    flops = 2 * 9408 * 112 * 112
    assert activation_elements([9408, 64, 64], [flops, 0, 0]) == pytest.approx(64 * 112 * 112)
    assert activation_elements([100], [2 * 100 * 3]) == pytest.approx(10 * 3)
    with pytest.raises(SpecError):
        activation_elements([5], [])


def test_split_is_the_declared_rule():
    import hashlib

    rows = list(csv.DictReader(open(ROOT / "data" / "published" / "runs.csv")))
    for r in rows[:40]:
        h = int(hashlib.sha256(f"{r['source']}|{r['source_loc']}".encode()).hexdigest(), 16)
        assert is_held_out(r["source"], r["source_loc"]) == (h % 2 == 1)
        assert half(r) == ("held-out" if h % 2 else "dev")
    assert 0.3 < sum(half(r) == "held-out" for r in rows) / len(rows) < 0.7


def test_measured_rates_table_is_the_median_of_runs_csv():
    # two paths: the committed table, and the median-low of the distinct single-GPU rates read here
    table = load_measured_rates()
    rows = list(csv.DictReader(open(ROOT / "data" / "published" / "runs.csv")))
    rates = {}
    for r in rows:
        if r["model"] == "resnet50" and r["gpu"] == "v100" and r["precision"] == "amp":
            rates[(r["source"], r["single_gpu_loc"], r["single_gpu_samples_per_s"])] = float(r["single_gpu_samples_per_s"])
    vals = sorted(rates.values())
    m = table[("resnet50", "v100", "mixed")]
    assert m.samples_per_s == vals[(len(vals) - 1) // 2]
    assert str(len(vals)) in m.source and "runs.csv" in m.source
    text = compute_rates.toml_text(compute_rates.table_entries(
        compute_rates.single_gpu_rates(compute_rates.load_runs(compute_rates.RUNS))))
    assert tomllib.loads(text) == tomllib.loads((ROOT / "data" / "presets" / "measured_rates.toml").read_text())


def test_estimate_constants_fitted_on_dev_only_and_error_stated():
    rates = compute_rates.single_gpu_rates(compute_rates.load_runs(compute_rates.RUNS))
    dev = [m for m in rates if m["half"] == "dev"]
    rule = load_rule()
    fitted = compute_rates.fit(dev, rule)
    assert fitted.crossings == pytest.approx(rule.crossings, rel=0.01)
    for p in ("fp32", "tf32", "mixed"):
        assert fitted.fraction[p] == pytest.approx(rule.fraction[p], abs=0.006)
    held = [m for m in rates if m["half"] == "held-out"]
    e_dev = np.median(np.abs(compute_rates.errors_pct(dev, rule)))
    e_held = np.median(np.abs(compute_rates.errors_pct(held, rule)))
    e_all = np.median(np.abs(compute_rates.errors_pct(rates, rule)))
    assert f"{e_dev:.1f}%" in rule.error_text and f"{e_held:.1f}%" in rule.error_text
    assert f"{e_all:.1f}%" in rule.error_text
    assert e_all <= 25.0


def test_resnet50_mixed_on_h100_inside_the_published_range():
    # published: PyTorch near 3,000 images/s, tuned MLPerf submissions 5,000-6,000 (issue 27)
    c = resolve_cluster("custom", ClusterOptions(gpu="h100", gpus_per_node=8, network="8xib-ndr"))
    w, settings = resolve_workload("resnet50", c, ComputeOptions(estimate="mixed", batch=256))
    curve, _, source = w.compute_for(c)
    rate = 256 / float(curve(256))
    assert 3000 <= rate <= 6000 and source.startswith("ESTIMATE")
    assert "median |error|" in source


def test_measured_rate_first_and_disagreement_warning():
    c = presets.load_cluster("dgx1-v100")
    w, settings = resolve_workload("resnet50", c, ComputeOptions(estimate="mixed", batch=256))
    m = load_measured_rates()[("resnet50", "v100", "mixed")]
    curve, _, source = w.compute_for(c)
    assert float(curve(m.batch)) == pytest.approx(m.batch / m.samples_per_s)
    assert source.startswith("measured: published")
    # the preset's own v100 time is fp32 (697 ms at 256); the mixed rate differs by > 1.5x: one warning
    assert len(settings.warnings) == 1 and "disagree" in settings.warnings[0]


def test_launch_bound_warning_for_lenet(capsys):
    lib = load_model("lenet", presets.presets_dir())
    assert launch_bound(lib.forward_flops, len(lib.tensor_sizes), 64, 3.6e-6)  # 91 us of launches vs 23 us
    assert not launch_bound(8.18e9, 161, 256, 2.8e-4)  # ResNet-50 at batch 256: 1.8 ms vs 72 ms
    rc = main(["predict", "--cluster", "dgx1-v100", "--workload", "lenet", "--estimate", "fp32", "--batch", "64",
               "--gpus", "1"])
    err = capsys.readouterr().err
    assert rc == 0 and err.count("perfmodel: warning:") == 1 and "too small" in err


def test_tf32_time_never_scaled_by_fp32_ratio():
    # the resnet50 preset is measured on a100 (TF32 by default) and v100 (fp32): an H100 is scaled from the v100
    c = resolve_cluster("custom", ClusterOptions(gpu="h100", gpus_per_node=8, network="8xib-ndr"))
    w = presets.load_workload("resnet50")
    assert "a100" in w.compute and "a100" not in w.compute_peak_flops
    _, scale, source = w.compute_for(c)
    assert "from v100" in source and scale == pytest.approx(15.7e12 / 66.9e12)


def test_unlisted_gpu_on_the_command_line(capsys):
    args = ["predict", "--cluster", "custom", "--gpu", "mi325x", "--gpu-tflops", "fp32=163.4,tf32=653.7,fp16=1307.4",
            "--gpu-memory-gb", "256", "--gpu-mem-bw", "6000", "--gpus-per-node", "8", "--intra", "xgmi-mi300x",
            "--network", "8xib-ndr", "--workload", "resnet50", "--estimate", "mixed", "--batch", "256",
            "--gpus", "1", "--format", "json"]
    assert main(args) == 0
    import json

    rec = json.loads(capsys.readouterr().out)[0]
    rule = load_rule()
    lib = load_model("resnet50", presets.presets_dir())
    per = (3 * lib.forward_flops / (1307.4e12 * rule.fraction["mixed"])
           + rule.crossings * activation_elements(lib.tensor_sizes, lib.tensor_flops) * 2 / 6000e9)
    assert rec["throughput"] == pytest.approx(1 / per)
    for bad, text in ((["--gpu-tflops", "fp32=-1"], "positive"), (["--gpu-tflops", "fp33=1"], "PRECISION=TFLOPS"),
                      (["--gpu-tflops", "fp32=x"], "number"), (["--gpu-tflops", "tf32=400"], "fp32 peak"),
                      (["--gpu-tflops", "fp32=60", "--gpu-mem-bw", "0"], "positive"),
                      (["--gpu-tflops", "fp32=60", "--gpu-host", "pcie9"], "fabric")):
        rc = main(["predict", "--cluster", "custom", "--gpus-per-node", "8", "--network", "8xib-ndr",
                   "--workload", "resnet50", "--estimate", "fp32", *bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("perfmodel: error:") and text in err[0], (bad, err)


def test_unlisted_gpu_inline_table(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text('[mi]\ngpus_per_node = 8\nintra = "xgmi-mi300x"\nnetwork = "8xib-ndr"\n'
                 '[mi.gpu]\nname = "mi325x"\npeak_flops = 163.4e12\ntensor_flops = 1307e12\nmemory_Bps = 6.0e12\n'
                 'host = "pcie5"\n')
    c = resolve_cluster(str(f))
    assert c.gpu == "mi325x" and c.gpu_memory_Bps == 6.0e12 and c.gpu_tensor_flops == 1307e12
    bad = tmp_path / "bad.toml"  # another file: TOML files are read once per path
    bad.write_text('[mi]\ngpus_per_node = 8\nnetwork = "8xib-ndr"\n[mi.gpu]\npeak_flops = -1\n')
    rc = main(["predict", "--cluster", str(bad), "--workload", "resnet50", "--estimate", "fp32"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "peak_flops must be a positive" in err[0]


def test_terngrad_codec_from_memory_traffic_by_hand():
    c = presets.load_cluster("dgx1-v100")
    w = presets.load_workload("resnet50")
    n = ternary_split(w, 1, True).ternary_elems
    eta_b = MEMORY_EFFICIENCY * 9.0e11
    for exchange, expect in (("levels", (9 + 13) * n / eta_b), ("ps", (8.25 + 2 * 8.25 + 16) * n / eta_b),
                             ("allgather", None)):
        p = predict(w, c, Strategy("terngrad", allreduce="ring", terngrad_exchange=exchange), [1, 4], batch=64)
        t = p.extra["t_compress_s"]
        assert np.all(t > 0)
        if expect is not None:
            assert t[0] == pytest.approx(expect)
        else:  # allgather decodes every worker's copy: W x 8.25 B
            assert t[1] - t[0] == pytest.approx(3 * 8.25 * n / eta_b)
    # measured rates replace the memory traffic; inf is free
    free = predict(w, c, Strategy("terngrad", terngrad_encode_elems_per_s=math.inf,
                                  terngrad_decode_elems_per_s=math.inf, terngrad_convert_elems_per_s=math.inf),
                   [4], batch=64)
    assert free.extra["t_compress_s"][0] == 0.0
    given = predict(w, c, Strategy("terngrad", terngrad_encode_elems_per_s=1e9), [4], batch=64)
    assert given.extra["t_compress_s"][0] == pytest.approx(n / 1e9 + 13 * n / eta_b)


def test_terngrad_codec_shows_in_predict_table(capsys):
    assert main(["predict", "--cluster", "dgx1-v100", "--workload", "resnet50", "--strategy", "ssgd,terngrad",
                 "--gpus", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("strategy"))
    assert "t_codec ms" in head
    start = head.index("t_codec ms")
    tern = next(line for line in lines if line.startswith("terngrad"))
    ssgd = next(line for line in lines if line.startswith("ssgd"))
    assert float(tern[start:start + len("t_codec ms")]) > 0 and ssgd[start:start + len("t_codec ms")].strip() == "-"


def test_terngrad_codec_is_charged_on_every_gpu_preset():
    w = presets.load_workload("alexnet")
    for name in presets.cluster_names():
        c = presets.load_cluster(name)
        if not c.peak_flops:
            continue
        assert c.gpu_memory_Bps, f"cluster {name}: GPU {c.gpu} has no memory_Bps"
        p = predict(w, c, Strategy("terngrad", allreduce="ring"), [1], batch=32)
        assert p.extra["t_compress_s"][0] > 0, name


def test_compute_rates_bad_runs_file(tmp_path, capsys):
    assert compute_rates.main(["--runs", str(tmp_path / "missing.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compute_rates: error:")
