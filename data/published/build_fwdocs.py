"""Generator of data/published/fwdocs_runs.csv: `python data/published/build_fwdocs.py`.

A second, independent transcription of tensorpack's tables (repos_runs.csv holds the first), made blind by
another helper searching frameworks' documentation; it is not judged: tests/test_published.py checks that
both transcriptions give the same values (docs/validation.md, "Before a seventh round"). Of the frameworks
and libraries searched (docs/validation.md, "A seventh round judged once"), one printed multi-GPU training
throughputs as text with the same page's 1-GPU rate: tensorpack's benchmark repository (tensorpack/benchmarks,
Yuxin Wu), two READMEs, all runs inside one machine.

1. ResNet-MultiGPU/README.md @bce96ca (26 Sep 2017; excerpts/fwdocs_tensorpack_multigpu_readme.md, the
   README's lines 8-53): ResNet-50 on fake ImageNet-size data, 1, 2, 4 and 8 Tesla P100 (TF v1.3.0-rc1-1302),
   two tables (variable_update=replicated and =parameter_server), each with a tensorpack column printed as
   'GPU/CPU/Python' (three values, one per --fake-location: data made on the GPU, on the CPU inside TF, in
   Python and copied) and a tensorflow/benchmarks (tf_cnn_benchmarks) column. One row per multi-GPU value (2, 4,
   8 GPUs x 4 settings x 2 tables = 24), against the same table's, same column's and same setting's 1-GPU value.
   Batch 64 per GPU: tf_cnn_benchmarks '--batch_size=64' in the README's command; tensorpack's script
   resnet-multigpu.py (same commit; excerpts/fwdocs_tensorpack_multigpu_script.md) builds 64-image towers
   (input_shape = [64, 224, 224, 3], model_conf.set_batch_size(64)), one tower per GPU. fp32 (no fp16 anywhere in
   the script or command). Scheme: tensorpack's SyncMultiGPUTrainerReplicated of that date all-reduces each
   gradient with tf.contrib.nccl's all_sum and SyncMultiGPUTrainerParameterServer(ps_device='cpu') keeps the
   variables on the CPU (excerpts/fwdocs_tensorpack_trainer_2017.md, tensorpack@3f1e9a1, the last tensorpack
   commit on or before 26 Sep 2017): the same two schemes as tf_cnn_benchmarks' replicated (NCCL) and
   parameter_server with --local_parameter_device=cpu, as the README's command runs it: tf-replicated-nccl and
   tf-ps-cpu. tf_cnn_benchmarks' replicated mode using NCCL is ASSUMED from its use_nccl flag's default of that
   time (the command passes no --use_nccl; not checked at a commit here).
   Hardware: the README prints 'GPU: Tesla P100', 'CPU: Intel Xeon E5-2698v4@2.20GHz' and 'run on machines of the
   same configurations, but not the same set of physical machines'. That the machine is an 8-GPU P100 SXM2 server
   with the DGX-1 hybrid cube-mesh of NVLink (preset nvlink1) is ASSUMED: the E5-2698 v4 is the DGX-1's CPU, and
   the 8-GPU runs need 8 GPUs in one machine; a PCIe P100 server would change the intra-node link.
2. other-wrappers/README.md @31c68fd (11 Mar 2018; excerpts/fwdocs_tensorpack_wrappers_readme.md): 'Data
   Parallel on 8 GPUs' on 'AWS p3.16xlarge (8 Tesla V100s)', TF 1.6.0, tensorpack 0.8.2: tensorpack+ResNet50 and
   tensorpack+VGG16 at 1, 2 and 8 GPUs (4 rows). Batch per GPU 32 (ResNet-50) and 64 (VGG16), the scripts'
   BATCH ('tensorpack's "batch" is per-GPU batch'); data a constant numpy array made on the CPU (synthetic);
   fp32; SyncMultiGPUTrainerReplicated(NUM_GPU) with tensorpack 0.8.2's default use_nccl=True
   (excerpts/fwdocs_tensorpack_wrappers_{resnet,vgg}.md, excerpts/fwdocs_tensorpack_trainer_2018.md at
   tensorpack@f130c10, its last commit on or before 11 Mar 2018). p3.16xlarge: 8 V100 SXM2 on NVLink in the
   DGX-1V hybrid cube-mesh (preset nvlink2), ASSUMED from AWS's instance description (not in the source).

Left out: the Keras and tflearn rows of other-wrappers (Keras multi_gpu_model runs one process that splits the
batch and merges on the CPU: no scheme of this project's list); later versions of the other-wrappers table
(@b9c17fc 14 Mar 2018 to @f64adb9 May 2019: their scripts pick SyncMultiGPUTrainerReplicated(mode='hierarchical'
if 8 GPUs else 'cpu'), a hierarchical all-reduce and a CPU reduction, no scheme of the list, and their 2-GPU
values were not re-measured); the 10 Mar 2018 P100 version of that table (@ec7d024; the P100 machine is not
described); the ResNet-MultiGPU 'Latest Best Numbers' and 'Performance @ May 2019 / Jul 2020' lines (8 GPUs
only, no 1-GPU rate; 'AWS p2.16xlarge (8 V100s)' as printed); ResNet-Horovod's table (training times to
accuracy, not rates). All rows are one machine; none across nodes.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows

REPO = "tensorpack/benchmarks"
MG_COMMIT = "bce96ca90a2d148761109641eb988edd156b4850"
MG_PATH = "ResNet-MultiGPU/README.md"
MG_FIRST = 8  # the excerpt's first quoted line is the README's line 8
OW_COMMIT = "31c68fd2645d418119cbc00aa140a9e8625d8acb"
OW_PATH = "other-wrappers/README.md"
OW_FIRST = 3
TP2017 = "3f1e9a14f3a734dc666cc85bcc36bd3c0aa2481c"
TP2018 = "f130c10ffee269acf6aed3c14bb56250969c8553"

MG_SOURCE = ("tensorpack/benchmarks ResNet-MultiGPU README, 'Benchmark MultiGPU training against "
             "tensorflow/benchmarks' (Sep 2017)")
OW_SOURCE = "tensorpack/benchmarks other-wrappers README, 'Data Parallel on 8 GPUs' (Mar 2018)"

MG_HARDWARE = ("README lines 8-13: 'GPU: Tesla P100', 'CPU: Intel Xeon E5-2698v4@2.20GHz', 'these experiements are "
               "run on machines of the same configurations, but not the same set of physical machines'; 8 GPUs in "
               "one machine (the 8-GPU rows). ASSUMED: P100 SXM2 in the DGX-1 hybrid cube-mesh of NVLink (preset "
               "nvlink1), inferred from the CPU, which is the DGX-1's (2x E5-2698 v4); not stated by the source")
OW_HARDWARE = ("README line 5: 'Hardware: AWS p3.16xlarge (8 Tesla V100s)'. ASSUMED from AWS's P3 instance "
               "description (not in the source): 8 V100 SXM2 16GB on NVLink in the DGX-1V hybrid cube-mesh "
               "(preset nvlink2); the instance used alone")

_MG_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([0-9.]+)/([0-9.]+)/([0-9.]+)\s*\|\s*([0-9.]+)\s*\|$")
_OW_ROW = re.compile(r"^\|\s*tensorpack\+(\w+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(?:__)?(\d+)(?:__)?\s*\|$")


def _check_head(name: str, commit: str, path: str, first: int) -> list[str]:
    head, lines = excerpt(name)
    assert head.startswith(f"<!-- {REPO}@{commit} {path} lines {first}-"), head
    return lines


def _trainer_2017() -> None:
    head, lines = excerpt("fwdocs_tensorpack_trainer_2017")
    assert head.startswith(f"<!-- tensorpack/tensorpack@{TP2017} tensorpack/train/multigpu.py "), head
    text = "\n".join(lines)
    assert "class SyncMultiGPUTrainerReplicated(MultiGPUTrainerBase):" in text
    assert "summed = nccl.all_sum(grads)" in text
    assert "ps_device: either 'gpu' or 'cpu', where variables are stored." in text


def _trainer_2018() -> None:
    head, lines = excerpt("fwdocs_tensorpack_trainer_2018")
    assert head.startswith(f"<!-- tensorpack/tensorpack@{TP2018} tensorpack/train/trainers.py "), head
    text = "\n".join(lines)
    assert "class SyncMultiGPUTrainerReplicated(SingleCostTrainer):" in text
    assert "def __init__(self, gpus, average=True, use_nccl=True):" in text


def multigpu_rows() -> list[dict]:
    """The two Sep 2017 ResNet-50 tables: tensorpack GPU/CPU/Python and tf_cnn_benchmarks, 2/4/8 vs 1 GPU."""
    lines = _check_head("fwdocs_tensorpack_multigpu_readme", MG_COMMIT, MG_PATH, MG_FIRST)
    text = "\n".join(lines)
    assert "* GPU: Tesla P100" in text and "* CPU: Intel Xeon E5-2698v4@2.20GHz" in text
    assert "--batch_size=64 --model=resnet50 --variable_update=replicated/parameter_server " \
           "--local_parameter_device=cpu" in text
    script = _check_head("fwdocs_tensorpack_multigpu_script", MG_COMMIT, "ResNet-MultiGPU/resnet-multigpu.py", 50)
    stext = "\n".join(script)
    assert "input_shape = [64, 224, 224, 3]" in stext and "model_conf.set_batch_size(64)" in stext
    assert "SyncMultiGPUTrainerParameterServer(config, gpu_prefetch=False, ps_device='cpu')" in stext
    _trainer_2017()
    tables, current = {}, None
    for i, ln in enumerate(lines):
        src_line = MG_FIRST + i
        s = ln.strip()
        if s.startswith("variable_update="):
            current = s.rstrip(":").split("=", 1)[1]
            tables[current] = {}
            continue
        m = _MG_ROW.match(re.sub(r"\s+", " ", s))
        if m and current:
            g = int(m.group(1))
            tables[current][g] = (src_line, m.group(2), m.group(3), m.group(4), m.group(5))
    assert set(tables) == {"replicated", "parameter_server"}, tables.keys()
    settings = [("tensorpack", "GPU", 1), ("tensorpack", "CPU", 2), ("tensorpack", "Python", 3),
                ("tensorflow/benchmarks", None, 4)]
    rows = []
    for upd, tab in tables.items():
        assert sorted(tab) == [1, 2, 4, 8], tab
        for fw, loc, k in settings:
            s_line, s_val = tab[1][0], tab[1][k]
            for g in (2, 4, 8):
                line, val = tab[g][0], tab[g][k]
                col = f"tensorpack(GPU/CPU/Python) value {k} ('{loc}')" if loc else "tensorflow/benchmarks"
                if upd == "replicated":
                    scheme, ps, place = "tf-replicated-nccl", "", ""
                    if fw == "tensorpack":
                        detail = (f"tensorpack SyncMultiGPUTrainerReplicated (resnet-multigpu.py line 186 @"
                                  f"{MG_COMMIT[:7]}): every gradient summed by tf.contrib.nccl all_sum across the "
                                  f"towers (tensorpack/train/multigpu.py @{TP2017[:7]})")
                    else:
                        detail = ("tf_cnn_benchmarks --variable_update=replicated --local_parameter_device=cpu "
                                  "(README line 19); NCCL all-reduce ASSUMED (use_nccl's default then; not passed)")
                else:
                    scheme, ps, place = "tf-ps-cpu", 1, "host"
                    if fw == "tensorpack":
                        detail = (f"tensorpack SyncMultiGPUTrainerParameterServer(ps_device='cpu') (resnet-multigpu.py "
                                  f"line 188 @{MG_COMMIT[:7]}): variables stored on the CPU, gradients averaged there")
                    else:
                        detail = ("tf_cnn_benchmarks --variable_update=parameter_server --local_parameter_device=cpu "
                                  "(README line 19)")
                if fw == "tensorpack":
                    framework = ("tensorpack (resnet-multigpu.py, tfbench ResNet-50 model) on TensorFlow "
                                 "v1.3.0-rc1-1302-g593dc8e; tensorpack version not stated in this version of the "
                                 "README (a 2019 edit of it says tensorpack 0.5)")
                    data_note = {"GPU": "fake data made on the GPU as a constant (--fake-location gpu)",
                                 "CPU": "fake data made on the CPU inside the TF runtime (--fake-location cpu)",
                                 "Python": "fake data made in Python and copied to TF, staged on the GPU "
                                           "(--fake-location python)"}[loc]
                    batch_note = ("batch 64 per GPU: the script's towers take input_shape [64, 224, 224, 3] "
                                  "(resnet-multigpu.py lines 158-159); 1 GPU runs tensorpack's SimpleTrainer "
                                  "(line 182)")
                else:
                    framework = "tensorflow/benchmarks tf_cnn_benchmarks on TensorFlow v1.3.0-rc1-1302-g593dc8e"
                    data_note = "tf_cnn_benchmarks synthetic data (no --data_dir in the README's command)"
                    batch_note = "batch 64 per GPU: the README's command '--batch_size=64' (tf_cnn_benchmarks: per GPU)"
                rows.append(row(
                    source=MG_SOURCE, source_url=f"https://github.com/{REPO}/blob/{MG_COMMIT}/{MG_PATH}",
                    source_loc=(f"{MG_PATH} @{MG_COMMIT[:7]} line {line}, variable_update={upd} table, "
                                f"#GPU {g}, {col}"),
                    read_from="table", system="p100-8gpu-e5-2698v4", gpu="p100", gpus_per_node=8,
                    intra="nvlink1", network="n/a", nics=0, hardware_source=MG_HARDWARE, framework=framework,
                    scheme=scheme, scheme_detail=detail, ps_servers=ps, ps_placement=place, model="resnet50",
                    batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32",
                    comm_overlap="during-backward", data="synthetic", gpus=g, nodes=1, samples_per_s=val,
                    unit="images/s", single_gpu_samples_per_s=s_val, single_gpu_batch=64,
                    single_gpu_loc=f"same table, #GPU 1 row, same column and setting (README line {s_line})",
                    note="; ".join([batch_note, data_note, "fp32 (no half precision in the script or command)",
                                    "intra-node NVLink hybrid cube-mesh ASSUMED (hardware_source)",
                                    "tensorpack/TF graph ops exchange each gradient as backprop produces it "
                                    "(during-backward, as the TF benchmarks rows)"])))
    return rows


def wrappers_rows() -> list[dict]:
    """The 11 Mar 2018 'Data Parallel on 8 GPUs' table: tensorpack+ResNet50 and +VGG16, 2 and 8 vs 1 GPU."""
    lines = _check_head("fwdocs_tensorpack_wrappers_readme", OW_COMMIT, OW_PATH, OW_FIRST)
    text = "\n".join(lines)
    assert "* Hardware: AWS p3.16xlarge (8 Tesla V100s)" in text
    assert "Python 3.6, TF 1.6.0, cudnn 7.0.5, Keras 2.1.5, tflearn 0.3.2, tensorpack 0.8.2." in text
    assert "* For ImageNet, assumed to be a constant numpy array already available on CPU." in text
    assert "|						           | 1 GPU   | 2 GPUs  | 8 GPUs    |" in text
    batch = {}
    for name, model in (("resnet", "ResNet50"), ("vgg", "VGG16")):
        sl = _check_head(f"fwdocs_tensorpack_wrappers_{name}", OW_COMMIT, f"other-wrappers/tensorpack.{name}.py", 8)
        st = "\n".join(sl)
        m = re.search(r"^BATCH = (\d+)  # tensorpack's \"batch\" is per-GPU batch\.$", st, re.M)
        assert m, name
        assert "trainer = SyncMultiGPUTrainerReplicated(NUM_GPU)" in st
        assert "np.random.random((BATCH, 3, 224, 224)).astype('float32')" in st
        batch[model] = int(m.group(1))
    _trainer_2018()
    models = {"ResNet50": "resnet50", "VGG16": "vgg16"}
    rows = []
    for i, ln in enumerate(lines):
        m = _OW_ROW.match(re.sub(r"\s+", " ", ln.strip()))
        if not m:
            continue
        src_line = OW_FIRST + i
        name, one, two, eight = m.group(1), m.group(2), m.group(3), m.group(4)
        b = batch[name]
        for g, val, label in ((2, two, "2 GPUs"), (8, eight, "8 GPUs")):
            rows.append(row(
                source=OW_SOURCE, source_url=f"https://github.com/{REPO}/blob/{OW_COMMIT}/{OW_PATH}",
                source_loc=f"{OW_PATH} @{OW_COMMIT[:7]} line {src_line}, row 'tensorpack+{name}', column '{label}'",
                read_from="table", system="aws-p3.16xlarge", gpu="v100", gpus_per_node=8, intra="nvlink2",
                network="n/a", nics=0, hardware_source=OW_HARDWARE,
                framework="tensorpack 0.8.2 on TensorFlow 1.6.0, cudnn 7.0.5, Python 3.6",
                scheme="tf-replicated-nccl",
                scheme_detail=(f"tensorpack SyncMultiGPUTrainerReplicated(NUM_GPU) (other-wrappers/tensorpack."
                               f"{'resnet' if name == 'ResNet50' else 'vgg'}.py @{OW_COMMIT[:7]}), default "
                               f"use_nccl=True: NCCL all-reduce of each gradient inside the TF graph "
                               f"(tensorpack/train/trainers.py @{TP2018[:7]})"),
                model=models[name], batch_per_gpu=b, accumulate=1, precision="fp32", grad_wire="fp32",
                comm_overlap="during-backward", data="synthetic", gpus=g, nodes=1, samples_per_s=val,
                unit="images/s", single_gpu_samples_per_s=one, single_gpu_batch=b,
                single_gpu_loc=f"same row, column '1 GPU' (README line {src_line})",
                note=(f"batch {b} per GPU: the script's BATCH ('tensorpack's \"batch\" is per-GPU batch'); the GPU "
                      f"count set by the script's NUM_GPU line ('Each script has one line to change the number of "
                      f"GPUs'); data a constant numpy array on the CPU fed each step (synthetic); fp32; first "
                      f"epoch is warm-up (README); p3.16xlarge's NVLink cube-mesh ASSUMED (hardware_source)")))
    assert len(rows) == 4, rows
    return rows


def main(out: Path = HERE / "fwdocs_runs.csv") -> None:
    """Write the rows to ``out`` (fwdocs_runs.csv)."""
    write_rows(multigpu_rows() + wrappers_rows(), out, "zb")


if __name__ == "__main__":
    main()
