"""Generator of data/published/benchlogs_runs.csv: `python data/published/build_benchlogs.py`.

A family the model had never been checked on, from benchmark result files committed to a public GitHub
repository (not a README table): willgpaik/pytorch-ddp-scaling-benchmark@dc0b8a8 (June 2026), PyTorch
2.12 DistributedDataParallel over NCCL, torchvision ResNet-152 and ViT-B/16 on synthetic on-device data,
mixed precision (autocast fp16 with GradScaler; on the A100 also autocast bf16), one process per GPU on
1, 2, 4 and 8 GPUs of ONE 8-GPU machine (Lambda Cloud instances): 8x V100-SXM2-16GB in the DGX-1 hybrid
cube-mesh (NV1/NV2 in the file's `nvidia-smi topo -m`) and 8x A100-SXM4-80GB all-to-all over NVSwitch
(NV12). Every result file prints its own world size, node count (1), GPUs per node, per-GPU batch,
precision, device name, torch / CUDA version and topology beside the throughput.

Sources: excerpts/benchlogs_ddp_v100_16gb.md and excerpts/benchlogs_ddp_a100_80gb.md (every weak-scaling
JSON result file whole, verbatim), excerpts/benchlogs_ddp_setup.md (README and benchmark_ddp.py lines:
synthetic data, DDP construction, autocast / GradScaler, how images/sec is computed). Kept apart like the
other families: transcribed after the model was fixed, to be judged once against it.

Transcribed: every weak-scaling file with world size 2, 4 or 8 (`images_per_sec_global`, exactly as
printed), each with the 1-GPU weak file of the same GPU, model and precision (same per-GPU batch) as the
single-GPU rate. Not transcribed: the strong-scaling files (per-GPU batch = global / GPUs, while the only
1-GPU runs are at the global batch, so no single-GPU rate at the row's batch exists in the source); no
run crosses nodes (the repository's multi-node sbatch script has no result file).
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

COMMIT = "dc0b8a8746ceb784cd1d0e7f370641b67aa938cd"
REPO_URL = f"https://github.com/willgpaik/pytorch-ddp-scaling-benchmark/blob/{COMMIT}"
SOURCE = "PyTorch DDP scaling benchmark result files (willgpaik/pytorch-ddp-scaling-benchmark@dc0b8a8, June 2026)"
MODELS = {"resnet152": "resnet152", "vit_b_16": "vit-b-16"}  # file's model -> model-library name
SYSTEMS = {  # excerpt -> (system, gpu preset, intra fabric, expected device name, expected topology link, hardware)
    "benchlogs_ddp_v100_16gb": (
        "lambda-8x-v100-sxm2", "v100", "nvlink2", "Tesla V100-SXM2-16GB", "NV2",
        "one 8-GPU instance (Lambda Cloud, README line 5); each result file prints 'device_name': "
        "'Tesla V100-SXM2-16GB', 'nodes': 1, 'gpus_per_node': 8, and an `nvidia-smi topo -m` whose GPU links "
        "are NV1/NV2 with PHB elsewhere: the DGX-1 V100 hybrid cube-mesh (NVLink2); never used across nodes"),
    "benchlogs_ddp_a100_80gb": (
        "lambda-8x-a100-80gb-sxm4", "a100-80gb", "nvswitch-a100", "NVIDIA A100-SXM4-80GB", "NV12",
        "one 8-GPU instance (Lambda Cloud, README line 5); each result file prints 'device_name': "
        "'NVIDIA A100-SXM4-80GB', 'nodes': 1, 'gpus_per_node': 8, and an `nvidia-smi topo -m` with NV12 between "
        "every pair of GPUs: HGX A100 8-GPU board on NVSwitch; never used across nodes"),
}
SCHEME_DETAIL = ("torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank], "
                 "find_unused_parameters=False), default buckets, no comm hook, launched by torchrun one process "
                 "per GPU; SGD momentum 0.9 (benchmark_ddp.py lines 265-266, excerpts/benchlogs_ddp_setup.md)")
_SECTION = re.compile(r"^#### (results/[a-z0-9_]+/(\d+)gpu_weak_([a-z0-9_]+?)_(fp16|bf16)_[0-9-]+\.json)$")
_GLOBAL = re.compile(r'^  "images_per_sec_global": ([0-9]+\.[0-9]+),$')


def _sections(lines: list[str]):
    """(path, gpus, model, precision, first line number in the file, the file's lines) per '#### path' section;
    line numbers count the excerpt's comment as line 1."""
    out, cur = [], None
    for i, ln in enumerate(lines, start=2):
        m = _SECTION.match(ln)
        if m:
            cur = (m.group(1), int(m.group(2)), m.group(3), m.group(4), i + 1, [])
            out.append(cur)
        elif ln.startswith("#### "):
            raise ValueError(f"unexpected section {ln!r}")
        else:
            cur[5].append(ln)
    return out


def _result(path: str, body: list[str]) -> tuple[dict, str, int]:
    """The file's JSON, its global images/sec exactly as printed, and that line's number within the file."""
    data = json.loads("\n".join(body))
    hits = [(j, m.group(1)) for j, ln in enumerate(body, start=1) if (m := _GLOBAL.match(ln))]
    assert len(hits) == 1, path
    line, text = hits[0]
    assert float(text) == data["images_per_sec_global"], path
    return data, text, line


def benchlogs_rows() -> list[dict]:
    rows = []
    for name, (system, gpu, intra, device, link, hardware) in SYSTEMS.items():
        head, lines = excerpt(name)
        assert head.startswith(f"<!-- willgpaik/pytorch-ddp-scaling-benchmark@{COMMIT} results/"), head
        runs = {}
        for path, gpus, model, precision, first, body in _sections(lines):
            data, text, line = _result(path, body)
            assert (data["world_size"], data["model"], data["precision"], data["scaling_mode"]) == \
                (gpus, model, precision, "weak"), path
            assert data["nodes"] == 1 and data["gpus_per_node"] == 8, path
            assert data["device_name"] == device and link in data["nccl_topology"], path
            assert data["global_batch_size"] == data["batch_size_per_gpu"] * gpus, path
            runs[(model, precision, gpus)] = (path, data, text, line, first)
        for (model, precision, gpus), (path, data, text, line, first) in runs.items():
            if gpus == 1:
                continue
            one_path, one, one_text, one_line, _ = runs[(model, precision, 1)]
            assert one["batch_size_per_gpu"] == data["batch_size_per_gpu"], path
            assert one["channels_last"] == data["channels_last"] and not data["compile"], path
            note = [f"precision: torch.amp.autocast dtype {precision}"
                    + (" with GradScaler" if precision == "fp16" else " without a scaler")
                    + " over fp32 weights (benchmark_ddp.py lines 247-279); DDP reduces the fp32 parameter gradients",
                    f"channels_last {str(data['channels_last']).lower()} (ViT is never channels_last, line 256-257)",
                    f"measured {data['bench_steps']} steps over {data['bench_sec_actual']:.0f} s after "
                    f"{data['warmup_steps']} warmup steps; images/sec = per-GPU batch / mean step x world size "
                    "(lines 406-409)",
                    f"{data['torch_version']}, CUDA {data['cuda_version']}"]
            rows.append(row(
                source=SOURCE, source_url=f"{REPO_URL}/{path}",
                source_loc=f"{path} line {line} ('images_per_sec_global'); excerpt {name}.md, section from line {first}",
                read_from="text", system=system, gpu=gpu, gpus_per_node=8, intra=intra, network="n/a", nics=0,
                hardware_source=hardware,
                framework=f"PyTorch {data['torch_version']} (CUDA {data['cuda_version']}), torchvision {data['model']}",
                scheme="pytorch-ddp", scheme_detail=SCHEME_DETAIL, model=MODELS[model],
                batch_per_gpu=data["batch_size_per_gpu"], accumulate=1, precision="amp", grad_wire="fp32",
                comm_overlap="during-backward", data="synthetic", gpus=gpus, nodes=1, samples_per_s=text,
                unit="images/s", single_gpu_samples_per_s=one_text, single_gpu_batch=one["batch_size_per_gpu"],
                single_gpu_loc=f"{one_path} line {one_line} ('images_per_sec_global', world size 1, same per-GPU "
                f"batch and precision)", note="; ".join(note)))
    return rows


def main(out: Path = HERE / "benchlogs_runs.csv") -> None:
    """Write the rows to ``out`` (benchlogs_runs.csv)."""
    write_rows(benchlogs_rows(), out, "w")


if __name__ == "__main__":
    main()
