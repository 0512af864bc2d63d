"""`perfmodel` command line: outputs, formats, and one clear line with exit 2 for each bad input."""

import json
import shutil
import subprocess
import sys

import pytest

from perfmodel.cli import main, parse_gpus


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
    from perfmodel import presets

    root = _presets_copy(tmp_path, repo_root)
    edit(root)
    monkeypatch.setenv("DSGD_PRESETS", str(root))
    presets._read_toml.cache_clear()
    code, _, err = run(capsys, "predict", "--workload", "vgg-a", "--cluster", "terngrad-ethernet", "--gpus", "1,4")
    presets._read_toml.cache_clear()
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_import_is_light_and_console_script_runs():
    code = ("import sys, perfmodel, perfmodel.cli, perfmodel.scaling, perfmodel.presets, perfmodel.profile; "
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
