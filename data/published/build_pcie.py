"""Generator of data/published/pcie_runs.csv: `python data/published/build_pcie.py`.

A family the model had never been checked on: V100 PCIe servers (4 GPUs per node, no NVLink) across
2-8 nodes over 10 GbE, 100 Gb/s EDR InfiniBand with RDMA, and TCP over that InfiniBand. One source:
the benchmark scripts and results table of Shi et al., "Communication-Efficient Distributed Deep
Learning: Survey, Evaluation, and Challenges" (arXiv 2005.13247, the repository's citation;
HKBU-HPML/ddl-benchmarks): excerpts/hkbu_ddl_results.md (the table) and excerpts/hkbu_ddl_testbed.md
(the scripts that state the testbed and each method's settings). Kept apart from runs.csv: these rows
were transcribed after the model of issue 27 was fixed, and are judged once against it
(docs/validation.md, "V100 PCIe clusters").

Columns as runs.csv (data/published/README.md). Transcribed: the table's methods that perfmodel
expresses (Horovod allreduce with one fused buffer after backprop, Horovod allreduce per tensor during
backprop, and the BytePS parameter server in the same two forms). Not transcribed: MG-WFBP (merging
chosen by a cost model at run time) and ByteScheduler (tensor partitioning and priority scheduling),
which the model has no term for.
"""
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows = _build.excerpt, _build.md_table, _build.num, _build.row, _build.write_rows

COMMIT = "30de09bc38a599d213f5568acf9efeb79505aa42"
URL = f"https://github.com/HKBU-HPML/ddl-benchmarks/blob/{COMMIT}/results/2020-05-29/README.md"
SOURCE = "HKBU-HPML ddl-benchmarks results 2020-05-29 (Shi et al., arXiv 2005.13247)"
MODELS = {"ResNet-50": ("resnet50", "images/s"), "BERT-Large": ("bert-large", "sequences/s (seq len 64)"),
          "BERT-Base": ("bert-base", "sequences/s (seq len 64)")}
# CONNECTION (plots.py CONNECTION_NAMES) -> network fabric preset. "100GbE with TCP/IP" is rdma=2 of
# mgwfbp/horovod_mpi_cj.sh: NCCL and BytePS over sockets on the InfiniBand port ib0 (IPoIB,
# NCCL_IB_DISABLE=1); described by its own label, 100 Gb/s Ethernet.
NETWORKS = {"10GbE with TCP/IP": "eth-10g", "100GbIB with RDMA": "ib-edr", "100GbE with TCP/IP": "eth-100g"}
# METHOD -> (scheme, comm_overlap, scheme_detail); benchmarks.py gen_cmd (testbed excerpt)
METHODS = {
    "BSP-A2A": ("horovod-nccl", "after-backward",
                "method bspa2a: mgwfbp/ DistributedOptimizer (Horovod 0.19 allreduce_async_) with --threshold "
                "536870912: every gradient merged into one allreduce once backprop ends"),
    "WFBP-A2A": ("horovod-nccl", "during-backward",
                 "method wfbp: mgwfbp/ DistributedOptimizer (Horovod 0.19 allreduce_async_) with --threshold 0: "
                 "each gradient allreduced as backprop produces it (Horovod's own fusion buffer and cycle)"),
    "BSP-PS": ("byteps", "after-backward",
               "method bspps: BytePS 0.2 with BYTEPS_FUSION_THRESHOLD=536870912, 4096000-byte partitions; one "
               "server machine per worker machine (byteps/launch.sh nservers = nworkers / 4), servers gpu9, "
               "gpu10, ... apart from the workers (configs/envs.conf)"),
    "WFBP-PS": ("byteps", "during-backward",
                "method wfbpps: BytePS 0.2 with BYTEPS_FUSION_THRESHOLD=0, 4096000-byte partitions; one server "
                "machine per worker machine (byteps/launch.sh nservers = nworkers / 4), servers gpu9, gpu10, "
                "... apart from the workers (configs/envs.conf)"),
}
GPUS_PER_NODE = 4
HARDWARE = ("8 nodes gpu1..gpu8 of 4 GPUs each (configs/cluster32 'slots=4', envs.conf NVIDIA_VISIBLE_DEVICES="
            "0,1,2,3); GPU 'Tesla V100-PCIE-32GB' (the nvprof device line of horovod/resnet50.prof and "
            "horovod/bert.prof; log prefix 'pcie' in benchmarks.py): PCIe cards, no NVLink; networks as "
            "plots.py CONNECTION_NAMES: 10GbE (ETH_INTERFACE), 100 Gb/s InfiniBand on ib0 (one HCA named)")
FRAMEWORK = "PyTorch 1.4, Horovod 0.19, BytePS 0.2, NCCL 2.4 (README prerequisites; envs.conf pytorch1.4)"


def hkbu_rows() -> list[dict]:
    head, lines = excerpt("hkbu_ddl_results")
    assert head.startswith(f"<!-- HKBU-HPML/ddl-benchmarks@{COMMIT} results/2020-05-29/README.md lines 1-67"), head
    header, *body = md_table(lines)
    assert header[:4] == ["DNN", "BS", "CONNECTION", "METHOD"] and header[4:] == [
        "1 GPU", "4 GPUs", "8 GPUs", "16 GPUs", "32 GPUs"], header
    rows = []
    for cells in body:
        dnn, bs, conn, method, one, *multi = cells[:9]
        if method not in METHODS:
            continue
        model, unit = MODELS[dnn]
        scheme, overlap, detail = METHODS[method]
        line = next(i for i, ln in enumerate(lines, start=1) if f"| {dnn} | {bs} | {conn} | {method} |" in ln)
        for gpus, cell in zip((4, 8, 16, 32), multi):
            mean = num(cell.split("+-")[0])
            nodes = gpus // GPUS_PER_NODE
            rows.append(row(
                source=SOURCE, source_url=URL,
                source_loc=f"results/2020-05-29/README.md line {line}, row '{dnn} | {bs} | {conn} | {method}', "
                f"column '{gpus} GPUs' (mean of 5 tries)",
                read_from="table", system="hkbu-v100-pcie-cluster", gpu="v100-pcie", gpus_per_node=GPUS_PER_NODE,
                intra="pcie3", network=NETWORKS[conn], nics=1, hardware_source=HARDWARE, framework=FRAMEWORK,
                scheme=scheme, scheme_detail=detail, ps_servers=nodes if scheme == "byteps" else None,
                ps_placement="dedicated" if scheme == "byteps" else None, model=model, batch_per_gpu=int(bs),
                accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap=overlap, data="synthetic",
                gpus=gpus, nodes=nodes, samples_per_s=mean, unit=unit, single_gpu_samples_per_s=num(one),
                single_gpu_batch=int(bs), single_gpu_loc="same row, column '1 GPU'",
                note=f"connection '{conn}'" + ("; TCP sockets over the InfiniBand port (IPoIB: rdma=2 sets "
                                               "NCCL_IB_DISABLE=1 on ib0), described as 100 Gb/s Ethernet"
                                               if conn == "100GbE with TCP/IP" else "")))
    return rows


def main(out: Path = HERE / "pcie_runs.csv") -> None:
    write_rows(hkbu_rows(), out, "q")


if __name__ == "__main__":
    main()
