"""Generator of data/published/awsblog_runs.csv: `python data/published/build_awsblog.py`.

A family the model had never been checked on: the scalability table AWS's deep-learning team published
for Apache MXNet's parameter-server kvstore on a cluster of up to 16 AWS P2.16xlarge instances (16 K80
GPUs each, 20 Gb/s Ethernet), Dec 2016: AlexNet (batch 512 per GPU), Inception-v3 (32) and ResNet-152
(32), 1 to 256 GPUs, printed as images/s. Source: apache/mxnet example/image-classification/README.md,
"Scalability Results" (Mu Li, PR #4167, 8 Dec 2016; excerpts/awsblog_mxnet_readme.md). The same table is
printed again in MXNet's "Large Scale Image Classification" tutorial (Indhu Bharathi, May 2017;
excerpts/awsblog_mxnet_tutorial.md), which adds the cluster's network ("20 Gbps ethernet") and links the
AWS Compute Blog post "Distributed Deep Learning Made Easy" (excerpts/awsblog_compute_blog.md) for the
CloudFormation cluster; the one cell the two printings differ in is ResNet-152 on 1 GPU (README 20.08,
tutorial 20.8; the README, the earlier printing, is used and the build checks that every other cell
agrees). How the runs were made: the README's own section above the table documents
example/image-classification/benchmark.py (Naveen Swamy, AWS), whose series is the table's (1, 2, 4, 8, 16
GPUs on one instance with kv-store `device`, then 2, 4, 8, 16 instances of 16 GPUs with
`dist_sync_device`, two server processes per instance, synthetic data, images/s summed over the workers;
excerpts/awsblog_mxnet_benchmark_py.md), and the kvstore code of the README's commit
(excerpts/awsblog_mxnet_scheme.md). The instance's network from AWS (excerpts/awsblog_p2_network.md).
Kept apart from runs.csv, like the other helper families: transcribed without running the model, to be
judged once.

Columns as runs.csv (data/published/README.md). Transcribed: every multi-GPU cell (2-256 GPUs) of the
three model columns, with the same column's 1-GPU cell as the single-GPU rate. Not transcribed: the
table's 1-GPU row (no exchange), the "model size (MB)" row (used only in the notes), the README's
convergence figure (training curves, no rates).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows = _build.excerpt, _build.md_table, _build.num, _build.row, _build.write_rows

COMMIT = "2829115275698ef3f515703ffb31cba3cb26ea9e"
PATH = "example/image-classification/README.md"
FIRST_LINE = 205  # the excerpt's first line after its comment is the README's line 205
URL = f"https://github.com/apache/mxnet/blob/{COMMIT}/{PATH}"
TUTORIAL_COMMIT = "6f9a67901362a794e3c022dd75daf8a516760fea"
SOURCE = ("Apache MXNet example/image-classification README, 'Scalability Results' (AWS P2.16xlarge cluster, "
          "Dec 2016; apache/mxnet PR #4167)")
COLUMNS = {"`alexnet`": "alexnet", "`inception-v3`": "inception-v3", "`resnet-152`": "resnet152"}
GPUS_PER_NODE = 16
SYSTEM = "aws-p2.16xlarge"
TCP_SHARE = 1448 / 1538  # TCP payload per 1538-byte Ethernet frame at MTU 1500, as the eth-* fabric presets


def _network() -> str:
    """The LINK text of the tutorial's '20 Gbps ethernet' at the TCP payload share, with eth-10g's 15 us."""
    _, lines = excerpt("awsblog_mxnet_tutorial")
    gbps = {float(m.group(1)) for ln in lines if (m := re.search(r"interconnected via (\d+) Gbps ethernet", ln))}
    assert len(gbps) == 1, gbps
    return f"{gbps.pop() * TCP_SHARE:.1f}Gb/s,15us"


def _servers_per_node() -> int:
    """Parameter servers per worker node that benchmark.py launches (`'-s', str(num_nodes*K)`)."""
    _, lines = excerpt("awsblog_mxnet_benchmark_py")
    ks = {int(m.group(1)) for ln in lines if (m := re.search(r"'-s', str\(num_nodes\*(\d+)\)", ln))}
    assert len(ks) == 1, ks
    return ks.pop()
HARDWARE = (
    "AWS p2.16xlarge: 16 GPUs = 8 Tesla K80 boards of two GK210 each (gpus.toml k80 = one GK210), PCIe 3.0, "
    "no NVLink (README: 'Hardware: 16x AWS P2.16xlarge with 256 GPUs in total'; tutorial: '16 machines (P2.16x "
    "instances), each containing 16 GPUs (Tesla K80)'; EC2 User Guide: 'P2 instances support NVIDIA GPUDirect "
    "peer to peer transfers'). Network: the tutorial: 'These machines are interconnected via 20 Gbps ethernet'; "
    "AWS's P2 slide of March 2017: p2.16xlarge 'Network Bandwidth* ... 20Gbps', '*In a placement group' "
    "(excerpts/awsblog_p2_network.md; the EC2 User Guide of Feb 2018 lists 25 Gbps, ENA). 18.8 Gb/s = "
    "20 x 1448/1538, the TCP payload share the eth-* presets apply (as ebug_runs.csv's p2.xlarge rows); "
    "latency 15 us as eth-10g (estimate); one ENA interface per instance; placement group not stated")
FRAMEWORK = ("MXNet (dmlc/mxnet master of Nov-Dec 2016; python/mxnet/libinfo.py __version__ '0.7.0' at the README's "
             "commit), example/image-classification train_imagenet.py via benchmark.py, AWS Deep Learning AMI, "
             "CUDA 7.5, cuDNN 5.1 (README 'Software')")
SCHEME_ONE = (
    "mxnet-kvstore-device",
    "kv-store device on one instance (benchmark.py lines 152-174, 196-203: 'use kv_store=device when running "
    "on 1 node', train_imagenet.py run directly, no servers): KVStoreLocal with device communication "
    "(kvstore.cc lines 25-27, 40-41) reduces each parameter's gradients on the GPUs and updates there "
    "(update_on_kvstore, model.py lines 52-75); one push and one pull per parameter, priority -index, "
    "issued to MXNet's asynchronous dependency engine (model.py lines 87-96)")
SCHEME_DIST = (
    "mxnet-dist-device-sync",
    "kv-store dist_sync_device across instances (benchmark.py lines 204-207; README: 'Synchronized SGD is used, "
    "namely --kv-store dist_device_sync'): the GPUs of an instance sum their gradients (device communication), "
    "the worker pushes the sum to the parameter servers, which update in sync mode, and pulls the weights "
    "(kvstore.cc lines 25-35; model.py lines 52-75, 87-96); servers: launch.py -n <instances> -s "
    "<2 x instances> (benchmark.py line 160), placed by dmlc-core's ssh launcher round-robin over the host "
    "file, servers first (ssh.py lines 71-73): two server processes and one worker on every instance")


def _table(lines: list[str], first: str) -> tuple[int, list[list[str]]]:
    """(excerpt index of the header, cells) of the markdown table whose header starts with ``first``."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| {first} "))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, md_table(lines[start:end])


def _tutorial_cells() -> dict[tuple[str, str], str]:
    """{(#GPUs, column): cell} of the tutorial's printing of the same table."""
    head, lines = excerpt("awsblog_mxnet_tutorial")
    assert head.startswith(f"<!-- apache/mxnet@{TUTORIAL_COMMIT} docs/tutorials/vision/large_scale_classification.md "
                           "lines 171-259, verbatim"), head
    assert any("interconnected via 20 Gbps ethernet" in ln for ln in lines)
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("|Number of GPUs"))
    end = start
    while end < len(lines) and lines[end].strip().startswith("|"):
        end += 1
    header, *body = md_table([ln.strip() for ln in lines[start:end]])
    assert header == ["Number of GPUs", "Alexnet", "Inception-v3", "Resnet-152"], header
    names = dict(zip(header[1:], COLUMNS))
    return {(cells[0], names[h]): c for cells in body for h, c in zip(header[1:], cells[1:])}


def _note(model: str, gpus: int) -> str:
    notes = ["the README does not name the script that made the table: its scheme, servers and synthetic data "
             "are read from benchmark.py, which the README documents just above the table and whose series "
             "(1-16 GPUs on one instance, then 2-16 instances) and speedup-vs-ideal plot the table and figure "
             "follow; images/s = the sum over workers of MXNet's Speedometer rate at Batch [30] (benchmark.py "
             "lines 129-135)"]
    if gpus <= GPUS_PER_NODE:
        notes.append("one instance: kv-store device per benchmark.py, although the README's sentence names "
                     "dist_device_sync for the whole table")
    if model == "alexnet":
        notes.append("MXNet's symbol/alexnet.py (224x224 input, no padding in conv1, 256x5x5 into fc1; 96-256-384-"
                     "384-256 filters) has ~50.8M parameters, the README's 'model size (MB) 203'; the library's "
                     "alexnet (61.1M, 256x6x6 into fc6) stands for it and carries ~20% more gradient")
    if model == "inception-v3":
        notes.append("MXNet's symbol/inception-v3.py has no auxiliary classifier (README 'model size (MB) 95', "
                     "~23.8M parameters); the library's inception-v3 includes it (27.2M)")
    if model == "resnet152":
        notes.append("single-GPU rate 20.08 as the README prints it; MXNet's tutorial reprints the table with "
                     "20.8 in this cell (every other cell equal)")
    return "; ".join(notes)


def awsblog_rows() -> list[dict]:
    """Every 2-256 GPU cell of the README's images/s table, each with its column's 1-GPU cell."""
    head, lines = excerpt("awsblog_mxnet_readme")
    n = len(lines)
    assert head.startswith(f"<!-- apache/mxnet@{COMMIT} {PATH} lines {FIRST_LINE}-{FIRST_LINE + n - 1}, "
                           "verbatim"), head
    assert any("16x AWS [P2.16xlarge]" in ln for ln in lines)
    assert any("CUDA 7.5 and CUDNN 5.1 installed" in ln for ln in lines)
    assert any("namely `--kv-store dist_device_sync`" in ln for ln in lines)
    network, servers = _network(), _servers_per_node()
    _, setting = _table(lines, "")  # the '|  | `alexnet` | ...' table: batch per GPU and model size
    assert setting[0][1:] == list(COLUMNS), setting[0]
    batch = {COLUMNS[c]: int(v) for c, v in zip(setting[0][1:], next(r for r in setting if r[0] == "batch per GPU")[1:])}
    start, (header, *body) = _table(lines, "#GPUs")
    assert header[1:] == list(COLUMNS), header
    one = next(cells for cells in body if cells[0] == "1")
    one_line = FIRST_LINE + next(i for i, ln in enumerate(lines) if ln.startswith("| 1 "))
    tutorial = _tutorial_cells()
    rows = []
    for cells in body:
        gpus = int(cells[0])
        for (i, col), cell in zip(enumerate(header[1:], start=1), cells[1:]):
            model = COLUMNS[col]
            differs = tutorial[(cells[0], col)] != cell
            assert not differs or (gpus == 1 and model == "resnet152"), (gpus, col, cell)
            if gpus == 1:
                continue
            line = FIRST_LINE + next(j for j, ln in enumerate(lines) if ln.startswith(f"| {cells[0]} "))
            nodes = -(-gpus // GPUS_PER_NODE)
            scheme, detail = SCHEME_DIST if nodes > 1 else SCHEME_ONE
            rows.append(row(
                source=SOURCE, source_url=URL,
                source_loc=f"{PATH} line {line}, table 'Number of images proccessed per second' (header line "
                f"{FIRST_LINE + start}), row '#GPUs {cells[0]}', column '{col.strip('`')}'",
                read_from="table", system=SYSTEM, gpu="k80", gpus_per_node=GPUS_PER_NODE, intra="pcie3",
                network=network, nics=1, hardware_source=HARDWARE, framework=FRAMEWORK, scheme=scheme,
                scheme_detail=detail, ps_servers=servers * nodes if nodes > 1 else None,
                ps_placement="colocated" if nodes > 1 else None, model=model, batch_per_gpu=batch[model],
                accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward",
                data="synthetic", gpus=gpus, nodes=nodes, samples_per_s=num(cell), unit="images/s",
                single_gpu_samples_per_s=num(one[i]), single_gpu_batch=batch[model],
                single_gpu_loc=f"same table, line {one_line}, row '#GPUs 1'", note=_note(model, gpus)))
    return rows


def main(out: Path = HERE / "awsblog_runs.csv") -> None:
    """Write the rows to ``out`` (awsblog_runs.csv)."""
    write_rows(awsblog_rows(), out, "w")


if __name__ == "__main__":
    main()
