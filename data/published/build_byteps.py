"""Generator of data/published/byteps_runs.csv: `python data/published/build_byteps.py`.

A family searched for under "parameter server against allreduce across nodes" (BytePS vs Horovod/NCCL,
and other parameter-server vs allreduce comparisons with printed throughputs). BytePS itself prints its
comparisons only as figures (bytedance/byteps README.md and docs/performance.md: bar charts on
user-images.githubusercontent.com; the OSDI'20 paper's evaluation is figures too), and its GitHub issues
give scattered single numbers without a single-GPU rate, so no BytePS row is transcribed. What is
transcribed is the one text table of that kind found: Horovod's own README of Sept 2017
(horovod/horovod@d54e3a8, "Update README (#19)", Horovod 0.9.4; the tables stayed until PR #44 replaced
them by a chart on 2017-10-17), two benchmarks by Uber with tf_cnn_benchmarks, batch 64 per GPU:

* 4 servers of 4 Pascal GPUs, "RoCE-capable 25 Gbit/s network", 16 GPUs: Distributed TensorFlow
  (parameter servers over gRPC, variables cached on the GPUs or on the CPU), Horovod with MPI allreduce in
  host memory over TCP and over RDMA, Horovod with NCCL over TCP and over RDMA; InceptionV3, ResNet-101,
  VGG-16;
* 16 servers of 4 Pascal GPUs, "plain 40 Gbit/s network", 64 GPUs: the same without the RDMA rows.

Each table prints its own single-GPU rate ("Baseline single-GPU (batch size=64)"). Every multi-GPU cell
is transcribed (30 rows, all across nodes, no one-node run printed). Numbers are printed with thousands
separators and bold marks ("**2,073.3 (15.4x)**"): both are dropped and the speedup in parentheses is not
used (it is checked against the rate / baseline, to 0.1x). Not transcribed: the README's earlier table
(horovod/horovod@68ea592 to @57d2e73, Aug 2017, "16 Pascal GPUs", measured before Tensor Fusion and
replaced by these tables), whose servers and network are not stated.

Sources of the setup (excerpts/byteps_*.md): the tables (byteps_horovod_readme_tables.md), how Uber ran
them (issue #21: Uber's tf_cnn_benchmarks fork, `mpirun -n 16 -H host1:4,...`, `--batch_size 64`, no
`--data_dir`, median of several runs), the baseline's mode (issue #246: "plain `grpc` + `parameter_server`
as of TensorFlow 1.3.0"), the servers (issue #979: "PCIx based Pascal servers: Dual PCIx root. 2 GPUs per
CPU."), tf_cnn_benchmarks' distributed parameter_server code of the time (tensorflow/benchmarks@615c4ff:
the towers' gradients are summed on the worker's CPU and applied on the parameter servers, variables
spread over the ps tasks), its --horovod_device flag (allreduce on cpu or gpu), and the README's Tensor
Fusion and RDMA notes. Assumptions (not stated by the source; the report lists them): GPU preset p100
("Pascal" only), intra pcie3, one NIC per server, synthetic data, fp32, one tf_cnn_benchmarks worker per
server with its 4 GPUs and one parameter server task per server on the same servers, TensorFlow 1.3.0 for
all rows, the 40 Gbit/s TCP link given as a figure (no 40 GbE fabric preset).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, row, write_rows = _build.excerpt, _build.md_table, _build.row, _build.write_rows

COMMIT = "d54e3a886486decc8cd21f5fbdfc34da9b16d7ee"
URL = f"https://github.com/horovod/horovod/blob/{COMMIT}/README.md"
SOURCE = "Horovod README benchmark tables, Sept 2017 (horovod/horovod README.md@d54e3a8)"
FIRST_LINE = 25  # the excerpt's first text line is README.md line 25
MODELS = {"Inception V3": "inception-v3", "ResNet-101": "resnet101", "VGG-16": "vgg16"}
TFBENCH = "tensorflow/benchmarks@615c4ff"

# TCP over Ethernet: the payload share of the wire the eth-* fabric presets use (1448 payload bytes per
# 1538-byte frame at MTU 1500) and their 15 us latency; used for the 40 Gbit/s link, which has no preset.
TCP_SHARE = 1448 / 1538
TCP_LATENCY = "15us"

FRAMEWORK_TF = ("TensorFlow 1.3.0 (issue #246, said of the Distributed TensorFlow baseline), tf_cnn_benchmarks "
                "with gRPC parameter servers")
FRAMEWORK_HVD = ("TensorFlow (1.3.0 assumed, as the baseline), tf_cnn_benchmarks in Uber's Horovod fork "
                 "(alsrgv/benchmarks, issue #21), Horovod 0.9.x (0.9.4 at the README's commit), Open MPI")

# row label -> (scheme, transport: "tcp"/"rdma"/None, scheme_detail)
SCHEMES = {
    "Distributed TensorFlow": (
        "tf-distributed-replicated", None,
        "the README's 'Distributed TensorFlow': variable_update=parameter_server in distributed mode over gRPC, "
        "TF 1.3.0 (issue #246); local_parameter_device=gpu (default: each tower caches the variables on its "
        "GPU). In that mode tf_cnn_benchmarks (" + TFBENCH + " variable_mgr.py VariableMgrDistributedFetchFromPS "
        "and tf_cnn_benchmarks.py lines 461-478) sums the towers' gradients under replica_device_setter("
        "worker_device=<worker>/cpu:0), i.e. on the worker's CPU, and applies them on the parameter server task "
        "holding each variable (variables spread by GreedyLoadBalancingStrategy): one reduced gradient per worker "
        "to sharded servers, the data flow of this scheme; the scheme name is the nearest in the list, not the "
        "source's variable_update"),
    "Distributed TensorFlow (variables on CPU)": (
        "tf-distributed-replicated", None,
        "the README's 'Distributed TensorFlow (variables on CPU)': as 'Distributed TensorFlow' (variable_update="
        "parameter_server, distributed, gRPC, TF 1.3.0, issue #246) with the variables cached on the worker's CPU "
        "(local_parameter_device=cpu: OverrideCachingDevice on the CPU, " + TFBENCH + " variable_mgr.py lines "
        "531-539; reading 'variables on CPU' as that flag is an assumption); gradients summed on the worker's CPU "
        "and applied on the sharded parameter servers"),
    "TCP Horovod (allreduce on CPU)": (
        "horovod-mpi", "tcp",
        "Horovod (hvd.allreduce per gradient, Tensor Fusion, overlapped with backprop: README lines 516-530) with "
        "the allreduce on the CPU (tf_cnn_benchmarks --horovod_device=cpu: hvd.allreduce(grad, device_dense="
        "'/cpu:0'), tensorflow/benchmarks@f5a01ff benchmark_cnn.py lines 1901-1909): gradients copied to host "
        "memory and summed by Open MPI's allreduce over TCP"),
    "RDMA Horovod (allreduce on CPU)": (
        "horovod-mpi", "rdma",
        "Horovod with the allreduce on the CPU (--horovod_device=cpu): Open MPI allreduce in host memory over "
        "RDMA (RoCE; the README's openib receive-queue setting for RoCE or InfiniBand, README lines 169-174, "
        "and issue #21's mpirun)"),
    "TCP Horovod (allreduce on GPU with NCCL)": (
        "horovod-nccl", "tcp",
        "Horovod built with HOROVOD_GPU_ALLREDUCE=NCCL, allreduce on the GPU (--horovod_device=gpu, issue #21): "
        "NCCL 2 over TCP sockets; Tensor Fusion, overlapped with backprop (README lines 516-530)"),
    "RDMA Horovod (allreduce on GPU with NCCL)": (
        "horovod-nccl", "rdma",
        "Horovod built with HOROVOD_GPU_ALLREDUCE=NCCL, allreduce on the GPU (--horovod_device=gpu, issue #21): "
        "NCCL 2 over RDMA (RoCE; the commit's message says 'NCCL now supports RoCE'); Tensor Fusion, overlapped "
        "with backprop"),
}

_SETUP = re.compile(r"^The (first|second) benchmark was done on (\d+) servers with (\d+) Pascal GPUs each "
                    r"connected by (RoCE-capable|plain) (\d+) Gbit/s network:$")
_CELL = re.compile(r"^(?:\*\*)?([0-9][0-9,]*\.[0-9]+) \(([0-9.]+)x\)(?:\*\*)?$")


def _rate(cell: str) -> tuple[str, str]:
    """('2073.3', '15.4') from '**2,073.3 (15.4x)**': the rate without thousands separators, and the speedup."""
    m = _CELL.match(cell)
    assert m, cell
    return m.group(1).replace(",", ""), m.group(2)


def _network(kind: str, gbit: int, transport: str | None) -> tuple[str, str]:
    """(network, how it was chosen) for a benchmark's link and a row's transport."""
    if gbit == 25 and kind == "RoCE-capable":
        if transport == "rdma":
            return "roce-25g", "RDMA over the 'RoCE-capable 25 Gbit/s network': roce-25g"
        return "eth-25g", ("TCP over the 'RoCE-capable 25 Gbit/s network': eth-25g" if transport == "tcp" else
                           "gRPC (TCP) over the 'RoCE-capable 25 Gbit/s network': eth-25g")
    if gbit == 40 and kind == "plain":
        assert transport != "rdma"
        figure = f"{gbit / 8 * TCP_SHARE:.4g}GB/s,{TCP_LATENCY}"
        return figure, (f"TCP over the 'plain 40 Gbit/s network', no fabric preset: given as {figure} = 40 Gb/s x "
                        "1448/1538 (TCP payload per frame at MTU 1500) and 15 us, the rule and latency of the "
                        "eth-25g/eth-100g presets")
    raise ValueError(f"unknown network {kind} {gbit}")


def byteps_rows() -> list[dict]:
    """Every multi-GPU cell of the README's two benchmark tables."""
    head, lines = excerpt("byteps_horovod_readme_tables")
    assert head.startswith(f"<!-- horovod/horovod@{COMMIT} README.md lines 25-49, verbatim"), head
    blocks, cur = [], None  # (setup line number, setup match, [(line number, text)])
    for i, ln in enumerate(lines):
        m = _SETUP.match(ln)
        if m:
            cur = (FIRST_LINE + i, m, [])
            blocks.append(cur)
        elif cur is not None and ln.startswith("|"):
            cur[2].append((FIRST_LINE + i, ln))
    assert [b[1].group(1) for b in blocks] == ["first", "second"]
    rows = []
    for hline, m, table in blocks:
        servers, per_server, kind, gbit = int(m.group(2)), int(m.group(3)), m.group(4), int(m.group(5))
        header, *body = md_table([ln for _, ln in table])
        assert header[0] == "Setup" and header[1:] == list(MODELS), header
        assert body[0][0] == "Baseline single-GPU (batch size=64)", body[0]
        singles = body[0][1:]
        batch = int(re.search(r"batch size=(\d+)", body[0][0]).group(1))
        gm = re.fullmatch(r"On (\d+) GPUs", body[1][0])
        gpus = int(gm.group(1))
        assert gpus == servers * per_server and all(c == "x" for c in body[1][1:])
        system = f"uber-pascal-{servers}x{per_server}-{'roce25g' if gbit == 25 else 'eth40g'}"
        which = "first" if gbit == 25 else "second"
        for cells in body[2:]:
            label = cells[0]
            scheme, transport, detail = SCHEMES[label]
            line = next(n for n, ln in table if ln.split("|")[1].strip() == label)  # the row whose first cell is label
            network, net_note = _network(kind, gbit, transport)
            tf_ps = scheme == "tf-distributed-replicated"
            for col, cell, single in zip(header[1:], cells[1:], singles):
                rate, speedup = _rate(cell)
                assert abs(float(rate) / float(single) - float(speedup)) <= 0.051, (label, col, rate, speedup)
                rows.append(row(
                    source=SOURCE, source_url=URL,
                    source_loc=f"README.md line {line}, {which} benchmark table (under line {hline}, {gpus} GPUs), "
                               f"row '{label}', column '{col}'",
                    read_from="table", system=system, gpu="p100", gpus_per_node=per_server, intra="pcie3",
                    network=network, nics=1,
                    hardware_source=(
                        f"README.md line {hline}: '{servers} servers with {per_server} Pascal GPUs each connected by "
                        f"{kind} {gbit} Gbit/s network'; issue #979 (alsrgv): 'PCIx based Pascal servers: 1. Dual "
                        "PCIx root. 2. 2 GPUs per CPU.' (exact models not shared). Assumed: the p100 preset for "
                        "'Pascal' (the model is not named; the preset's peaks are the SXM2 part's), intra pcie3 "
                        "(two GPUs under each CPU's root), one NIC per server; " + net_note),
                    framework=FRAMEWORK_TF if tf_ps else FRAMEWORK_HVD,
                    scheme=scheme, scheme_detail=detail,
                    ps_servers=servers if tf_ps else None, ps_placement="colocated" if tf_ps else None,
                    model=MODELS[col], batch_per_gpu=batch, accumulate=1, precision="fp32", grad_wire="fp32",
                    comm_overlap="during-backward", data="synthetic", gpus=gpus, nodes=servers,
                    samples_per_s=rate, unit="images/s", single_gpu_samples_per_s=single, single_gpu_batch=batch,
                    single_gpu_loc=f"same table, README.md line {table[2][0]}, row 'Baseline single-GPU "
                                   f"(batch size={batch})', column '{col}'",
                    note=_note(tf_ps, gbit)))
    return rows


def _note(tf_ps: bool, gbit: int) -> str:
    notes = ["rate printed with a thousands separator and bold marks where over 999 or best (dropped); speedup in "
             "parentheses not used",
             "batch 64 per GPU from the baseline row and issue #21's --batch_size 64 (tf_cnn_benchmarks' batch is "
             "per GPU); synthetic data assumed (issue #21's command has no --data_dir); fp32 (no fp16 flag); "
             "Uber's method: median 'Total images/sec' of worker 0 over several runs (issue #21)"]
    if tf_ps:
        notes.append("one worker task per server driving its 4 GPUs and one parameter server task per server on "
                     "the same servers are assumed (ps_servers, ps_placement): the README does not say how many "
                     "parameter servers ran or where")
    if gbit == 40:
        notes.append("the second benchmark's own single-GPU rates (higher than the first's: other servers)")
    return "; ".join(notes)


def main(out: Path = HERE / "byteps_runs.csv") -> None:
    """Write the rows to ``out`` (byteps_runs.csv)."""
    write_rows(byteps_rows(), out, "b")


if __name__ == "__main__":
    main()
