"""Generator of data/published/repos_runs.csv: `python data/published/build_repos.py`.

A seventh-round family: multi-GPU training throughputs printed in README tables of a benchmark repository that is
not a framework project, tensorpack/benchmarks (Yuxin Wu's benchmarks of the tensorpack trainers against
tensorflow/benchmarks and Keras), each row with the same table's 1-GPU rate. No table of this family crosses
nodes: the searches for committed multi-node result tables with a 1-GPU rate of their own found none usable
(docs/validation.md, "A seventh round judged once"). Transcribed, every row at the commit whose README prints it:

* ResNet-MultiGPU/README.md @f419c10 (30 Sep 2017; the same numbers stand unchanged in every later version,
  under 'Performance @ Sep 2017'), excerpts/repos_tensorpack_multigpu_readme.md: both tables
  ('variable_update=replicated' and 'variable_update=parameter_server'), rows #GPU = 2, 4, 8, all four columns
  (tensorpack with fake data made on the GPU, on the CPU, in Python; tensorflow/benchmarks), each against the
  same table's #GPU = 1 row of the same column: 24 rows on one 'Nvidia DGX1' with Tesla P100 (system dgx1-p100;
  GPU and CPU named by the first version of the README, @bfec904, excerpts/repos_tensorpack_multigpu_env.md).
  Batch 64 per GPU: the tensorflow/benchmarks command the README quotes ('--batch_size=64', 'batch size per
  compute device' in tf_cnn_benchmarks.py) and the tensorpack script's per-tower input_shape [64, 224, 224, 3]
  (excerpts/repos_tensorpack_multigpu_script.md). Schemes: replicated = NCCL all_sum per gradient (tensorpack
  0.5.0 SyncMultiGPUTrainerReplicated._allreduce_grads, excerpts/repos_tensorpack_trainers_v05.md;
  tf_cnn_benchmarks 'use_nccl' default True, excerpts/repos_tfbench_flags.md) -> tf-replicated-nccl;
  parameter_server with the variables on the CPU (tensorpack ps_device='cpu', tf.train.replica_device_setter
  ps_device='/cpu:0'; tf_cnn_benchmarks --local_parameter_device=cpu) -> tf-ps-cpu, one server on the host.
* other-wrappers/README.md @31c68fd (11 Mar 2018; TF 1.6.0, tensorpack 0.8.2, AWS p3.16xlarge),
  excerpts/repos_tensorpack_wrappers_2018_readme.md: the 'Data Parallel on 8 GPUs' rows tensorpack+ResNet50
  (BATCH = 32 per GPU) and tensorpack+VGG16 (BATCH = 64 per GPU) at 2 and 8 GPUs against their '1 GPU' column:
  4 rows. Trainer SyncMultiGPUTrainerReplicated(NUM_GPU), whose 0.8.2 default use_nccl=True all-reduces each
  gradient with nccl.all_sum (excerpts/repos_tensorpack_trainers_v08_v09.md) -> tf-replicated-nccl.
* other-wrappers/README.md @f64adb9 (17 May 2019; TF 1.13.1, tensorpack 0.9.4, AWS p3.16xlarge),
  excerpts/repos_tensorpack_wrappers_2019_readme.md: tensorpack+VGG16 at 8 GPUs (mode='nccl'; the 1-GPU run a
  SimpleTrainer): 1 row. Its 2-GPU cell (438) is left out: it is the same number as in the Mar 2018 (TF 1.6.0)
  and 14 Mar 2018 versions while the 1- and 8-GPU cells changed, so it may not have been re-measured with
  TF 1.13.1 / tensorpack 0.9.4.

Left out (and why):
* the Keras+ResNet50 and Keras+VGG16 rows of both other-wrappers tables (Keras's own multi-GPU path, not one of
  the schemes), the tflearn and Cifar10/AlexNet single-GPU rows (no multi-GPU rate);
* the @f64adb9 tensorpack+ResNet50 row (its script uses mode='cpu' at 2 GPUs, gradients summed on the host and
  copied back to every replica, and mode='hierarchical' at 8 GPUs, a tensorpack-specific two-level NCCL
  reduction; neither is one of the schemes), and the whole @b9c17fc (14 Mar 2018) version of the table (the
  same 'cpu'/'hierarchical' modes; its 2-GPU values equal the @31c68fd ones, as if not re-measured);
* the @ec7d024 / @f4b35f3 (Mar 2018) 'ResNet50 Data Parallel on 8 P100s' table (213 / 385 / 1333): the
  machine is not stated (P100 SXM2 or PCIe, and which links join the GPUs, unknown);
* ResNet-MultiGPU's May 2019 and Jul 2020 lines (8 GPUs only, no 1-GPU rate), ResNet-Horovod's table
  (time to accuracy on 32-256 P100s, no throughput and no 1-GPU rate).

Assumptions (each also in the rows' note or hardware_source, with the word ASSUMED):
* DGX-1 (P100): the README names the machine ('Machine: Nvidia DGX1', GPU 'Tesla P100', CPU 'Intel Xeon
  E5-2698v4@2.20GHz'); its eight P100 SXM2 in the NVLink hybrid cube-mesh (nvlink1) are the DGX-1's documented
  build, as runs.csv's dgx1-p100 rows take it; which GPUs of the eight a 2- or 4-GPU run used is not stated
  (the first ones, GPUs 0..g-1, ASSUMED, TensorFlow's default device order). The README: 'these experiements are
  run on machines of the same configurations, but not the same set of physical machines'.
* The tensorpack column ran the script's default model, '--model tfbench' (tf_cnn_benchmarks' ResNet-50 built by
  its ConvNetBuilder; the README's command passes no --model): ASSUMED. The tensorflow/benchmarks version is
  not stated: the newest commit before the tables' commit (6a33b4a, 7 Sep 2017) is cited for its flags, ASSUMED
  to be the version run.
* AWS p3.16xlarge: '8 Tesla V100s' as the README states; V100 SXM2 16GB in the DGX-1-style NVLink hybrid
  cube-mesh (nvlink2) is AWS's documented build (not retrieved here), ASSUMED as build_threads.py does; the 2-GPU
  runs on GPUs 0 and 1 ASSUMED.
* Precision fp32 everywhere (no fp16 option in these scripts at these commits; TF 1.x on P100/V100 computes in
  fp32). Data synthetic: constants or random arrays made once (on the GPU, in TF on the CPU, or in Python and fed
  through a queue); no file is read.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows
numbered_lines, quote = _build.numbered_lines, _build.quote

REPO = "tensorpack/benchmarks"
MG_COMMIT = "f419c108f060cfec58ee40957c61141c47beebda"
ENV_COMMIT = "bfec904464468d11b51fc4e106b47153af5e0405"
W18_COMMIT = "31c68fd2645d418119cbc00aa140a9e8625d8acb"
W19_COMMIT = "f64adb97a84ea17dbaf213f7e590c38c08e09db7"
TP05 = "7cd9304772d6a377524d445495502bce81cae25e"
TP082 = "4f52bcfd90303b62a1cf23c079261ad39b7329cc"
TP094 = "f947192ad2a0922bccbc5b96aac9dd3d4418b48a"
TFB = "6a33b4a4b5bda950bb7e45faf13120115cbfdb2f"

MG_SOURCE = "tensorpack/benchmarks ResNet-MultiGPU README, Sep 2017 tables (tensorpack vs tensorflow/benchmarks)"
W_SOURCE = "tensorpack/benchmarks other-wrappers README ('Data Parallel on 8 GPUs' table)"


def _url(commit: str, path: str) -> str:
    return f"https://github.com/{REPO}/blob/{commit}/{path}"


def _head(name: str, prefix: str) -> list[str]:
    head, lines = excerpt(name)
    assert head.startswith(f"<!-- {prefix}"), (name, head)
    return lines


def _cells(line: str) -> list[str]:
    """The cells of a markdown table line, stripped of spaces, tabs and bold marks."""
    return [c.strip().strip("_").strip() for c in line.strip().strip("|").split("|")]


# ------------------------------------------------------------------------------------ ResNet-MultiGPU 2017
DGX1_HW = (
    f"tensorpack/benchmarks ResNet-MultiGPU/README.md @{MG_COMMIT[:7]} lines 8-10: 'TF Version: "
    "v1.3.0-rc1-1302-g593dc8e', 'Machine: Nvidia DGX1'; the README's first version @" + ENV_COMMIT[:7] +
    " lines 10-11: 'GPU: Tesla P100', 'CPU: Intel Xeon E5-2698v4@2.20GHz' (excerpts/repos_tensorpack_multigpu_env.md). "
    "The DGX-1 (P100) build, 8x Tesla P100 SXM2 in an NVLink (v1) hybrid cube-mesh, as runs.csv's dgx1-p100 rows "
    "take it from NVIDIA's DGX-1 white paper (not retrieved here); one machine only (network n/a). Which GPUs a 2- "
    "or 4-GPU run used is not stated: GPUs 0..g-1 ASSUMED (TensorFlow's default device order)")
TP05_FRAMEWORK = ("tensorpack 0.5 (README @f64adb9 line 44: 'TF v1.3.0-rc1-1302-g593dc8e; tensorpack 0.5.'), "
                  "TensorFlow v1.3.0-rc1-1302-g593dc8e; script ResNet-MultiGPU/resnet-multigpu.py @" + MG_COMMIT[:7])
TFB_FRAMEWORK = ("tensorflow/benchmarks tf_cnn_benchmarks.py (version not stated; @" + TFB[:7] + ", the newest "
                 "commit before the tables' commit of 26 Sep 2017, ASSUMED), TensorFlow v1.3.0-rc1-1302-g593dc8e")
FAKE = {
    "GPU": "fake data synthesized on the GPU as a constant ('--fake-location gpu', DummyConstantInput)",
    "CPU": "fake data synthesized on the CPU inside the TF runtime ('--fake-location cpu', tf.truncated_normal "
           "local variables on /cpu:0, copied to the GPUs each step)",
    "Python": "fake data synthesized in Python and fed through a queue with GPU prefetch ('--fake-location "
              "python', FakeData -> QueueInput -> StagingInputWrapper)",
}


def _mg_tables(lines: list[str]) -> dict[str, dict[int, list[str]]]:
    """{'replicated'|'parameter_server': {gpus: [tp_gpu, tp_cpu, tp_python, tfbench]}} from the README."""
    out, cur = {}, None
    for ln in lines:
        m = re.match(r"^variable_update=(replicated|parameter_server):$", ln.strip())
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        if cur is None or not ln.startswith("|"):
            continue
        c = _cells(ln)
        if c[0] == "#GPU":
            assert c[1:] == ["tensorpack(GPU/CPU/Python)", "tensorflow/benchmarks"], c
            continue
        if not c[0].isdigit():
            continue
        tp = c[1].split("/")
        assert len(tp) == 3, c
        cur[int(c[0])] = tp + [c[2]]
    return out


def multigpu_rows() -> list[dict]:
    lines = _head("repos_tensorpack_multigpu_readme", f"{REPO}@{MG_COMMIT} ResNet-MultiGPU/README.md lines 1-53")
    text = "\n".join(lines)
    for s in ("* TF Version: v1.3.0-rc1-1302-g593dc8e", "* Machine: Nvidia DGX1",
              "but not the same set of physical machines. So expect some variance in results.",
              "python tf_cnn_benchmarks.py --num_gpus=8 --batch_size=64 --model=resnet50 "
              "--variable_update=replicated/parameter_server --local_parameter_device=cpu",
              "python resnet-multigpu.py --fake-location gpu/cpu/python --variable_update=replicated/parameter_server",
              "## Performance (image/second):"):
        assert s in text, s
    env = numbered_lines(_head("repos_tensorpack_multigpu_env", f"{REPO}@{ENV_COMMIT} "), by_commit=True)
    quote(env, ("ResNet-MultiGPU/README.md", ENV_COMMIT[:7], 10), "* GPU: Tesla P100")
    quote(env, ("ResNet-MultiGPU/README.md", ENV_COMMIT[:7], 11), "* CPU: Intel Xeon E5-2698v4@2.20GHz")
    quote(env, ("ResNet-MultiGPU/README.md", W19_COMMIT[:7], 41), "## Performance @ Sep 2017:")
    quote(env, ("ResNet-MultiGPU/README.md", W19_COMMIT[:7], 44),
          "* Software: TF v1.3.0-rc1-1302-g593dc8e; tensorpack 0.5.")
    scr = numbered_lines(_head("repos_tensorpack_multigpu_script", f"{REPO}@{MG_COMMIT} "))
    sp = ("ResNet-MultiGPU/resnet-multigpu.py",)
    quote(scr, (*sp, 52), "model_conf.set_batch_size(64)")
    quote(scr, (*sp, 133), "parser.add_argument('--model', choices=['tfbench', 'tensorpack'], default='tfbench')")
    quote(scr, (*sp, 158), "input_shape = [64, 224, 224, 3]")
    quote(scr, (*sp, 182), "SimpleTrainer(config).train()")
    quote(scr, (*sp, 186), "trainer = SyncMultiGPUTrainerReplicated(config, gpu_prefetch=False)")
    quote(scr, (*sp, 188), "trainer = SyncMultiGPUTrainerParameterServer(config, gpu_prefetch=False, ps_device='cpu')")
    trn = numbered_lines(_head("repos_tensorpack_trainers_v05", f"tensorpack/tensorpack@{TP05} "))
    tp = ("tensorpack/train/multigpu.py",)
    quote(trn, (*tp, 153), "with tf.device(v.device):       # colocate summed grad with var")
    quote(trn, (*tp, 179), "devices = [tf.train.replica_device_setter(")
    quote(trn, (*tp, 180), "worker_device=d, ps_device='/cpu:0', ps_tasks=1) for d in raw_devices]")
    quote(trn, (*tp, 243), "summed = nccl.all_sum(grads)")
    tfb = numbered_lines(_head("repos_tfbench_flags", f"tensorflow/benchmarks@{TFB} "))
    fp = ("scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py",)
    quote(tfb, (*fp, 62), "tf.flags.DEFINE_integer('batch_size', 0, 'batch size per compute device')")
    quote(tfb, (*fp, 75), "synthetic data will be used.")
    quote(tfb, (*fp, 180), "'use_nccl', True,")

    schemes = {
        "replicated": {
            "tp": ("tf-replicated-nccl", "", "",
                   "tensorpack SyncMultiGPUTrainerReplicated(config, gpu_prefetch=False) (resnet-multigpu.py line "
                   f"186 @{MG_COMMIT[:7]}); tensorpack 0.5.0 (@{TP05[:7]}) _allreduce_grads: one "
                   "'summed = nccl.all_sum(grads)' per gradient tensor, averaged on each GPU (tensorpack/train/"
                   "multigpu.py lines 232-246; excerpts/repos_tensorpack_trainers_v05.md)"),
            "tfb": ("tf-replicated-nccl", "", "",
                    "tf_cnn_benchmarks --variable_update=replicated (README line 19); 'use_nccl' default True, "
                    "'nccl all-reduce ... is used to replicate the combined gradients to all towers' "
                    f"(tf_cnn_benchmarks.py lines 164-166, 179-181 @{TFB[:7]}; excerpts/repos_tfbench_flags.md)"),
        },
        "parameter_server": {
            "tp": ("tf-ps-cpu", "1", "host",
                   "tensorpack SyncMultiGPUTrainerParameterServer(config, gpu_prefetch=False, ps_device='cpu') "
                   f"(resnet-multigpu.py line 188 @{MG_COMMIT[:7]}); tensorpack 0.5.0: variables placed by "
                   "tf.train.replica_device_setter(worker_device=d, ps_device='/cpu:0', ps_tasks=1), the towers' "
                   "gradients summed by tf.add_n on the variable's device and applied there (tensorpack/train/"
                   "multigpu.py lines 140-157, 172-185 @" + TP05[:7] + ")"),
            "tfb": ("tf-ps-cpu", "1", "host",
                    "tf_cnn_benchmarks --variable_update=parameter_server --local_parameter_device=cpu (README "
                    "line 19)"),
        },
    }
    tables = _mg_tables(lines)
    assert set(tables) == {"replicated", "parameter_server"}, tables.keys()
    columns = [("GPU", 0, "tp"), ("CPU", 1, "tp"), ("Python", 2, "tp"), ("tensorflow/benchmarks", 3, "tfb")]
    rows = []
    for upd, table in tables.items():
        assert sorted(table) == [1, 2, 4, 8], table
        for gpus in (2, 4, 8):
            for label, col, who in columns:
                scheme, ps_n, ps_where, detail = schemes[upd][who]
                if who == "tp":
                    colname = f"tensorpack(GPU/CPU/Python) value {col + 1} ({label})"
                    framework = TP05_FRAMEWORK
                    notes = [FAKE[label] + "; the README's column 'tensorpack(GPU/CPU/Python)'",
                             "batch 64 per GPU: the script's per-tower input_shape [64, 224, 224, 3] (line 158)",
                             "model: the script's default '--model tfbench' (tf_cnn_benchmarks' ResNet-50 through "
                             "its ConvNetBuilder), the README's command passing no --model: ASSUMED",
                             "the 1-GPU rate is a SimpleTrainer run (line 182), no gradient exchange"]
                else:
                    colname = "tensorflow/benchmarks"
                    framework = TFB_FRAMEWORK
                    notes = ["tf_cnn_benchmarks synthetic data (no --data_dir), batch 64 per GPU ('--batch_size=64', "
                             "'batch size per compute device')"]
                notes.append("the README: experiments 'run on machines of the same configurations, but not the same "
                             "set of physical machines', so the 1-GPU and multi-GPU runs may be different DGX-1s")
                rows.append(row(
                    source=MG_SOURCE, source_url=_url(MG_COMMIT, "ResNet-MultiGPU/README.md"),
                    source_loc=f"ResNet-MultiGPU/README.md @{MG_COMMIT[:7]}, table 'variable_update={upd}', "
                               f"row #GPU={gpus}, column {colname}",
                    read_from="table", system="dgx1-p100", gpu="p100", gpus_per_node=8, intra="nvlink1",
                    network="n/a", nics=0, hardware_source=DGX1_HW, framework=framework, scheme=scheme,
                    scheme_detail=detail, ps_servers=ps_n, ps_placement=ps_where, model="resnet50",
                    batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32",
                    comm_overlap="during-backward", data="synthetic", gpus=gpus, nodes=1,
                    samples_per_s=table[gpus][col], unit="images/s",
                    single_gpu_samples_per_s=table[1][col], single_gpu_batch=64,
                    single_gpu_loc=f"same table, row #GPU=1, same column",
                    note="; ".join(notes)))
    return rows


# --------------------------------------------------------------------------------------- other-wrappers
P3_HW = ("tensorpack/benchmarks other-wrappers/README.md: 'Hardware: AWS p3.16xlarge (8 Tesla V100s)'. Not stated "
         "by the README, AWS's documented build (not retrieved here) ASSUMED as build_threads.py does: 8x V100 "
         "SXM2 16GB in the DGX-1-style NVLink hybrid cube-mesh (nvlink2); one instance only (network n/a); the "
         "2-GPU runs on GPUs 0 and 1 ASSUMED (TensorFlow's default device order)")


def _wrapper_table(lines: list[str]) -> dict[str, list[str]]:
    """{row label: [1 GPU, 2 GPUs, 8 GPUs]} of the 'Data Parallel on 8 GPUs' table."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith("### Data Parallel on 8 GPUs:"))
    out, header = {}, None
    for ln in lines[start + 1:]:
        if not ln.startswith("|"):
            continue
        c = _cells(ln)
        if header is None:
            header = c
            assert header[1:] == ["1 GPU", "2 GPUs", "8 GPUs"], header
            continue
        if c[0] and not set(c[0]) <= set("-") and len(c) == 4:
            out[c[0]] = c[1:]
    return out


def wrappers_rows() -> list[dict]:
    rows = []
    # 2018 (TF 1.6.0, tensorpack 0.8.2)
    lines = _head("repos_tensorpack_wrappers_2018_readme", f"{REPO}@{W18_COMMIT} other-wrappers/README.md lines 1-34")
    text = "\n".join(lines)
    for s in ("* Hardware: AWS p3.16xlarge (8 Tesla V100s)",
              "Python 3.6, TF 1.6.0, cudnn 7.0.5, Keras 2.1.5, tflearn 0.3.2, tensorpack 0.8.2.",
              "* For ImageNet, assumed to be a constant numpy array already available on CPU.",
              "Each script has one line to change the number of GPUs."):
        assert s in text, s
    scr = numbered_lines(_head("repos_tensorpack_wrappers_2018_scripts", f"{REPO}@{W18_COMMIT} "))
    r_, v_ = ("other-wrappers/tensorpack.resnet.py",), ("other-wrappers/tensorpack.vgg.py",)
    quote(scr, (*r_, 8), "BATCH = 32  # tensorpack's \"batch\" is per-GPU batch.")
    quote(scr, (*r_, 83), "trainer = SyncMultiGPUTrainerReplicated(NUM_GPU)")
    quote(scr, (*v_, 8), "BATCH = 64  # tensorpack's \"batch\" is per-GPU batch.")
    quote(scr, (*v_, 70), "data=StagingInput(QueueInput(dataset_train)),")
    quote(scr, (*v_, 76), "trainer = SyncMultiGPUTrainerReplicated(NUM_GPU)")
    trn = numbered_lines(_head("repos_tensorpack_trainers_v08_v09", f"tensorpack/tensorpack@{TP082} "),
                         by_commit=True)
    quote(trn, ("tensorpack/train/trainers.py", TP082[:7], 142),
          "def __init__(self, gpus, average=True, use_nccl=True):")
    quote(trn, ("tensorpack/graph_builder/training.py", TP082[:7], 221), "if self._use_nccl:")
    quote(trn, ("tensorpack/graph_builder/utils.py", TP082[:7], 120), "summed = nccl.all_sum(grads)")
    quote(trn, ("tensorpack/graph_builder/training.py", TP094[:7], 268), "if self._mode == 'nccl':")
    quote(trn, ("tensorpack/graph_builder/utils.py", TP094[:7], 160), "summed = nccl.all_sum(grads)")
    t18 = _wrapper_table(lines)
    detail18 = ("tensorpack SyncMultiGPUTrainerReplicated(NUM_GPU) (other-wrappers/tensorpack.{resnet,vgg}.py "
                f"@{W18_COMMIT[:7]}), tensorpack 0.8.2 default use_nccl=True: allreduce_grads, one nccl.all_sum "
                f"per gradient tensor (tensorpack@{TP082[:7]} train/trainers.py line 142, graph_builder/"
                "training.py lines 221-222, graph_builder/utils.py lines 99-124)")
    for label, model, batch, script in (("tensorpack+ResNet50", "resnet50", 32, "tensorpack.resnet.py"),
                                        ("tensorpack+VGG16", "vgg16", 64, "tensorpack.vgg.py")):
        vals = t18[label]
        for gpus, col in ((2, 1), (8, 2)):
            rows.append(row(
                source=W_SOURCE, source_url=_url(W18_COMMIT, "other-wrappers/README.md"),
                source_loc=f"other-wrappers/README.md @{W18_COMMIT[:7]} (Mar 2018), table 'Data Parallel on 8 "
                           f"GPUs', row '{label}', column '{gpus} GPUs'",
                read_from="table", system="aws-p3.16xlarge", gpu="v100", gpus_per_node=8, intra="nvlink2",
                network="n/a", nics=0, hardware_source=P3_HW,
                framework="tensorpack 0.8.2, TensorFlow 1.6.0, cuDNN 7.0.5, Python 3.6 (README lines 6-7)",
                scheme="tf-replicated-nccl", scheme_detail=detail18, model=model, batch_per_gpu=batch,
                accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward",
                data="synthetic", gpus=gpus, nodes=1, samples_per_s=vals[col], unit="images/s",
                single_gpu_samples_per_s=vals[0], single_gpu_batch=batch,
                single_gpu_loc=f"same table, row '{label}', column '1 GPU'",
                note=(f"batch {batch} per GPU: {script} 'BATCH = {batch}  # tensorpack's \"batch\" is per-GPU "
                      "batch.'; input a constant random numpy array made once on the CPU and fed each step "
                      "through tensorpack's queue (the README: 'assumed to be a constant numpy array already "
                      "available on CPU'); the GPU count is the script's NUM_GPU line; fp32 (no fp16 option in "
                      "the script)")))
    # 2019 (TF 1.13.1, tensorpack 0.9.4): VGG16 only
    lines = _head("repos_tensorpack_wrappers_2019_readme", f"{REPO}@{W19_COMMIT} other-wrappers/README.md lines 1-36")
    text = "\n".join(lines)
    for s in ("* Hardware: AWS p3.16xlarge (8 Tesla V100s)",
              "Python 3.6, TF 1.13.1, cuda 10, cudnn 7.4.2, Keras 2.1.5, tflearn 0.3.2, tensorpack 0.9.4.",
              "* For ImageNet, assumed to be a constant numpy array already available on CPU.",
              "Each script used in this section can be run with \"./script.py NUM_GPU\" to use a different number "
              "of GPUs."):
        assert s in text, s
    scr = numbered_lines(_head("repos_tensorpack_wrappers_2019_scripts", f"{REPO}@{W19_COMMIT} "))
    v_, r_ = ("other-wrappers/tensorpack.vgg.py",), ("other-wrappers/tensorpack.resnet.py",)
    quote(scr, (*v_, 9), "BATCH = 64  # tensorpack's \"batch\" is per-GPU batch.")
    quote(scr, (*v_, 83), "trainer = SimpleTrainer()")
    quote(scr, (*v_, 85), "trainer = SyncMultiGPUTrainerReplicated(NUM_GPU, mode='nccl')")
    quote(scr, (*r_, 91), "NUM_GPU, mode='hierarchical' if NUM_GPU == 8 else 'cpu')")  # why ResNet50 is left out
    t19 = _wrapper_table(lines)
    assert "tensorpack+ResNet50" in t19  # printed, left out (mode 'cpu' / 'hierarchical')
    vals = t19["tensorpack+VGG16"]
    # the 2-GPU cell is left out: it equals the Mar 2018 (TF 1.6.0) value, as if carried over, not re-measured
    assert vals[1] == t18["tensorpack+VGG16"][1], (vals, t18["tensorpack+VGG16"])
    for gpus, col in ((8, 2),):
        rows.append(row(
            source=W_SOURCE, source_url=_url(W19_COMMIT, "other-wrappers/README.md"),
            source_loc=f"other-wrappers/README.md @{W19_COMMIT[:7]} (May 2019), table 'Data Parallel on 8 GPUs', "
                       f"row 'tensorpack+VGG16', column '{gpus} GPUs'",
            read_from="table", system="aws-p3.16xlarge", gpu="v100", gpus_per_node=8, intra="nvlink2",
            network="n/a", nics=0, hardware_source=P3_HW,
            framework="tensorpack 0.9.4, TensorFlow 1.13.1, CUDA 10, cuDNN 7.4.2, Python 3.6 (README lines 8-9)",
            scheme="tf-replicated-nccl",
            scheme_detail=("tensorpack SyncMultiGPUTrainerReplicated(NUM_GPU, mode='nccl') (other-wrappers/"
                           f"tensorpack.vgg.py line 85 @{W19_COMMIT[:7]}); tensorpack 0.9.4 mode 'nccl': "
                           "allreduce_grads, one nccl.all_sum per gradient tensor (tensorpack@" + TP094[:7] +
                           " graph_builder/training.py lines 268-269, graph_builder/utils.py lines 139-160)"),
            model="vgg16", batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32",
            comm_overlap="during-backward", data="synthetic", gpus=gpus, nodes=1, samples_per_s=vals[col],
            unit="images/s", single_gpu_samples_per_s=vals[0], single_gpu_batch=64,
            single_gpu_loc="same table, row 'tensorpack+VGG16', column '1 GPU' (a SimpleTrainer run, line 83)",
            note=("batch 64 per GPU: tensorpack.vgg.py 'BATCH = 64  # tensorpack's \"batch\" is per-GPU batch.'; "
                  "input a constant random numpy array made once on the CPU, fed through StagingInput(QueueInput"
                  "(...)); GPU count from the command line ('./script.py NUM_GPU'); fp32 (no fp16 option in the "
                  "script)")))
    return rows


def main(out: Path = HERE / "repos_runs.csv") -> None:
    """Write the rows to ``out`` (repos_runs.csv)."""
    write_rows(multigpu_rows() + wrappers_rows(), out, "za")


if __name__ == "__main__":
    main()
