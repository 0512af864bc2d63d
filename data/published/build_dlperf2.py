"""Generator of data/published/dlperf2_runs.csv: `python data/published/build_dlperf2.py`.

A family the model had never been checked on: two sets of DLPerf measurements that live only on unmerged
branches of Oneflow-Inc/DLPerf (runs.csv reads DLPerf's master at c89430b, which has neither), both on
DLPerf's cluster of 4 nodes of 8 Tesla V100-SXM2-16GB (NVLink hybrid cube-mesh) with one 100 Gb/s EDR
InfiniBand HCA per node (--node_ips / NODE1..NODE4 = 10.11.0.2-5):

* OneFlow v0.4.0 (June 2021, branch dev_benchmark_oneflow0_4_0 @cbd47c5): "OneFlow ResNet50-V1.5 Benchmark
  Test Report" (FP16 with dynamic loss scale, batch 256 per GPU, ImageNet OFRecords with the GPU image
  decoder) and "BERT base Benchmark Test Report" (FP16 with dynamic loss scale and clipping, batch 160, 128
  and 64 per GPU, sequence length 128); excerpts/dlperf2_of040_rn50.md, excerpts/dlperf2_of040_bert.md
  (the reports whole), excerpts/dlperf2_of040_setup.md (the launch scripts).
* DeepSpeed BERT-base (Oct 2020, branch add_framwork_deepspeed @c202878): "【DLPerf】DeepSpeed - BERT测评",
  DeepSpeedExamples bing_bert with DeepSpeed @1afca8f, PyTorch 1.6.0, NCCL 2.7.3, FP32 at batch 32 and 64 and
  FP16 at batch 64, 128 and 160 per GPU, sequence length 128, real data (Wikipedia hdf5);
  excerpts/dlperf2_deepspeed_bert.md (the README whole), excerpts/dlperf2_deepspeed_setup.md (the launch
  script and the two JSON configs), excerpts/dlperf2_deepspeed_engine.md (DeepSpeed's engine at 1afca8f).

Transcribed: every multi-GPU row of every result table (1x4 where printed, 1x8, 2x8, 4x8), with the same
table's 1-node 1-GPU row (same batch per GPU) as the single-GPU rate. Not transcribed: the earlier rounds of
the OneFlow v0.4.0 reports printed on the same branch before cbd47c5 (ResNet-50 @2d443a3 under a stale
"OneFlow: v0.3.1" environment, and @892601e; BERT @2c3dc1b/bdda2ac: superseded by the final round, same
software), the per-run detail lines of the DeepSpeed README's log-parser output (the table prints their
median), the README's sentence that 1x8 ResNet-50 with num_workers=5 reaches 10859 (prose, no table row).

Schemes. OneFlow: built-in data parallelism, the compiler puts the NCCL gradient allreduce (fused,
nccl_fusion_threshold_mb=16 in the ResNet-50 script) into the training graph, `nccl-allreduce`,
`during-backward`, gradient wire `unknown` (as runs.csv's DLPerf OneFlow AMP rows). DeepSpeed: the launch
script sets train_batch_size = 1024 x the batch per GPU and train_micro_batch_size_per_gpu = the batch, so
DeepSpeed accumulates 1024 / gpus micro-batches between allreduces (accumulate column), and the engine
allreduces (torch.distributed.all_reduce over NCCL, buckets of 5e8 elements) after loss.backward() returns,
at accumulation boundaries only: `nccl-allreduce`, `after-backward`; wire fp16 in FP16 runs (fp32_allreduce
defaults to False), fp32 in FP32 runs. DeepSpeed's SamplesPerSec is per micro-step (the ThroughputTimer
starts in forward and stops in every step() call; each print is a running mean from micro-step 3 on), the
README's parser averages the prints after the first 18, and a run stops after 120 micro-steps, which hold 0
(1x4, 1x8), 1 (2x8) or 3 (4x8) accumulation boundaries: said per row in `note`.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows = _build.excerpt, _build.md_table, _build.num, _build.row, _build.write_rows

REPO = "Oneflow-Inc/DLPerf"
OF040 = "cbd47c51847c3a1a7a7433002b692179f4cdeab5"  # branch dev_benchmark_oneflow0_4_0 (never merged)
DS = "c20287857b1db38dfbea9d96e8f5b64f2b096ded"  # branch add_framwork_deepspeed (never merged)
GPUS_PER_NODE = 8
HEADERS = {
    "dlperf2_of040_rn50": (OF040, "OneFlow/Classification/ConvNets/resnet50v1.5/reports/resnet50_oneflow_v0.4.0_report_0606.md"),
    "dlperf2_of040_bert": (OF040, "OneFlow/LanguageModeling/BERT/reports/bert_base_oneflow_v0.4.0_report_0608.md"),
    "dlperf2_deepspeed_bert": (DS, "DeepSpeed/bert/README.md"),
}
CLUSTER = ("DLPerf's cluster, 4 nodes: NODE1..NODE4 = 10.11.0.2-5 (the DeepSpeed README's 'Training' section; the "
           "OneFlow scripts' NODE_IPS, excerpts/dlperf2_of040_setup.md)")


def _load(name: str) -> tuple[str, str, list[str]]:
    """(commit, path, lines) of a whole-file excerpt; lines[0] is the file's line 1."""
    head, lines = excerpt(name)
    commit, path = HEADERS[name]
    assert head.startswith(f"<!-- {REPO}@{commit} {path} lines 1-{len(lines)}, verbatim ("), head
    return commit, path, lines


def _tables(lines: list[str], heading: re.Pattern):
    """(heading line, heading match, [(line number, cells)]) for each table under a matching heading."""
    out, current = [], None
    for i, ln in enumerate(lines, start=1):
        m = heading.match(ln)
        if m:
            current = (i, m, [])
            out.append(current)
        elif current is not None and ln.startswith("|"):
            cells = md_table([ln])
            if cells:
                current[2].append((i, cells[0]))
        elif current is not None and current[2] and not ln.strip().startswith("|"):
            current = None  # the table ended
    return out


# ------------------------------------------------------------------------------------ OneFlow v0.4.0
OF_HEADING = re.compile(r"^- ### (FP16|batch size = (\d+))\s*$")


def of040_rows() -> list[dict]:
    rows = []
    _, setup = excerpt("dlperf2_of040_setup")
    assert any("--use_fp16" in ln for ln in setup) and any("--gpu_image_decoder=True" in ln for ln in setup)
    assert any("--nccl_fusion_threshold_mb=16" in ln for ln in setup)
    assert any("--seq_length=128" in ln for ln in setup) and any("--vocab_size=30522" in ln for ln in setup)
    assert any("--num_hidden_layers=12" in ln for ln in setup)
    for name, model in (("dlperf2_of040_rn50", "resnet50"), ("dlperf2_of040_bert", "bert-base")):
        commit, path, lines = _load(name)
        assert "- Tesla V100-SXM2-16GB x 8" in lines
        assert "- InfiniBand 100 Gb/sec (4X EDR)， Mellanox Technologies MT27700 Family" in lines
        assert "- Dynamic Loss Scale: 开启" in lines and "- XLA: 未采用" in lines
        of_line = next(i for i, ln in enumerate(lines, 1) if ln.startswith("- OneFlow: "))
        oneflow = re.search(r"\[(v[^\]]+)\]", lines[of_line - 1]).group(1)
        cuda = next(ln for ln in lines if ln.startswith("- CUDA Version: "))[2:]
        bench = re.search(r"\[([0-9a-f]+)\]", next(ln for ln in lines if ln.startswith("- OneFlow-Benchmark: "))).group(1)
        framework = f"OneFlow {oneflow} (OneFlow-Benchmark {bench}); {cuda}"
        env_first = lines.index("## Test Environment") + 1
        env_last = next(i for i, ln in enumerate(lines, 1) if ln.startswith("## Test Descriptions")) - 1
        servers = next(ln for ln in lines if ln.startswith("所有的测试都是在4台")).split("，")[0]
        hardware = (f"the report's 'Test Environment' ({path} lines {env_first}-{env_last} @{commit[:7]}, "
                    f"excerpts/{name}.md): '{servers}', 'InfiniBand 100 Gb/sec (4X EDR)， "
                    "Mellanox Technologies MT27700 Family'; its `nvidia-smi topo -m`: NV1/NV2 links in the DGX-1 V100 "
                    "hybrid cube-mesh and one HCA (mlx5_0) per node; " + CLUSTER)
        if model == "resnet50":
            unit, data_note = "images/s", ("ImageNet OFRecords (--train_data_dir, --gpu_image_decoder=True, "
                                           "rn50_train.sh, excerpts/dlperf2_of040_setup.md)")
            scheme_detail = ("OneFlow's built-in data parallelism: one process per node (--num_nodes/--gpu_num_per_node/"
                             "--node_ips), the compiler puts the NCCL gradient allreduce into the training graph, fused "
                             "(--nccl_fusion_threshold_mb=16 --nccl_fusion_max_ops=24, NCCL_LAUNCH_MODE=PARALLEL; "
                             "rn50_train.sh, excerpts/dlperf2_of040_setup.md)")
        else:
            unit, data_note = "sequences/s (sequence length 128)", ("BERT pre-training OFRecords (--data_dir, "
                                                                    "bert_base_pretrain.sh, excerpts/dlperf2_of040_setup.md)")
            scheme_detail = ("OneFlow's built-in data parallelism: one process per node (--num_nodes/--gpu_num_per_node/"
                             "--node_ips), the compiler puts the NCCL gradient allreduce into the training graph "
                             "(bert_base_pretrain.sh, excerpts/dlperf2_of040_setup.md); the report's heading 'FP16 with "
                             "clip': gradient clipping on")
        for cap_line, m, table in _tables(lines, OF_HEADING):
            header, body = table[0][1], table[1:]
            assert header == ["num_nodes", "gpu_num_per_node", "batch_size_per_device", "throughput", "speedup"], header
            batch = int(m.group(2)) if m.group(2) else int(body[0][1][2])
            parsed = [(ln, int(c[0]), int(c[0]) * int(c[1]), int(c[2]), num(c[3])) for ln, c in body]
            one = [p for p in parsed if p[2] == 1]
            assert len(one) == 1 and one[0][3] == batch
            one_line, one_rate = one[0][0], one[0][4]
            for line, nodes, gpus, bsz, rate in parsed:
                if gpus == 1:
                    continue
                assert bsz == batch and nodes == -(-gpus // GPUS_PER_NODE)
                heading = lines[cap_line - 1].strip()
                notes = ["throughput: the median of 7 runs (the report's 'Test Descriptions')", data_note]
                if model == "resnet50":
                    notes.append("the report sets cnns/ofrecord_util.py num_workers=3 for these runs and says 1x8 "
                                 "reaches 10859 with num_workers=5 (the table's 1x8 prints 9876.88): the data loader "
                                 "sets part of these rates")
                rows.append(row(
                    source=f"DLPerf OneFlow v0.4.0 report {Path(path).name} (Oneflow-Inc/DLPerf@{commit[:7]}, branch "
                           "dev_benchmark_oneflow0_4_0)",
                    source_url=f"https://github.com/{REPO}/blob/{commit}/{path}",
                    source_loc=f"{path} line {line}, table under '{heading}' (line {cap_line}), row 'num_nodes {nodes}, "
                               f"gpu_num_per_node {gpus // nodes}', column 'throughput'",
                    read_from="table", system="dlperf-v100-cluster", gpu="v100", gpus_per_node=GPUS_PER_NODE,
                    intra="nvlink2", network="ib-edr", nics=1, hardware_source=hardware, framework=framework,
                    scheme="nccl-allreduce", scheme_detail=scheme_detail, model=model, batch_per_gpu=batch,
                    accumulate=1, precision="amp", grad_wire="unknown", comm_overlap="during-backward", data="real",
                    gpus=gpus, nodes=nodes, samples_per_s=rate, unit=unit, single_gpu_samples_per_s=one_rate,
                    single_gpu_batch=batch, single_gpu_loc=f"same table, line {one_line} (1 node, 1 GPU)",
                    note="; ".join(notes)))
    return rows


# ---------------------------------------------------------------------------------- DeepSpeed BERT-base
DS_SECTION = re.compile(r"^## BERT-Base  (FP32|FP16)\s*$")
DS_HEADING = re.compile(r"^### batch size=(\d+) & without xla\s*$")
ACC_TOTAL = 1024  # multi_node_train.sh: train_batch_size = BATCH_SIZE * 1024


def deepspeed_rows() -> list[dict]:
    rows = []
    _, setup = excerpt("dlperf2_deepspeed_setup")
    assert "train_batch_size=`expr ${BATCH_SIZE} \\* 1024`" in setup
    assert any('"train_micro_batch_size_per_gpu\\": $BATCH_SIZE' in ln for ln in setup)
    assert any("--max_seq_length 128" in ln for ln in setup)
    assert any('"vocab_size_or_config_json_file": 30522' in ln for ln in setup)
    assert any('"num_hidden_layers": 12' in ln for ln in setup) and any('"hidden_size": 768' in ln for ln in setup)
    assert any("--max_steps_per_epoch 120" in ln for ln in setup)
    assert any("begin_index=args.warmup_batches-2" in ln for ln in setup)
    _, engine = excerpt("dlperf2_deepspeed_engine")
    assert "FP32_ALLREDUCE_DEFAULT = False" in engine
    commit, path, lines = _load("dlperf2_deepspeed_bert")
    assert "- 显卡：Tesla V100-SXM2-16GB x 8" in lines and "- NCCL：2.7.3" in lines
    assert "- **torch 1.6.0 **" in lines
    assert "- NODE1=10.11.0.2" in lines and "- NODE4=10.11.0.5" in lines
    env_first = lines.index("# Environment") + 1
    env_last = lines.index("## Feature support matrix") - 1
    hardware = (f"the README's 'Environment' ({path} lines {env_first}-{env_last} @{commit[:7]}, excerpts/dlperf2_deepspeed_"
                "bert.md): '显卡：Tesla V100-SXM2-16GB x 8'; its 'Training' section: '集群中有4台节点' NODE1..NODE4 = "
                "10.11.0.2-5, DLPerf's cluster, whose nodes the DLPerf reports state as NVLink hybrid cube-mesh with one "
                "'InfiniBand 100 Gb/sec (4X EDR)' HCA (mlx5_0) each (excerpts/dlperf2_of040_rn50.md, Test Environment); "
                "the README itself does not name the network")
    framework = "DeepSpeed @1afca8f (DeepSpeedExamples bing_bert @ba63ad0), torch 1.6.0, CUDA 10.2, NCCL 2.7.3"
    fp32_bug = next(i for i, ln in enumerate(lines, 1) if ln.startswith("#### 注：FP32精度下的多机训练过程中会报错"))
    for cap_line, m, table in _tables(lines, DS_HEADING):
        sections = [(i, DS_SECTION.match(ln).group(1)) for i, ln in enumerate(lines, 1) if DS_SECTION.match(ln)]
        sec_line, prec = max(s for s in sections if s[0] < cap_line)  # the section the table sits in
        batch = int(m.group(1))
        header, body = table[0][1], table[1:]
        assert header == ["node_num", "gpu_num", "samples/s", "speedup"], header
        parsed = [(ln, int(c[0]), int(c[1]), num(c[2])) for ln, c in body]
        one = [p for p in parsed if p[2] == 1]
        assert len(one) == 1
        one_line, one_rate = one[0][0], one[0][3]
        for line, nodes, gpus, rate in parsed:
            if gpus == 1:
                continue
            assert nodes == -(-gpus // GPUS_PER_NODE)
            acc = ACC_TOTAL // gpus
            assert acc * gpus == ACC_TOTAL
            boundaries = len([s for s in range(1, 121) if s % acc == 0])  # boundaries among 120 micro-steps
            notes = [f"accumulate {acc} = train_batch_size (1024 x {batch}) / ({batch} x {gpus} GPUs), "
                     "multi_node_train.sh (excerpts/dlperf2_deepspeed_setup.md); the 1-GPU rate accumulates 1024",
                     "samples/s: the median of 5 runs, each the mean of the SamplesPerSec lines after the first 18 "
                     "(extract_deepspeed_logs.py, excerpts/dlperf2_deepspeed_setup.md); DeepSpeed prints one per "
                     "micro-step, a running mean from micro-step 3 on (ThroughputTimer, excerpts/dlperf2_deepspeed_"
                     "engine.md)",
                     f"a run stops after 120 micro-steps (--max_steps_per_epoch 120 and the README's edit of "
                     f"deepspeed_train.py), which hold {boundaries} accumulation boundar"
                     f"{'y' if boundaries == 1 else 'ies'} (allreduce + optimizer step), against one per {acc} in "
                     "steady state",
                     "Wikipedia hdf5 from NVIDIA's scripts (--use_nvidia_dataset), real data; gradient clipping 1.0 "
                     "(the DeepSpeed config)"]
            if prec == "FP32" and nodes > 1:
                notes.append(f"the README (line {fp32_bug}) says FP32 multi-node training raises "
                             "'UnboundLocalError: lr_this_step' (a DeepSpeedExamples bug) yet prints these rates")
            if gpus == 32 and float(rate) / float(one_rate) > 32:
                notes.append(f"printed speedup above {gpus} (super-linear), transcribed as printed")
            rows.append(row(
                source=f"DLPerf DeepSpeed BERT README (Oneflow-Inc/DLPerf@{commit[:7]}, branch add_framwork_deepspeed)",
                source_url=f"https://github.com/{REPO}/blob/{commit}/{path}",
                source_loc=f"{path} line {line}, table under '{lines[cap_line - 1].strip()}' (line {cap_line}) in "
                           f"'{lines[sec_line - 1].strip()}' (line {sec_line}), row 'node_num {nodes}, gpu_num {gpus}', "
                           "column 'samples/s'",
                read_from="table", system="dlperf-v100-cluster", gpu="v100", gpus_per_node=GPUS_PER_NODE,
                intra="nvlink2", network="ib-edr", nics=1, hardware_source=hardware, framework=framework,
                scheme="nccl-allreduce",
                scheme_detail=("DeepSpeed engine data parallelism (no ZeRO in the config): backward() runs "
                               "loss.backward() and then, at gradient accumulation boundaries only, "
                               "buffered_allreduce_fallback -> dist.all_reduce of flattened buckets over NCCL "
                               "(deepspeed/runtime/engine.py lines 751-765, 823-856, 1016-1040 @1afca8f, excerpts/"
                               "dlperf2_deepspeed_engine.md); deepspeed launcher, one process per GPU, "
                               "NCCL_TREE_THRESHOLD=0 (multi_node_train.sh)"),
                model="bert-base", batch_per_gpu=batch, accumulate=acc,
                precision="fp32" if prec == "FP32" else "amp",
                grad_wire="fp32" if prec == "FP32" else "fp16", comm_overlap="after-backward", data="real",
                gpus=gpus, nodes=nodes, samples_per_s=rate, unit="sequences/s (sequence length 128)",
                single_gpu_samples_per_s=one_rate, single_gpu_batch=batch,
                single_gpu_loc=f"same table, line {one_line} (1 node, 1 GPU)", note="; ".join(notes)))
    return rows


def main(out: Path = HERE / "dlperf2_runs.csv") -> None:
    """Write the rows to ``out`` (dlperf2_runs.csv)."""
    write_rows(of040_rows() + deepspeed_rows(), out, "i")


if __name__ == "__main__":
    main()
