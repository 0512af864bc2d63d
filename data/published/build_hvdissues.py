"""Generator of data/published/hvdissues_runs.csv: `python data/published/build_hvdissues.py`.

A second family of throughputs that users posted as text in GitHub issue threads, each with the same
thread's (same author, same setup) single-GPU rate of the same benchmark, model, batch per GPU and
precision. The issue texts are the search tool's stored copies (an issue has no commit: the first line of
each excerpt names the issue URL, the comment's author and date, and where the stored text ends); the code
whose defaults the rows rely on is quoted at fixed commits.

Transcribed (6 rows, 1 across nodes):
* horovod/horovod issue #476 (excerpts/hvdissues_horovod_issue476.md), tingweiwu's comment of 2018-09-11,
  after installing MOFED in the Horovod image ('NCCL logs show use RMDA'): the 'mpirun -np 2 -H IP1:1,IP2:1'
  run (two machines, one GPU each) against the same comment's 'mpirun -np 1 -H localhost:1' run.
  tf_cnn_benchmarks, ResNet-101, batch 64 per GPU, fp32, synthetic data (the description's command:
  '--model resnet101 --batch_size 64 --variable_update horovod', no --data_dir, no --use_fp16; the flags'
  meanings and defaults in excerpts/hvdissues_tf_cnn_flags.md). V100 GPUs, 8 per machine, Mellanox
  ConnectX-4 InfiniBand ('MT27700 Family [ConnectX-4]').
* apache/mxnet issue #8289 (excerpts/hvdissues_mxnet_issue8289.md), ThomasDelteil's comment of 2018-07-04:
  the 2- and 4-GPU runs of example/gluon/image_classification.py ('--model vgg16 --dataset dummy
  --batch-size 32') on one AWS p3.8xlarge against the 1-GPU run. The script at the last commit before the
  comment (excerpts/hvdissues_mxnet_gluon_setup.md, apache/mxnet@99af59b) takes --batch-size per device,
  defaults to float32 and kvstore 'device', runs imperatively (no --mode), and its 'Speed' line is one
  batch's rate (batch_size / the time of batch i). Each run prints two such lines (Batch [49] and Batch
  [99]); the Batch [99] line of each run is transcribed (the later one, the same index for the single-GPU
  rate), the Batch [49] value is named in the note.
* tensorflow/benchmarks issue #211 (excerpts/hvdissues_tfbench_issue211.md), daadaada's description of
  2018-06-26: tf_cnn_benchmarks InceptionV3, batch 64 per GPU, parameter server on the CPU
  ('--variable_update=parameter_server --local_parameter_device=cpu'), ImageNet read from Amazon EFS, on
  one AWS p2.8xlarge: the 2-, 4- and 8-GPU rates against the 1-GPU rate. The author's own diagnosis in the
  thread ('Preprocessing has slowed down the training process.') is quoted in each row's note: a real-data
  run whose input pipeline the author names as the limit, not a run the thread calls wrong.

Left out, and why:
* horovod #476: the 'mpirun -np 8 -H localhost:8' (1193.40) and 'mpirun -np 16 -H IP1:8,IP2:8' (2361.88)
  runs of the same comment: the thread never states how the 8 V100 of a machine are connected (SXM2 with
  NVLink or PCIe boards), and those rows depend on it; the description's 1188.51 (8 GPUs) and 745.06 (16
  GPUs, before MOFED: NCCL over sockets on IPoIB, tgaddair: 'using sockets instead of TCP on top of IPoIB')
  runs: no sourced figure for that IPoIB path and the same missing intra-node fabric.
* horovod #288 (vilmara, 2 nodes of 4 V100 over InfiniBand): its rates are approximate ('~641 img/sec',
  '~4419.71 total img/sec', 'around 255 images/second'), and the batch and precision of the comment that
  gives them are not in the stored text.
* horovod #21: the P100/V100 one-node rates (e.g. '233 images/sec on 1xP100, 736 images/sec on 4xP100')
  name no model in the stored text; the multi-node results are given as speedups only; the 10x GTX 1080 Ti
  table was cut off in the stored text.
* horovod #466 (single-GPU 204.75 only visible), #693, #124, #830, #2103, #2869 (screenshots), #1194
  (Faster R-CNN, no model-library name), #388 (a chart image), bytedance/byteps #29, #59, #78, #97,
  apache/mxnet #4968, #14516 (32x32 inputs), tensorflow/tensorflow #23032 (the 2-GPU total is past the
  stored text): no single-GPU rate of the same setup, no stated hardware, numbers given only as per-GPU
  fragments or images, or the thread's own text cut off before the number (docs/validation.md, "A seventh round judged
  once", says where the searches went).

Assumptions (each also said in the row's note or hardware_source with the word ASSUMED):
* horovod #476: the 2018-09-11 comment shows only the mpirun part of each command; the python arguments are
  ASSUMED to be the description's ('--model resnet101 --batch_size 64 --variable_update horovod'); the V100
  form factor (preset v100), the link rate of the ConnectX-4 InfiniBand HCA (EDR, preset ib-edr) and one
  HCA per machine are ASSUMED; Horovod's NCCL allreduce (the NCCL log line of the comment).
* mxnet #8289: the p3.8xlarge hardware (4 V100-SXM2-16GB joined by NVLink, preset nvlink2) is ASSUMED from
  AWS's instance page (not retrieved here), as for the p3 rows of threads_runs.csv; kvstore 'device'
  overlaps the reduction with backprop as the other MXNet kvstore-device rows do (ASSUMED: MXNet's engine
  runs each gradient's push once it is computed).
* tensorflow/benchmarks #211: the 1-, 2- and 4-GPU runs are ASSUMED to use the quoted 8-GPU command with
  --num_gpus changed ('More details for results under 4/2/1 K80 GPU (all with p2.8xlarge)').
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

TF_FLAGS = "excerpts/hvdissues_tf_cnn_flags.md"
TFB_NEW = "8afc14a026e663d761f5ebc96959bc11441ccafd"   # tensorflow/benchmarks, last change before 2018-09-11
TFB_OLD = "1d9e2edc1fd4cbda0c68923d3e26a10904e03b61"   # tensorflow/benchmarks, last change before 2018-06-26
MX_COMMIT = "99af59beeb5ea480487575bb06371cc85a35fc21"  # apache/mxnet, last change of the script before 2018-07-04
BENCH = "scripts/tf_cnn_benchmarks/benchmark_cnn.py"
GLUON = "example/gluon/image_classification.py"


def _flags() -> dict:
    """The tf_cnn_benchmarks flag lines both TensorFlow threads rely on, checked at both commits."""
    head, lines = excerpt("hvdissues_tf_cnn_flags")
    assert head.startswith(f"<!-- tensorflow/benchmarks@{TFB_NEW} and @{TFB_OLD} "), head
    nl = numbered_lines(lines, by_commit=True)
    for commit, (bs, dd, lpd, fp16, vu) in ((TFB_NEW[:7], (133, 153, 217, 397, 454)),
                                            (TFB_OLD[:7], (89, 109, 173, 341, 398))):
        quote(nl, (BENCH, commit, bs), "flags.DEFINE_integer('batch_size', 0, 'batch size per compute device')")
        quote(nl, (BENCH, commit, dd), "If not specified, synthetic data will be")
        quote(nl, (BENCH, commit, lpd), "flags.DEFINE_enum('local_parameter_device', 'gpu'")
        quote(nl, (BENCH, commit, fp16), "flags.DEFINE_boolean('use_fp16', False,")
        quote(nl, (BENCH, commit, vu), "flags.DEFINE_enum('variable_update', 'parameter_server',")
    quote(nl, (BENCH, TFB_NEW[:7], 510), "Default with utilize GPU if")
    return nl


# ------------------------------------------------------------------------------------ horovod #476
H476_URL = "https://github.com/horovod/horovod/issues/476"
H476_SOURCE = ("GitHub issue thread horovod/horovod #476 'Distributed training speed slow down compare to one "
               "node？' (tingweiwu, 2018-09-03..12)")
H476_HARDWARE = (
    "issue #476 description: 'each one is 8 GPU', 'GPU:V100', 'NIC: Infiniband'; comment of 2018-09-04: "
    "'Infiniband controller: Mellanox Technologies MT27700 Family [ConnectX-4]'; comment of 2018-09-11: 'NCCL "
    "logs show use RMDA', 'IB Ports : mlx5_0/1(SOC)'. ASSUMED (not stated): the V100 form factor (preset v100), "
    "the HCA's link rate EDR 100 Gb/s (ConnectX-4 supports EDR; preset ib-edr) and one HCA per machine. The "
    "machines hold 8 GPUs; this run used one per machine ('-H IP1:1,IP2:1'), so gpus_per_node is 1 and the "
    "intra-node fabric (not stated; pcie3 put in the column) carries nothing")
H476_FRAMEWORK = ("TensorFlow tf_cnn_benchmarks with Horovod, in the Horovod Docker image with MOFED installed "
                  "on top ('after install MOFED on the top of horovod images'); versions not stated")
H476_SCHEME = ("Horovod allreduce through NCCL over InfiniBand verbs (the comment's NCCL log: 'NCCL logs show use "
               "RMDA', 'IB Ports : mlx5_0/1'); --variable_update horovod with --horovod_device left empty, "
               "which uses the GPU (NCCL) allreduce when Horovod was built with HOROVOD_GPU_ALLREDUCE "
               f"({BENCH}@{TFB_NEW[:7]} lines 509-512, {TF_FLAGS})")

_H476_RUN = re.compile(r"^run `mpirun -np (\d+) -H ([^`]+)`, result is `total images/sec: ([0-9]+\.[0-9]+)`$")


def h476_rows() -> list[dict]:
    """The comment's one-GPU-per-machine run on two machines against its one-GPU run."""
    head, lines = excerpt("hvdissues_horovod_issue476")
    assert head.startswith(f"<!-- {H476_URL} comment by tingweiwu, 2018-09-11 "), head
    text = "\n".join(lines)
    for s in ("--model resnet101 --batch_size 64 --variable_update horovod", "GPU:V100", "NIC: Infiniband",
              "each one is 8 GPU", "[ConnectX-4]", "after install MOFED on the top of horovod images",
              "NCCL logs show use RMDA"):
        assert s in text, s
    assert "--data_dir" not in text and "--use_fp16" not in text
    _flags()
    runs = {}
    for i, ln in enumerate(lines, start=2):  # excerpt line numbers (line 1 is the comment)
        m = _H476_RUN.match(ln)
        if m:
            runs[m.group(2)] = (i, int(m.group(1)), m.group(3))
    assert set(runs) == {"localhost:1", "IP1:1,IP2:1", "localhost:8", "IP1:8,IP2:8"}, runs
    s_line, s_np, s_rate = runs["localhost:1"]
    assert s_np == 1
    i, np_, rate = runs["IP1:1,IP2:1"]
    assert np_ == 2
    notes = ["two machines, one GPU each ('mpirun -np 2 -H IP1:1,IP2:1'), after MOFED was installed in the "
             "container ('finally. I have achieve 90%+ efficiency. after install MOFED on the top of horovod "
             "images.')",
             "the comment shows only the mpirun part of each command: the python arguments ASSUMED to be the "
             "description's 'tf_cnn_benchmarks.py --model resnet101 --batch_size 64 --variable_update horovod' "
             "(batch_size is per device; no --use_fp16: fp32; no --data_dir: synthetic data)",
             "V100 form factor, the InfiniBand link rate (EDR) and one HCA per machine ASSUMED (hardware_source)",
             "the same comment's 8-GPU (1193.40) and 16-GPU (2361.88) runs are not transcribed: the thread "
             "does not say how the 8 GPUs of a machine are connected"]
    return [row(
        source=H476_SOURCE, source_url=H476_URL,
        source_loc=f"comment of 2018-09-11 by tingweiwu, line 'run `mpirun -np 2 -H IP1:1,IP2:1`' "
                   f"(excerpts/hvdissues_horovod_issue476.md line {i})",
        read_from="text", system="horovod476-v100-ib", gpu="v100", gpus_per_node=1, intra="pcie3",
        network="ib-edr", nics=1, hardware_source=H476_HARDWARE, framework=H476_FRAMEWORK,
        scheme="horovod-nccl", scheme_detail=H476_SCHEME, model="resnet101", batch_per_gpu=64, accumulate=1,
        precision="fp32", grad_wire="fp32", comm_overlap="during-backward", data="synthetic", gpus=np_, nodes=2,
        samples_per_s=rate, unit="images/s", single_gpu_samples_per_s=s_rate, single_gpu_batch=64,
        single_gpu_loc=f"same comment, line 'run `mpirun -np 1 -H localhost:1`' "
                       f"(excerpts/hvdissues_horovod_issue476.md line {s_line})",
        note="; ".join(notes))]


# -------------------------------------------------------------------------------------- mxnet #8289
M8289_URL = "https://github.com/apache/mxnet/issues/8289"
M8289_SOURCE = ("GitHub issue thread apache/mxnet #8289 'Multi GPU Parallel efficiency In benchmark' "
                "(ThomasDelteil's comment, 2018-07-04)")
M8289_HARDWARE = (
    "issue #8289: 'Here are my results running on p3.8x' (an AWS p3.8xlarge instance). ASSUMED from AWS's EC2 "
    "P3 instance page (aws.amazon.com/ec2/instance-types/p3/, not retrieved here): 4 NVIDIA V100-SXM2-16GB "
    "joined by NVLink (preset v100, nvlink2); the instance is only used alone here (network n/a)")
M8289_FRAMEWORK = (f"MXNet Gluon (version not stated; the comment runs the example as updated after the issue was "
                   f"opened), apache/mxnet {GLUON}@{MX_COMMIT[:7]}, imperative mode (no --mode given)")
M8289_SCHEME = (f"gluon.Trainer(..., kvstore=kv) with kv = mx.kv.create(opt.kvstore), --kvstore default 'device' "
                f"({GLUON}@{MX_COMMIT[:7]} lines 93-94, 114, 196-201, excerpts/hvdissues_mxnet_gluon_setup.md): "
                "one process, the gradients of the GPUs reduced on the GPUs by trainer.step after ag.backward; "
                "overlap with backprop as MXNet's dependency engine schedules it (ASSUMED, as the other MXNet "
                "kvstore-device rows)")

_M8289_CMD = re.compile(r"^python image_classification\.py --model vgg16 --dataset dummy --gpus ([0-9,]+) "
                        r"--batch-size 32 --epochs 1$")
_M8289_SPEED = re.compile(r"^INFO:root:Epoch\[0\] Batch \[(\d+)\]\tSpeed: ([0-9]+\.[0-9]+) samples/sec\t")


def m8289_rows() -> list[dict]:
    """The 2- and 4-GPU runs' Batch [99] speed lines against the 1-GPU run's."""
    head, lines = excerpt("hvdissues_mxnet_issue8289")
    assert head.startswith(f"<!-- {M8289_URL} comment by ThomasDelteil, 2018-07-04 "), head
    assert "Here are my results running on p3.8x:" in lines
    shead, slines = excerpt("hvdissues_mxnet_gluon_setup")
    assert shead.startswith(f"<!-- apache/mxnet@{MX_COMMIT} {GLUON} "), shead
    nl = numbered_lines(slines)
    quote(nl, (GLUON, 55), "parser.add_argument('--batch-size', type=int, default=32,")
    quote(nl, (GLUON, 56), "help='training batch size per device (CPU/GPU).')")
    quote(nl, (GLUON, 89), "parser.add_argument('--dtype', default='float32', type=str,")
    quote(nl, (GLUON, 93), "parser.add_argument('--kvstore', type=str, default='device',")
    quote(nl, (GLUON, 109), "context = [mx.gpu(int(i)) for i in opt.gpus.split(',')]")
    quote(nl, (GLUON, 111), "batch_size *= max(1, num_gpus)")
    quote(nl, (GLUON, 114), "kv = mx.kv.create(opt.kvstore)")
    quote(nl, (GLUON, 201), "kvstore=kv)")
    quote(nl, (GLUON, 231), "logger.info('Epoch[%d] Batch [%d]\\tSpeed: %f samples/sec\\t%s=%f, %s=%f'%(")
    quote(nl, (GLUON, 232), "batch_size/(time.time()-btic)")
    quote(nl, (GLUON, 280), "net.hybridize()")
    runs, gpus_arg = {}, None
    for i, ln in enumerate(lines, start=2):
        m = _M8289_CMD.match(ln)
        if m:
            gpus_arg = m.group(1)
            runs[gpus_arg] = {}
            continue
        m = _M8289_SPEED.match(ln)
        if m:
            runs[gpus_arg][int(m.group(1))] = (i, m.group(2))
    assert set(runs) == {"2", "1,2", "0,1,2,3"}, runs
    assert all(set(v) == {49, 99} for v in runs.values()), runs
    s_line, s_rate = runs["2"][99]
    rows = []
    for arg in ("1,2", "0,1,2,3"):
        gpus = len(arg.split(","))
        i, rate = runs[arg][99]
        notes = [f"'--gpus {arg}' ({gpus} GPUs of the instance); the 1-GPU run used '--gpus 2'",
                 "batch 32 per GPU ('--batch-size 32', per device in the script); float32 (the script's "
                 "--dtype default); synthetic data ('--dataset dummy'); imperative Gluon (no --mode)",
                 "the script's 'Speed' is one batch's rate (batch_size / the time of batch i); each run prints "
                 f"Batch [49] and Batch [99]: the Batch [99] line is transcribed (Batch [49]: {runs[arg][49][1]}; "
                 f"single GPU Batch [49]: {runs['2'][49][1]})",
                 "p3.8xlarge hardware ASSUMED from AWS's instance page (hardware_source)"]
        rows.append(row(
            source=M8289_SOURCE, source_url=M8289_URL,
            source_loc=f"comment of 2018-07-04 by ThomasDelteil, run '--gpus {arg}', line 'Epoch[0] Batch [99]' "
                       f"(excerpts/hvdissues_mxnet_issue8289.md line {i})",
            read_from="text", system="aws-p3.8xlarge", gpu="v100", gpus_per_node=4, intra="nvlink2",
            network="n/a", nics=0, hardware_source=M8289_HARDWARE, framework=M8289_FRAMEWORK,
            scheme="mxnet-kvstore-device", scheme_detail=M8289_SCHEME, model="vgg16", batch_per_gpu=32,
            accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward", data="synthetic",
            gpus=gpus, nodes=1, samples_per_s=rate, unit="images/s", single_gpu_samples_per_s=s_rate,
            single_gpu_batch=32,
            single_gpu_loc=f"same comment, run '--gpus 2', line 'Epoch[0] Batch [99]' "
                           f"(excerpts/hvdissues_mxnet_issue8289.md line {s_line})",
            note="; ".join(notes)))
    return rows


# ---------------------------------------------------------------------------- tensorflow/benchmarks #211
T211_URL = "https://github.com/tensorflow/benchmarks/issues/211"
T211_SOURCE = ("GitHub issue thread tensorflow/benchmarks #211 'Cannot reproduce result on benchmark page.' "
               "(daadaada, 2018-06-26)")
T211_HARDWARE = ("issue #211: 'Instance type: p2.8xlarge', 'GPU: 8x NVIDIA® Tesla® K80', 'Disk: 300GB Amazon EFS'; "
                 "the 8 GK210 GPUs of the p2.8xlarge on PCIe 3.0 (preset k80 = one GK210, pcie3), as the "
                 "aws-p2.8xlarge rows of runs.csv state them; only used alone here (network n/a)")
T211_FRAMEWORK = ("TensorFlow tf-nightly-gpu 1.10.0.dev20180609 ('Install Command: pip install tf-nightly-gpu    "
                  "1.10.0.dev20180609'), CUDA 9.1, cuDNN 7.1.5; tensorflow/benchmarks tf_cnn_benchmarks")
T211_SCHEME = ("'--variable_update=parameter_server --local_parameter_device=cpu': variables on the CPU of the "
               "machine, gradients aggregated there (tf_cnn_benchmarks)")

_T211_LINE = re.compile(r"^- (\d+) GPUs?:\s+(\d+) images per sec$")
_T211_EIGHT = re.compile(r"should be\]\([^)]*\) 228 when training with 8 GPUs\. However, the result I get is (\d+)\.$")


def t211_rows() -> list[dict]:
    """The description's 2-, 4- and 8-GPU rates against its 1-GPU rate."""
    head, lines = excerpt("hvdissues_tfbench_issue211")
    assert head.startswith(f"<!-- {T211_URL} description by daadaada, 2018-06-26 "), head
    text = "\n".join(lines)
    cmd = ("python tf_cnn_benchmarks.py --num_gpus=8 --batch_size=64 --model=inception3  --data_format=NCHW  "
           "--data_dir=/efs/imagenet/tfrecord-result --data_name=imagenet --variable_update=parameter_server "
           "--local_parameter_device=cpu")
    assert cmd in text
    assert "More details for results under 4/2/1 K80 GPU (all with p2.8xlarge):" in text
    diag = "I found the cause of the problem. Preprocessing has slowed down the training process."
    assert diag in lines
    nl = _flags()
    quote(nl, (BENCH, TFB_OLD[:7], 89), "'batch size per compute device'")
    hits = {}
    for i, ln in enumerate(lines, start=2):
        m = _T211_LINE.match(ln)
        if m:
            hits[int(m.group(1))] = (i, m.group(2), f"- {m.group(1)} GPU")
        m = _T211_EIGHT.search(ln)
        if m:
            hits[8] = (i, m.group(1), "the result I get is")
    assert set(hits) == {1, 2, 4, 8}, hits
    s_line, s_rate, _ = hits[1]
    rows = []
    for gpus in (2, 4, 8):
        i, rate, label = hits[gpus]
        notes = ["ImageNet TFRecords read from Amazon EFS (real data); the author's own diagnosis in the thread: "
                 f"'{diag}'",
                 "batch 64 per GPU ('--batch_size=64', per compute device in tf_cnn_benchmarks); fp32 (no "
                 "--use_fp16)"]
        if gpus == 8:
            notes.append("the 8-GPU rate is the sentence 'However, the result I get is 165.' under the quoted "
                         "--num_gpus=8 command")
        else:
            notes.append("the command is quoted for 8 GPUs only: this run ASSUMED to be the same command with "
                         f"--num_gpus={gpus} ('More details for results under 4/2/1 K80 GPU (all with p2.8xlarge)')")
        rows.append(row(
            source=T211_SOURCE, source_url=T211_URL,
            source_loc=f"description of 2018-06-26, {'sentence' if gpus == 8 else 'line'} '{label}' "
                       f"(excerpts/hvdissues_tfbench_issue211.md line {i})",
            read_from="text", system="aws-p2.8xlarge", gpu="k80", gpus_per_node=8, intra="pcie3",
            network="n/a", nics=0, hardware_source=T211_HARDWARE, framework=T211_FRAMEWORK,
            scheme="tf-ps-cpu", scheme_detail=T211_SCHEME, ps_servers=1, ps_placement="host",
            model="inception-v3", batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32",
            comm_overlap="during-backward", data="real", gpus=gpus, nodes=1, samples_per_s=rate, unit="images/s",
            single_gpu_samples_per_s=s_rate, single_gpu_batch=64,
            single_gpu_loc=f"same description, line '- 1 GPU' (excerpts/hvdissues_tfbench_issue211.md line {s_line}); "
                           "the 1-GPU run ASSUMED to be the same command with --num_gpus=1",
            note="; ".join(notes)))
    return rows


def main(out: Path = HERE / "hvdissues_runs.csv") -> None:
    """Write the rows to ``out`` (hvdissues_runs.csv)."""
    write_rows(h476_rows() + m8289_rows() + t211_rows(), out, "z")


if __name__ == "__main__":
    main()
