"""Generator of data/published/threads_runs.csv: `python data/published/build_threads.py`.

A family the model had never been checked on: throughputs that users posted as text in GitHub issue
threads, with the same thread's single-GPU rate. Threads are filed when something is slow, so only runs
the thread treats as working are kept (nobody in the stored text calls them broken or misconfigured).
The issue texts are the search tool's stored copies (no commit exists for an issue; the first line of
each excerpt names the issue URL, the comment's author and date, and where the stored text ends).

Transcribed:
* aws-samples/deep-learning-models issue #2 (excerpts/threads_aws_samples_issue2.md): ResNet-50 trained
  on ImageNet with the repository's TensorFlow + Horovod example on AWS p3.16xlarge (DL AMI v13), every
  'AxB GPU' line with a plain number: 1x2, 1x8 (5000), 2x8 and 4x8, against the '1x1 GPU' line. Batch
  per GPU 256 ('default params (... 256 batch size ...)'; the script's default, -b/--batch_size
  default=256 'Size of each minibatch per GPU'), fp16 with fp32 master weights (the repository's run
  script passes --fp16), gradients allreduced in fp32 by hvd.DistributedOptimizer under the fp32-storage
  custom getter (excerpts/threads_aws_samples_setup.md, the repository at its last commit before the
  thread). The p3.16xlarge hardware as horovod issue #779 states it ('p3.16xlarge (25Gbps)',
  '8 x Tesla V100-SXM2-16GB', excerpts/threads_horovod_issue779.md).
* horovod/horovod issue #416 (excerpts/threads_horovod_issue416.md): ResNet-101, 'fp32 mini_batch 64',
  Horovod with GPUDirect RDMA ('gdr') over 'RoCE-capable 40 Gbit/s network', 2 servers of 8 V100 whose
  GPUs hang four to a PCIe switch (no NVLink: the maintainer answers 'They really need NVLin[k]'): the
  '1-4' and '2-16' lines against the '1-1' line.

Not transcribed: the '1x8 GPU: 5100-5200' ramdisk line (a range) and '8x8 ... ~37000' (approximate) of
issue #2; horovod issue #779's table (batch and precision not in the stored text); threads whose
numbers the thread itself calls misconfigured or whose hardware, batch or single-GPU rate is not stated
(listed in /work/helper_notes/threads_report.md).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows

AWS_URL = "https://github.com/aws-samples/deep-learning-models/issues/2"
AWS_SOURCE = ("GitHub issue thread aws-samples/deep-learning-models #2 'Some benchmarking results' "
              "(markmp, 2018-09-13)")
AWS_COMMIT = "ed46301fd87f023f00971c506c42a47b7e8662a9"
H416_URL = "https://github.com/horovod/horovod/issues/416"
H416_SOURCE = ("GitHub issue thread horovod/horovod #416 'Horovod: Scaling Efficiency Only 73% on 16 GPU V100' "
               "(meteortwinkle, 2018-08-02)")

P3_HARDWARE = (
    "issue #2: 'p3.16xlarge node', 'DL AMI (Version 13, Ubuntu/Conda) on p3 instances'; the instance as "
    "horovod issue #779 states it: '*Instance Type:* 2 x p3.16xlarge  (25Gbps)', '*GPU:* 8 x Tesla "
    "V100-SXM2-16GB' (excerpts/threads_horovod_issue779.md). Not stated by either thread, taken from AWS's "
    "EC2 P3 instance page (aws.amazon.com/ec2/instance-types/p3/, not retrieved here): the 8 V100 SXM2 are "
    "on NVLink in the DGX-1-style hybrid cube-mesh (preset nvlink2) and the 25 Gb/s is one ENA Ethernet "
    "interface (TCP; no RDMA on p3.16xlarge), preset eth-25g x1")
AWS_SCHEME = (
    "Horovod hvd.DistributedOptimizer(opt) wrapped by the script's MixedPrecisionOptimizer (loss scale "
    "1024); trainable variables stored in fp32 and cast to fp16 for compute, so the allreduced gradients "
    "are fp32; no compression argument (train_imagenet_resnet_hvd.py lines 436-449, 472-493, 614-617 "
    f"@{AWS_COMMIT[:7]}, excerpts/threads_aws_samples_setup.md); mpirun with '-mca btl ^openib' (TCP) in the "
    "repository's run script; Horovod's NCCL allreduce in the DL AMI build assumed (not stated)")
AWS_FRAMEWORK = ("TensorFlow + Horovod on AWS Deep Learning AMI Version 13 (Ubuntu/Conda), versions not stated; "
                 "aws-samples/deep-learning-models models/resnet/tensorflow/train_imagenet_resnet_hvd.py")

H416_HARDWARE = (
    "issue #416: '2 servers with 8 V100 GPUs each connected by RoCE-capable 40 Gbit/s network', 'RDMA:RoCE', "
    "'IB:X3 pro' (a ConnectX-3 Pro NIC), 'nvidia-peer-memory:1.0.7'; comment of 2018-08-04: '4 GPUs are "
    "connected with one PCIe Switch over PCIX16', two CPUs joined by QPI; the maintainer: 'this system "
    "configuration is not great for V100s.  They really need NVLin[k]'. Assumed (not stated): V100 PCIe "
    "boards (preset v100-pcie), PCIe 3.0 inside the server (pcie3), one 40 Gb/s RoCE NIC per server; no "
    "40 Gb/s preset exists, so the network is given as the figure 3.75GB/s = 0.75 x the 5 GB/s line rate, "
    "the achievable fraction the roce-25g and roce-100g presets use (data/presets/fabrics.toml)")
H416_SCHEME = ("Horovod with GPUDirect RDMA ('gdr' column of the issue's table; nvidia-peer-memory and "
               "MLNX_OFED installed): NCCL allreduce over RoCE assumed, as the Horovod README benchmark the "
               "issue compares with")
H416_FRAMEWORK = ("not stated (Horovod; CUDA 9.0, MLNX_OFED 4.4, Ubuntu 16.04); TensorFlow tf_cnn_benchmarks "
                  "assumed, the benchmark of the Horovod README the issue compares with")

_AWS_LINE = re.compile(r"^(\d+)x(\d+)\s+GPU(?: \((\d+) GPUs total\))?:\s+([0-9]+(?:\.[0-9]+)?) imgs?/sec")
_H416_LINE = re.compile(r"^(\d+)-(\d+)\s+Resnet101\s+gdr\s+([0-9]+(?:\.[0-9]+)?)(\s|$)")


def aws_rows() -> list[dict]:
    """Issue #2's 1x2, 1x8, 2x8 and 4x8 lines, each against its 1x1 line."""
    head, lines = excerpt("threads_aws_samples_issue2")
    assert head.startswith(f"<!-- {AWS_URL} "), head
    text = "\n".join(lines)
    assert "This was using the default params (90 epochs, 256 batch size, etc.)" in text
    setup_head, setup = excerpt("threads_aws_samples_setup")
    assert setup_head.startswith(f"<!-- aws-samples/deep-learning-models@{AWS_COMMIT} "), setup_head
    setup_text = "\n".join(setup)
    assert "cmdline.add_argument('-b', '--batch_size', default=256, type=int," in setup_text
    assert "train_imagenet_resnet_hvd.py --model resnet50 --fp16 " in setup_text
    assert "opt = hvd.DistributedOptimizer(opt)" in setup_text
    hits = []
    for i, ln in enumerate(lines, start=2):  # excerpt line numbers (line 1 is the comment)
        m = _AWS_LINE.match(ln)
        if m:
            hits.append((i, ln, int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)))
    single = [h for h in hits if (h[2], h[3]) == (1, 1)]
    assert len(single) == 1, single
    s_line, _, _, _, _, s_rate = single[0]
    rows = []
    for i, ln, nodes, per_node, total, rate in hits:
        if (nodes, per_node) == (1, 1):
            continue
        gpus = nodes * per_node
        assert total is None or int(total) == gpus, ln
        label = ln.split(":")[0].strip()
        notes = ["batch per GPU 256: the thread's 'default params (90 epochs, 256 batch size, etc.)', the "
                 "script's per-GPU default (-b 256)",
                 "precision: the repository's run script passes --fp16 (fp16 compute, fp32 master weights, "
                 "loss scale 1024); the thread does not name the precision (assumption)",
                 "real ImageNet data, each machine reading its own copy from a 256 GB gp2 EBS volume; the "
                 "run is real-data training of 90 epochs, the rate as the thread prints it",
                 "hardware from AWS's instance page and horovod issue #779 (hardware_source); TCP transport "
                 "assumed (p3.16xlarge has no RDMA NIC)"]
        if nodes == 4:
            notes.append("printed '(with bind_to slot option - aws said might be faster)': a different "
                         "mpirun binding than the 2x8 run; 21300 is more than twice the 2x8 rate (as printed)")
        if nodes == 1 and per_node == 8:
            notes.append("the thread prints a second 1x8 line '5100-5200 (ramdisk ...)', a range, not transcribed")
        rows.append(row(
            source=AWS_SOURCE, source_url=AWS_URL,
            source_loc=f"issue #2 description, line '{label}' (excerpts/threads_aws_samples_issue2.md line {i})",
            read_from="text", system="aws-p3.16xlarge", gpu="v100", gpus_per_node=8, intra="nvlink2",
            network="eth-25g", nics=1, hardware_source=P3_HARDWARE, framework=AWS_FRAMEWORK,
            scheme="horovod-nccl", scheme_detail=AWS_SCHEME, model="resnet50", batch_per_gpu=256,
            accumulate=1, precision="amp", grad_wire="fp32", comm_overlap="during-backward", data="real",
            gpus=gpus, nodes=nodes, samples_per_s=rate, unit="images/s", single_gpu_samples_per_s=s_rate,
            single_gpu_batch=256,
            single_gpu_loc=f"same comment, line '1x1  GPU' (excerpts/threads_aws_samples_issue2.md line {s_line})",
            note="; ".join(notes)))
    return rows


def h416_rows() -> list[dict]:
    """Issue #416's '1-4' and '2-16' lines, against its '1-1' line."""
    head, lines = excerpt("threads_horovod_issue416")
    assert head.startswith(f"<!-- {H416_URL} "), head
    text = "\n".join(lines)
    assert "fp32 mini_batch 64" in text
    assert "2 servers with 8 V100 GPUs each connected by RoCE-capable 40 Gbit/s network" in text
    hits = []
    for i, ln in enumerate(lines, start=2):
        m = _H416_LINE.match(ln)
        if m:
            hits.append((i, int(m.group(1)), int(m.group(2)), m.group(3)))
    single = [h for h in hits if (h[1], h[2]) == (1, 1)]
    assert len(single) == 1, single
    s_line, _, _, s_rate = single[0]
    rows = []
    for i, nodes, gpus, rate in hits:
        if gpus == 1:
            continue
        notes = ["the table's first column read as servers-GPUs ('1-4' one server with 4 GPUs, '2-16' two "
                 "servers with 8 each), as its per-GPU column (650.92/4, 2379.56/16) and the '2 servers with 8 "
                 "V100 GPUs each' heading say",
                 "data not stated: synthetic assumed (the Horovod README benchmark it compares with)",
                 "V100 form factor, PCIe generation and NIC count assumed (hardware_source); network given "
                 "as an achievable figure, 3.75GB/s, for the 40 Gbit/s RoCE link (no preset)"]
        if gpus == 4:
            notes.append("4 of the server's 8 GPUs: the 4 behind one PCIe switch (comment of 2018-08-04)")
        rows.append(row(
            source=H416_SOURCE, source_url=H416_URL,
            source_loc=f"issue #416 description, line '{nodes}-{gpus}  Resnet101  gdr' "
                       f"(excerpts/threads_horovod_issue416.md line {i})",
            read_from="text", system="horovod416-v100-roce40", gpu="v100-pcie", gpus_per_node=8,
            intra="pcie3", network="3.75GB/s", nics=1, hardware_source=H416_HARDWARE, framework=H416_FRAMEWORK,
            scheme="horovod-nccl", scheme_detail=H416_SCHEME, model="resnet101", batch_per_gpu=64,
            accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward", data="synthetic",
            gpus=gpus, nodes=nodes, samples_per_s=rate, unit="images/s", single_gpu_samples_per_s=s_rate,
            single_gpu_batch=64,
            single_gpu_loc=f"same table, line '1-1  Resnet101  gdr' (excerpts/threads_horovod_issue416.md line {s_line})",
            note="; ".join(notes)))
    return rows


def main(out: Path = HERE / "threads_runs.csv") -> None:
    """Write the rows to ``out`` (threads_runs.csv)."""
    write_rows(aws_rows() + h416_rows(), out, "y")


if __name__ == "__main__":
    main()
