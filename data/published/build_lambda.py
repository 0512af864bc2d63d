"""Generator of data/published/lambda_runs.csv: `python data/published/build_lambda.py`.

A family the model had not been checked on: Lambda's PyTorch training benchmark
(lambdal/deeplearning-benchmark), which runs NVIDIA DeepLearningExamples scripts (Lambda's fork,
LambdaLabsML/DeepLearningExamples branch lambda/benchmark) in NGC PyTorch containers on 1, 2, 4 and 8 GPUs
of one server and publishes one throughput per system, task and precision. Transcribed: the ResNet-50
column (DLE PyTorch ConvNets, synthetic data, one process per GPU wrapped in torch DDP) for every system
whose GPU is a preset and whose intra-node link can be pinned, with the same table's 1-GPU row of the same
system as the single-GPU rate:

* v1 tables (pytorch/pytorch-train-throughput-{fp32,fp16}.csv, batch from pytorch-train-bs-*.csv):
  "A100 80GB SXM4" and the six "H100 80GB SXM5" systems (Lambda's, Dell, DellTexas, SMC, 1CC, RAIDZ1);
* v2 tables (pytorch/pytorch-train-throughput-v2-*.csv, batch from each run's benchmark.para): the H200
  server LambdaBM_ENG04 (hyper-threading on and off) and the B200 server LambdaOD_test_*xB200_192GB_129-213-83-251.

Throughput: total images/s over all GPUs (DLE utils.calc_ips multiplies by the world size,
excerpts/lambda_dle_ips.md; the tables' values equal the runs' 'Summary: train.compute_ips', e.g. 7397 for
8x A100 80GB SXM4, log results/8xA100_80GB_SXM4_v1/PyTorch_resnet50_FP32/19-11-2022_22-48-14.txt). Batch: the
bs tables and benchmark.para print the global batch, BATCH * NUM_GPU (excerpts/lambda_script_resnet50.md);
the per-GPU batch is that divided by the GPU count. Not transcribed (lambda_report.md): BERT SQuAD columns
(their rate is batch * max_steps * GPUs / end-to-end time including start-up, and when two epochs end before
max_steps the formula counts steps never run: 8-GPU rates up to 21x the 1-GPU rate), systems whose GPU has no
preset (PCIe H100/A100, RTX/Ada cards, GH200), the Lambda Cloud V100 VMs (1x, 2x, 4x and 8x are different
instances; which NVLinks a 2- or 4-GPU VM gets is not stated) and systems without a 1-GPU row of their own.
Kept apart from runs.csv: transcribed without any prediction, to be judged once.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, num, row, write_rows = _build.excerpt, _build.num, _build.row, _build.write_rows
_csv, _int = _build.csv_cells, _build.whole

COMMIT = "aa5addb6a53675a649a80036dad548f1c27cbcc4"
DLE_COMMIT = "c1781a370c8f775bb50bd742f5095e66902a0314"
REPO = "lambdal/deeplearning-benchmark"
SOURCE = "Lambda deeplearning-benchmark PyTorch training throughput tables (lambdal/deeplearning-benchmark)"


def _url(path: str) -> str:
    return f"https://github.com/{REPO}/blob/{COMMIT}/{path}"


def _head(name: str, path: str) -> list[str]:
    """The excerpt's lines (the file's line 1 is index 0), after checking its first line names path."""
    head, lines = excerpt(name)
    assert head.startswith(f"<!-- {REPO}@{COMMIT} {path} lines "), head
    return lines


def _sys(name: str, path: str) -> dict:
    """GPU, Motherboard and PyTorch fields of a sys_pytorch.txt excerpt."""
    lines = _head(name, path)
    out = {}
    for ln in lines:
        k, _, v = ln.partition(": ")
        out.setdefault(k.strip(), v.strip())
    return out


SCHEME_DETAIL = (
    "torch.nn.parallel.DistributedDataParallel over NCCL, default buckets, one process per GPU: "
    "LambdaLabsML/DeepLearningExamples@" + DLE_COMMIT[:7] + " (branch lambda/benchmark, which the benchmark "
    "README clones) PyTorch/Classification/ConvNets/image_classification/training.py lines 78-84 "
    "'self.model = DDP(self.model, device_ids=[gpu_id], output_device=gpu_id)' (excerpts/lambda_dle_ddp.md); "
    "launched by pytorch/scripts/benchmark_pytorch.sh lines 34-57 'python ./multiproc.py --nproc_per_node "
    "${NUM_GPU} ./main.py' (excerpts/lambda_script_resnet50.md); AMP is torch.cuda.amp autocast + GradScaler "
    "with fp32 parameters, so gradients travel in fp32 (as runs.csv's DLE PyTorch ResNet-50 rows)")

# (table row prefix, system, gpu preset, intra, sys excerpt, sys path, expected GPU string, hardware words)
V1_SYSTEMS = [
    ("", "A100 80GB SXM4", "lambda-a100-80gb-sxm4", "a100-80gb", "nvswitch-a100", "lambda_sys_a100_sxm4",
     "pytorch/results/8xA100_80GB_SXM4_v1/sys_pytorch.txt", "NVIDIA_A100-SXM4-80GB",
     "8 A100 SXM4 in one server = an HGX A100 8-GPU board, whose GPUs meet through NVSwitch (the 4-GPU HGX "
     "A100 board has no NVSwitch but holds 4); the 1/2/4-GPU runs are assumed to be GPUs of the same server "
     "(the same motherboard in every run's sys_pytorch.txt, runs of 19-11-2022 18:30 to 22:48)"),
    ("", "H100 80GB SXM5", "lambda-h100-sxm5-supermicro", "h100", "nvswitch-h100", "lambda_sys_h100_sxm5",
     "pytorch/results/8xH100_80GB_SXM5_v1/sys_pytorch.txt", "NVIDIA_H100_80GB_HBM3", None),
    ("Dell ", "H100 80GB SXM5", "lambda-h100-sxm5-dell", "h100", "nvswitch-h100", "lambda_sys_h100_dell",
     "pytorch/results/Dell_8xH100_80GB_SXM5_v1/sys_pytorch.txt", "NVIDIA_H100_80GB_HBM3", None),
    ("DellTexas ", "H100 80GB SXM5", "lambda-h100-sxm5-delltexas", "h100", "nvswitch-h100",
     "lambda_sys_h100_delltexas", "pytorch/results/DellTexas_8xH100_80GB_SXM5_v1/sys_pytorch.txt",
     "NVIDIA_H100_80GB_HBM3", None),
    ("SMC ", "H100 80GB SXM5", "lambda-h100-sxm5-smc", "h100", "nvswitch-h100", "lambda_sys_h100_smc",
     "pytorch/results/SMC_8xH100_80GB_SXM5_v1/sys_pytorch.txt", "NVIDIA_H100_80GB_HBM3", None),
    ("1CC ", "H100 80GB SXM5", "lambda-h100-sxm5-1cc", "h100", "nvswitch-h100", "lambda_sys_h100_1cc",
     "pytorch/results/1cc_8xH100_80GB_SXM5_v1/sys_pytorch.txt", "NVIDIA_H100_80GB_HBM3", None),
    ("RAIDZ1 ", "H100 80GB SXM5", "lambda-h100-sxm5-raidz1", "h100", "nvswitch-h100", "lambda_sys_h100_raidz1",
     "pytorch/results/RAIDZ1_8xH100_80GB_SXM5_v1/sys_pytorch.txt", "NVIDIA_H100_80GB_HBM3", None),
]
H100_WORDS = ("'NVIDIA_H100_80GB_HBM3' is the SXM5 part (the PCIe card reports 'H100 PCIe'); 8 of them in one "
              "server = an HGX H100 8-GPU board, whose GPUs meet through NVSwitch (nvswitch-h100); the 1/2/4-GPU "
              "runs are assumed to be GPUs of the same server (same system label, same motherboard line in "
              "each run's sys_pytorch.txt)")

# v2: (system, gpu, intra, sys excerpt, sys path, expected GPU, {gpus: table row name}, words)
V2_SYSTEMS = [
    ("lambda-h200-eng04", "h200", "nvswitch-h100", "lambda_sys_h200_eng04",
     "pytorch/results_v2/LambdaBM_ENG04_8xH200_140GB_SXM_h200_v2/sys_pytorch.txt", "NVIDIA_H200",
     "LambdaBM_ENG04_{n}xH200_140GB_SXM_h200_v2", (1, 8),
     "H200 SXM ('140GB_SXM' in the system name); 8 in one server on an HGX H200 8-GPU board (NVSwitch with "
     "NVLink 4, the h200 preset's --intra nvswitch-h100); the 1-GPU run is on the same named server ENG04"),
    ("lambda-h200-eng04-htoff", "h200", "nvswitch-h100", "lambda_sys_h200_eng04_htoff",
     "pytorch/results_v2/LambdaBM_ENG04_HTOff_8xH200_140GB_SXM_h200_v2/sys_pytorch.txt", "NVIDIA_H200",
     "LambdaBM_ENG04_HTOff_{n}xH200_140GB_SXM_h200_v2", (1, 8),
     "the same ENG04 server with CPU hyper-threading off ('HTOff' in the name); H200 SXM on an HGX H200 "
     "8-GPU board (NVSwitch, nvswitch-h100)"),
    ("lambda-b200-od", "b200", "nvswitch-b200", "lambda_sys_b200_od",
     "pytorch/results_v2/LambdaOD_test_8xB200_192GB_129-213-83-251_v2/sys_pytorch.txt", "NVIDIA_B200",
     "LambdaOD_test_{n}xB200_192GB_129-213-83-251_v2", (1, 2, 4, 8),
     "8 B200 in one Lambda on-demand server (one host address, 129-213-83-251, in all four run names), an "
     "HGX B200 8-GPU board (NVSwitch with NVLink 5, nvswitch-b200); 1/2/4/8 GPUs of that server"),
]

PRECISIONS = {"fp32": "tf32", "fp16": "amp"}  # table -> runs.csv precision
TF32_NOTE = ("the 'fp32' table: PyTorch runs convolutions in TF32 on Ampere and later by default "
             "(torch.backends.cudnn.allow_tf32 = True), so precision tf32 as runs.csv's A100 PyTorch rows")
AMP_NOTE = "the 'fp16' table: DLE ConvNets --amp (torch.cuda.amp, --static-loss-scale 256)"


def v1_rows() -> list[dict]:
    """The v1 tables' 2, 4 and 8-GPU ResNet-50 rows of the servers in V1_SYSTEMS."""
    rows = []
    for tprec, prec in PRECISIONS.items():
        tpath = f"pytorch/pytorch-train-throughput-{tprec}.csv"
        bpath = f"pytorch/pytorch-train-bs-{tprec}.csv"
        th, tb = _csv(_head(f"lambda_v1_throughput_{tprec}", tpath))
        bh, bb = _csv(_head(f"lambda_v1_bs_{tprec}", bpath))
        assert th[:2] == ["name_gpu", "num_gpu"] and bh[:2] == ["name_gpu", "num_gpu"], (th, bh)
        tc, bc = th.index("resnet50"), bh.index("resnet50")
        for prefix, gpu_name, system, gpu, intra, sx, spath, gpu_str, words in V1_SYSTEMS:
            s = _sys(sx, spath)
            assert s["GPU"] == gpu_str, s
            hw = (f"sys_pytorch.txt of the 8-GPU run ({spath}, excerpts/{sx}.md): 'GPU: {s['GPU']}', "
                  f"'Motherboard: {s['Motherboard']}', 'PyTorch Version: {s['PyTorch Version']}'; "
                  + (words or H100_WORDS) + "; one server only (network n/a)")
            one_name = f"{prefix}{gpu_name}"
            l1, c1 = tb[one_name]
            bl1, b1 = bb[one_name]
            assert _int(c1[1]) == 1 and _int(b1[1]) == 1
            one_batch = _int(b1[bc])
            for n in (2, 4, 8):
                name = f"{prefix}{n}x {gpu_name}"
                ln, cells = tb[name]
                bln, bcells = bb[name]
                assert _int(cells[1]) == n and _int(bcells[1]) == n, (cells, bcells)
                gbatch = _int(bcells[bc])
                assert gbatch % n == 0
                rows.append(_ddp_row(
                    tpath, ln, name, system, gpu, intra, hw, s["PyTorch Version"], prec, n, gbatch, num(cells[tc]),
                    num(c1[tc]), one_batch, f"same table, line {l1}, row '{one_name}'",
                    f"{bpath} line {bln} prints the global batch {gbatch} (= per-GPU batch x GPUs, "
                    f"benchmark_pytorch.sh line 45); 1 GPU: line {bl1}, {one_batch}"))
    return rows


def _para(d: str, t: str) -> tuple[int, int]:
    """(global batch, GPUs) of a v2 run's benchmark.para excerpt."""
    path = f"pytorch/results_v2/{d}/PyTorch_resnet50_{t}/benchmark.para"
    lines = _head(f"lambda_para_{d}_{t}", path)
    g = re.fullmatch(r"GLOBAL_BATCH (\d+)", lines[0].strip())
    n = re.fullmatch(r"GPU (\d+)", lines[1].strip())
    return int(g.group(1)), int(n.group(1))


def v2_rows() -> list[dict]:
    """The v2 tables' multi-GPU ResNet-50 rows of the servers in V2_SYSTEMS."""
    rows = []
    for tprec, prec in PRECISIONS.items():
        tpath = f"pytorch/pytorch-train-throughput-v2-{tprec}.csv"
        th, tb = _csv(_head(f"lambda_v2_throughput_{tprec}", tpath))
        assert th[0] == "" and "resnet50" in th, th
        tc = th.index("resnet50")
        t = "FP32" if tprec == "fp32" else "AMP"
        for system, gpu, intra, sx, spath, gpu_str, pattern, counts, words in V2_SYSTEMS:
            s = _sys(sx, spath)
            assert s["GPU"] == gpu_str, s
            hw = (f"sys_pytorch.txt of the 8-GPU run ({spath}, excerpts/{sx}.md): 'GPU: {s['GPU']}', "
                  f"'GPU Memory: {s['GPU Memory']}', 'Motherboard: {s['Motherboard']}'; {words}; one server only "
                  "(network n/a)")
            one = pattern.format(n=1)
            l1, c1 = tb[one]
            gb1, n1 = _para(one, t)
            assert n1 == 1
            for n in counts[1:]:
                name = pattern.format(n=n)
                ln, cells = tb[name]
                gbatch, gn = _para(name, t)
                assert gn == n and gbatch % n == 0
                rows.append(_ddp_row(
                    tpath, ln, name, system, gpu, intra, hw, s["PyTorch Version"], prec, n, gbatch, num(cells[tc]),
                    num(c1[tc]), gb1, f"same table, line {l1}, row '{one}'",
                    f"batch: pytorch/results_v2/{name}/PyTorch_resnet50_{t}/benchmark.para 'GLOBAL_BATCH {gbatch}', "
                    f"'GPU {n}'; 1 GPU: 'GLOBAL_BATCH {gb1}'"))
    return rows


def _ddp_row(tpath: str, line: int, name: str, system: str, gpu: str, intra: str, hw: str, torch_version: str,
             prec: str, n: int, global_batch: int, rate: str, one_rate: str, one_batch: int, one_loc: str,
             batch_note: str) -> dict:
    """One row: the table's ``name`` line at ``n`` GPUs of one HGX server, its 1-GPU rate beside it."""
    return row(
        source=SOURCE, source_url=_url(tpath), source_loc=f"{tpath} line {line}, row '{name}', column 'resnet50'",
        read_from="table", system=system, gpu=gpu, gpus_per_node=8, intra=intra, network="n/a", nics=0,
        hardware_source=hw, framework=f"PyTorch {torch_version} (NGC container), DLE ConvNets "
        "(LambdaLabsML/DeepLearningExamples lambda/benchmark)",
        scheme="pytorch-ddp", scheme_detail=SCHEME_DETAIL, model="resnet50", batch_per_gpu=global_batch // n,
        accumulate=1, precision=prec, grad_wire="fp32", comm_overlap="during-backward", data="synthetic", gpus=n,
        nodes=1, samples_per_s=rate, unit="images/s (all GPUs)", single_gpu_samples_per_s=one_rate,
        single_gpu_batch=one_batch, single_gpu_loc=one_loc, note=_note(prec, batch_note))


def _note(prec: str, batch: str) -> str:
    return "; ".join([
        TF32_NOTE if prec == "tf32" else AMP_NOTE,
        batch,
        "ImageNet-shaped synthetic input (--data-backend synthetic), 100 iterations per run (--prof 100, "
        "config_pytorch_80GB.sh lines 29-60, excerpts/lambda_config_80gb_resnet50.md), the table's value matches the "
        "runs' 'Summary: train.compute_ips' log line (one run in v1; v2 folders hold up to 3 runs)",
        "the scripts at the pinned commit may differ from those the older (v1) runs used"])


def main(out: Path = HERE / "lambda_runs.csv") -> None:
    """Write the rows to ``out`` (lambda_runs.csv)."""
    write_rows(v1_rows() + v2_rows(), out, "m")


if __name__ == "__main__":
    main()
