"""Generator of data/published/oneflow_runs.csv: `python data/published/build_oneflow.py`.

A family the model had never been checked on: OneFlow's own benchmark reports in its OneFlow-Benchmark
repository (not DLPerf): "OneFlow ResNet50-V1.5 Benchmark Test Report" and "OneFlow BERT Pretrain Benchmark
Test Report" (reports/resnet50_v15_fp32_report.md, reports/bert_fp32_report.md), OneFlow v0.1.8, FP32 without
XLA, real data (ImageNet / BERT pre-training OFRecords), 1, 2, 4 and 8 GPUs in one node and 2 and 4 nodes of
8 Tesla V100-SXM2-16GB (NVLink hybrid cube-mesh) with one 100 Gb/s EDR InfiniBand HCA each: the four nodes
that DLPerf later used (the reports' --node_ips are DLPerf's NODE1..NODE4). Two measurement sets, both
printed at fixed commits of the repository:

* the Aug 8 (ResNet-50) and Aug 9 2020 (BERT) runs, OneFlow v0.1.8 fix_infer_out_logical_blob_desc@17a2bdc9b:
  the reports as they stand (@de4698a, unchanged since 503009c), excerpts/oneflow_rn50.md and
  excerpts/oneflow_bert.md;
* the Aug 13 2020 runs, OneFlow v0.1.8 master@4d44113e2 with NCCL 2.4.8 (logs
  of_leinao_benchmark_log_0813): the reports @6bf68cf (Aug 14), whose ResNet-50 and BERT-base tables were
  replaced on Aug 18 (5c1a5f8) by the Aug 8/9 tables again; excerpts/oneflow_rn50_0813.md and
  excerpts/oneflow_bert_0813.md.

Neither set is a DLPerf measurement: DLPerf's OneFlow reports (runs.csv) are the Aug 21/22 runs of OneFlow
v0.1.9 and later, with other numbers. (Older DLPerf README versions, before c89430b, quoted the Aug 8
ResNet-50 numbers as a OneFlow comparison column; runs.csv takes nothing from those versions.)

Columns as runs.csv (data/published/README.md). Transcribed: every row of every result table with 2 or more
GPUs, with the same table's 1-GPU row (same batch per device) as the single-GPU rate. ResNet-50 at batch 128
and 160, BERT-base (sequence length 128) at batch 32, 64 and 96, BERT-large (sequence length 512) at batch 4.
Not transcribed: the BERT-large table of the @6bf68cf version (the same Aug 9 table as the current report,
unchanged), and that table's last row (1 GPU at batch 6, no multi-GPU run at that batch). Scheme: OneFlow's
built-in data parallelism (consistent view; the compiler inserts the gradient allreduce, over NCCL, into the
training graph, where it runs as soon as each gradient exists), `nccl-allreduce`, `during-backward`, as the
DLPerf OneFlow rows of runs.csv. excerpts/oneflow_setup.md: the scripts' configuration (consistent view, real
data when a data directory is given, BERT's AdamW with global-norm gradient clipping); excerpts/oneflow_cluster.md:
DLPerf's node list.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows = _build.excerpt, _build.md_table, _build.num, _build.row, _build.write_rows

REPO = "Oneflow-Inc/OneFlow-Benchmark"
NOW = "de4698a7acce3cca2eaf1564eaf25d59c9954b86"  # the reports as they stand (last changed by 503009c, Dec 2020)
AUG13 = "6bf68cfef0dcb772a7e4e163983988ee560b1efc"  # the Aug 13 2020 tables (replaced on Aug 18 by 5c1a5f8)
RN50 = "reports/resnet50_v15_fp32_report.md"
BERT = "reports/bert_fp32_report.md"
REPORTS = [  # excerpt, commit, path, skip BERT-large (already taken)
    ("oneflow_rn50", NOW, RN50, False),
    ("oneflow_bert", NOW, BERT, False),
    ("oneflow_rn50_0813", AUG13, RN50, True),
    ("oneflow_bert_0813", AUG13, BERT, True),
]
CAPTION = re.compile(r"^(ResNet50 V1\.5|BERT Base Pretrain|BERT Large Pretrain), batch size per device=(\d+), "
                     r"dtype=float32, without XLA\s*$")
MODELS = {"ResNet50 V1.5": "resnet50", "BERT Base Pretrain": "bert-base", "BERT Large Pretrain": "bert-large"}
GPUS_PER_NODE = 8
SETUP = "excerpts/oneflow_setup.md"
SCHEME_DETAIL = (
    "OneFlow's built-in data parallelism: the scripts name no distribution strategy; cnns sets "
    "config.default_logical_view(flow.scope.consistent_view()) (Classification/cnns/job_function_util.py line 23 "
    "@892f87e6, the reports' 'OneFlow-Benchmark: master@892f87e6'; " + SETUP + "), and OneFlow's compiler puts the "
    "gradient allreduce (NCCL) into the training graph; one process per node, --num_nodes/--gpu_num_per_node/"
    "--node_ips as the reports' local_run.sh")


def _env(lines: list[str], key: str) -> tuple[int, str]:
    """(file line, text) of the report's '- key: text' environment line."""
    for i, ln in enumerate(lines, start=1):
        if ln.startswith(f"- {key}: "):
            return i, ln[len(f"- {key}: "):].strip()
    raise ValueError(f"no '- {key}:' line")


def _tables(lines: list[str]):
    """(caption line number, model label, batch, [(line number, line)]) for each result table."""
    out, current = [], None
    for i, ln in enumerate(lines, start=1):
        m = CAPTION.match(ln)
        if m:
            current = (i, m.group(1), int(m.group(2)), [])
            out.append(current)
        elif current is not None and ln.startswith("|"):
            current[3].append((i, ln))
        elif current is not None and current[3]:
            current = None  # the table ended
    return out


def _seq_lengths(lines: list[str]) -> list[int]:
    """The --seq_length of each local_run.sh the report prints, in order (BERT base, then BERT large)."""
    return [int(m.group(1)) for ln in lines if (m := re.match(r"\s*--seq_length=(\d+)", ln))]


def _cell(header: list[str], cells: list[str], *names: str) -> str:
    for n in names:
        if n in header:
            return cells[header.index(n)]
    raise ValueError(f"none of {names} in {header}")


def oneflow_rows() -> list[dict]:
    rows = []
    for name, commit, path, skip_large in REPORTS:
        head, lines = excerpt(name)
        n = len(lines)
        assert head.startswith(f"<!-- {REPO}@{commit} {path} lines 1-{n}, verbatim"), head
        # lines[0] is the file's line 1 (the excerpt is the whole file)
        date = re.search(r"benchmark test results on (\w+ \d+ \d{4})", lines[1]).group(1)
        of_line, oneflow = _env(lines, "OneFlow")
        _, bench = _env(lines, "OneFlow-Benchmark")
        _, cuda = _env(lines, "CUDA Version")
        assert "- Tesla V100-SXM2-16GB x 8" in lines
        assert "- InfiniBand 100 Gb/sec (4X EDR)， Mellanox Technologies MT27700 Family" in lines
        assert any("--node_ips='10.11.0.2','10.11.0.3','10.11.0.4','10.11.0.5'" in ln for ln in lines)
        assert "Data type of all tests is `Float32`, XLA is not applied." in lines
        framework = f"OneFlow {oneflow} (OneFlow-Benchmark {bench}); CUDA Version: {cuda}"
        seqs = _seq_lengths(lines)
        url = f"https://github.com/{REPO}/blob/{commit}/{path}"
        env_first = lines.index("## Test Environment") + 1
        env_last = lines.index("## Test Descriptions")  # the line before it (1-based: its index)
        while not lines[env_last - 1].strip():
            env_last -= 1
        hardware = (f"the report's 'Test Environment' ({path} lines {env_first}-{env_last} @{commit[:7]}, "
                    f"excerpts/{name}.md): "
                    "'4 GPU Servers with 8x Tesla V100-SXM2-16GB', 'InfiniBand 100 Gb/sec (4X EDR)， Mellanox "
                    "Technologies MT27700 Family'; its `nvidia-smi topo -m`: NV1/NV2 links in the DGX-1 V100 hybrid "
                    "cube-mesh and one HCA (mlx5_0) per node; --node_ips 10.11.0.2-5 are DLPerf's NODE1..NODE4 "
                    "(DLPerf Megatron-LM/README.md lines 86-92, excerpts/oneflow_cluster.md)")
        for cap_line, label, batch, table in _tables(lines):
            model = MODELS[label]
            if model == "bert-large" and skip_large:
                continue  # the Aug 9 BERT-large table, already taken from the current report
            if model == "resnet50":
                unit = "images/s"
            else:
                seq = seqs[0] if model == "bert-base" else seqs[1]
                assert (model, seq) in (("bert-base", 128), ("bert-large", 512)), (model, seq)
                unit = f"sequences/s (sequence length {seq})"
            kept = [(i, ln) for i, ln in table if md_table([ln])]  # header and data lines, separators dropped
            header, *body = md_table([ln for _, ln in kept])
            assert len(body) == len(kept) - 1
            parsed = []
            for (line, _), cells in zip(kept[1:], body):
                nodes = int(cells[0])
                gpus = int(_cell(header, cells, "gpu num", "device num"))
                bsz = int(_cell(header, cells, "bsz/gpu", "bsz per device"))
                rate = num(_cell(header, cells, "Throughput", "throughput"))
                if "gpu num/node" in header or "gpus/nodes" in header:
                    assert int(_cell(header, cells, "gpu num/node", "gpus/nodes")) * nodes == gpus
                parsed.append((line, nodes, gpus, bsz, rate))
            one = [p for p in parsed if p[2] == 1 and p[3] == batch]
            assert len(one) == 1, (name, label, batch)
            one_line, _, _, _, one_rate = one[0]
            for line, nodes, gpus, bsz, rate in parsed:
                if gpus == 1:
                    continue  # the single-GPU rate (and BERT-large's 1-GPU batch-6 row)
                assert bsz == batch and nodes == -(-gpus // GPUS_PER_NODE), (name, line)
                rows.append(row(
                    source=f"OneFlow-Benchmark {Path(path).name} ({REPO}@{commit[:7]}), measured {date}",
                    source_url=url,
                    source_loc=f"{path} line {line}, table under '{label}, batch size per device={batch}' (line "
                               f"{cap_line}), row 'node num {nodes}, gpu num {gpus}', column 'Throughput'",
                    read_from="table", system="dlperf-v100-cluster", gpu="v100", gpus_per_node=GPUS_PER_NODE,
                    intra="nvlink2", network="ib-edr", nics=1, hardware_source=hardware, framework=framework,
                    scheme="nccl-allreduce", scheme_detail=SCHEME_DETAIL, model=model, batch_per_gpu=batch,
                    accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward", data="real",
                    gpus=gpus, nodes=nodes, samples_per_s=rate, unit=unit, single_gpu_samples_per_s=one_rate,
                    single_gpu_batch=batch, single_gpu_loc=f"same table, line {one_line} (1 node, 1 GPU)",
                    note=_note(model, commit, of_line)))
    return rows


def _note(model: str, commit: str, of_line: int) -> str:
    notes = ["throughput: the mean of the samples/s printed every 20 of 200 iterations, the first print dropped "
             "(the report's 'Calculate Throughput' section)"]
    if model == "resnet50":
        notes.append("ImageNet OFRecords (--train_data_dir; of_cnn_train_val.py reads real data when it is given, "
                     + SETUP + ")")
    else:
        notes.append("BERT pre-training OFRecords (--data_dir); AdamW with gradient clipping by global norm 1.0 "
                     "(LanguageModeling/BERT/util.py lines 164-171 @892f87e6, " + SETUP + ")")
    if commit == AUG13:
        notes.append(f"the Aug 13 2020 tables of this report (OneFlow line {of_line}: master@4d44113e2 with NCCL "
                     "2.4.8), printed from 0ef4712 to 6bf68cf and replaced on Aug 18 (5c1a5f8) by the Aug 8/9 "
                     "tables; a separate measurement of the same setting")
    if model == "bert-large":
        notes.append("16 GPUs on 2 nodes print 74.224 (8.40x) against 64.519 on one node of 8 (7.30x); "
                     "transcribed as printed")
    return "; ".join(notes)


def main(out: Path = HERE / "oneflow_runs.csv") -> None:
    """Write the rows to ``out`` (oneflow_runs.csv)."""
    write_rows(oneflow_rows(), out, "g")


if __name__ == "__main__":
    main()
