"""Generator of data/published/ebug_runs.csv: `python data/published/build_ebug.py`.

A family the model had never been checked on: TensorFlow 1.1 parameter servers over gRPC on AWS K80
instances with one GPU per machine (p2.xlarge, 2-128 instances, ~1.25 Gb/s each) and eight GPUs per
machine (p2.8xlarge, 1-16 instances, 10 Gb/s), InceptionV3 at 64 images per GPU, synthetic and real
(local SSD) ImageNet. One source: E. Bugliarello's report "Distributed TensorFlow: a performance
evaluation" (CSCS, measurements of August 2017; e-bug/distributed-tensorflow-benchmarks), whose tables
print, per GPU count, the best of a sweep over the number of parameter servers and the two distributed
variable_update modes: excerpts/ebug_p2xlarge.md and excerpts/ebug_p28xlarge.md (the tables),
excerpts/ebug_setup.md (settings of every table), excerpts/ebug_aws_scripts.md (the launch scripts and
benchmark code that state where the parameter servers run and how images/s is counted) and
excerpts/ebug_aws_network.md (the instances' network figures, from AWS). Kept apart from runs.csv, like
pcie_runs.csv and lumi_runs.csv: transcribed without looking at the model's predictions, and judged
once against the model of its time.

Columns as runs.csv (data/published/README.md). variable_update=distributed_replicated ->
`tf-distributed-replicated`; variable_update=parameter_server run distributed (parameter-server
processes on the instances' CPUs, local_parameter_device=cpu) -> `tf-ps-cpu` with the table's number of
servers, `colocated` on the worker instances (only p2.xlarge rows, one GPU per instance). Not
transcribed: the report's Piz Daint table (benchmarks.tex lines 102-127): gRPC runs over TCP/IP on the
Cray Aries network, and no sourced bandwidth for that path was found (Aries' RDMA rate would overstate
it); see /work/helper_notes/ebug_report.md.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, num, row, write_rows = _build.excerpt, _build.num, _build.row, _build.write_rows

COMMIT = "a0d3d61f4f8994d96b40e1a65e78e5a92ef09741"
PATH = "report/source/benchmarks.tex"
URL = f"https://github.com/e-bug/distributed-tensorflow-benchmarks/blob/{COMMIT}/{PATH}"
SOURCE = ("Bugliarello, 'Distributed TensorFlow: a performance evaluation' (e-bug/distributed-tensorflow-"
          "benchmarks report, CSCS, measured Aug 2017)")
AWS_DOC = "awsdocs/amazon-ec2-user-guide@d1a4d62 doc_source/accelerated-computing-instances.md"
# excerpt name -> (first tex line of the excerpt, system, caption, hardware)
TABLES = {
    "ebug_p2xlarge": (143, "aws-p2.xlarge", "Parameters achieving peak performance on \\textit{p2.xlarge} systems.",
                      dict(gpu="k80", gpus_per_node=1, intra="pcie3", network="1.18Gb/s,15us", nics=1,
                           hardware_source=(
                               "AWS p2.xlarge: one GPU (one GK210 of a K80 board, PCIe 3.0 host link as gpus.toml "
                               "k80), 4 vCPUs (report envis.tex lines 21-25: 'p2.xlarge (1 GPU per node)'; " + AWS_DOC +
                               " lines 62-66). Network: AWS's P2 table in its March 2017 GPU/FPGA briefing "
                               "(speakerdeck.com/porcaro33/gpu-fpga-briefing-plus-march-plus-2017; excerpts/"
                               "ebug_aws_network.md) gives p2.xlarge 'Network Bandwidth* 1.25Gbps' with '*In a "
                               "placement group'; the EC2 User Guide gives p2.xlarge no figure; the report does not "
                               "say whether a placement group was used (spot instances, environments_setup/AWS.md). "
                               "1.18 Gb/s = 1.25 x 1448/1538, the TCP payload share the eth-* presets apply; "
                               "latency 15 us as eth-10g (estimate)"))),
    "ebug_p28xlarge": (186, "aws-p2.8xlarge", "Parameters achieving peak performance on \\textit{p2.8xlarge} systems.",
                       dict(gpu="k80", gpus_per_node=8, intra="pcie3", network="eth-10g", nics=1,
                            hardware_source=(
                                "AWS p2.8xlarge: 8 GPUs = 4 K80 boards of two GK210 each, PCIe 3.0, no NVLink "
                                "(report benchmarks.tex line 24: 'eight GPUs per node (four K80)'; " + AWS_DOC +
                                " lines 62-66); network '10 Gbps', ENA (" + AWS_DOC + " line 100; excerpts/"
                                "ebug_aws_network.md): the eth-10g preset, as runs.csv's aws-p2.8xlarge rows"))),
}
FRAMEWORK = ("TensorFlow 1.1.0, CUDA 8.0 / cuDNN 5.1, tf_cnn_benchmarks (copy in google-benchmarks/), gRPC "
             "(server_protocol default), NCHW, sgd")
_ROW = re.compile(r"^\s*(\d+) & (\d+) & (parameter\\_server|distributed\\_replicated) & (TRUE|FALSE) & "
                  r"([0-9.]+)\\\\\\hline\s*$")
PS_WHERE = ("parameter servers: CPU-only processes (CUDA_VISIBLE_DEVICES empty, run_dist_tf_aws.sh lines 56-60), "
            "one on each of the first {ps} worker instances (remote_google-benchmarks_dist_aws.sh lines 20-21; "
            "benchmarks.tex line 43: 'nodes running Workers also run Parameter Servers')")
SCHEMES = {
    "distributed_replicated": (
        "tf-distributed-replicated",
        "variable_update=distributed_replicated, cross_replica_sync=True (default), local_parameter_device=cpu; "
        "each GPU keeps a copy of the variables and updates it after the servers have the gradients of all "
        "workers (tf_cnn_benchmarks.py lines 158-163); an instance's GPUs aggregate before sending "
        "(benchmarks.tex line 175); "),
    "parameter_server": (
        "tf-ps-cpu",
        "variable_update=parameter_server, local_parameter_device=cpu, run distributed: the variables live on "
        "the parameter-server processes, each tower gets them and sends its gradients there every step "
        "(tf_cnn_benchmarks.py lines 147-152); one GPU per instance, so no in-node reduction is skipped; "),
}


def ebug_rows() -> list[dict]:
    """The p2.xlarge and p2.8xlarge tables' multi-GPU rows, each with its table's 1-GPU rate."""
    rows = []
    for name, (first, system, caption, hw) in TABLES.items():
        head, lines = excerpt(name)
        assert head.startswith(f"<!-- e-bug/distributed-tensorflow-benchmarks@{COMMIT} {PATH} lines {first}-"), head
        assert any(ln.strip() == f"\\caption{{{caption}}}" for ln in lines), name
        assert "\\textbf{Num PSs} & \\textbf{Num GPUs} & \\textbf{Variable Update} & \\textbf{Real Data} & " \
               "\\textbf{Img/s}" in "\n".join(lines), name
        table = []
        for i, ln in enumerate(lines):
            m = _ROW.match(ln)
            if m:
                ps, g, vu, real, rate = m.groups()
                table.append((first + i, int(ps), int(g), vu.replace("\\_", "_"), real, num(rate)))
        assert len(table) == 16, (name, len(table))
        single = {real: (n, ps, vu, rate) for n, ps, g, vu, real, rate in table if g == 1}
        assert set(single) == {"TRUE", "FALSE"}
        caption_plain = caption.replace("\\textit{", "").replace("}", "")
        for n, ps, g, vu, real, rate in table:
            if g == 1:
                continue
            n1, ps1, vu1, rate1 = single[real]
            scheme, detail = SCHEMES[vu]
            nodes = -(-g // hw["gpus_per_node"])
            note = ("the best of a sweep over 1 to (workers) parameter servers and both variable_update modes, "
                    "each the mean of 5 runs of 100 steps after 10 warm-up (benchmarks.tex lines 11-15); "
                    "images/s is each worker's global-step rate x its batch, averaged over the workers "
                    "(tf_cnn_benchmarks.py line 1033, remote_run_dist_benchmarks_aws.sh line 86)")
            if system == "aws-p2.8xlarge":
                note += ("; the 1-GPU row is printed identically in the p2.xlarge table (30.55 / 30.04), "
                         "apparently one run shared by both tables, on an instance the report does not name")
                if nodes == 1:
                    note += f"; {g} GPUs of one p2.8xlarge with its parameter server on the same instance"
            if real == "TRUE":
                note += "; real data: ImageNet read from each instance's local SSD (benchmarks.tex lines 39-40)"
            rows.append(row(
                source=SOURCE, source_url=URL,
                source_loc=f"{PATH} line {n}, table '{caption_plain}', row 'Num PSs {ps} | Num GPUs {g} | {vu} | "
                f"Real Data {real}', column 'Img/s'",
                read_from="table", system=system, **hw, framework=FRAMEWORK, scheme=scheme,
                scheme_detail=detail + PS_WHERE.format(ps=ps), ps_servers=ps, ps_placement="colocated",
                model="inception-v3", batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32",
                comm_overlap="during-backward", data="real" if real == "TRUE" else "synthetic",
                gpus=g, nodes=nodes, samples_per_s=rate, unit="images/s", single_gpu_samples_per_s=rate1,
                single_gpu_batch=64,
                single_gpu_loc=f"same table, line {n1}, row 'Num PSs {ps1} | Num GPUs 1 | {vu1} | Real Data {real}' "
                "(one worker and its parameter server on one instance)",
                note=note))
    return rows


def main(out: Path = HERE / "ebug_runs.csv") -> None:
    """Write the rows to ``out`` (ebug_runs.csv)."""
    write_rows(ebug_rows(), out, "e")


if __name__ == "__main__":
    main()
