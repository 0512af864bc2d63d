"""Generator of data/published/schemes_runs.csv: `python data/published/build_schemes.py`.

A family of framework READMEs that print data-parallel schemes side by side, as text, across nodes:

1. Ray's RaySGD benchmark README (ray-project/ray python/ray/util/sgd/torch/examples/benchmarks/README.rst,
   measured 03/04/2020; excerpts/schemes_ray_readme.md, the whole file): ResNet-50, batch 128 per worker,
   synthetic ImageNet-size data, V100 on AWS p3dn.24xlarge, PyTorch 1.4.0, Apex 5633f6d, Horovod 0.19.0.
   Its "Multi Node Results" table puts Horovod (NCCL) beside Ray (wrapping PyTorch DistributedDataParallel),
   each in fp32 and with apex.amp O1, on 1, 2, 4 and 8 instances of 8 GPUs: a scheme pair at every GPU count
   and precision. Its "Single Node Results" table gives the 1-GPU rates (the single-GPU rate of every row of
   this source, Ray (PyTorch) column, fp32 and + Apex) and Ray's 2, 4 and 8 GPU runs in one instance.
2. PyTorch's DDP benchmark README (pytorch/pytorch benchmarks/distributed/ddp/README.md; excerpts/
   schemes_pytorch_ddp_readme.md, the whole file): the example output of benchmark.py, PyTorch 1.4.0a0+05140f0,
   NCCL, batch 32, fp32, synthetic data, on DGX machines with V100 (the `nvidia-smi topo -m` it prints is the
   DGX-1 hybrid cube-mesh with four mlx5 HCAs; "4x 100Gb InfiniBand per machine"): 1 GPU without DDP, then
   DDP on 2, 4 and 8 GPUs of one machine and 16 GPUs on 2 machines, per model. The printed ex/sec is per
   process (benchmark.py prints batch_size / the percentile of the pooled per-rank step times, truncated to an
   integer; excerpts/schemes_setup.md), so a row's samples_per_s is GPUs x the printed p50 ex/sec; the note
   says so and keeps the printed value.

Every number is parsed from the excerpts; the setup each row states (scheme, precision, wire, overlap) comes
from the scripts quoted in excerpts/schemes_setup.md. Kept apart from runs.csv, to be judged once.

Transcribed: every Horovod and Ray cell of the Ray multi-node table (16), the Ray (PyTorch) and Ray + Apex
cells of its single-node table at 2, 4 and 8 GPUs (6), and the p50 of the 1M/2G, 1M/4G, 1M/8G and 2M/8G
lines of the DDP README's first output for resnet50, resnet101 and resnext50_32x4d (12). Not transcribed:
the torch.nn.DataParallel columns (one process driving all GPUs, no scheme of this project's list); the DDP
README's resnext101_32x8d (not in the model library); its 1M/1G line (one GPU); its p75/p90/p95 columns (the
p50 is the median step); its "How to diff" output (bucket_cap_mb=1 against the default 25, printed only as
the test's p75/p95 and a percentage against a baseline run whose own numbers are not printed).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows

# ----------------------------------------------------------------------------------------------- Ray
RAY_COMMIT = "076715486ab66c2b2577eceaa559b7f3681c89d1"
RAY_PATH = "python/ray/util/sgd/torch/examples/benchmarks/README.rst"
RAY_URL = f"https://github.com/ray-project/ray/blob/{RAY_COMMIT}/{RAY_PATH}"
RAY_SOURCE = "Ray RaySGD benchmark README (ray-project/ray, measured 03/04/2020, AWS p3dn.24xlarge)"
P3DN = dict(
    system="aws-p3dn.24xlarge", gpu="v100", gpus_per_node=8, intra="nvlink2", network="eth-100g", nics=1,
    hardware_source="README: 'GPU Type = V100', 'Run on AWS us-east-1c, p3dn.24xlarge instances' (horovod-benchmark."
    "yaml: InstanceType p3dn.24xlarge for head and workers, excerpts/schemes_setup.md). Not stated by the source, "
    "taken from AWS's EC2 P3 instance page (aws.amazon.com/ec2/instance-types/p3/, not retrieved here): "
    "p3dn.24xlarge = 8x V100 SXM2 32 GB on NVLink (the DGX-1-style hybrid cube-mesh, preset nvlink2), 96 vCPUs, "
    "100 Gbps networking (one ENA interface, TCP: nothing in the setup installs EFA/aws-ofi-nccl, so NCCL used "
    "its socket transport; preset eth-100g, one NIC)")
RAY_FRAMEWORK = ("PyTorch 1.4.0 (torch-1.4.0-cp36-cp36m), torchvision 0.5.0, Apex 5633f6d")
DDP_RAY = ("Ray TorchTrainer (RaySGD) wrapping torch.nn.parallel.DistributedDataParallel(model) with default "
           "arguments (25 MB buckets, PyTorch 1.4) after apex setup (distributed_torch_runner.py), backend 'auto' = "
           "nccl with GPUs (torch_trainer.py); one worker process per GPU; benchmark.py (excerpts/schemes_setup.md)")
HVD_RAY = ("Horovod 0.19.0 hvd.DistributedOptimizer, compression = hvd.Compression.none unless --fp16-allreduce "
           "(the README names no fp16 allreduce for these columns), installed with HOROVOD_GPU_ALLREDUCE=NCCL "
           "(horovod-benchmark.yaml); one process per GPU; horovod_benchmark_apex.py (excerpts/schemes_setup.md)")


def _ray_table(lines: list[str], header: str) -> tuple[int, list[tuple[int, list[str]]]]:
    """(line number of the header, [(line number, cells)]) of the code-block table whose first header line is
    ``header``; rows are the lines after the '=======' rule up to the first blank line."""
    start = next(i for i, ln in enumerate(lines) if ln.strip() == header)
    assert all(set(t) == {"="} for t in lines[start + 2].split()), lines[start + 2]
    out = []
    for i in range(start + 3, len(lines)):
        if not lines[i].strip():
            break
        out.append((i + 1, lines[i].split()))
    return start + 1, out


def ray_rows() -> list[dict]:
    head, lines = excerpt("schemes_ray_readme")
    assert head.startswith(f"<!-- ray-project/ray@{RAY_COMMIT} {RAY_PATH} lines 1-{len(lines)}, verbatim"), head
    text = "\n".join(lines)
    for s in ("# Batch size per worker = 128", "# GPU Type = V100", "p3dn.24xlarge instances.",
              "* PyTorch Version: torch-1.4.0-cp36-cp36m", "* Horovod Version: horovod-0.19.0",
              "on synthetic ImageNet data"):
        assert s in text, s
    batch = int(re.search(r"# Batch size per worker = (\d+)", text).group(1))

    # single-node table: Number | DataParallel | Ray (PyTorch) | DataParallel + Apex | Ray (PyTorch) + Apex
    s_hline, s_rows = _ray_table(lines, "Number   DataParallel  Ray (PyTorch)  DataParallel  Ray (PyTorch)")
    assert lines[s_hline].split() == ["of", "GPUs", "+", "Apex", "+", "Apex"], lines[s_hline]
    single = {}  # precision -> (rate, line)
    one_node = []
    for ln, cells in s_rows:
        assert len(cells) == 5, cells
        gpus = int(cells[0])
        for col, precision, label in ((2, "fp32", "Ray (PyTorch)"), (4, "amp", "Ray (PyTorch) + Apex")):
            if gpus == 1:
                single[precision] = (cells[col], ln)
            else:
                one_node.append((ln, gpus, 1, precision, label, "pytorch-ddp", cells[col],
                                 f"{RAY_PATH} line {ln}, 'Single Node Results' table (header line {s_hline}), "
                                 f"row '{cells[0]}', column '{label}'"))
    assert set(single) == {"fp32", "amp"}

    # multi-node table: Number | Horovod | Ray (PyTorch) | Horovod + Apex | Ray (PyTorch) + Apex
    m_hline, m_rows = _ray_table(lines, "Number   Horovod  Ray (PyTorch)  Horovod  Ray (PyTorch)")
    assert lines[m_hline].split() == ["of", "GPUs", "+", "Apex", "+", "Apex"], lines[m_hline]
    multi = []
    for ln, cells in m_rows:
        assert len(cells) == 7 and cells[1] == "*" and cells[2] == "8", cells
        nodes = int(cells[0])
        for col, precision, label, scheme in ((3, "fp32", "Horovod", "horovod-nccl"),
                                              (4, "fp32", "Ray (PyTorch)", "pytorch-ddp"),
                                              (5, "amp", "Horovod + Apex", "horovod-nccl"),
                                              (6, "amp", "Ray (PyTorch) + Apex", "pytorch-ddp")):
            multi.append((ln, nodes * 8, nodes, precision, label, scheme, cells[col],
                          f"{RAY_PATH} line {ln}, 'Multi Node Results' table (header line {m_hline}), "
                          f"row '{nodes} * 8', column '{label}'"))

    rows = []
    for ln, gpus, nodes, precision, label, scheme, value, loc in multi + one_node:
        hvd = scheme == "horovod-nccl"
        one, one_ln = single[precision]
        notes = [f"synthetic data generated once on the GPU; batch {batch} per worker (README)"]
        if precision == "amp":
            notes.append("apex.amp O1 (README: 'with apex.amp enabled (O1)'): fp32 master weights, so the "
                         "gradients exchanged are fp32")
        if hvd:
            notes.append("single-GPU rate from the Ray (PyTorch) column of the single-node table (the source "
                         "prints no 1-GPU Horovod run); the DataParallel column's 1-GPU rate is 355.5 / 776")
        if nodes == 1 and gpus == 8 and not hvd:
            notes.append("the same configuration appears in both tables, measured separately "
                         "(single-node table 2795 / 5862, multi-node table's 1 * 8 row 2962.7 / 6172)")
        rows.append(row(
            source=RAY_SOURCE, source_url=RAY_URL, source_loc=loc, read_from="table", **P3DN,
            framework=RAY_FRAMEWORK + (", Horovod 0.19.0" if hvd else ", Ray RaySGD TorchTrainer"),
            scheme=scheme, scheme_detail=HVD_RAY if hvd else DDP_RAY, model="resnet50", batch_per_gpu=batch,
            accumulate=1, precision=precision, grad_wire="fp32", comm_overlap="during-backward", data="synthetic",
            gpus=gpus, nodes=nodes, samples_per_s=value, unit="images/s", single_gpu_samples_per_s=one,
            single_gpu_batch=batch,
            single_gpu_loc=f"{RAY_PATH} line {one_ln}, 'Single Node Results' table, row '1', column "
            f"'{'Ray (PyTorch)' if precision == 'fp32' else 'Ray (PyTorch) + Apex'}'",
            note="; ".join(notes)))
    return rows


# --------------------------------------------------------------------------------- PyTorch DDP README
DDP_COMMIT = "bf69c149b872e3c19ad493406a6d67ce3e97d716"
DDP_PATH = "benchmarks/distributed/ddp/README.md"
DDP_URL = f"https://github.com/pytorch/pytorch/blob/{DDP_COMMIT}/{DDP_PATH}"
DDP_SOURCE = "PyTorch DDP benchmark README example output (pytorch/pytorch benchmarks/distributed/ddp)"
DDP_MODELS = {"resnet50": "resnet50", "resnet101": "resnet101", "resnext50_32x4d": "resnext50-32x4d"}
DGX1 = dict(
    system="dgx1-v100", gpu="v100", gpus_per_node=8, intra="nvlink2", network="ib-edr", nics=4,
    hardware_source="README: 'DGX machines with V100 GPUs', 'machines with a very fast interconnect (4x 100Gb "
    "InfiniBand per machine)'; its `nvidia-smi topo -m` shows the DGX-1 hybrid cube-mesh (NV1/NV2 between "
    "GPU0-7) and four HCAs mlx5_0-3, each behind a PCIe switch (PIX) with two GPUs; 100 Gb/s InfiniBand = "
    "preset ib-edr; benchmark.py asserts 8 GPUs per machine")
_LINE = re.compile(r"^\s*(\d+) GPUs --\s+(.+?):\s+p50:\s+([0-9.]+)s\s+(\d+)/s\s+p75:")


def ddp_rows() -> list[dict]:
    head, lines = excerpt("schemes_pytorch_ddp_readme")
    assert head.startswith(f"<!-- pytorch/pytorch@{DDP_COMMIT} {DDP_PATH} lines 1-{len(lines)}, verbatim"), head
    end = next(i for i, ln in enumerate(lines) if ln.startswith("## How to diff"))
    text = "\n".join(lines[:end])
    version = re.search(r"\* PyTorch version: (\S+)", text).group(1)
    cuda = re.search(r"\* CUDA version: (\S+)", text).group(1)
    backend = re.search(r"\* Distributed backend: (\S+)", text).group(1)
    assert backend == "nccl"
    rows, model, batch, single = [], None, None, None
    for i, ln in enumerate(lines[:end], start=1):
        m = re.match(r"^Benchmark: (\S+) with batch size (\d+)$", ln)
        if m:
            model, batch, single = m.group(1), int(m.group(2)), None
            continue
        m = _LINE.match(ln)
        if not m:
            continue
        gpus, label, p50_s, rate = int(m.group(1)), m.group(2).strip(), m.group(3), m.group(4)
        if label == "no ddp":
            single = (rate, i)
            continue
        if label == "1M/1G" or model not in DDP_MODELS:
            continue
        machines, per = re.fullmatch(r"(\d+)M/(\d+)G", label).groups()
        assert int(machines) * int(per) == gpus, label
        nodes = int(machines)
        assert single is not None
        rows.append(row(
            source=DDP_SOURCE, source_url=DDP_URL,
            source_loc=f"{DDP_PATH} line {i}, 'Benchmark: {model} with batch size {batch}', line "
            f"'{gpus} GPUs -- {label}', p50 ex/sec",
            read_from="table", **DGX1,
            framework=f"PyTorch {version}, CUDA {cuda}, torch.distributed backend {backend}",
            scheme="pytorch-ddp",
            scheme_detail="torch.nn.parallel.DistributedDataParallel(model, device_ids=[current device], "
            "broadcast_buffers=False, bucket_cap_mb=25 (benchmark.py default --bucket-size 25; the README's "
            "diff calls 25 'the default')), one process per GPU, NCCL; SGD momentum 0.9; benchmark.py "
            "(excerpts/schemes_setup.md)",
            model=DDP_MODELS[model], batch_per_gpu=batch, accumulate=1, precision="fp32", grad_wire="fp32",
            comm_overlap="during-backward", data="synthetic", gpus=gpus, nodes=nodes,
            samples_per_s=gpus * int(rate), unit="images/s",
            single_gpu_samples_per_s=single[0], single_gpu_batch=batch,
            single_gpu_loc=f"same output, line {single[1]}, '1 GPUs -- no ddp' (plain model, no DDP), p50 ex/sec",
            note=f"printed per-process p50: {p50_s}s/iter, {rate}/s (benchmark.py: batch {batch} / the median "
            f"of all ranks' 10 timed steps, truncated to an integer); samples_per_s = {gpus} GPUs x {rate}; "
            f"torch.rand inputs on the GPU (synthetic); "
            + (f"{gpus} of the 8 GPUs of one machine (a partial node)" if nodes == 1 and gpus < 8 else
               "whole machines")))
    return rows


def main(out: Path = HERE / "schemes_runs.csv") -> None:
    """Write the rows to ``out`` (schemes_runs.csv)."""
    write_rows(ray_rows() + ddp_rows(), out, "k")


if __name__ == "__main__":
    main()
