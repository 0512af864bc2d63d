"""Generator of data/published/fleetx_runs.csv: `python data/published/build_fleetx.py`.

A family the model had never been checked on: PaddlePaddle's own FleetX benchmark pages (Oct 2020,
"Resnet50性能基准" and "VGG16模型训练性能基线"), static-graph PaddlePaddle 2.0-dev with
`paddle.distributed.fleet` collective training, ResNet-50 and VGG16 on ImageNet, FP32 and AMP at several
batches per GPU, on 1 GPU, one node of 8 and 2 and 4 nodes of Baidu X-Man 2.0 (8x V100 SXM2 in the DGX-1
hybrid cube-mesh, one 100 Gb/s EDR InfiniBand HCA per node). Sources: excerpts/fleetx_resnet50.md and
excerpts/fleetx_vgg16.md (the two pages whole, with their version table, `nvidia-smi topo -m` and results),
excerpts/fleetx_setup.md (the benchmark README's hardware and the scripts), excerpts/fleetx_paddle_strategy.md
and excerpts/fleetx_overlap.md (how fleet collective exchanges gradients). Kept apart from runs.csv, like
pcie_runs.csv and lumi_runs.csv: transcribed after the model was fixed, to be judged once against it.

Columns as runs.csv (data/published/README.md). Transcribed: every multi-GPU cell (1 x 8, 2 x 8, 4 x 8) of
the FP32 and AMP tables of both pages, with the same table's 1 x 1 cell of the same batch as the single-GPU
rate. Not transcribed: the "自动并行" (`dist_strategy.auto = True`) tables, whose text says the single-card
run may use other options than the multi-card runs, so their speedup is not meaningful ("这里注意单机单开的
自动并行开启的选项可能和多卡不同，因此加速比不具备参考意义").
"""
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows = _build.excerpt, _build.md_table, _build.num, _build.row, _build.write_rows

COMMIT = "9a459a1cb031c3c00169700316893c61622aba46"
SOURCE = "PaddlePaddle FleetX benchmark pages, Oct 2020 (PaddlePaddle/PaddleFleetX docs/source/paddle_fleet)"
PAGES = [  # excerpt, path in the repository, model-library name
    ("fleetx_resnet50", "docs/source/paddle_fleet/fleet_benchmark_resnet50_cn.md", "resnet50"),
    ("fleetx_vgg16", "docs/source/paddle_fleet/fleet_benchmark_vgg16_cn.md", "vgg16"),
]
COLUMNS = {"1 x 8": (8, 1), "2 x 8": (16, 2), "4 x 8": (32, 4)}  # column -> (gpus, nodes)
GPUS_PER_NODE = 8
HARDWARE = ("Baidu X-Man 2.0 instances, '8x NVIDIA® Tesla® V100' each (the pages' version table), "
            "'Tesla V100-SXM2-32GB x 8' and 'InfiniBand 100 Gb/sec (4X EDR), Mellanox Technologies MT27700 "
            "Family' (benchmark/paddle/README.md lines 7-8, excerpts/fleetx_setup.md); the pages' "
            "`nvidia-smi topo -m`: 6 NVLinks per GPU (NV2 to two GPUs, NV1 to two) in the DGX-1 V100 hybrid "
            "cube-mesh, and one HCA (mlx5_0) per node; multi-node link: '多GPU实例互联信息 | InfiniBand 100 Gb/sec'")
SCHEME_DETAIL = (
    "fleet collective: fleet.init(is_collective=True), one process per GPU (MultiGPUTrainer, "
    "FLAGS_selected_gpus), fleet.distributed_optimizer with the page's DistributedStrategy (nccl_comm_num = 1, "
    "num_threads = 2; benchmark/paddle/*_benchmark*.py, excerpts/fleetx_setup.md); gradients allreduced over "
    "NCCL 2.4.7 in fused groups (DistributedStrategy defaults fuse_all_reduce_ops = true, fuse_grad_size_in_MB "
    "= 32, use_hierarchical_allreduce = false, sync_nccl_allreduce = true: PaddlePaddle/Paddle@0033fd5 "
    "paddle/fluid/framework/distributed_strategy.proto lines 119-125, a 2.0-era copy, excerpts/"
    "fleetx_paddle_strategy.md); overlapped with backprop by default (FleetX overlap.rst line 27: "
    "'飞桨分布式默认实现计算和通信的重叠', excerpts/fleetx_overlap.md)")


def _version(lines: list[str], key: str) -> str:
    """A cell of the page's version table ('| key | value |'), '' when blank."""
    for ln in lines:
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] == key:
            return cells[1]
    raise ValueError(f"no {key!r} in the version table")


def _tables(lines: list[str]):
    """(heading line number, heading, [(line number, cells)]) for each '- 单位' heading and the table under it."""
    out, current = [], None
    for i, ln in enumerate(lines, start=1):
        if ln.startswith("- 单位"):
            current = (i, ln.strip(), [])
            out.append(current)
        elif current is not None and ln.startswith("|"):
            current[2].append((i, ln))
    return out


def fleetx_rows() -> list[dict]:
    """The FP32 and AMP tables' 1x8, 2x8 and 4x8 cells of both pages, each with its row's 1x1 rate."""
    rows = []
    for name, path, model in PAGES:
        head, lines = excerpt(name)
        n = len(lines)
        assert head == f"<!-- PaddlePaddle/PaddleFleetX@{COMMIT} {path} lines 1-{n}, verbatim " \
                       f"(setup, hardware and results, {model}) -->", head
        # lines[0] is the file's line 1 (the excerpt is the whole file)
        paddle_commit = _version(lines, "Paddle Github Commit")
        fleetx_commit = _version(lines, "FleetX Github Commit")
        cuda = _version(lines, "CUDA / CUDNN版本")
        nccl_dali = _version(lines, "NCCL / DALI 版本")
        assert _version(lines, "多GPU实例互联信息") == "InfiniBand 100 Gb/sec"
        assert _version(lines, "单实例GPU") == "8x NVIDIA® Tesla® V100"
        framework = ("PaddlePaddle 2.0-dev static graph + FleetX (paddle.distributed.fleet; "
                     + (f"Paddle commit {paddle_commit[:8]}, FleetX commit {fleetx_commit[:8]}"
                        if paddle_commit else "commits not printed on this page") +
                     f"), CUDA / cuDNN {cuda}, NCCL / DALI {nccl_dali}")
        url = f"https://github.com/PaddlePaddle/PaddleFleetX/blob/{COMMIT}/{path}"
        for hline, heading, table in _tables(lines):
            if "自动并行" in heading:
                continue  # dist_strategy.auto tables: not transcribed (module docstring)
            if "FP32" in heading:
                precision = "fp32"
            elif "AMP" in heading:
                precision = "amp"
            else:
                raise ValueError(f"unknown table heading {heading!r}")
            header, *body = md_table([ln for _, ln in table])
            assert header == ["batch / node", "1 x 1", "1 x 8", "2 x 8", "4 x 8"], header
            for cells in body:
                bs, one = cells[0], num(cells[1])
                line = next(i for i, ln in table if ln.startswith(f"| {bs} |"))
                for col, cell in zip(header[2:], cells[2:]):
                    gpus, nodes = COLUMNS[col]
                    rows.append(row(
                        source=SOURCE, source_url=url,
                        source_loc=f"{path} line {line}, table under line {hline} ({precision.upper()}), "
                        f"row 'batch {bs}', column '{col}' (median of 7 runs)",
                        read_from="table", system="baidu-xman2-v100", gpu="v100", gpus_per_node=GPUS_PER_NODE,
                        intra="nvlink2", network="ib-edr", nics=1, hardware_source=HARDWARE, framework=framework,
                        scheme="nccl-allreduce", scheme_detail=SCHEME_DETAIL, model=model, batch_per_gpu=int(bs),
                        accumulate=1, precision=precision, grad_wire="fp32" if precision == "fp32" else "unknown",
                        comm_overlap="during-backward", data="real", gpus=gpus, nodes=nodes,
                        samples_per_s=num(cell), unit="images/s", single_gpu_samples_per_s=one,
                        single_gpu_batch=int(bs), single_gpu_loc=f"same table, line {line}, column '1 x 1'",
                        note=_note(model, precision)))
    return rows


def _note(model: str, precision: str) -> str:
    notes = ["batch per GPU: the table's row (the scripts pass it as the per-process DataLoader batch_size, "
             "one process per GPU); ImageNet read from local SSD"]
    if model == "resnet50" and precision == "fp32":
        notes.append("input: fleetx's Python image reader (resnet_benchmark_without_amp.py, use_dali default False)")
    if model == "resnet50" and precision == "amp":
        notes.append("input: DALI, NHWC (resnet_benchmark_amp.py)")
    if model == "vgg16" and precision == "fp32":
        notes.append("input: fleetx's Python image reader (vgg_benchmark.py, use_dali default False)")
    if model == "vgg16" and precision == "amp":
        notes.append("no AMP VGG16 script in the repository; the page prints its DistributedStrategy only; "
                     "input pipeline not stated")
    if precision == "amp":
        notes.append("gradient wire not settled (fleet AMP keeps fp32 master weights; not checked in code)")
    return "; ".join(notes)


def main(out: Path = HERE / "fleetx_runs.csv") -> None:
    """Write the rows to ``out`` (fleetx_runs.csv)."""
    write_rows(fleetx_rows(), out, "f")


if __name__ == "__main__":
    main()
