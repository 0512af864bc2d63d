"""Clusters and workloads described by the user: files, custom clusters, overrides, compute inputs.
Values are checked against the fabric and GPU tables by hand, and equivalent descriptions against
each other."""

import dataclasses

import pytest

from perfmodel import presets
from perfmodel.cli import main
from perfmodel.cluster_input import ClusterOptions, apply_overrides, resolve_cluster
from perfmodel.scaling import check_gpu_counts
from perfmodel.scaling import predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload
from perfmodel.workload_input import ComputeOptions, estimate_seconds_per_sample, resolve_workload

FABS = presets.fabrics()
GPUS = presets.gpus()


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


CLUSTER_FILE = """
[mine]
gpu = "a100"
gpus_per_node = 8
intra = "nvswitch-a100"
network = "8xib-hdr"
host_memory_Bps = 4.0e11
"""


def test_cluster_file_with_fabric_names(tmp_path):
    path = _write(tmp_path, "my.toml", CLUSTER_FILE)
    c = resolve_cluster(str(path))
    assert c.name == "mine" and c.gpus_per_node == 8 and c.gpu == "a100" and c.peak_flops == GPUS["a100"].peak_flops
    assert c.intra.bandwidth_Bps == FABS["nvswitch-a100"].achievable_Bps
    assert c.network.bandwidth_Bps == pytest.approx(8 * FABS["ib-hdr"].achievable_Bps) and c.nics == 8
    assert c.host.bandwidth_Bps == FABS["pcie4"].achievable_Bps  # the A100's host fabric
    assert c.host_memory_Bps == 4.0e11 and c.max_nodes is None
    assert resolve_cluster(f"{path}:mine") == c


def test_cluster_file_in_the_preset_schema_equals_the_preset(tmp_path):
    text = (presets.presets_dir() / "clusters.toml").read_text()
    path = _write(tmp_path, "copy.toml", text)
    for name in presets.cluster_names():
        assert resolve_cluster(f"{path}:{name}") == presets.load_cluster(name)
    with pytest.raises(SpecError, match=f"{len(presets.cluster_names())} tables .* pick one with"):
        resolve_cluster(str(path))
    with pytest.raises(SpecError, match=r"no cluster table \[nope\]"):
        resolve_cluster(f"{path}:nope")


def test_top_level_cluster_file(tmp_path):
    path = _write(tmp_path, "flat.toml", 'gpu = "v100"\ngpus_per_node = 4\nintra = "nvlink2"\nnetwork = "ib-edr"\n'
                                         'max_nodes = 16\n')
    c = resolve_cluster(str(path))
    assert c.name == "flat" and c.max_nodes == 16 and c.network.bandwidth_Bps == FABS["ib-edr"].achievable_Bps


@pytest.mark.parametrize("text,message", [
    ('[c]\ngpu = "a100"\nintra = "nvlink3"\nnetwork = "ib-hdr"\n', r"\[c\]: missing key 'gpus_per_node'"),
    ('[c]\ngpu = "a100"\ngpus_per_node = "8"\nintra = "nvlink3"\nnetwork = "ib-hdr"\n',
     r"\[c\]: gpus_per_node must be an integer, got '8'"),
    ('[c]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvlink3"\n', r"\[c\]: missing key 'network'"),
    ('[c]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvlink3"\nnetwork = "ib-xdr"\n', "unknown fabric 'ib-xdr'"),
    ('[c]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvlink3"\n[c.network]\nlatency_s = "1us"\nbandwidth_Bps = 1e9\n',
     r"\[c\].network: latency_s must be a number, got '1us'"),
    ('[c]\ngpu = "tpu"\ngpus_per_node = 8\nintra = "nvlink3"\nnetwork = "ib-hdr"\n', "gpu 'tpu' is not in gpus.toml"),
    ('[c]\ngpus_per_node = 8\nintra = "nvlink3"\nnetwork = "ib-hdr"\n',
     r"\[c\]: missing the host link .* it names no gpu: give host = LINK"),
])
def test_bad_cluster_files_name_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, "bad.toml", text)
    with pytest.raises(SpecError, match=message) as e:
        resolve_cluster(str(path))
    assert str(path) in str(e.value)


def test_custom_cluster_is_the_same_as_its_file(tmp_path):
    """8 nodes x 8 A100, NVSwitch inside, 8x HDR 200 Gb/s InfiniBand, said two ways."""
    opts = ClusterOptions(gpu="a100", gpus_per_node=8, intra="nvswitch-a100", network="8x200Gb/s", nodes=8)
    custom = resolve_cluster("custom", opts)
    path = _write(tmp_path, "c.toml", '[custom]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvswitch-a100"\n'
                                      'network = "8x200Gb/s"\nmax_nodes = 8\n')
    filed = resolve_cluster(str(path))
    assert dataclasses.replace(custom, source="") == dataclasses.replace(filed, source="")
    assert custom.network.bandwidth_Bps == pytest.approx(200e9) and custom.nics == 8 and custom.max_nodes == 8
    with pytest.raises(SpecError, match="--cluster custom needs --gpu, --network"):
        resolve_cluster("custom", ClusterOptions(gpus_per_node=8))


def test_overrides_on_a_preset():
    base = presets.load_cluster("dgx1-v100")
    assert base.nics == 4 and base.host_memory_Bps == pytest.approx(2 * 4 * 2133e6 * 8, rel=1e-3)
    c = resolve_cluster("dgx1-v100", ClusterOptions(gpus_per_node=4, intra="nvlink2", network="ib-hdr", nodes=2))
    assert c.gpus_per_node == 4 and c.max_nodes == 2 and c.nics == 1
    assert c.network == FABS["ib-hdr"].link() and c.host == base.host and "dgx1-v100 (" in c.name
    # --nics rescales the per-NIC figure: 48 GB/s over 4 NICs -> 2 NICs = 24 GB/s
    half = resolve_cluster("dgx1-v100", ClusterOptions(nics=2))
    assert half.network.bandwidth_Bps == pytest.approx(base.network.bandwidth_Bps / 2) and half.nics == 2
    eight = resolve_cluster("dgx1-v100", ClusterOptions(network="ib-hdr", nics=8))
    assert eight.network.bandwidth_Bps == pytest.approx(8 * FABS["ib-hdr"].achievable_Bps)
    # a bare figure keeps the latency of the link it replaces
    fig = resolve_cluster("terngrad-ethernet", ClusterOptions(network="10Gb/s"))
    assert fig.network.latency_s == presets.load_cluster("terngrad-ethernet").network.latency_s
    with pytest.raises(SpecError, match="contradicts"):
        resolve_cluster("dgx1-v100", ClusterOptions(network="8xib-hdr", nics=4))
    with pytest.raises(SpecError, match="unknown GPU 'tpu'"):
        apply_overrides(base, ClusterOptions(gpu="tpu"))


def test_gpu_counts_beyond_the_nodes():
    ether = presets.load_cluster("terngrad-ethernet")  # 128 nodes x 4
    check_gpu_counts(ether, [1, 512])
    with pytest.raises(SpecError, match="100000 GPUs need 25000 nodes of 4; cluster terngrad-ethernet has 128"):
        check_gpu_counts(ether, [8, 100000])
    check_gpu_counts(presets.load_cluster("dgx1-v100"), [100000])  # open-ended


def test_gpu_presets_by_hand():
    for name in ("k80", "p100", "v100", "a100", "h100"):
        g = GPUS[name]
        assert g.memory_Bps and g.tensor_flops and g.host in FABS and g.source
    assert GPUS["v100"].tensor_flops / GPUS["v100"].peak_flops == pytest.approx(125 / 15.7)
    assert GPUS["h100"].tensor_flops == pytest.approx(2 * GPUS["h100"].tf32_flops)  # dense TF32 is half of fp16


# ------------------------------------------------------------------------------------------- workloads

def _cluster(gpu="v100"):
    return resolve_cluster("dgx1-v100", ClusterOptions(gpu=gpu))


def test_samples_per_s_and_compute_ms_are_the_same_time():
    c = presets.load_cluster("dgx1-v100")
    a, _ = resolve_workload("resnet50", c, ComputeOptions(samples_per_s=2500, batch=256))
    b, _ = resolve_workload("resnet50", c, ComputeOptions(compute_ms=256 / 2500 * 1e3, batch=256))
    ta, sa, _ = a.compute_for(c)
    tb, sb, _ = b.compute_for(c)
    assert sa == sb == 1.0
    assert float(ta(256)) == pytest.approx(0.1024) and float(tb(256)) == pytest.approx(0.1024)
    assert float(ta(128)) == pytest.approx(0.0512)  # one point: proportional to batch
    with pytest.raises(SpecError, match="give one compute time, not --samples-per-s and --compute-ms"):
        resolve_workload("resnet50", c, ComputeOptions(samples_per_s=1, compute_ms=1))


def test_estimate_by_hand():
    # the ESTIMATE (perfmodel.compute_rule): 3 F / (P f) + k A e / B per sample, constants of compute_estimate.toml
    from perfmodel.compute_rule import activation_elements, load_rule
    from perfmodel.library import load_model

    rule = load_rule()
    c = presets.load_cluster("dgx1-v100")
    lib = load_model("resnet50", presets.presets_dir())
    acts = activation_elements(lib.tensor_sizes, lib.tensor_flops)
    s, text = estimate_seconds_per_sample("resnet50", c, "fp32")
    assert s == pytest.approx(3 * 8.178368512e9 / (15.7e12 * rule.fraction["fp32"])
                              + rule.crossings * acts * 4 / 9.0e11)
    assert text.startswith("ESTIMATE")
    h = _cluster("h100")
    w, _ = resolve_workload("bert-large", h, ComputeOptions(estimate="mixed", batch=32))
    bl = load_model("bert-large", presets.presets_dir())
    per = (3 * bl.forward_flops / (989.4e12 * rule.fraction["mixed"])
           + rule.crossings * activation_elements(bl.tensor_sizes, bl.tensor_flops) * 2 / 3.35e12)
    curve, _, source = w.compute_for(h)
    assert float(curve(32)) == pytest.approx(32 * per) and source.startswith("ESTIMATE")
    with pytest.raises(SpecError, match="GPU gtx1080 has no tf32_flops"):
        resolve_workload("resnet50", presets.load_cluster("terngrad-ethernet"), ComputeOptions(estimate="tf32"))
    nameless = dataclasses.replace(c, gpu="", peak_flops=None)
    with pytest.raises(SpecError, match="--estimate needs the cluster's GPU"):
        resolve_workload("resnet50", nameless, ComputeOptions(estimate="fp32"))


def test_library_model_needs_a_compute_time():
    c = presets.load_cluster("dgx1-v100")
    with pytest.raises(SpecError, match="'gpt2-xl' .* has no measured compute time"):
        resolve_workload("gpt2-xl", c)
    w, settings = resolve_workload("gpt2_xl", c, ComputeOptions(samples_per_s=10, batch=4, accumulate=8))
    assert w.name == "gpt2-xl" and w.parameters == 1_557_611_200 and w.accumulate == 8 and settings.wire is None
    assert len(w.tensor_flops) == len(w.tensor_sizes)
    with pytest.raises(SpecError, match="unknown workload 'resnet9'"):
        resolve_workload("resnet9", c)


def test_workload_file(tmp_path):
    c = presets.load_cluster("dgx1-v100")
    (tmp_path / "t.json").write_text('{"tensors": [["w", 1000], ["b", 10]]}')
    path = _write(tmp_path, "w.toml", '[tiny]\ntensors = "t.json"\nclassifier_tensors = 2\naccumulate = 4\n'
                                      'wire = "fp16"\n[tiny.compute.v100]\nkind = "linear"\nt0_s = 0.001\nt1_s = 0.0001\n')
    w, settings = resolve_workload(str(path), c)
    assert w.tensor_sizes == (1000, 10) and w.accumulate == 4 and settings.wire == "fp16" and w.tensor_flops == ()
    assert float(w.compute_for(c)[0](10)) == pytest.approx(0.002)
    w2, _ = resolve_workload(f"{path}:tiny", c, ComputeOptions(accumulate=2))
    assert w2.accumulate == 2
    lib = _write(tmp_path, "l.toml", 'model = "resnet18"\nwire = "bf16"\n')
    w3, s3 = resolve_workload(str(lib), c, ComputeOptions(samples_per_s=1000, batch=64))
    assert w3.name == "l" and w3.parameters == 11_689_512 and s3.wire == "bf16" and sum(w3.tensor_flops) > 0


@pytest.mark.parametrize("text,message", [
    ('[w]\nclassifier_tensors = 2\n', r"\[w\]: missing key 'tensors'"),
    ('[w]\nmodel = "resnet18"\naccumulate = "4"\n', r"\[w\]: accumulate must be an integer, got '4'"),
    ('[w]\nmodel = "resnet18"\naccumulate = 0\n', "accumulate must be a positive integer"),
    ('[w]\nmodel = "resnet18"\nwire = "fp8"\n', r"\[w\]: wire must be one of fp32, fp16, bf16"),
    ('[w]\nmodel = "resnet18"\n[w.compute.v100]\nkind = "linear"\nt0_s = 0\nt1_s = "fast"\n',
     r"\[w\].compute.v100: t1_s must be a number"),
    ('[w]\nmodel = "resnet18"\n', r"\[w\]: no compute time"),
])
def test_bad_workload_files_name_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, "bad.toml", text)
    with pytest.raises(SpecError, match=message) as e:
        resolve_workload(str(path), presets.load_cluster("dgx1-v100"))
    assert str(path) in str(e.value)


def test_workload_fields_are_validated():
    ct = {"g": ComputeTime("linear", t1_s=1.0)}
    assert Workload("w", (3, 4), ct).accumulate == 1 and Workload("w", (3, 4), ct).tensor_flops == ()
    Workload("w", (3, 4), ct, accumulate=2, tensor_flops=(6.0, 0.0))
    with pytest.raises(SpecError, match="accumulate must be a positive integer"):
        Workload("w", (3, 4), ct, accumulate=0)
    with pytest.raises(SpecError, match="1 tensor_flops for 2 tensor_sizes"):
        Workload("w", (3, 4), ct, tensor_flops=(1.0,))
    with pytest.raises(SpecError, match="tensor flops must be >= 0"):
        Workload("w", (3, 4), ct, tensor_flops=(1.0, -1.0))
    link = Link(1e-6, 1e9)
    with pytest.raises(SpecError, match="host_memory_Bps must be > 0"):
        Cluster("c", 4, link, link, link, host_memory_Bps=0.0)


def test_prediction_on_a_described_cluster_equals_the_same_preset(tmp_path):
    """juwels-booster described as a custom cluster from fabrics (4x A100, NVLink3, 4x HDR) predicts
    the same as the preset, whose links are the same measured figures."""
    preset = presets.load_cluster("juwels-booster")
    custom = resolve_cluster("custom", ClusterOptions(gpu="a100", gpus_per_node=4, intra="nvlink3",
                                                      network="4xib-hdr", nodes=936))
    assert custom.intra == dataclasses.replace(preset.intra, source=custom.intra.source)
    assert custom.network.bandwidth_Bps == preset.network.bandwidth_Bps
    w = presets.load_workload("resnet50")
    a = predict(w, preset, Strategy("ssgd"), [4, 64, 256], batch=64)
    b = predict(w, custom, Strategy("ssgd"), [4, 64, 256], batch=64)
    assert a.throughput == pytest.approx(b.throughput)


def _cli_error(capsys, *argv) -> str:
    """The one stderr line of a refused command (exit 2, no traceback)."""
    rc = main(list(argv))
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("perfmodel: error: "), (rc, err)
    return err


PREDICT = ("predict", "--workload", "resnet50", "--samples-per-s", "1000", "--gpus", "128", "--strategy", "ssgd")


@pytest.mark.parametrize("text,words", [
    ('[c]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvswitch-a100"\nnetwork = "8xib-hdr"\nmax_node = 8\n',
     ["[c]: unknown key 'max_node'", "did you mean 'max_nodes'", "keys: gpu, gpus_per_node"]),
    ('[c]\ngpu = "a100"\ngpus_per_node = 8\nintra = "nvswitch-a100"\n[c.network]\nlatency_s = 1e-6\n'
     'bandwith_Bps = 1e10\n', ["[c].network: unknown key 'bandwith_Bps'", "did you mean 'bandwidth_Bps'"]),
    ('[c]\ngpu = "a100"\ngpus_per_node = 8\nnetwork = "8xib-hdr"\n[c.intra]\nlatency_s = 1e-6\n'
     'bandwidth_Bps = 1e11\nnics = 2\n', ["[c].intra: unknown key 'nics'", "keys: latency_s, bandwidth_Bps"]),
    ('[c]\ngpus_per_node = 8\nintra = "nvswitch-a100"\nnetwork = "8xib-hdr"\n[c.gpu]\npeak_flops = 2e13\n'
     'memory_Bps = 1e12\nmemory_bytes = 4e10\n', ["[c]: missing the host link", "its gpu table has no host",
                                                    'host = "pcie4" (a fabric) in the gpu table']),
    ('[c]\ngpus_per_node = 8\nintra = "nvswitch-a100"\nnetwork = "8xib-hdr"\n',
     ["[c]: missing the host link", "names no gpu", "give host = LINK"]),
    ('[c]\ngpu = "a10O"\ngpus_per_node = 8\nintra = "nvswitch-a100"\nnetwork = "8xib-hdr"\n',
     ["gpu 'a10O' is not in gpus.toml (did you mean 'a100'?)", "memory_bytes, host"]),
])
def test_cluster_file_mistakes_are_one_line(tmp_path, capsys, text, words):
    path = _write(tmp_path, "c.toml", text)
    err = _cli_error(capsys, *PREDICT, "--cluster", str(path))
    assert all(w in err for w in [str(path)] + words), err


def test_every_gpu_preset_has_a_host_fabric_and_a_presets_copy_without_one_is_one_line(tmp_path, capsys,
                                                                                         monkeypatch):
    # a cluster table may leave out host: it defaults to its GPU's host fabric, which every preset states
    assert all(g.host in ("pcie3", "pcie4", "pcie5") for g in presets.gpus().values())
    text = '[c]\ngpu = "gtx1080"\ngpus_per_node = 4\nintra = "pcie3"\nnetwork = "eth-1g"\n'
    assert resolve_cluster(str(_write(tmp_path, "c.toml", text))).host.bandwidth_Bps == \
        presets.fabrics()["pcie3"].link(1).bandwidth_Bps
    # a user's presets folder ($DSGD_PRESETS) whose GPU has none: one line naming it
    own = tmp_path / "presets"
    own.mkdir()
    for f in presets.presets_dir().glob("*.toml"):
        (own / f.name).write_text(f.read_text())
    gpus = (own / "gpus.toml").read_text()
    head = '[gtx1080]\npeak_flops = 8.87e12\nmemory_Bps = 3.2e11\n'
    (own / "gpus.toml").write_text(gpus.replace(head + 'host = "pcie3"\n', head))
    assert (own / "gpus.toml").read_text() != gpus
    monkeypatch.setenv(presets.PRESETS_ENV, str(own))
    err = _cli_error(capsys, *PREDICT, "--cluster", str(_write(tmp_path, "d.toml", text)))
    assert "gpu 'gtx1080' has no host fabric in gpus.toml" in err, err


def test_cluster_file_keys_the_loaders_read_are_accepted(tmp_path):
    path = _write(tmp_path, "c.toml", CLUSTER_FILE + 'max_nodes = 8\nnics = 8\nprice_per_gpu_hour = 2.5\n'
                  'description = "mine"\nhost_memory_source = "estimate"\n[mine.host]\nlatency_s = 1e-5\n'
                  'bandwidth_Bps = 2.5e10\nsource = "pcie4"\n')
    c = resolve_cluster(str(path))
    assert c.max_nodes == 8 and c.host.bandwidth_Bps == 2.5e10 and c.source == "mine"
    stray = {"gpu": "a100", "gpus_per_node": 8, "intra": "nvlink3", "network": "ib-hdr", "host_cpu": "skylake"}
    with pytest.raises(SpecError, match="host_cpu is read from a cluster file"):
        presets.cluster_from_table("x", stray, "x")


@pytest.mark.parametrize("text,words", [
    ('[w]\nmodel = "resnet18"\naccumlate = 4\n', ["[w]: unknown key 'accumlate'", "did you mean 'accumulate'"]),
    ('[w]\nmodel = "resnet18"\ntensors = "x.json"\n', ["[w]: give tensors", "not both"]),
    ('[mine]\nmodel = "resnet18"\n[mine.compute]\np100 = 5\n', ["[mine]: compute.p100 must be a table", "t0_s"]),
    ('[w]\nmodel = "resnet18"\ncompute = 5\n', ["[w]: compute must be a table"]),
    ('[w]\nmodel = "resnet18"\n[w.compute.p100]\nkind = "linear"\nt0_s = 0\nt1_s = 1e-3\ncopys = 1e-3\n',
     ["[w].compute.p100: unknown key 'copys'", "did you mean 'copy_s'"]),
])
def test_workload_file_mistakes_are_one_line(tmp_path, capsys, text, words):
    path = _write(tmp_path, "w.toml", text)
    err = _cli_error(capsys, "predict", "--cluster", "dgx1-v100", "--workload", str(path), "--gpus", "8")
    assert all(w in err for w in [str(path)] + words), err
    if "compute" not in text:  # the file is refused whatever the command line's compute time
        err = _cli_error(capsys, "predict", "--cluster", "dgx1-v100", "--workload", str(path), "--gpus", "8",
                         "--samples-per-s", "1000")
        assert words[0] in err


def test_preset_names_match_despite_case_and_spaces(tmp_path, capsys):
    c = presets.load_cluster("dgx1-v100")
    preset = presets.load_workload("resnet50")
    assert resolve_workload("RESNET50", c)[0] == resolve_workload("resnet50 ", c)[0] == preset
    assert presets.load_cluster(" DGX1-V100") == c
    path = _write(tmp_path, "c.toml", CLUSTER_FILE.replace('"a100"', '" A100"'))
    assert resolve_cluster(str(path)).peak_flops == GPUS["a100"].peak_flops
    assert "unknown workload 'resnet5O' (did you mean 'resnet50'?)" in _cli_error(
        capsys, "predict", "--workload", "resnet5O")
    assert "unknown cluster 'dgx1-v10' (did you mean 'dgx1-v100'?)" in _cli_error(
        capsys, "predict", "--cluster", "dgx1-v10")


def test_built_in_presets_use_only_accepted_keys(capsys):
    for kind in ("cluster", "workload", "gpu"):
        assert main(["presets", "--kind", kind]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in presets.cluster_names() + presets.workload_names())


def test_a_cluster_file_that_is_not_utf8_or_is_a_folder_is_named(tmp_path, capsys):
    from perfmodel.cli import main

    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe[c]\n")
    folder = tmp_path / "d.toml"
    folder.mkdir()
    for path, words in ((bad, "is not UTF-8 text"), (folder, "is a folder")):
        rc = main(["predict", "--cluster", str(path), "--workload", "resnet50"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and str(path) in err[0] and words in err[0], err
