"""Generator of data/published/paddle2_runs.csv: `python data/published/build_paddle2.py`.

A family the model had never been checked on: the LATER campaigns of PaddlePaddle's performance repository
"Paddle Perf" (PaddlePaddle/Perf), after the Dec 2020 campaign that paddle_runs.csv reads (@ee2e639). Two later
campaigns printed 32-GPU (4 nodes of 8x V100-SXM2-32GB, NVLink hybrid cube-mesh, one 'InfiniBand 100 Gb/sec'
HCA, mlx5_0, per node) throughputs that were measured anew:

* Paddle 2.1 (May-June 2021, @66bad42): the Paddle ResNet50V1.5 and Bert Base reports only (the NGC
  frameworks' 32-GPU cells of that state are the Dec 2020 numbers, carried over). Paddle 2.1.0.post101,
  PaddleClas / PaddleNLP static graph, fleet collective allreduce over NCCL, no gradient accumulation.
* Paddle 2.3 (June 2022, @2106324, "add perf2.3 gpu32 res"): ResNet50V1.5 at batch 256 and BERT-base
  pre-training phase 1 (seq 128) at batch 96, FP32 and AMP, for PaddlePaddle 2.3.0, NGC TensorFlow 1.15
  (Horovod) and NGC PyTorch (DDP): framework (scheme) pairs at the same hardware, GPU count, batch and
  precision. The 1- and 8-GPU runs were on one node of 8x V100-SXM2-32GB (Xeon Gold 6271C), the 32-GPU runs on
  the 4-node cluster, as each report states.

Sources (each excerpt's first line names the repository, commit, path and lines): excerpts/paddle2_v23_*.md and
paddle2_v21_*.md (the reports whole, and paddle2_v2x_setup.md: the launch scripts and the lines of the logs the
reports link that show batch, gradient accumulation / merge steps, world size and NCCL settings), and
excerpts/paddle2_dle_schemes.md (NVIDIA DeepLearningExamples at 4a15e91, the commit the 2.3 NGC reports check
out: how each NGC script exchanges gradients).

Transcribed: every 8- and 32-GPU cell of each report's own result table ("五、测试结果 / 1.Paddle训练性能", or
"四、测试结果" of the NGC reports), with the same table's 1-GPU cell of the same column as the single-GPU rate.
Not transcribed: the Paddle reports' "与业内其它框架对比" comparison tables (they repeat the other reports; the
2.1 one prints TF AMP 32-GPU cells 27528.0 / 33695.0 that the TF report's own table does not, from logs whose
names do not match their columns: tf_gpu32_fp32_bs128.txt averages 27528); MXNet (no 32-GPU run); the 2.1 Paddle
ResNet-50 32-GPU AMP(BS=128) cell (its linked log is the Dec 2020 run, unchanged, so the number cannot be
tied to the 2.1 setup); the 2.1 8-GPU AMP(BS=208) cell ('——'); the Paddle 2.2 (Jan 2022), 2.4 (Dec 2022) and
2.5 (Aug 2023) states: their 32-GPU cells repeat earlier campaigns' numbers (2.2: the 2.1 cells under a new
'FP32(BS=128)' heading; 2.4 and 2.5: the 2.3 cells) and their new V100 and A100 runs are one node only; the
Transformer, HRNet and DeepLabV3+ reports (not in the model library).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows = _build.excerpt, _build.md_table, _build.num, _build.row, _build.write_rows

C21 = "66bad424097db4583dac5dcb0ea78822119188c7"
C23 = "2106324ac15b9fbd38bbb89e4543c630ad087d72"
DLE = "4a15e9146a6516941ba3ae146621a5c94e4bc431"
SOURCE = {C21: "PaddlePaddle Perf repository (PaddlePaddle/Perf@66bad42, Paddle 2.1 campaign, May 2021)",
          C23: "PaddlePaddle Perf repository (PaddlePaddle/Perf@2106324, Paddle 2.3 campaign, June 2022)"}
GPUS_PER_NODE = 8
# the NGC BERT scripts' global batch per optimizer step (run_benchmark.sh, phase 1: 67584)
NGC_SEQUENCES = int(re.search(r"gradient_accumulation_steps=\$\(expr (\d+) ",
                              "\n".join(excerpt("paddle2_v23_bert_pytorch")[1])).group(1))
NET = ("'多机网络部署': 'InfiniBand 100 Gb/sec' and `nvidia-smi topo -m` with NV1/NV2 links (DGX-1 V100 hybrid "
       "cube-mesh) and one HCA, mlx5_0 (ResNet50V1.5/README.md '多机网络部署' block)")
HARDWARE = {
    C21: ("PaddlePaddle/Perf@66bad42 reports, '物理机环境': 1 and 8 GPUs on '单机（单卡、8卡）' 'Tesla V100-SXM2-16GB * 8', "
          "'Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz * 38'; 32 GPUs on '多机（32卡）' 'Tesla V100-SXM2-32GB * 8', "
          "'Intel(R) Xeon(R) Gold 6271C CPU @ 2.60GHz * 48' ('32卡在4台机器下完成'); " + NET +
          ", excerpts/paddle2_v21_rn50_paddle.md"),
    C23: ("PaddlePaddle/Perf@2106324 reports, '物理机环境': 1 and 8 GPUs on '单机（单卡、8卡）' 'Tesla V100-SXM2-32GB * 8', "
          "'Intel(R) Xeon(R) Gold 6271C CPU @ 2.60GHz * 80'; 32 GPUs on '多机（32卡）' 'Tesla V100-SXM2-32GB * 8', "
          "'Intel(R) Xeon(R) Gold 6271C CPU @ 2.60GHz * 48' ('32卡在4台机器下完成'); " + NET +
          ", excerpts/paddle2_v23_rn50_paddle.md; the NGC TensorFlow multi-node script sets NCCL_IB_DISABLE=0, "
          "NCCL_IB_CUDA_SUPPORT=0, NCCL_SOCKET_IFNAME=xgbe0 (tf_test_dist_all.sh, excerpts/paddle2_v23_setup.md)"),
}
MODE_NOTE = {
    C21: ("1- and 8-GPU rates measured on the V100-SXM2-16GB node (Xeon Gold 6148), the 32-GPU rate on four "
          "V100-SXM2-32GB nodes (Xeon Gold 6271C), as the report states"),
    C23: ("1- and 8-GPU rates measured on a V100-SXM2-32GB node (Xeon Gold 6271C x 80), the 32-GPU rate on four "
          "V100-SXM2-32GB nodes (Xeon Gold 6271C x 48), as the report states"),
}
FLEET = ("fleet collective data parallelism launched per GPU (paddle.distributed.launch, --ips of the 4 nodes for 32 "
         "GPUs), gradients allreduced over NCCL in fused groups; overlap with backprop is fleet's default "
         "(excerpts/fleetx_overlap.md), not shown in this report")


def dle(path: str) -> str:
    return f"NVIDIA/DeepLearningExamples@{DLE[:7]} {path} (excerpts/paddle2_dle_schemes.md)"


# (excerpt, commit, path, model, unit, framework, scheme, scheme_detail)
REPORTS = [
    ("paddle2_v21_rn50_paddle", C21, "ResNet50V1.5/README.md", "resnet50", "images/s",
     "PaddlePaddle 2.1.0.post101 (Docker paddle-benchmark:cuda10.1-cudnn7-runtime-ubuntu16.04-gcc82), PaddleClas "
     "15168d2, CUDA 10.1, cuDNN 7.6.5", "nccl-allreduce",
     "PaddleClas static-graph tools/static/train.py, " + FLEET + " (paddle_test_multi_node_all.sh, "
     "excerpts/paddle2_v21_setup.md)"),
    ("paddle2_v21_bert_paddle", C21, "Bert/README.md", "bert-base", "sequences/s (seq 128)",
     "PaddlePaddle 2.1.0.post101 (Docker paddle-benchmark:cuda10.1-cudnn7-runtime-ubuntu16.04-gcc82), PaddleNLP "
     "792e47e examples/language_model/bert/static run_pretrain.py, CUDA 10.1, cuDNN 7.6.5", "nccl-allreduce",
     "run_pretrain.py (AdamW) without gradient merge (the report's run_benchmark.sh / run_multi_node_benchmark.sh "
     "pass no gradient_merge_steps), " + FLEET),
    ("paddle2_v23_rn50_paddle", C23, "ResNet50V1.5/README.md", "resnet50", "images/s",
     "PaddlePaddle 2.3.0.post112 (Docker paddle-benchmark:2.3.0-cuda11.2-cudnn8-runtime-ubuntu16.04), PaddleClas "
     "4003cdb, CUDA 11.2, cuDNN 8.1.1", "nccl-allreduce",
     "PaddleClas ppcls/static/train.py (clas_fp32.sh / clas_fp16.sh, excerpts/paddle2_v23_setup.md), " + FLEET),
    ("paddle2_v23_rn50_tf", C23, "ResNet50V1.5/OtherReports/TensorFlow/README.md", "resnet50", "images/s",
     "NGC TensorFlow 1.15.4+nv (nvcr.io/nvidia/tensorflow:20.12-tf1-py3), DeepLearningExamples 4a15e91, XLA on",
     "horovod-nccl",
     "main.py --mode=training_benchmark under mpirun (one process per GPU; tf_test_dist_all.sh), "
     "hvd.DistributedOptimizer(optimizer) without compression, " +
     dle("TensorFlow/Classification/ConvNets/model/resnet.py lines 338-339")),
    ("paddle2_v23_rn50_pytorch", C23, "ResNet50V1.5/OtherReports/PyTorch/README.md", "resnet50", "images/s",
     "NGC PyTorch (report: nvcr.io/nvidia/pytorch:21.03-py3, PyTorch 1.9.0a0+df837d0), DeepLearningExamples 4a15e91",
     "pytorch-ddp",
     "multiproc.py, one process per GPU (world_size : 32 in the 32-GPU log), torch.nn.parallel."
     "DistributedDataParallel with default buckets, AMP by torch.cuda.amp.autocast (fp32 gradients), " +
     dle("PyTorch/Classification/ConvNets/image_classification/training.py lines 78-97")),
    ("paddle2_v23_bert_paddle", C23, "Bert/README.md", "bert-base", "sequences/s (seq 128)",
     "PaddlePaddle 2.3.0.post112 (Docker paddle-benchmark:2.3.0-cuda11.2-cudnn8-runtime-ubuntu16.04), PaddleNLP "
     "64ac2f4 examples/language_model/bert/static run_pretrain.py, CUDA 11.2, cuDNN 8.1.1", "nccl-allreduce",
     "run_pretrain.py with --gradient_merge_steps $(expr 67584 / $batch_size / 8) = 88 (the report's scripts; the "
     "logs print gradient_merge_steps=88 for 1, 8 and 32 GPUs and 'Find all_reduce operators: 206 ... after fusion, "
     "the number of all_reduce ops is 20'), " + FLEET),
    ("paddle2_v23_bert_tf", C23, "Bert/OtherReports/TensorFlow/README.md", "bert-base", "sequences/s (seq 128)",
     "NGC TensorFlow 1.15.2+nv (report: nvcr.io/nvidia/tensorflow:20.06-tf1-py3), DeepLearningExamples 4a15e91, "
     "XLA on, LAMB", "horovod-nccl",
     "Horovod under mpirun; --allreduce_post_accumulation=True (run_pretraining_lamb_phase1.sh line 109): "
     "hvd.allreduce of each accumulated gradient after the last micro-batch, Compression.fp16 when AMP, " +
     dle("TensorFlow/LanguageModeling/BERT/optimization.py lines 149-157")),
    ("paddle2_v23_bert_pytorch", C23, "Bert/OtherReports/PyTorch/README.md", "bert-base", "sequences/s (seq 128)",
     "NGC PyTorch (report: nvcr.io/nvidia/pytorch:20.06-py3, PyTorch 1.11.0a0+b6df043), DeepLearningExamples "
     "4a15e91, LAMB", "pytorch-ddp",
     "torch.distributed.launch per node; DDP with bucket_cap_mb = the GPU's total memory (one bucket), model.no_sync() "
     "on every micro-batch but the last (--allreduce_post_accumulation), so the one allreduce runs after the last "
     "micro-batch's backward; AMP with --allreduce_post_accumulation_fp16 makes the model fp16 (model.half()), " +
     dle("PyTorch/LanguageModeling/BERT/run_pretraining.py lines 401-406, 440-463, 665-672")),
]
SKIP = {("paddle2_v21_rn50_paddle", "32", "AMP(BS=128)")}  # linked log is the Dec 2020 run (module docstring)
_COL = re.compile(r"^(FP32|AMP|FP16)\(BS=(\d+)\)$")


def _results(lines: list[str]) -> tuple[int, list[tuple[int, str]]]:
    """(header line number, [(line number, text)]) of the report's own result table: the first table whose header
    starts with '|卡数'. Line numbers are the file's (the excerpt's comment line is not counted)."""
    for i, ln in enumerate(lines):
        if ln.strip().startswith("|卡数"):
            rows = []
            for j in range(i, len(lines)):
                if not lines[j].strip().startswith("|"):
                    break
                rows.append((j + 1, lines[j]))
            return i + 1, rows
    raise ValueError("no result table")


def setup_lines(name: str) -> dict[str, list[str]]:
    """{section heading: its verbatim lines} of a setup excerpt (paddle2_v2x_setup.md, paddle2_dle_schemes.md)."""
    _, lines = excerpt(name)
    out, cur = {}, None
    for ln in lines:
        if ln.startswith("## "):
            cur = ln[3:]
            out[cur] = []
        elif cur is not None and ln != "```":
            out[cur].append(ln)
    return out


def _paddle_merge_steps() -> int:
    """gradient_merge_steps of the 2.3 Paddle BERT runs, as the 1-, 8- and 32-GPU logs print it."""
    found = set()
    for key, lines in setup_lines("paddle2_v23_setup").items():
        if key.startswith("Bert/logs/"):
            found |= {int(m.group(1)) for ln in lines if (m := re.search(r"gradient_merge_steps=(\d+)", ln))}
    assert len(found) == 1, found
    return found.pop()


def _pt_bert_acc_32() -> dict[str, int]:
    """Micro-batches per optimizer step of the NGC PyTorch BERT 32-GPU runs: the tqdm micro-batch counter at
    successive 'Training Iteration' log lines (78, 166, 254, 342: 88 apart)."""
    out = {}
    for key, lines in setup_lines("paddle2_v23_setup").items():
        m = re.search(r"phase1_(fp32|fp16)_bs96_gpu32\.log", key)
        if not m or "Training Iteration" not in "".join(lines):
            continue
        counts = [int(c.group(1)) for ln in lines if (c := re.search(r"\| (\d+)/1147 ", ln))
                  and "Training Iteration" in ln]
        out.setdefault(m.group(1), []).extend(counts)
    acc = {}
    for prec, counts in out.items():
        steps = {b - a for a, b in zip(counts, counts[1:])}
        assert len(steps) == 1, (prec, counts)
        acc[prec] = steps.pop()
    return acc


def _tf_bert_acc_32() -> dict[str, float]:
    """Micro-batches per step implied by the NGC TensorFlow BERT 32-GPU logs, which print no accumulation:
    seconds between successive 'Iteration' lines x the printed seq/s / (96 x 32 sequences per micro-batch)."""
    acc = {}
    for key, lines in setup_lines("paddle2_v23_setup").items():
        m = re.search(r"lamb_base_(fp32|fp16)_bs96_gpu32\.log", key)
        if not m:
            continue
        pts = []
        for ln in lines:
            t = re.search(r"DLL \S+ (\d+):(\d+):([\d.]+) - Iteration: (\d+)  throughput_train : ([\d.]+) seq/s", ln)
            if t:
                pts.append((int(t.group(4)), 3600 * int(t.group(1)) + 60 * int(t.group(2)) + float(t.group(3)),
                            float(t.group(5))))
        pts = [p for p in pts if p[0] >= 5]
        ratios = [(b[1] - a[1]) * b[2] / (96 * 32) for a, b in zip(pts, pts[1:]) if b[0] == a[0] + 1]
        acc.setdefault(m.group(1), []).extend(ratios)
    return {k: sum(v) / len(v) for k, v in acc.items()}


def paddle2_rows() -> list[dict]:
    merge = _paddle_merge_steps()
    pt_acc = _pt_bert_acc_32()
    tf_acc = _tf_bert_acc_32()
    assert merge == 88 and pt_acc == {"fp32": 88, "fp16": 88}, (merge, pt_acc)
    # 67584 / 96 / 8 = 88 (num_gpus 8 per node) rather than 67584 / 96 / 32 = 22: the measured spacing decides
    assert all(abs(a - 88) < abs(a - 22) for a in tf_acc.values()) and len(tf_acc) == 2, tf_acc
    rows = []
    for name, commit, path, model, unit, framework, scheme, detail in REPORTS:
        head, lines = excerpt(name)
        n = len(lines) - (1 if lines and lines[-1] == "" else 0)
        assert head == f"<!-- PaddlePaddle/Perf@{commit} {path} lines 1-{len(lines)}, verbatim -->" or \
            head == f"<!-- PaddlePaddle/Perf@{commit} {path} lines 1-{n}, verbatim -->", head
        url = f"https://github.com/PaddlePaddle/Perf/blob/{commit}/{path}"
        hline, table = _results(lines)
        cells = md_table([ln for _, ln in table])
        body_lines = [ln_no for ln_no, ln in table if not re.fullmatch(r"\|?[:\-| ]+\|?", ln.strip())]
        header, body = cells[0], cells[1:]
        assert header[0] == "卡数" and len(body_lines) == len(cells), (name, header)
        assert body[0][0] == "1", name
        one = dict(zip(header, body[0]))
        for line, r in zip(body_lines[2:], body[1:]):
            label = r[0]
            gpus = int(label)
            for col, cell in zip(header[1:], r[1:]):
                if cell.strip() in ("——", "-") or (name, label, col) in SKIP:
                    continue
                prec, bs = _COL.match(col).groups()
                batch = int(bs)
                value, single = num(cell), num(one[col])
                assert value and single, (name, cell)
                precision = "fp32" if prec == "FP32" else "amp"
                notes = [MODE_NOTE[commit]]
                acc, overlap, wire, scheme_detail = 1, "during-backward", "fp32", detail
                single_acc = None
                if name.endswith("_paddle") and precision == "amp":
                    wire = "unknown"
                if model == "resnet50":
                    data = "real"
                    if name.startswith("paddle2_v23_rn50_paddle") and precision == "amp":
                        notes.append("column 'FP16(BS=256)': PaddleClas AMP O2 ('pure_fp16' logs, 'level : O2', "
                                     "ResNet50_amp_O2_ultra.yaml; the comparison table marks the cells '(O2)'), "
                                     "transcribed as amp; DALI on ('use_dali : True' in the 1-GPU log)")
                    elif name.startswith("paddle2_v23_rn50_paddle"):
                        notes.append("ImageNet; the FP32 logs print no use_dali key (clas_fp32.sh adds "
                                     "Global.use_dali=True only for the multi-node launch)")
                    elif name == "paddle2_v23_rn50_tf":
                        notes.append("ImageNet TFRecords (--data_dir, no --use_dali in tf_test_all.sh / "
                                     "tf_test_dist_all.sh); AMP: --use_tf_amp --use_static_loss_scaling")
                    elif name == "paddle2_v23_rn50_pytorch":
                        notes.append("ImageNet with data_backend dali-cpu (the DLE default, printed in the logs); "
                                     "AMP: --amp --static-loss-scale 256; the report: 'torch数据...反复重测了多次未达到"
                                     "官方的标准'")
                    else:
                        notes.append("ImageNet ('本次测试全部在打开 DALI 模式下进行')")
                        if gpus == 32:
                            notes.append("the linked 32-GPU log keeps its Dec 2020 header lines while its step "
                                         "lines are dated 2021-05-08 (excerpts/paddle2_v21_setup.md)")
                else:
                    data = "real"
                    notes.append("BERT-base phase 1, max_seq_len 128, the report's Wikipedia sample set")
                    if name == "paddle2_v23_bert_paddle":
                        acc, single_acc, overlap = merge, merge, "after-backward"
                        notes.append(f"gradient merge {merge} micro-batches per exchange on 1, 8 and 32 GPUs "
                                     f"(logs: gradient_merge_steps={merge}); after-backward read from the 32-GPU log, "
                                     "whose 10-step average rises from 0.595 s to 1.376 s (FP32) once per ~88 "
                                     "micro-batches, not checked in Paddle's code")
                    elif name in ("paddle2_v23_bert_tf", "paddle2_v23_bert_pytorch"):
                        # the NGC scripts: NGC_SEQUENCES per optimizer step, over 8 GPUs per launch
                        tf = name == "paddle2_v23_bert_tf"
                        acc, single_acc = NGC_SEQUENCES // batch // GPUS_PER_NODE, NGC_SEQUENCES // batch
                        overlap, wire = "after-backward", "fp32" if precision == "fp32" else "fp16"
                        if gpus == 32 and tf:
                            notes.append("accumulation 88 inferred: the 32-GPU log prints no accumulation; seconds "
                                         "between its Iteration lines x the printed seq/s / (96 x 32) gives "
                                         f"{tf_acc['fp32' if precision == 'fp32' else 'fp16']:.0f} (88 = run_benchmark.sh's "
                                         "67584 / 96 / 8 with num_gpus 8 per node; 32 would give 22)")
                        elif gpus == 32:
                            notes.append("accumulation 88 from the 32-GPU log (the micro-batch counter at successive "
                                         "'Training Iteration' lines: 78, 166, 254, 342), although the report's "
                                         "command '$mpirun bash ./run_benchmark.sh 96 32 fp32' would give 67584 / 96 / "
                                         "32 = 22")
                        else:
                            key = "num_accumulation_steps_phase1" if tf else "gradient_accumulation_steps"
                            notes.append(f"accumulation 88 = 67584 / 96 / 8 (log: '+ {key}=88')")
                        notes.append("1-GPU rate measured with 704 micro-batches per step (67584 / 96 / 1)")
                        if tf and value == "16142.9":
                            notes.append("the Paddle report's comparison table prints 16142.92")
                    else:  # 2.1 Paddle BERT: no merge
                        if col == "FP32(BS=32)":
                            notes.append("the 1-GPU cell 147.14 equals the Dec 2020 campaign's cell")
                        if col == "AMP(BS=96)":
                            notes.append("the comparison table prints the 1-GPU cell as 622.29")
                if single_acc and name == "paddle2_v23_bert_paddle":
                    notes.append(f"1-GPU rate measured with the same {single_acc} micro-batches per step")
                rows.append(row(
                    source=SOURCE[commit], source_url=url,
                    source_loc=f"{path} line {line}, result table under line {hline}, row '{label}', column '{col}'",
                    read_from="table", system="paddle-perf-v100", gpu="v100", gpus_per_node=GPUS_PER_NODE,
                    intra="nvlink2", network="ib-edr", nics=1, hardware_source=HARDWARE[commit],
                    framework=framework, scheme=scheme, scheme_detail=scheme_detail, model=model,
                    batch_per_gpu=batch, accumulate=acc, precision=precision, grad_wire=wire,
                    comm_overlap=overlap, data=data, gpus=gpus, nodes=-(-gpus // GPUS_PER_NODE),
                    samples_per_s=value, unit=unit, single_gpu_samples_per_s=single, single_gpu_batch=batch,
                    single_gpu_loc=f"same table, line {body_lines[1]}, row '1', column '{col}'",
                    note="; ".join(notes)))
    return rows


def main(out: Path = HERE / "paddle2_runs.csv") -> None:
    """Write the rows to ``out`` (paddle2_runs.csv)."""
    write_rows(paddle2_rows(), out, "h")


if __name__ == "__main__":
    main()
