"""Generator of data/published/logs_runs.csv: `python data/published/build_logs.py`.

A family the model had never been checked on: throughputs computed from training LOGS committed to a public
repository. Source: mitmul/chainermn-on-azure@186e0aa ('Add results', Oct 3 2018; Shunta Saito), ChainerMN on an
Azure VM scale set: ResNet-50 trained on ImageNet-1k (JPEG files read from a disk on each VM, real data) with
examples/imagenet/train_imagenet_fp32.py in its '--test' mode (210 iterations, a Chainer LogReport entry every 10
iterations), launched by run_test.sh as `mpirun -n $1 -ppn 4` (4 ranks, one per GPU, on each VM) and repeated five
times for every GPU count 1, 2, 4, ..., 128 by scaleout_test.sh; once at 32 and once at 64 images per GPU
(folders examples/imagenet/results/batchsize-32 and batchsize-64, 40 logs each).

The rate is not printed anywhere: it is COMPUTED here from each log's own counters and timestamps, the way the
repository's own tool does it (examples/imagenet/collect_results.py lines 22-24: `whole_time = log[-1]['elapsed_time']
- log[0]['elapsed_time']`, `n_iter = log[-1]['iteration'] - log[0]['iteration']`, `iters_per_sec = n_iter /
whole_time`): the first logged entry (iteration 10) is the start, so the first 10 iterations (start-up, cuDNN
autotune, the initial parameter broadcast) are skipped, and the rate is over iterations 10-210 (200 iterations).
images/s of one log = iters_per_sec x GPUs x batch per GPU. Each row's samples_per_s is the MEAN of that
configuration's five logs (every one is listed with its own rate in the row's note), rounded to 0.1 image/s; the
single-GPU rate is the mean of the five 1-GPU logs at the same batch. GPU count and batch are the folder names
('scaleout_<GPUs>_...', 'batchsize-<B>'), checked against each log's own learning rate (lr = 0.1 x GPUs x B / 256,
train_imagenet_fp32.py line 158) and against info.json where the folder has one. Excerpts: logs_chainermn_azure_bs32.md
and logs_chainermn_azure_bs64.md (each log's first and last entries, verbatim, numbered), logs_chainermn_azure_setup.md
(scripts, commit, ChainerMN code), logs_azure_hardware.md (Azure's size pages).

Transcribed: every GPU count from 2 to 128 at both batches: 14 rows (2 and 4 GPUs in one VM; 8-128 GPUs on 2-32 VMs:
10 rows across nodes). Left out: the 1-GPU logs (the single-GPU rate); the 90-epoch 128-GPU run
(results/90epochs-with-128GPUs: real training with an evaluation every epoch, no 1-GPU counterpart of that mode);
the May 2018 experiments of the same repository (results/exp1-exp9 and p100_imagenet1k, deleted later; one run per
point, made while the README switched between NC24r (K80) and NC24rs_v3 (V100) and with another training script:
the GPU of each cannot be pinned).

HARDWARE (said per row): the logs come from train_imagenet_fp32.py (their entries carry 'lr', which only that script
observes: line 205 `extensions.observe_lr()`; the fp16 script logs no 'lr'), the script that commit bd0f11e
('Update test script for p100', Oct 2 2018, the morning of the runs) put into run_test.sh: the GPU is taken to be
the P100, and the VM Azure's only 4-GPU RDMA P100 size, Standard_NC24rs_v2 (ASSUMED: the repository names no P100
size; its README's VMSS recipe, written in May 2018, names Standard_NC24rs_v3 (V100), a point a reviewer should
weigh: both sizes are 4 PCIe cards per VM on the same FDR InfiniBand). gpu preset p100 (the only P100 preset; its
figures are the SXM2 part's, the VM has PCIe cards), intra pcie3 (ASSUMED: Azure states no intra-VM topology),
network ib-fdr x1 (Azure: 'FDR rates for ... RDMA-capable N-series virtual machines'; Intel MPI 5.1 over DAPL,
libdapl2 / libmlx4-1 in the image script, I_MPI_DAPL_TRANSLATION_CACHE=1 in run_test.sh).

SCHEME: ChainerMN's 'non_cuda_aware' communicator of the fork the image script installs (mitmul/chainermn branch
fix-non-cuda-comm @717db62): NCCL reduce to the VM's rank 0, copy to host, MPI Alltoall among the VMs' rank 0,
sum on the GPU, MPI Allgather, copy back, NCCL broadcast; one packed fp32 buffer per step, after the whole
backward pass (optimizers.py lines 24-30). Nearest scheme of the model: horovod-mpi (host-staged MPI, not
CUDA-aware); the model has no hierarchical NCCL + host-MPI scheme (said per row). Precision fp32 (ResNet50 in fp32,
no loss scaling; use_cudnn_tensor_core 'auto' does not change fp32 math on a P100). The 1-GPU runs also go through
the communicator (a 1-rank NCCL reduce and broadcast and host copies), as the multi-GPU runs do.
"""
import importlib.util
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows
numbered_lines, quote = _build.numbered_lines, _build.quote

COMMIT = "186e0aa03148f6aecf034abf910c1ce40aefc40b"
MN_COMMIT = "717db621c680b4941e917b316122ab2d36d5b288"
P100_COMMIT = "bd0f11e8c5a175b517618e9d09bdfb594ae25ca7"
B64_COMMIT = "0b623b090cfced276d1f22d77389489757b27fa2"
REPO = "mitmul/chainermn-on-azure"
GPUS_PER_NODE = 4
_LOG = re.compile(r"^examples/imagenet/results/batchsize-(\d+)/(scaleout_(\d+)_[0-9a-z_-]+)/(log|info\.json)$")


def _setup() -> dict:
    """{(path, commit7, line): text} of excerpts/logs_chainermn_azure_setup.md, its context asserted."""
    head, lines = excerpt("logs_chainermn_azure_setup")
    assert head.startswith(f"<!-- {REPO} "), head
    for c in (COMMIT, P100_COMMIT, B64_COMMIT, MN_COMMIT):
        assert c in head, c
    s = numbered_lines(lines, by_commit=True)
    c, r = COMMIT[:7], "examples/imagenet/"
    for path, commit, n, text in [
        (r + "scaleout_test.sh", c, 3, "for ((i=1; i <= 128; i=i*2));"),
        (r + "scaleout_test.sh", c, 10, "bash run_test.sh $i"),
        (r + "run_test.sh", c, 9, "-n $1 -ppn 4 -f ~/hosts.txt \\"),
        (r + "run_test.sh", c, 11, "-genv I_MPI_DAPL_TRANSLATION_CACHE=1 \\"),
        (r + "run_test.sh", c, 13, "python train_imagenet_fp32.py \\"),
        (r + "run_test.sh", c, 16, "--root_train /imagenet1k/ILSVRC/Data/CLS-LOC/train \\"),
        (r + "run_test.sh", c, 18, "--batchsize 32 \\"),
        (r + "run_test.sh", c, 19, "--communicator non_cuda_aware \\"),
        (r + "run_test.sh", c, 21, "--test"),
        (r + "run_test.sh", B64_COMMIT[:7], 18, "--batchsize 64 \\"),
        (f"commit {P100_COMMIT}", P100_COMMIT[:7], 5, "Update test script for p100"),
        (f"commit {P100_COMMIT}", P100_COMMIT[:7], 7, "examples/imagenet/run_test.sh"),
        (r + "collect_results.py", c, 22, "whole_time = log[-1]['elapsed_time'] - log[0]['elapsed_time']"),
        (r + "collect_results.py", c, 23, "n_iter = log[-1]['iteration'] - log[0]['iteration']"),
        (r + "collect_results.py", c, 24, "iters_per_sec = n_iter / whole_time"),
        (r + "train_imagenet_fp32.py", c, 128, "model = L.Classifier(resnet50.ResNet50())"),
        (r + "train_imagenet_fp32.py", c, 158, "lr = 0.1 * global_batchsize / 256"),
        (r + "train_imagenet_fp32.py", c, 172, "optimizer = chainermn.create_multi_node_optimizer(optimizer, comm)"),
        (r + "train_imagenet_fp32.py", c, 180, "log_interval = (10, 'iteration')"),
        (r + "train_imagenet_fp32.py", c, 181, "train_length = (210, 'iteration')"),
        (r + "train_imagenet_fp32.py", c, 205, "trainer.extend(extensions.observe_lr(), trigger=log_interval)"),
        (r + "train_imagenet_fp16.py", c, 213, "loss_scale=128)"),
        (r + "train_imagenet_fp16.py", c, 237, "trainer.extend(extensions.LogReport(trigger=log_interval))"),
        ("scripts/setup_vmss_cuda92.sh", c, 4, "CHAINER_VERSION=5.0.0b3"),
        ("scripts/setup_vmss_cuda92.sh", c, 154, "apt-get install -y libdapl2 libmlx4-1"),
        ("scripts/setup_vmss_cuda92.sh", c, 163, "l_mpi_p_5.1.3.223.tgz"),
        ("scripts/setup_vmss_cuda92.sh", c, 177, "git checkout -b fix-non-cuda-comm origin/fix-non-cuda-comm"),
        ("README.md", c, 67, "Login to the VM and run the `scripts/setup_vmss_cuda92.sh`."),
        ("README.md", c, 128, "--vm-sku Standard_NC24rs_v3 \\"),
        ("chainermn/communicators/non_cuda_aware_communicator.py", MN_COMMIT[:7], 83, "# Intra-node reduce"),
        ("chainermn/communicators/non_cuda_aware_communicator.py", MN_COMMIT[:7], 96, "self.inter_mpi_comm.Alltoall("),
        ("chainermn/communicators/non_cuda_aware_communicator.py", MN_COMMIT[:7], 108, "self.inter_mpi_comm.Allgather("),
        ("chainermn/communicators/non_cuda_aware_communicator.py", MN_COMMIT[:7], 114, "# Intra-node bcast"),
        ("chainermn/optimizers.py", MN_COMMIT[:7], 24, "loss.backward()"),
        ("chainermn/optimizers.py", MN_COMMIT[:7], 30, "self.communicator.allreduce_grad(target)"),
    ]:
        quote(s, (path, commit, n), text)
    # the fp16 script observes no learning rate, so a log with 'lr' entries is the fp32 script's
    fp16 = [t for (p, _, _), t in s.items() if p == r + "train_imagenet_fp16.py"]
    assert not any("observe_lr" in t for t in fp16)
    return s


def _hardware() -> str:
    head, lines = excerpt("logs_azure_hardware")
    assert head.startswith("<!-- MicrosoftDocs/azure-docs"), head
    text = "\n".join(lines)
    for t in ("| Standard_NC24rs_v2* | 24 | 448 | 2948 | 4 | 64 | 32 | 80000/800 | 8 |", "1 GPU = one P100 card.",
              "*RDMA capable", "FDR rates for H16r, H16mr, and RDMA-capable N-series virtual machines",
              "56 Gb/sec Mellanox FDR InfiniBand"):
        assert t in text, t
    return text


def _entry(s: dict, path: str, first: int) -> dict:
    """The LogReport entry on excerpt lines first..first+7 ('{' ... '}'), parsed as JSON."""
    body = [s[(path, COMMIT[:7], n)] for n in range(first, first + 8)]
    assert body[0].strip() == "{" and body[-1].strip() in ("}", "},"), (path, first, body)
    return json.loads("\n".join(body).rstrip().rstrip(","))


def _logs(bs: int) -> dict[int, list[dict]]:
    """{GPUs: [run, ...]} of excerpts/logs_chainermn_azure_bs<bs>.md, each run with its path, first/last entries,
    rate (images/s) and the text of its two elapsed_time lines."""
    head, lines = excerpt(f"logs_chainermn_azure_bs{bs}")
    assert head.startswith(f"<!-- {REPO}@{COMMIT} examples/imagenet/results/batchsize-{bs}/"), head
    s = numbered_lines(lines, by_commit=True)
    paths = sorted({p for p, _, _ in s})
    runs: dict[int, list[dict]] = {}
    infos = {}
    for p in paths:
        m = _LOG.match(p)
        assert m and int(m.group(1)) == bs, p
        if m.group(4) == "info.json":
            infos[p.rsplit("/", 1)[0]] = json.loads(s[(p, COMMIT[:7], 1)])
    for p in paths:
        m = _LOG.match(p)
        if m.group(4) != "log":
            continue
        gpus = int(m.group(3))
        assert s[(p, COMMIT[:7], 1)] == "[" and s[(p, COMMIT[:7], 170)] == "]", p
        first, last = _entry(s, p, 2), _entry(s, p, 162)
        assert s[(p, COMMIT[:7], 169)].strip() == "}", p  # the last entry of the file
        assert (first["iteration"], last["iteration"]) == (10, 210), p
        for e in (first, last):  # the log's own learning rate says GPUs x batch (train_imagenet_fp32.py line 158)
            assert abs(e["lr"] - 0.1 * gpus * bs / 256) < 1e-9, (p, e["lr"])
        info = infos.get(p.rsplit("/", 1)[0])
        if info:
            assert (info["n_gpus"], info["local_batchsize"]) == (gpus, bs), (p, info)
        its = (last["iteration"] - first["iteration"]) / (last["elapsed_time"] - first["elapsed_time"])
        runs.setdefault(gpus, []).append({"path": p, "dir": m.group(2), "first": first, "last": last,
                                          "rate": its * gpus * bs, "info": bool(info)})
    assert sorted(runs) == [1, 2, 4, 8, 16, 32, 64, 128], sorted(runs)
    assert all(len(v) == 5 for v in runs.values()), {k: len(v) for k, v in runs.items()}
    return runs


def _mean(runs: list[dict]) -> float:
    return sum(r["rate"] for r in runs) / len(runs)


def _runs_text(runs: list[dict]) -> str:
    return "; ".join(f"{r['dir']}: (210 - 10) / ({r['last']['elapsed_time']} - {r['first']['elapsed_time']}) s = "
                     f"{r['rate']:.1f} images/s" for r in runs)


HARDWARE = (
    "GPU and VM not named in the logs. The logs are train_imagenet_fp32.py's (their entries carry 'lr', observed only "
    "by that script, line 205; train_imagenet_fp16.py observes none), the script that commit bd0f11e 'Update test "
    "script for p100' (Oct 2 2018 09:26 -0700, the day of the runs) put into run_test.sh (excerpts/"
    "logs_chainermn_azure_setup.md): P100 GPUs. 4 GPUs per VM: run_test.sh 'mpirun -n $1 -ppn 4' with one rank per "
    "GPU (device = comm.intra_rank). ASSUMED VM: Standard_NC24rs_v2, Azure's 4-GPU RDMA-capable P100 size "
    "(azure-docs ncv2-series.md@0a2d242: '| Standard_NC24rs_v2* | 24 | 448 | 2948 | 4 | 64 |', '1 GPU = one P100 "
    "card.', '*RDMA capable'; excerpts/logs_azure_hardware.md); the repository names no P100 size, and its README's "
    "VMSS recipe (written May 2018, line 128) names '--vm-sku Standard_NC24rs_v3' (V100), with the same 4 PCIe cards "
    "per VM and the same FDR InfiniBand. Network: InfiniBand 'FDR rates for H16r, H16mr, and RDMA-capable N-series "
    "virtual machines' (sizes-hpc.md@0a12893), one RDMA interface per VM: ib-fdr x1; MPI over it through DAPL "
    "(Intel MPI 5.1.3, libdapl2 libmlx4-1, I_MPI_DAPL_TRANSLATION_CACHE=1). gpu preset p100 (the only P100 preset; "
    "its figures are the SXM2 part's, the VM has PCIe cards); intra pcie3 ASSUMED (Azure states no intra-VM "
    "topology; 'one P100 card', no NVLink named)")
FRAMEWORK = ("Chainer 5.0.0b3 + CuPy 5.0.0b3, ChainerMN from mitmul/chainermn branch fix-non-cuda-comm (@717db62), "
             "NCCL 1 built from NVIDIA/nccl, Intel MPI 5.1.3.223, cuDNN 7.2.1 for CUDA 9.2 (scripts/"
             "setup_vmss_cuda92.sh, the VMSS image script the README names; ASSUMED that the Oct 2018 VMs ran that "
             "image)")
SCHEME_DETAIL = (
    "chainermn.create_communicator('non_cuda_aware') (run_test.sh '--communicator non_cuda_aware'), "
    "create_multi_node_optimizer (train_imagenet_fp32.py line 172); mitmul/chainermn@717db62 "
    "non_cuda_aware_communicator.py lines 56-120: one packed fp32 gradient buffer, '# Intra-node reduce' (NCCL) to "
    "the VM's rank 0, copy to host, inter_mpi_comm.Alltoall among the VMs' rank 0, sum on the GPU, "
    "inter_mpi_comm.Allgather, copy back, '# Intra-node bcast' (NCCL); optimizers.py lines 24-30: "
    "'loss.backward()' then 'self.communicator.allreduce_grad(target)' (after the whole backward pass). "
    "horovod-mpi (MPI on host memory, not CUDA-aware) is the nearest scheme: the model has no hierarchical "
    "NCCL + host-MPI reduce-scatter/allgather scheme")


def rows() -> list[dict]:
    _setup()
    _hardware()
    out = []
    for bs in (32, 64):
        runs = _logs(bs)
        single = runs[1]
        s_rate = _mean(single)
        for gpus in sorted(runs):
            if gpus == 1:
                continue
            rs = runs[gpus]
            nodes = -(-gpus // GPUS_PER_NODE)
            rates = [r["rate"] for r in rs]
            notes = [
                "COMPUTED from the logs (read_from text): images/s of one log = (last iteration - first iteration) / "
                "(last elapsed_time - first elapsed_time) x GPUs x batch, the repository's own collect_results.py "
                "formula (lines 22-24) times the images per iteration; the first logged entry is iteration 10, so the "
                "first 10 iterations (start-up, cuDNN autotune, initial broadcast) are skipped, and the rate covers "
                "iterations 10-210; samples_per_s = the mean of the five logs of this GPU count "
                f"(min {min(rates):.1f}, max {max(rates):.1f}): " + _runs_text(rs),
                f"single-GPU rate = the mean of the five 1-GPU logs at batch {bs}: " + _runs_text(single),
                f"GPUs and batch: the folder names ('scaleout_{gpus}_', 'batchsize-{bs}'), checked against each log's "
                f"own lr = 0.1 x {gpus} x {bs} / 256 = {0.1 * gpus * bs / 256:g} (train_imagenet_fp32.py line 158)"
                + (" and its info.json" if any(r["info"] for r in rs) else ""),
                "real data: ImageNet-1k JPEGs from a disk on each VM (run_test.sh '--root_train /imagenet1k/...'), "
                "decoded and randomly cropped by a MultiprocessIterator (input not said to be the limit, not shown "
                "not to be)",
                "ASSUMED: P100 (commit 'Update test script for p100'), VM Standard_NC24rs_v2, PCIe 3.0 inside the VM "
                "(hardware_source); the README's VMSS recipe names Standard_NC24rs_v3 (V100)",
                "ResNet-50: the repository's resnet50.ResNet50 (Chainer's ImageNet example model), library resnet50",
            ]
            if nodes == 1:
                notes.append(f"{gpus} of the VM's 4 GPUs")
            out.append(row(
                source=("ChainerMN on Azure ImageNet scale-out logs, Oct 2018 (mitmul/chainermn-on-azure@186e0aa, "
                        f"examples/imagenet/results/batchsize-{bs})"),
                source_url=f"https://github.com/{REPO}/tree/{COMMIT}/examples/imagenet/results/batchsize-{bs}",
                source_loc=(f"examples/imagenet/results/batchsize-{bs}/scaleout_{gpus}_*/log, the five logs "
                            f"({', '.join(r['dir'].rsplit('_', 2)[-2] + '_' + r['dir'].rsplit('_', 1)[-1] for r in rs)}), "
                            "first and last LogReport entries (log lines 2-9 and 162-169; "
                            f"excerpts/logs_chainermn_azure_bs{bs}.md)"),
                read_from="text", system="azure-nc24rs-v2", gpu="p100", gpus_per_node=GPUS_PER_NODE, intra="pcie3",
                network="ib-fdr", nics=1, hardware_source=HARDWARE, framework=FRAMEWORK, scheme="horovod-mpi",
                scheme_detail=SCHEME_DETAIL, model="resnet50", batch_per_gpu=bs, accumulate=1, precision="fp32",
                grad_wire="fp32", comm_overlap="after-backward", data="real", gpus=gpus, nodes=nodes,
                samples_per_s=f"{_mean(rs):.1f}", unit="images/s", single_gpu_samples_per_s=f"{s_rate:.1f}",
                single_gpu_batch=bs,
                single_gpu_loc=(f"same folder, examples/imagenet/results/batchsize-{bs}/scaleout_1_*/log (five logs), "
                                "same formula, mean of the five"),
                note="; ".join(notes)))
    return out


def main(out: Path = HERE / "logs_runs.csv") -> None:
    """Write the rows to ``out`` (logs_runs.csv)."""
    write_rows(rows(), out, "v")


if __name__ == "__main__":
    main()
