"""`perfmodel` command line: outputs, formats, and one clear line with exit 2 for each bad input."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from perfmodel.cli import main
from perfmodel.predict_options import parse_gpus
from perfmodel.stragglers import CVB, GPU_VARIABILITY_CV, sync_slowdown


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_gpus():
    assert parse_gpus("1-512:x2") == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert parse_gpus("1-5") == [1, 2, 3, 4, 5]
    assert parse_gpus("8,1,4-6") == [1, 4, 5, 6, 8]
    assert len(parse_gpus("1-512")) == 512


def test_predict_json_records(capsys):
    code, out, _ = run(capsys, "predict", "--workload", "alexnet", "--cluster", "terngrad-ethernet",
                       "--strategy", "ssgd,terngrad", "--gpus", "1,4,8", "--format", "json", "--batch", "128")
    assert code == 0
    rows = json.loads(out)
    assert [(r["strategy"], r["gpus"]) for r in rows] == [("ssgd", 1), ("ssgd", 4), ("ssgd", 8),
                                                          ("terngrad", 1), ("terngrad", 4), ("terngrad", 8)]
    for r in rows:
        for key in ("nodes", "batch_per_gpu", "t_compute_s", "t_comm_s", "t_iter_s", "throughput",
                    "speedup", "efficiency"):
            assert key in r
        assert r["throughput"] == pytest.approx(r["gpus"] * 128 / r["t_iter_s"])
        assert r["efficiency"] == pytest.approx(r["speedup"] / r["gpus"])
    assert rows[0]["t_comm_s"] == 0 and rows[0]["speedup"] == pytest.approx(1.0)


def test_predict_daso_progress_and_nonblocking_factor(capsys):
    """--daso-progress wait charges the whole non-blocking sync, times --daso-nb-factor, every B batches."""
    base = ["predict", "--workload", "resnet50", "--cluster", "juwels-booster", "--strategy", "daso", "--gpus", "64",
            "--format", "json", "--daso-b", "4", "--daso-w", "1"]
    rows = {}
    for name, extra in {"async": [], "wait": ["--daso-progress", "wait"],
                        "wait3": ["--daso-progress", "wait", "--daso-nb-factor", "3"]}.items():
        code, out, _ = run(capsys, *base, *extra)
        assert code == 0
        (rows[name],) = json.loads(out)
    sync = rows["async"]["t_global_sync_s"]
    assert rows["wait"]["t_comm_s"] - rows["async"]["t_comm_s"] == pytest.approx(
        (sync - max(sync - rows["async"]["t_compute_s"], 0.0)) / 4)
    assert rows["wait3"]["t_comm_s"] - rows["wait"]["t_comm_s"] == pytest.approx(2 * sync / 4)


def test_predict_csv_and_table(capsys):
    code, out, _ = run(capsys, "predict", "--gpus", "1,2", "--strategy", "ssgd", "--format", "csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("strategy,") and len(lines) == 3
    code, out, _ = run(capsys, "predict", "--gpus", "1-8:x2", "--strategy", "ssgd,daso")
    assert code == 0 and "samples/s" in out and out.count("daso") == 4


def test_predict_plot(tmp_path, capsys):
    png = tmp_path / "t.png"
    code, _, _ = run(capsys, "predict", "--gpus", "1-64:x2", "--plot", str(png))
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_presets_lists_sources(capsys):
    code, out, _ = run(capsys, "presets", "--sources")
    assert code == 0
    for name in ("terngrad-ethernet", "terngrad-infiniband", "juwels-booster", "dgx1-v100", "alexnet",
                 "googlenet", "vgg-a", "resnet50", "resnet20", "lenet", "gem-cnn", "cifarnet"):
        assert name in out
    assert out.count("source:") >= 12


BAD = [
    (["predict", "--workload", "nope"], "unknown workload 'nope'"),
    (["predict", "--cluster", "nope"], "unknown cluster 'nope'"),
    (["predict", "--strategy", "ssgd,bogus"], "unknown strategy 'bogus'"),
    (["predict", "--gpus", "1-x"], "cannot parse --gpus"),
    (["predict", "--gpus", "0,2"], "cannot parse --gpus"),
    (["predict", "--gpus", "8-2"], "cannot parse --gpus"),
    (["predict", "--strategy", "daso", "--gpus", "6"], "not a multiple of 4"),
    (["predict", "--allreduce", "paper", "--gpus", "6,10"], "not a multiple of 4"),
    (["predict", "--scaling", "strong", "--batch", "1", "--gpus", "512"], "fewer than one sample per GPU"),
    (["predict", "--staging", "host", "--allreduce", "nccl"], "staging host"),
    (["predict", "--bucket-mb", "0"], "bucket_mb must be > 0"),
    (["predict", "--ps-placement", "nowhere"], "invalid choice"),
    (["predict", "--batch", "-3"], "batch must be a positive integer"),
    (["predict", "--overlap", "1.5"], "overlap must be in [0, 1]"),
    (["predict", "--daso-w", "9"], "daso_W must be in"),
    (["predict", "--daso-nb-factor", "-1"], "daso_nonblocking_factor must be > 0"),
    (["predict", "--daso-progress", "never"], "invalid choice"),
    (["predict", "--ps-servers", "0"], "ps_servers must be a positive integer"),
    (["predict", "--stragglers", "-1"], "--stragglers must be"),
    (["predict", "--scaling", "diagonal"], "invalid choice"),
    (["predict", "--batch", "ten"], "invalid int value"),
    (["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize("argv,message", BAD)
def test_bad_input_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("perfmodel: error: ") and message in err, err


def _presets_copy(tmp_path, repo_root):
    root = tmp_path / "presets"
    shutil.copytree(repo_root / "data" / "presets", root)
    return root


@pytest.mark.parametrize("edit,message", [
    (lambda r: (r / "clusters.toml").write_text("[broken\n"), "is malformed"),
    (lambda r: (r / "clusters.toml").write_text((r / "clusters.toml").read_text().replace(
        "bandwidth_Bps = ", "bandwidth_Bps = -", 1)), "bandwidth_Bps must be > 0"),
    (lambda r: (r / "workloads.toml").unlink(), "is missing"),
    (lambda r: (r / "tensors" / "vgg-a.json").write_text('{"tensors": [["a", 1], '), "is malformed"),
])
def test_bad_preset_files(tmp_path, repo_root, monkeypatch, capsys, edit, message):
    from perfmodel import preset_toml

    root = _presets_copy(tmp_path, repo_root)
    edit(root)
    monkeypatch.setenv("DSGD_PRESETS", str(root))
    preset_toml._read_toml.cache_clear()
    code, _, err = run(capsys, "predict", "--workload", "vgg-a", "--cluster", "terngrad-ethernet", "--gpus", "1,4")
    preset_toml._read_toml.cache_clear()
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_import_is_light_and_console_script_runs():
    code = ("import sys, perfmodel, perfmodel.cli, perfmodel.scaling, perfmodel.presets, perfmodel.lab.profile; "
            "perfmodel.cli.build_parser(); "
            "bad = [m for m in ('torch', 'mpi4py') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    exe = shutil.which("perfmodel")
    if exe is None:
        pytest.skip("the perfmodel console script is not installed (pip install -e .)")
    res = subprocess.run([exe, "predict", "--gpus", "1,2,4", "--strategy", "ssgd"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and "ssgd" in res.stdout
    res = subprocess.run([exe, "predict", "--workload", "nope"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_predict_and_plan_load_no_heavy_module():
    """The straggler slowdown every synchronous row carries needs the gamma CDF only, which is numpy's
    (perfmodel.gamma_cdf): no scipy at all (scipy.special alone is 0.35 s to import); pandas, torch and the
    plotting stack stay out."""
    code = ("import sys, io, contextlib; from perfmodel.cli import main\n"
            "for argv in (['predict'], ['plan', '--workload', 'resnet50', '--cluster', 'juwels-booster',"
            " '--epochs', '1', '--dataset-size', '1000000']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main(argv) == 0\n"
            "heavy = ('scipy', 'pandas', 'torch', 'matplotlib', 'seaborn')\n"
            "bad = [m for m in heavy if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ------------------------------------------------------------- clusters and workloads described by the user

MY_TOML = '[mine]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvswitch-a100"\nnetwork = "8xib-hdr"\n'


def test_done_when_commands(tmp_path, capsys):
    """`--cluster my.toml --workload resnet50 --samples-per-s 2500 --batch 256 --gpus 8,64`, and the same with
    inline overrides; 2500 samples/s at batch 256 is 102.4 ms of compute per step on every GPU count."""
    my = tmp_path / "my.toml"
    my.write_text(MY_TOML)
    base = ["predict", "--cluster", str(my), "--workload", "resnet50", "--samples-per-s", "2500", "--batch", "256",
            "--gpus", "8,64", "--strategy", "ssgd", "--format", "json", "--stragglers", "none"]
    code, out, err = run(capsys, *base)
    assert code == 0, err
    rows = json.loads(out)
    assert [r["gpus"] for r in rows] == [8, 64] and [r["nodes"] for r in rows] == [1, 8]
    assert all(r["t_compute_s"] == pytest.approx(0.1024) for r in rows)
    # by default a GPU cluster's step waits for the slowest chip (GPU_VARIABILITY_CV): compute stretched
    # by the expected maximum of W gamma speeds, the same factor the straggler model gives
    code, out_default, err = run(capsys, *base[:-2])
    assert code == 0, err
    model = CVB(1.0, v_task=0.0, v_mach=GPU_VARIABILITY_CV, heterogeneous=False)
    for r in json.loads(out_default):
        assert r["t_compute_s"] == pytest.approx(0.1024 * float(sync_slowdown(np.array([r["gpus"]]), model)[0]))
    code, out2, err = run(capsys, *base, "--gpus-per-node", "8", "--intra", "nvswitch-a100", "--network", "8x200Gb/s")
    assert code == 0, err
    rows2 = json.loads(out2)
    # the same intra link; a network of 8 x 25 GB/s instead of 8 x 24 GB/s: never slower
    assert rows2[0]["t_comm_s"] == pytest.approx(rows[0]["t_comm_s"])
    assert rows2[1]["t_comm_s"] <= rows[1]["t_comm_s"]
    code, out3, err = run(capsys, "predict", "--cluster", "custom", "--gpu", "a100", "--gpus-per-node", "8",
                          "--intra", "nvswitch-a100", "--network", "8x200Gb/s", "--workload", "resnet50",
                          "--samples-per-s", "2500", "--batch", "256", "--gpus", "8,64", "--strategy", "ssgd",
                          "--format", "json", "--stragglers", "none")
    assert code == 0, err
    assert [r["throughput"] for r in json.loads(out3)] == pytest.approx([r["throughput"] for r in rows2])


def test_table_header_says_cluster_and_estimate(capsys):
    code, out, err = run(capsys, "predict", "--cluster", "custom", "--gpu", "h100", "--gpus-per-node", "8",
                         "--intra", "nvswitch-h100", "--network", "8xib-ndr", "--workload", "gpt2-xl",
                         "--estimate", "mixed", "--batch", "8", "--accumulate", "4", "--gpus", "8,64", "--strategy",
                         "ssgd")
    assert code == 0, err
    assert "x 4 micro-batches" in out and "# cluster: 8x h100 per node" in out and "# compute: ESTIMATE" in out


def test_a_pcie_preset_inside_the_node_gets_one_note_and_a_measured_figure_none(capsys):
    """docs/validation.md, "V100 PCIe clusters": the pcie3 preset was 20.6% too fast inside one node; 41% on the
    16 one-node runs of 2-4 GPUs over PCIe of the fourth and fifth rounds; 0.9% on the sixth round's 99."""
    base = ["predict", "--cluster", "custom", "--gpu", "v100-pcie", "--gpus-per-node", "4", "--network", "ib-edr",
            "--workload", "resnet50", "--samples-per-s", "360", "--batch", "64", "--strategy", "ssgd"]
    code, out, err = run(capsys, *base, "--intra", "pcie3", "--gpus", "1,8")
    assert code == 0, err
    notes = [ln for ln in out.splitlines() if "pcie3 preset" in ln]
    assert len(notes) == 1 and notes[0].startswith("# ") and "20.6% too fast" in notes[0]
    assert "(41% on 16 runs" in notes[0] and "0.9% at the median on 99 runs" in notes[0]
    code, out, err = run(capsys, *base, "--intra", "pcie3", "--gpus", "8", "--format", "json")
    assert code == 0 and "perfmodel: note: the node's GPUs talk over the pcie3 preset" in err
    json.loads(out)  # the note stays out of the JSON
    for intra, gpus in (("4.6GB/s", "8"), ("nvlink2", "8"), ("pcie3", "1")):
        code, out, err = run(capsys, *base, "--intra", intra, "--gpus", gpus)
        assert code == 0 and "preset (" not in out + err, (intra, gpus)
    code, out, err = run(capsys, *base, "--intra", "pcie3", "--gpus", "8", "--node-rate", "1300")  # measured node
    assert code == 0 and "preset (" not in out + err and "step overhead" in out, err


def test_a_tcp_preset_above_10_gbps_across_nodes_gets_one_note_in_predict_and_plan(capsys):
    """docs/validation.md: over 25-100 GbE presets the model was 60% too fast across nodes on 60 development rows,
    12% too fast on the 33 of the third to fifth rounds: the note says both and asks for a measured link."""
    base = ["--cluster", "custom", "--gpu", "v100", "--gpus-per-node", "8", "--intra", "nvlink2",
            "--workload", "resnet50", "--samples-per-s", "360", "--batch", "64"]
    for network in ("eth-100g", "2xeth-25g"):
        code, out, err = run(capsys, "predict", *base, "--network", network, "--gpus", "8,16")
        assert code == 0, err
        notes = [ln for ln in out.splitlines() if "socket transports" in ln]
        fabric = network.split("x", 1)[-1] if network.startswith("2x") else network
        assert len(notes) == 1 and notes[0].startswith(f"# the nodes talk over the {fabric} preset"), network
        assert "60% too fast" in notes[0] and "12% too fast on 33" in notes[0] and "--network" in notes[0]
    for network, gpus in (("eth-100g", "1,8"), ("eth-10g", "16"), ("ib-edr", "16"), ("10GB/s", "16")):
        code, out, err = run(capsys, "predict", *base, "--network", network, "--gpus", gpus)
        assert code == 0 and "socket transports" not in out + err, (network, gpus)
    plan = ["plan", *base, "--network", "eth-100g", "--epochs", "1", "--dataset-size", "100000", "--top", "2"]
    code, out, err = run(capsys, *plan, "--gpus-max", "16")
    assert code == 0 and "# note: the nodes talk over the eth-100g preset" in out, err
    code, out, err = run(capsys, *plan, "--gpus-max", "16", "--format", "json")
    assert code == 0 and "perfmodel: note: the nodes talk over the eth-100g preset" in err
    json.loads(out)
    code, out, err = run(capsys, *plan, "--gpus-max", "8")
    assert code == 0 and "socket transports" not in out + err


def test_plan_says_the_pcie_note_too(capsys):
    base = ["plan", "--cluster", "custom", "--gpu", "v100-pcie", "--gpus-per-node", "4", "--network", "ib-edr",
            "--workload", "resnet50", "--samples-per-s", "360", "--batch", "64", "--epochs", "1", "--dataset-size",
            "100000", "--gpus-max", "8", "--top", "2"]
    code, out, err = run(capsys, *base)
    assert code == 0, err
    notes = [ln for ln in out.splitlines() if ln.startswith("# note:")]
    pcie = [ln for ln in notes if "pcie3 preset" in ln]  # the others: the top plan's lead (perfmodel.pair_confidence)
    assert len(pcie) == 1 and pcie[0].startswith("# note: the node's GPUs")
    assert all("best plan of another strategy" in ln for ln in notes if ln not in pcie)
    code, out, err = run(capsys, *base, "--format", "json")
    assert code == 0 and "perfmodel: note: the node's GPUs talk over the pcie3 preset" in err
    json.loads(out)
    code, out, err = run(capsys, *base, "--intra", "4.6GB/s")
    assert code == 0 and "preset (" not in out + err


def test_workload_file_wire_maps_to_the_strategy(tmp_path, capsys):
    w = tmp_path / "w.toml"
    w.write_text('[r18]\nmodel = "resnet18"\nwire = "fp16"\n')
    args = ["predict", "--cluster", "dgx1-v100", "--workload", str(w), "--samples-per-s", "1000", "--batch", "64",
            "--gpus", "16", "--strategy", "ssgd", "--format", "json"]
    rows = {}
    for name, extra in {"file": [], "fp32": ["--wire", "fp32"], "fp16": ["--wire", "fp16"]}.items():
        code, out, err = run(capsys, *args, *extra)
        assert code == 0, err
        (rows[name],) = json.loads(out)
    assert rows["file"]["bytes_per_gpu"] == rows["fp16"]["bytes_per_gpu"]
    assert rows["fp32"]["bytes_per_gpu"] == pytest.approx(2 * rows["fp16"]["bytes_per_gpu"])


def test_presets_lists_every_kind(capsys):
    code, out, _ = run(capsys, "presets")
    assert code == 0
    kinds = {line.split()[0] for line in out.splitlines()}
    assert kinds == {"fabric", "gpu", "host-cpu", "cluster", "workload", "model"}
    for name in ("ib-hdr", "nvswitch-h100", "pcie5", "h100", "k80", "gpt2-xl", "bert-large", "inception-v3"):
        assert f" {name} " in out
    code, out, _ = run(capsys, "presets", "--kind", "fabric", "--sources")
    assert code == 0 and out.count("source:") == out.count("fabric ") >= 18


def test_help_shows_examples(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "--cluster custom --gpu a100" in out and "8x200Gb/s" in out


BAD_INPUTS = [
    (["predict", "--network", "ib-xdr"], "unknown fabric 'ib-xdr' for --network"),
    (["predict", "--network", "-3Gb/s"], "--network '-3Gb/s': bandwidth must be > 0"),
    (["predict", "--intra", "fast"], "unknown fabric 'fast' for --intra"),
    (["predict", "--gpus", "100000"], "100000 GPUs need 25000 nodes of 4; cluster terngrad-infiniband has 128"),
    (["predict", "--cluster", "custom", "--gpu", "a100", "--gpus-per-node", "8", "--network", "ib-hdr",
      "--nodes", "2", "--gpus", "32"], "32 GPUs need 4 nodes of 8"),
    (["predict", "--cluster", "custom", "--gpus-per-node", "8"], "--cluster custom needs --gpu, --network"),
    (["predict", "--gpus-per-node", "0"], "--gpus-per-node: must be a positive integer"),
    (["predict", "--nics", "x"], "--nics: must be a positive integer"),
    (["predict", "--samples-per-s", "-5"], "--samples-per-s: must be a number > 0"),
    (["predict", "--workload", "resnet50", "--samples-per-s", "10", "--compute-ms", "3"], "give one compute time"),
    (["predict", "--workload", "bert-large"], "'bert-large' (model library) has no measured compute time"),
    (["predict", "--accumulate", "0"], "--accumulate: must be a positive integer"),
    (["predict", "--estimate", "fp64"], "invalid choice"),
    (["predict", "--cluster", "nope.toml"], "nope.toml is missing"),
]


@pytest.mark.parametrize("argv,message", BAD_INPUTS)
def test_bad_cluster_and_workload_input(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("perfmodel: error: ") and message in err, err


@pytest.mark.parametrize("text,message", [
    ('[c]\ngpu = "a100"\nintra = "nvlink3"\nnetwork = "ib-hdr"\n', "[c]: missing key 'gpus_per_node'"),
    ('[c]\ngpu = "a100"\ngpus_per_node = "eight"\nintra = "nvlink3"\nnetwork = "ib-hdr"\n',
     "[c]: gpus_per_node must be an integer, got 'eight'"),
])
def test_bad_cluster_file_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code, _, err = run(capsys, "predict", "--cluster", str(path), "--gpus", "8")
    assert code == 2 and err.count("\n") == 1 and f"{path} {message}" in err, err
