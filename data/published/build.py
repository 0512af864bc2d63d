"""Generator of data/published/runs.csv, kept for provenance: `python data/published/build.py`.

Every throughput number is parsed from a verbatim excerpt of its source (excerpts/*.md, each starting
with the repository, commit, path and lines it was copied from); nothing measured is typed here. What
is typed here is the metadata each table states in its surrounding text (hardware, scheme, batch,
precision), each with the sentence or file it comes from in the row's `hardware_source` / `scheme_detail`.
"""
import csv
import hashlib
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXCERPTS = HERE / "excerpts"

COLUMNS = ["id", "source", "source_url", "source_loc", "read_from", "system", "gpu", "gpus_per_node",
           "intra", "network", "nics", "hardware_source", "framework", "scheme", "scheme_detail",
           "ps_servers", "ps_placement", "model", "batch_per_gpu", "accumulate", "precision",
           "grad_wire", "comm_overlap", "data", "gpus", "nodes", "samples_per_s", "unit", "single_gpu_samples_per_s",
           "single_gpu_batch", "single_gpu_loc", "note", "half"]

TF_COMMIT = "5984ffefd320c5d71b801ee06079a51b91ea42c0"
TF_URL = f"https://github.com/tensorflow/tensorflow/blob/{TF_COMMIT}/tensorflow/docs_src/performance/benchmarks.md"
DLE_COMMIT = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"


def dle_url(path: str, sha: str = DLE_COMMIT) -> str:
    """The GitHub URL of a DeepLearningExamples file at ``sha`` (runs.csv's commit by default)."""
    return f"https://github.com/NVIDIA/DeepLearningExamples/blob/{sha}/{path.replace(' ', '%20')}"


_DLE_HEAD = re.compile(r"<!-- NVIDIA/DeepLearningExamples@([0-9a-f]{40}) (.+?) lines (\d+)-(\d+), verbatim \(")


def dle_excerpt(name: str) -> tuple[str, str, int, int, list[str]]:
    """(commit, path, first line, last line, lines) of a verbatim DeepLearningExamples excerpt at any commit
    (the kept-apart families' excerpts; runs.csv's own use _dle_meta)."""
    head, lines = excerpt(name)
    m = _DLE_HEAD.match(head)
    assert m, head
    return m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), lines


# ---------------------------------------------------------------------------------------- systems
SYSTEMS = {
    "dgx1-p100": dict(gpu="p100", gpus_per_node=8, intra="nvlink1", network="ib-edr", nics=4,
                      hardware_source="NVIDIA DGX-1 (P100): 8x Tesla P100 SXM2 in an NVLink (v1) hybrid cube-mesh, "
                      "4x 100 Gb/s EDR InfiniBand per system (NVIDIA DGX-1 System Architecture white paper "
                      "WP-08437-001); the TF page states 'Instance type: NVIDIA DGX-1, GPU: 8x NVIDIA Tesla P100'"),
    "gce-n1-standard-32-k80x8": dict(
        gpu="k80", gpus_per_node=8, intra="pcie3", network="n/a", nics=0,
        hardware_source="TF page: 'Instance type: n1-standard-32-k80x8, GPU: 8x NVIDIA Tesla K80' (8 GK210 "
        "GPUs = 4 K80 boards, each board's two GK210 behind an on-board PCIe 3.0 switch); single node only"),
    "aws-p2.8xlarge": dict(
        gpu="k80", gpus_per_node=8, intra="pcie3", network="eth-10g", nics=1,
        hardware_source="TF page: 'Instance type: p2.8xlarge, GPU: 8x NVIDIA Tesla K80' (8 GK210 GPUs on 4 "
        "K80 boards, PCIe 3.0); AWS EC2 instance-type table lists p2.8xlarge network performance as "
        "'10 Gigabit' (aws.amazon.com/ec2/instance-types/p2)"),
    "dgx1-v100": dict(gpu="v100", gpus_per_node=8, intra="nvlink2", network="ib-edr", nics=4,
                      hardware_source="NVIDIA DGX-1 (V100): 8x V100 SXM2, NVLink2 hybrid cube-mesh, 4x 100 Gb/s EDR "
                      "InfiniBand (data/presets/clusters.toml [dgx1-v100] and its sources)"),
    "dgx2": dict(gpu="v100", gpus_per_node=16, intra="nvswitch-v100", network="ib-edr", nics=8,
                 hardware_source="NVIDIA DGX-2 / DGX-2H: 16x V100 SXM3 32GB on 12 NVSwitches (every GPU 6 NVLink2 "
                 "links, 150 GB/s per direction to the switch fabric), 8x 100 Gb/s EDR InfiniBand/100GbE "
                 "ConnectX-5 for the cluster (NVIDIA DGX-2 datasheet); DGX-2H runs the V100 at 450 W "
                 "(higher clocks)"),
    "dlperf-v100-cluster": dict(
        gpu="v100", gpus_per_node=8, intra="nvlink2", network="ib-edr", nics=1,
        hardware_source="DLPerf report 'Test Environment' (excerpts/dlperf_environment.md): 4 nodes, each 8x "
        "Tesla V100-SXM2-16GB, 'InfiniBand 100 Gb/sec (4X EDR), Mellanox Technologies MT27700 Family'; "
        "`nvidia-smi topo -m` shows the DGX-1-style NVLink hybrid cube-mesh (NV1/NV2) and one HCA, mlx5_0"),
    "dgx-a100": dict(gpu="a100", gpus_per_node=8, intra="nvswitch-a100", network="ib-hdr", nics=8,
                     hardware_source="NVIDIA DGX A100: 8x A100 SXM4 (40 or 80 GB) on 6 NVSwitches (12 NVLink3 "
                     "links, 300 GB/s per direction per GPU), 8x 200 Gb/s HDR InfiniBand ConnectX-6 compute "
                     "NICs (NVIDIA DGX A100 datasheet / DGX A100 User Guide)"),
    "csc-puhti": dict(
        gpu="v100", gpus_per_node=4, intra="nvlink2", network="ib-edr", nics=2,
        hardware_source="CSC Puhti GPU partition: 'four Nvidia Volta V100 GPUs with 32 GB of memory each', '4 GPUs "
        "connected with NVLink', 'a dual-rail HDR100 interconnect network connectivity providing 200 Gbps of "
        "aggregate bandwidth' (CSCfi/csc-user-guide@019f9277eac6ffbb93fcaa7f8919734006fb3db7 "
        "docs/computing/systems-puhti.md); HDR100 = 100 Gb/s per rail, the ib-edr preset's rate"),
    "csc-mahti": dict(
        gpu="a100", gpus_per_node=4, intra="nvlink3", network="ib-hdr", nics=1,
        hardware_source="CSC Mahti GPU partition: 'four Nvidia Ampere A100 GPUs' per node, 'each node is connected "
        "to the network with a single 200 Gbps HDR link' (CSCfi/csc-user-guide@15a7e101237426a8a6b71fc0f8359e93dea3ecf6 "
        "docs/computing/systems-mahti.md); the intra-node NVLink3 of a 4-GPU A100 SXM4 board is assumed (the page "
        "does not state it)"),
}

_NUM = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def num(cell: str) -> str | None:
    """The number in a table cell exactly as printed ('938 img/s' -> '938'), None for N/A."""
    c = cell.replace("*", "").replace("img/s", "").strip()
    if c.upper() in ("N/A", "NA", ""):
        return None
    if not _NUM.match(c):
        raise ValueError(f"not a number: {cell!r}")
    return c


def md_table(lines: list[str]) -> list[list[str]]:
    """Cells of a markdown table (header first), separator rows dropped."""
    out = []
    for ln in lines:
        if "|" not in ln:
            continue
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue
        out.append(cells)
    return out


def csv_cells(lines: list[str]) -> tuple[list[str], dict[str, tuple[int, list[str]]]]:
    """Header cells and {first cell: (file line number, cells)} of a CSV excerpt (first cells unique)."""
    header = lines[0].split(",")
    body = {}
    for i, ln in enumerate(lines[1:], start=2):
        cells = ln.split(",")
        assert cells[0] not in body, cells[0]
        body[cells[0]] = (i, cells)
    return header, body


def whole(cell: str) -> int:
    """A table cell that prints a whole number ('8', '256.0'), as an int."""
    v = float(num(cell))
    assert v == int(v), cell
    return int(v)


def excerpt(name: str) -> tuple[str, list[str]]:
    """(first comment line, remaining lines) of excerpts/<name>.md."""
    lines = (EXCERPTS / f"{name}.md").read_text().splitlines()
    return lines[0], lines[1:]


def numbered_lines(lines: list[str], by_commit: bool = False) -> dict:
    """{(path, line): text} of an excerpt that quotes files as '### path (...)' headings over 'N: text' lines ('N:'
    is an empty line); ``by_commit``: keyed (path, the heading's 7-character commit, line) instead."""
    out, key = {}, None
    for ln in lines:
        if ln.startswith("### "):
            path, _, rest = ln[4:].partition(" (")
            key = (path, rest.rstrip(")")[:7]) if by_commit else (path,)
        elif key and re.match(r"^\d+:( |$)", ln):
            n, _, text = ln.partition(":")
            out[(*key, int(n))] = text[1:]
    return out


def quote(lines: dict, key: tuple, text: str) -> str:
    """``text``, checked to stand on the numbered_lines line ``key``; returned for a citation."""
    assert text in lines[key], (key, text)
    return text


def sections(lines: list[str]) -> dict[str, list[list[str]]]:
    """{heading: table cells, header first} of an excerpt whose '## heading' lines each head a markdown table."""
    out, cur = {}, None
    for ln in lines:
        if ln.startswith("## "):
            cur = out.setdefault(ln[3:].strip(), [])
        elif cur is not None and ln.startswith("|"):
            cur.append(ln)
    return {k: md_table(v) for k, v in out.items()}


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (a, b) of value = a + b * coordinate through a chart's (coordinate, value) gridlines."""
    n = len(points)
    mr = sum(r for r, _ in points) / n
    mv = sum(v for _, v in points) / n
    b = sum((r - mr) * (v - mv) for r, v in points) / sum((r - mr) ** 2 for r, _ in points)
    return mv - b * mr, b


def pixel_centre(cell: str) -> float:
    """The centre of a 'top-bottom' pixel-row cell, or the row itself."""
    a, _, b = cell.partition("-")
    return (int(a) + int(b)) / 2 if b else float(a)


def row(**kw) -> dict:
    r = {c: "" for c in COLUMNS}
    for k, v in kw.items():
        assert k in COLUMNS, k
        r[k] = "" if v is None else str(v)
    return r


# ------------------------------------------------------------------------- TensorFlow benchmarks page
TF_MODELS = {"InceptionV3": "inception-v3", "ResNet-50": "resnet50", "ResNet-152": "resnet152",
             "Alexnet": "alexnet", "VGG16": "vgg16"}
# batch per GPU as the page's 'Options' tables state, per section
TF_BATCH = {
    "dgx1": {"inception-v3": 64, "resnet50": 64, "resnet152": 64, "alexnet": 512, "vgg16": 64},
    "k80": {"inception-v3": 64, "resnet50": 64, "resnet152": 32, "alexnet": 512, "vgg16": 32},
}
# (scheme, scheme_detail) per section and model, from the page's 'Configuration used for each model'
PS_CPU = ("tf-ps-cpu", "variable_update=parameter_server, local_parameter_device=cpu")
REPL_NCCL = ("tf-replicated-nccl", "variable_update=replicated (with NCCL)")
REPL = ("tf-replicated", "variable_update=replicated (without NCCL), local_parameter_device=gpu")
PS_GPU = ("tf-ps-gpu", "variable_update=parameter_server, local_parameter_device=gpu")
DIST = ("tf-distributed-replicated", "variable_update=distributed_replicated, cross_replica_sync=True; "
        "parameter servers run on the worker instances")
TF_SCHEME = {
    "dgx1": {"inception-v3": PS_CPU, "resnet50": PS_CPU, "resnet152": PS_CPU, "alexnet": REPL_NCCL,
             "vgg16": REPL_NCCL},
    "gce": {m: ("tf-ps-cpu", "variable_update=parameter_server, local_parameter_device=cpu (page: 'The "
                "configuration used for each model was variable_update equal to parameter_server and "
                "local_parameter_device equal to cpu')") for m in TF_MODELS.values()},
    "aws": {"inception-v3": PS_CPU, "resnet50": REPL, "resnet152": REPL, "alexnet": PS_GPU, "vgg16": PS_GPU},
    "dist": {m: DIST for m in ("inception-v3", "resnet50", "resnet152")},
}
TF_SECTION = [  # heading prefix -> (system key, batch key, scheme key)
    ("Details for NVIDIA® DGX-1™", "dgx1-p100", "dgx1", "dgx1"),
    ("Details for Google Compute Engine", "gce-n1-standard-32-k80x8", "k80", "gce"),
    ("Details for Amazon EC2 Distributed", "aws-p2.8xlarge", "k80", "dist"),
    ("Details for Amazon EC2 (", "aws-p2.8xlarge", "k80", "aws"),
]


def dist_ps_servers(model: str, batch: int, gpus: int) -> int:
    """The page: 'Equal numbers of parameter servers and worker servers were used with the following
    exceptions: InceptionV3: 8 instances / 6 parameter servers; ResNet-50: (batch size 32) 8 instances /
    4 parameter servers; ResNet-152: 8 instances / 4 parameter servers'."""
    instances = max(gpus // 8, 1)
    if instances == 8:
        if model == "inception-v3":
            return 6
        if model == "resnet152" or (model == "resnet50" and batch == 32):
            return 4
    return instances


def tf_rows() -> list[dict]:
    head, lines = excerpt("tfbench")
    blocks, cur = [], None
    for ln in lines:
        if ln.startswith("## "):
            cur = {"heading": ln[3:], "title": "", "lines": []}
            blocks.append(cur)
        elif ln.startswith("**"):
            cur["title"] = ln.strip("*")
        elif cur is not None:
            cur["lines"].append(ln)
    rows = []
    for bi, b in enumerate(blocks):
        sysname, bkey, skey = next((s, bk, sk) for p, s, bk, sk in TF_SECTION if b["heading"].startswith(p))
        table = md_table(b["lines"])
        header, body = table[0], table[1:]
        data = "synthetic" if "synthetic" in b["title"] else "real"
        other = "Other Results" in b["heading"]
        base = {r[0]: r for r in body}
        for j, col in enumerate(header[1:], start=1):
            name = col.split(" (")[0]
            model = TF_MODELS[name]
            batch = 32 if (other or "batch size 32" in col) else TF_BATCH[bkey][model]
            scheme, detail = TF_SCHEME[skey][model]
            single = num(base["1"][j])
            for r in body:
                g = int(r[0])
                if g == 1:
                    continue
                v = num(r[j])
                if v is None:
                    continue
                nodes = max(1, g // 8)
                ps, place = "", ""
                if skey == "dist":
                    ps, place = dist_ps_servers(model, batch, g), "colocated"
                elif scheme in ("tf-ps-cpu",):
                    ps, place = 1, "host"
                elif scheme == "tf-ps-gpu":
                    ps, place = g, "gpus"
                loc = f"section '{b['heading']}', table '{b['title']}', row GPUs={g}, column '{col}'"
                note = "8 GPUs = one p2.8xlarge instance running worker and parameter server" if (
                    skey == "dist" and g == 8) else ""
                rows.append(row(
                    source="TensorFlow Performance Benchmarks page (tf_cnn_benchmarks, May 2017)",
                    source_url=TF_URL, source_loc=loc, read_from="table", system=sysname,
                    **SYSTEMS[sysname], framework="TensorFlow 1.x (b1e174e)", scheme=scheme,
                    scheme_detail=detail, ps_servers=ps, ps_placement=place, model=model,
                    batch_per_gpu=batch, accumulate=1, precision="fp32", grad_wire="fp32", data=data,
                    comm_overlap="during-backward",
                    gpus=g, nodes=nodes, samples_per_s=v, unit="images/s", single_gpu_samples_per_s=single,
                    single_gpu_batch=batch, single_gpu_loc="same table, row GPUs=1", note=note))
    return rows


# ----------------------------------------------------------------------- NVIDIA DeepLearningExamples
def _dle_meta(name: str) -> tuple[str, str, str]:
    head, _ = excerpt(name)
    m = re.match(r"<!-- NVIDIA/DeepLearningExamples@(\w+) (\S+) lines (\d+-\d+) \(heading at line (\d+)\)", head)
    assert m and m.group(1) == DLE_COMMIT, head
    return m.group(2), m.group(3), m.group(4)


def _col(header: list[str], *keys: str) -> int:
    for i, h in enumerate(header):
        hh = h.replace("*", "").strip().lower()
        if all(k.lower() in hh for k in keys):
            return i
    raise KeyError(f"no column with {keys} in {header}")


def _pair(cell: str) -> tuple[str, str]:
    """'64 , 32' or '126 and 256' -> ('64', '32')."""
    parts = [p.strip() for p in re.split(r",| and ", cell.replace("*", "")) if p.strip()]
    if len(parts) == 1:
        return parts[0], parts[0]
    assert len(parts) == 2, cell
    return parts[0], parts[1]


def rn50_rows() -> list[dict]:
    """ResNet-50 v1.5 single-node tables (PyTorch DDP, TensorFlow Horovod, MXNet Horovod)."""
    specs = [
        # excerpt, framework, system, scheme, detail, {precision: (batch, wire)}, hw note
        ("dle_pt_rn50_dgxa100", "PyTorch (pytorch-21.03 NGC)", "dgx-a100", "pytorch-ddp",
         "torch.nn.parallel.DistributedDataParallel, NCCL (image_classification/training.py)",
         {"tf32": ("256", "fp32"), "amp": ("256", "fp32")}),
        ("dle_pt_rn50_dgx1_16g", "PyTorch (pytorch-21.03 NGC)", "dgx1-v100", "pytorch-ddp",
         "torch.nn.parallel.DistributedDataParallel, NCCL (image_classification/training.py)",
         {"fp32": ("112", "fp32"), "amp": ("256", "fp32")}),
        ("dle_pt_rn50_dgx1_32g", "PyTorch (pytorch-21.03 NGC)", "dgx1-v100", "pytorch-ddp",
         "torch.nn.parallel.DistributedDataParallel, NCCL (image_classification/training.py)",
         {"fp32": ("112", "fp32"), "amp": ("256", "fp32")}),
        ("dle_tf_rn50_dgxa100", "TensorFlow 1 (20.06-tf1 NGC), XLA", "dgx-a100", "horovod-nccl",
         "Horovod allreduce over NCCL (mpiexec -np <num_gpus>, runtime/runner.py)", {}),
        ("dle_tf_rn50_dgx1", "TensorFlow 1 (20.06-tf1 NGC), XLA", "dgx1-v100", "horovod-nccl",
         "Horovod allreduce over NCCL (mpiexec -np <num_gpus>, runtime/runner.py)", {}),
        ("dle_tf_rn50_dgx2", "TensorFlow 1 (20.06-tf1 NGC), XLA", "dgx2", "horovod-nccl",
         "Horovod allreduce over NCCL (mpiexec -np <num_gpus>, runtime/runner.py)", {}),
        ("dle_mx_rn50_dgxa100", "MXNet (mxnet-22.10 NGC)", "dgx-a100", "horovod-nccl",
         "Horovod over NCCL: runner's default --kv-store horovod (MxNet/Classification/RN50v1.5/runner)",
         {"tf32": ("512", "fp32"), "amp": ("512", "fp16")}),
        ("dle_mx_rn50_dgx1", "MXNet (mxnet-20.12 NGC)", "dgx1-v100", "horovod-nccl",
         "Horovod over NCCL: runner's default --kv-store horovod (MxNet/Classification/RN50v1.5/runner)",
         {"fp32": ("96", "fp32"), "amp": ("192", "fp16")}),
        ("dle_mx_rn50_dgx2", "MXNet (mxnet-20.12 NGC)", "dgx2", "horovod-nccl",
         "Horovod over NCCL: runner's default --kv-store horovod (MxNet/Classification/RN50v1.5/runner)",
         {"fp32": ("128", "fp32"), "amp": ("256", "fp16")}),
    ]
    rows = []
    for name, fw, sysname, scheme, detail, prec in specs:
        path, lines_r, hline = _dle_meta(name)
        _, lines = excerpt(name)
        heading = lines[0].lstrip("#").strip()
        table = md_table(lines[1:])
        header, body = table[0], table[1:]
        cols = {}
        for p, key in (("tf32", "tf32"), ("fp32", "fp32"), ("amp", "mixed precision")):
            try:
                cols[p] = _col(header, "throughput", key)
            except KeyError:
                pass
        cols = {p: c for p, c in cols.items() if "speedup" not in header[c].lower()}
        base = body[0]
        assert base[0].replace("*", "").strip() == "1"
        for p, c in cols.items():
            if prec:
                batch, wire = prec[p]
                bnote = ("batch per GPU from PyTorch/Classification/ConvNets/configs.yml (not printed in the table)"
                         if name.startswith("dle_pt") else
                         "batch per GPU from the benchmark.py command the README quotes above the table")
            else:  # TF: 'Batch Size / GPU' column, '128 (FP32) / 256 (AMP)' or '256'
                cell = body[0][_col(header, "batch size")]
                mm = re.findall(r"(\d+)\s*\((\w+)\)", cell)
                by_precision = dict((k.lower(), v) for v, k in mm)
                batch = by_precision.get("amp" if p == "amp" else "fp32", cell.strip()) if mm else cell.strip()
                wire = "fp32"
                bnote = "batch per GPU from the table's 'Batch Size / GPU' column"
            for r in body[1:]:
                g = int(r[0].replace("*", "").strip())
                rows.append(row(
                    source=f"NVIDIA DeepLearningExamples {path.split('/')[0]} ResNet-50 v1.5 README",
                    source_url=dle_url(path), source_loc=f"lines {lines_r}, table under '{heading}' (line {hline}), "
                    f"row GPUs={g}, column '{header[c].replace('*', '').strip()}'", read_from="table",
                    system=sysname, **SYSTEMS[sysname], framework=fw, scheme=scheme, scheme_detail=detail,
                    model="resnet50", batch_per_gpu=batch, accumulate=1, precision=p, grad_wire=wire,
                    comm_overlap="during-backward",
                    data="real", gpus=g, nodes=1, samples_per_s=num(r[c]), unit="images/s",
                    single_gpu_samples_per_s=num(base[c]), single_gpu_batch=batch,
                    single_gpu_loc="same table, row GPUs=1", note=bnote))
    return rows


BERT = [
    # excerpt, framework, system, scheme, detail, wire for amp, single-GPU excerpt for multi-node tables
    ("dle_tf1_bert_dgx1_16g", "TensorFlow 1 (20.06 NGC)", "dgx1-v100", None),
    ("dle_tf1_bert_dgx1_32g", "TensorFlow 1 (20.06 NGC)", "dgx1-v100", None),
    ("dle_tf1_bert_dgx2", "TensorFlow 1 (20.06 NGC)", "dgx2", None),
    ("dle_tf1_bert_dgx2h_multi", "TensorFlow 1 (19.08 NGC)", "dgx2", "dle_tf1_bert_dgx2"),
    ("dle_tf1_bert_dgxa100", "TensorFlow 1 (20.06 NGC)", "dgx-a100", None),
    ("dle_tf1_bert_dgxa100_multi", "TensorFlow 1 (20.06 NGC)", "dgx-a100", "dle_tf1_bert_dgxa100"),
    ("dle_tf2_bert_dgx2", "TensorFlow 2 (21.02 NGC)", "dgx2", None),
    ("dle_tf2_bert_dgx2h_multi", "TensorFlow 2 (21.02 NGC)", "dgx2", "dle_tf2_bert_dgx2"),
    ("dle_tf2_bert_dgxa100", "TensorFlow 2 (21.02 NGC)", "dgx-a100", None),
    ("dle_tf2_bert_dgxa100_multi", "TensorFlow 2 (21.02 NGC)", "dgx-a100", "dle_tf2_bert_dgxa100"),
    ("dle_pt_bert_dgxa100", "PyTorch (21.11 NGC)", "dgx-a100", None),
    ("dle_pt_bert_dgxa100_multi", "PyTorch (21.11 NGC)", "dgx-a100", "dle_pt_bert_dgxa100"),
    ("dle_pd_bert_dgxa100", "PaddlePaddle (22.12 NGC)", "dgx-a100", None),
    ("dle_pd_bert_dgxa100_multi", "PaddlePaddle (22.12 NGC)", "dgx-a100", "dle_pd_bert_dgxa100"),
]
BERT_SCHEME = {
    "TensorFlow 1": ("horovod-nccl", "Horovod over NCCL, hvd.allreduce of the accumulated gradients once the "
                     "accumulation steps are done (no overlap with backprop), Compression.fp16 when use_fp16 "
                     "(TensorFlow/LanguageModeling/BERT/optimization.py lines 97, 151-152)",
                     "fp16"),
    "TensorFlow 2": ("horovod-nccl", "Horovod over NCCL, hvd.allreduce of the accumulated gradients after the "
                     "last accumulation step (no overlap with backprop), Compression.fp16 when use_float16 "
                     "(official/modeling/model_training_utils.py lines 272, 316)", "fp16"),
    "PyTorch": ("nccl-allreduce", "torch.distributed NCCL allreduce of the flat gradient after the last "
                "accumulation step's backward (allreduce_post_accumulation, no overlap with backprop), "
                "--allreduce_post_accumulation_fp16 for mixed precision (run_pretraining.py, "
                "scripts/run_pretraining.sh)",
                "fp16"),
    "PaddlePaddle": ("nccl-allreduce", "Paddle fleet collective allreduce over NCCL (fuse_all_reduce_ops, "
                     "program.py) of the merged gradients after the accumulation steps (no overlap with backprop "
                     "assumed, as in the other BERT scripts); wire precision of the mixed-precision gradients not "
                     "stated", "unknown"),
}


def _bert_table(name: str):
    _, lines = excerpt(name)
    table = md_table(lines[1:])
    return lines[0].lstrip("#").strip(), table[0], table[1:]


def bert_rows() -> list[dict]:
    rows = []
    for name, fw, sysname, single_name in BERT:
        path, lines_r, hline = _dle_meta(name)
        heading, header, body = _bert_table(name)
        multi = single_name is not None
        scheme, detail, amp_wire = BERT_SCHEME[fw.split(" (")[0]]
        fp = "tf32" if "dgx-a100" == sysname else "fp32"
        c_seq = _col(header, "sequence length")
        c_b = next(i for i, h in enumerate(header) if h.replace("*", "").strip().lower().startswith("batch size"))
        c_acc = _col(header, "accumulation")
        c_n = 0
        c_tp = {"amp": next(i for i, h in enumerate(header) if "throughput" in h.lower() and "mixed" in h.lower()
                            and "speedup" not in h.lower()),
                fp: next(i for i, h in enumerate(header) if "throughput" in h.lower() and fp in h.lower()
                         and "speedup" not in h.lower())}
        # pairs in the header order: '(mixed precision, FP32)' or '(TF32 and FP16)'
        hb = header[c_b].lower()
        amp_first = hb.index("mixed") < hb.index(fp) if "mixed" in hb else hb.index("fp16") < hb.index(fp)
        if multi:
            s_heading, s_header, s_body = _bert_table(single_name)
            s_path, s_lines, s_h = _dle_meta(single_name)
            s_seq = _col(s_header, "sequence length")
            s_b = next(i for i, h in enumerate(s_header) if h.replace("*", "").strip().lower().startswith("batch size"))
            s_tp = {"amp": next(i for i, h in enumerate(s_header) if "throughput" in h.lower() and "mixed" in h.lower()
                                and "speedup" not in h.lower()),
                    fp: next(i for i, h in enumerate(s_header) if "throughput" in h.lower() and fp in h.lower()
                             and "speedup" not in h.lower())}
            sb = s_header[s_b].lower()
            s_amp_first = sb.index("mixed") < sb.index(fp) if "mixed" in sb else sb.index("fp16") < sb.index(fp)
        for r in body:
            n = int(r[c_n].replace("*", "").strip())
            if n == 1:
                continue
            seq = r[c_seq].strip()
            bp = _pair(r[c_b])
            ap = _pair(r[c_acc])
            for p in ("amp", fp):
                k = 0 if (p == "amp") == amp_first else 1
                batch, acc = bp[k], ap[k]
                pd_single = "pd_bert" in name and not multi
                if pd_single:  # 'Batch size / GPU' prints the accumulated batch (8192 = 128 x 64 steps)
                    batch = str(int(batch) // int(acc))
                gpus = n * SYSTEMS[sysname]["gpus_per_node"] if multi else n
                nodes = n if multi else 1
                note = []
                if multi:
                    srow = next(x for x in s_body if x[0].strip() == "1" and x[s_seq].strip() == seq)
                    sk = 0 if (p == "amp") == s_amp_first else 1
                    s_batch = _pair(srow[s_b])[sk]
                    if "pd_bert" in single_name:  # that column prints the accumulated batch per GPU
                        s_batch = str(int(s_batch) // int(_pair(srow[_col(s_header, "accumulation")])[sk]))
                    single = num(srow[s_tp[p]])
                    sloc = (f"{s_path} lines {s_lines}, table under '{s_heading}', row GPUs=1, sequence length {seq}")
                    if s_batch != batch:
                        note.append(f"single-GPU rate measured at batch {s_batch}, this row at batch {batch}")
                    if "19.08" in fw:
                        note.append("multi-node rows measured in the 19.08 container on DGX-2H; the single-GPU rate "
                                    "is from the 20.06 single-node table on DGX-2")
                    elif "dgx2" == sysname:
                        note.append("multi-node rows on DGX-2H (450 W V100); the single-GPU rate is from the DGX-2 "
                                    "single-node table of the same README")
                else:
                    single_row = next(x for x in body if x[0].strip() == "1" and x[c_seq].strip() == seq)
                    s_batch = _pair(single_row[c_b])[k]
                    if pd_single:
                        s_batch = str(int(s_batch) // int(_pair(single_row[c_acc])[k]))
                        note.append(f"the table's 'Batch size / GPU' column prints {bp[k]}, the accumulated batch "
                                    f"per GPU (the multi-node table's 'Accumulated Batch size / GPU'); batch_per_gpu "
                                    f"= {bp[k]} / {acc} accumulation steps")
                    single = num(single_row[c_tp[p]])
                    sloc = f"same table, row GPUs=1, sequence length {seq}"
                    if s_batch != batch:
                        note.append(f"single-GPU rate measured at batch {s_batch}, this row at batch {batch}")
                if "pt_bert" in name and multi and p == "tf32" and batch == "126":
                    note.append("the multi-node table prints batch 126 for TF32 (accumulated 8192 / 64 steps = 128; "
                                "the single-node table prints 128); transcribed as printed")
                if "pt_bert" in name and multi and seq == "128" and n == 4 and p == "amp":
                    note.append("the table prints accumulation steps '16 and 18' for 4 nodes (2048 / 128 = 16 "
                                "for TF32, 2048 / 256 = 8 for FP16 expected); 18 transcribed as printed")
                rows.append(row(
                    source=f"NVIDIA DeepLearningExamples {path.split('/')[0]} BERT README (pre-training, BERT-large)",
                    source_url=dle_url(path), source_loc=f"lines {lines_r}, table under '{heading}' (line {hline}), "
                    f"row {'nodes' if multi else 'GPUs'}={n}, sequence length {seq}, column "
                    f"'{header[c_tp[p]].replace('*', '').strip()}'", read_from="table", system=sysname,
                    **SYSTEMS[sysname], framework=fw, scheme=scheme, scheme_detail=detail,
                    model="bert-large", batch_per_gpu=batch, accumulate=acc, precision=p,
                    grad_wire=amp_wire if p == "amp" else "fp32", comm_overlap="after-backward", data="real",
                    gpus=gpus, nodes=nodes,
                    samples_per_s=num(r[c_tp[p]]), unit=f"sequences/s (sequence length {seq})",
                    single_gpu_samples_per_s=single, single_gpu_batch=s_batch, single_gpu_loc=sloc,
                    note="; ".join(note)))
    return rows


# EfficientNet: TensorFlow 2 (Horovod) and PyTorch (DDP); tables of 1, 8 and multi-node GPU counts.
# batch per GPU: TF2 from efficientnet_v1/<B0|B4>/training/<AMP|TF32|FP32>/train_benchmark_8x<GPU>.sh
# (--train_batch_size), PyTorch from PyTorch/Classification/ConvNets/configs.yml (<platform>: batch_size).
EFFNET = [
    # excerpt, framework, system, model (None: 'Model' column), scheme, detail, {model: {precision: batch}},
    ("dle_tf2_effnet_b0_dgxa100", "TensorFlow 2 (21.09-tf2 NGC)", "dgx-a100", "efficientnet-b0",
     {"efficientnet-b0": {"tf32": 512, "amp": 1024}}),
    ("dle_tf2_effnet_b0_dgx1", "TensorFlow 2 (21.09-tf2 NGC)", "dgx1-v100", "efficientnet-b0",
     {"efficientnet-b0": {"fp32": 256, "amp": 512}}),
    ("dle_tf2_effnet_b4_dgxa100", "TensorFlow 2 (21.09-tf2 NGC)", "dgx-a100", "efficientnet-b4",
     {"efficientnet-b4": {"tf32": 80, "amp": 160}}),
    ("dle_tf2_effnet_b4_dgx1", "TensorFlow 2 (21.09-tf2 NGC)", "dgx1-v100", "efficientnet-b4",
     {"efficientnet-b4": {"fp32": 32, "amp": 64}}),
    ("dle_pt_effnet_dgxa100", "PyTorch (21.03 NGC)", "dgx-a100", None,
     {"efficientnet-b0": {"tf32": 256, "amp": 256}, "efficientnet-b4": {"tf32": 64, "amp": 128}}),
    ("dle_pt_effnet_dgx1_16g", "PyTorch (21.03 NGC)", "dgx1-v100", None,
     {"efficientnet-b0": {"fp32": 64, "amp": 128}, "efficientnet-b4": {"fp32": 16, "amp": 32}}),
]
EFFNET_SCHEME = {
    "TensorFlow 2": ("horovod-nccl", "Horovod over NCCL (README: 'Multi-GPU training with Horovod ... with NCCL', "
                     "'Multi-node support using Horovod'); every exchange compressed to fp16, whatever the precision: "
                     "hvd.DistributedOptimizer(..., compression=hvd.Compression.fp16 if hvd_fp16_compression) "
                     "(runtime/runner.py line 192, taken when grad_accum_steps is 1, its default), whose flag is "
                     "store_true with default True (utils/cmdline_helper.py line 164; "
                     "excerpts/dle_tf2_effnet_fp16_compression.md)"),
    "PyTorch": ("pytorch-ddp", "torch.nn.parallel.DistributedDataParallel, NCCL (image_classification/training.py)"),
}


def effnet_rows() -> list[dict]:
    rows = []
    for name, fw, sysname, fixed_model, batches in EFFNET:
        path, lines_r, hline = _dle_meta(name)
        _, lines = excerpt(name)
        heading = lines[0].lstrip("#").strip()
        table = md_table(lines[1:])
        header, body = table[0], table[1:]
        clean = [h.replace("*", "").strip() for h in header]
        c_g = clean.index("GPUs")
        c_m = clean.index("Model") if "Model" in clean else None
        fp = "tf32" if sysname == "dgx-a100" else "fp32"
        c_tp = {"amp": next(i for i, h in enumerate(clean) if h.lower() == "throughput - mixed precision"),
                fp: next(i for i, h in enumerate(clean) if h.lower() in (fp, f"throughput - {fp}"))}
        scheme, detail = EFFNET_SCHEME[fw.split(" (")[0]]
        tf2 = fw.startswith("TensorFlow 2")
        for r in body:
            model = fixed_model if c_m is None else r[c_m]
            if model not in batches:  # efficientnet-widese-*: not a standard architecture
                continue
            g = int(r[c_g])
            if g == 1:
                continue
            base = next(x for x in body if int(x[c_g]) == 1 and (c_m is None or x[c_m] == r[c_m]))
            gpn = SYSTEMS[sysname]["gpus_per_node"]
            for p, c in c_tp.items():
                batch = batches[model][p]
                note = ("batch per GPU from the train_benchmark_8x*.sh script of this precision (the table does "
                        "not print it); runs on more than 8 GPUs assumed at the same per-GPU batch") if tf2 else (
                        "batch per GPU from PyTorch/Classification/ConvNets/configs.yml (the table does not print it)")
                rows.append(row(
                    source=f"NVIDIA DeepLearningExamples {path.split('/')[0]} EfficientNet README",
                    source_url=dle_url(path), source_loc=f"lines {lines_r}, table under '{heading}' (line {hline})"
                    + (f", model {r[c_m]}" if c_m is not None else f", {model}")
                    + f", row GPUs={g}, column '{clean[c]}'",
                    read_from="table", system=sysname, **SYSTEMS[sysname], framework=fw, scheme=scheme,
                    scheme_detail=detail, model=model, batch_per_gpu=batch, accumulate=1, precision=p,
                    grad_wire="fp16" if tf2 else "fp32", comm_overlap="during-backward", data="real", gpus=g,
                    nodes=-(-g // gpn), samples_per_s=num(r[c]),
                    unit="images/s", single_gpu_samples_per_s=num(base[c]), single_gpu_batch=batch,
                    single_gpu_loc="same table, row GPUs=1", note=note))
    return rows


# DLPerf (Oneflow-Inc/DLPerf) benchmark report v1.0, Oct 2020: 1x1, 1x8, 2x8 and 4x8 V100 GPUs for
# ResNet-50 v1.5 and BERT-base pre-training in several frameworks; one 100 Gb/s EDR HCA per node.
DLPERF_URL = ("https://github.com/Oneflow-Inc/DLPerf/blob/c89430bac64f64caabb0445ff7eb80175641454c/"
              "reports/dlperf_benchmark_test_report_v1.md")
DLPERF_TABLES = [  # excerpt, model, precision, batch (None: 'bsz=' in the column header)
    ("dlperf_rn50_fp32", "resnet50", "fp32", 128), ("dlperf_rn50_amp", "resnet50", "amp", 256),
    ("dlperf_bert_fp32_b32", "bert-base", "fp32", 32), ("dlperf_bert_fp32_max", "bert-base", "fp32", None),
    ("dlperf_bert_amp_b64", "bert-base", "amp", 64), ("dlperf_bert_amp_max", "bert-base", "amp", None),
]
# column label -> framework, scheme, scheme detail, gradient wire format with AMP
DLPERF_FRAMEWORKS = {
    "OneFlow": ("OneFlow 0.2.0", "nccl-allreduce", "OneFlow's built-in data parallelism, gradient allreduce over "
                "NCCL inside its runtime (the report names no scheme)", "unknown"),
    "NGC MXNet": ("MXNet 1.6.0 (NGC 20.03, DeepLearningExamples)", "horovod-nccl",
                  "Horovod over NCCL (report's Features column: 'DALI+Horovod')", "fp16"),
    "NGC TensorFlow 1.x": ("TensorFlow 1.15.2 (NGC 20.03-tf1, DeepLearningExamples)", "horovod-nccl",
                           "Horovod over NCCL (report's Features column: 'Horovod', ResNet-50 'DALI+Horovod+XLA')",
                           "fp32"),
    "NGC PyTorch": ("PyTorch 1.5.0a0 (NGC 20.03, DeepLearningExamples)", "pytorch-ddp",
                    "apex DistributedDataParallel over NCCL (report's Features column: 'APEX'; BERT: "
                    "allreduce_post_accumulation=false by default in DLPerf's scripts/single_node_train.sh line 20, "
                    "so DDP buckets overlap backprop)", "unknown"),
    "MXNet": ("MXNet 1.6.0 (gluon-cv / gluon-nlp)", "horovod-nccl",
              "Horovod 0.19.5 built with HOROVOD_GPU_ALLREDUCE=NCCL (MxNet/Classification/RN50v1b/README.md, "
              "MxNet/BERT/README.md)", "unknown"),
    "TensorFlow 2.x": ("TensorFlow 2.3.0 (tensorflow/models official)", "nccl-allreduce",
                       "tf.distribute collective allreduce over NCCL (TensorFlow/resnet50v1.5/README.md: "
                       "distributed training relies on NCCL 2.7.3); every gradient in one pack, one allreduce "
                       "once backprop is done (DLPERF_OVERLAP)", "fp32"),
    "PyTorch": ("PyTorch 1.6.0 (pytorch/examples imagenet)", "pytorch-ddp",
                "torch.nn.parallel.DistributedDataParallel, NCCL backend (PyTorch/resnet50v1.5/README.md)", "fp32"),
    "PaddlePaddle": ("PaddlePaddle 1.8.3", "nccl-allreduce", "Paddle collective training over NCCL 2.7.3 "
                     "(PaddlePaddle/resnet50v1.5/README.md)", "unknown"),
}

# When each DLPerf framework's gradient exchange runs (runs.csv comm_overlap): during backprop unless listed.
# TensorFlow 2.3's tf.distribute puts every gradient in one pack and reduces the pack as one allreduce, which
# can start only once the last gradient exists: MultiWorkerMirroredStrategy (several nodes; DLPerf's
# TensorFlow/resnet50v1.5/scripts/multi_node_gpu.yaml and TensorFlow/bert/scripts/single_node_train.sh set
# no pack size) packs by CollectiveHints.bytes_per_pack, default 0, and "All values are packed into one pack
# if `bytes_per_pack` is zero" (tensorflow/python/distribute/cross_device_utils.py pack_by_size, TF 2.3),
# the pack's CollectiveReduce ops "packed into a single all-reduce" by the ScopedAllocator optimizer
# (cross_device_ops.py CollectiveAllReduce._do_batch_all_reduce_dense, TF 2.3); MirroredStrategy (one node,
# scripts/gpu.yaml) picks NcclAllReduce(num_packs=1) (cross_device_ops.choose_the_best), which concatenates
# all gradients into one pack before its allreduce. The r2.3 API page of CollectiveHints names the missing
# overlap: "break gradients all-reduce into multiple packs so that weight updates can overlap".
DLPERF_OVERLAP = {"TensorFlow 2.x": "after-backward"}


def _dlperf_label(cell: str) -> str:
    """'[NGC<br>TensorFlow 1.x<br>w/XLA<br>bsz=224](../...)' -> 'NGC TensorFlow 1.x w/XLA bsz=224'."""
    c = re.sub(r"<sup>.*?</sup>", "", cell)
    c = re.sub(r"\]\(.*?\)", "", c).replace("[", "")
    return re.sub(r"\s+", " ", re.sub(r"<br\s*/?>", " ", c)).strip()


def dlperf_rows() -> list[dict]:
    rows = []
    for name, model, prec, fixed_batch in DLPERF_TABLES:
        head, lines = excerpt(name)
        m = re.match(r"<!-- Oneflow-Inc/DLPerf@\w+ \S+ lines (\d+-\d+) \(heading at line (\d+)\)", head)
        lines_r, hline = m.group(1), m.group(2)
        heading = lines[0].lstrip("#").strip()
        table = md_table(lines[1:])
        header, body = [_dlperf_label(h) for h in table[0]], table[1:]
        base = next(r for r in body if r[0] == "1" and r[1] == "1")
        for j, label in enumerate(header[2:], start=2):
            key = next(k for k in sorted(DLPERF_FRAMEWORKS, key=len, reverse=True) if label.startswith(k))
            fw, scheme, detail, amp_wire = DLPERF_FRAMEWORKS[key]
            bm = re.search(r"bsz=(\d+)", label)
            batch = int(bm.group(1)) if bm else fixed_batch
            if "w/XLA" in label:
                fw += ", XLA"
            if "W/O clip" in label:
                fw += ", without clip_by_global_norm"
            if "w/DALI" in label:
                fw += ", DALI"
            for r in body:
                nodes, gpus = int(r[0]), int(r[1])
                if gpus == 1:
                    continue
                rows.append(row(
                    source="DLPerf benchmark test report v1.0 (Oneflow-Inc/DLPerf, Oct 2020)",
                    source_url=DLPERF_URL, source_loc=f"lines {lines_r}, table under '{heading}' (line {hline}), "
                    f"row node num={nodes} device num={gpus}, column '{label}'", read_from="table",
                    system="dlperf-v100-cluster", **SYSTEMS["dlperf-v100-cluster"], framework=fw, scheme=scheme,
                    scheme_detail=detail, model=model, batch_per_gpu=batch, accumulate=1, precision=prec,
                    grad_wire=amp_wire if prec == "amp" else "fp32",
                    comm_overlap=DLPERF_OVERLAP.get(key, "during-backward"), data="real", gpus=gpus, nodes=nodes,
                    samples_per_s=num(r[j]),
                    unit="images/s" if model == "resnet50" else "sequences/s (sequence length 128)",
                    single_gpu_samples_per_s=num(base[j]), single_gpu_batch=batch,
                    single_gpu_loc="same table, row node num=1 device num=1",
                    note="" if model == "resnet50" else "sequence length 128 as in DLPerf's BERT scripts "
                    "(max_seq_length 128 / seq_len_128 datasets)"))
    return rows


# DLPerf's per-framework READMEs and OneFlow's own reports (same repository and commit as the summary
# report, same 4-node V100 cluster): tables of 1-32 GPUs under headings that state precision and batch.
# Rows whose multi-GPU and single-GPU numbers the summary report already prints are left out (the same
# measurement); so are tables the README marks as a different input pipeline that limits the rate
# (PyTorch 'worker=8': 8 GPUs 1070 img/s, slower than 4).
DLPERF_COMMIT = "c89430bac64f64caabb0445ff7eb80175641454c"
MINDSPORE = ("MindSpore 1.1.0", "nccl-allreduce", "MindSpore data parallel (ParallelMode.DATA_PARALLEL), gradient "
             "AllReduce over NCCL, launched with mpirun (MindSpore/<model>/README.md: 'Mpi Multi-node')", "unknown")
DLPERF_READMES = [  # excerpt, DLPERF_FRAMEWORKS key (or a tuple), model, default precision
    ("dlperf_mx_rn50v1b", "MXNet", "resnet50", "fp32"),
    ("dlperf_mx_bert", "MXNet", "bert-base", "fp32"),
    ("dlperf_tf2_rn50", "TensorFlow 2.x", "resnet50", "fp32"),
    ("dlperf_tf2_bert", "TensorFlow 2.x", "bert-base", "fp32"),
    ("dlperf_pd_rn50", "PaddlePaddle", "resnet50", "fp32"),
    ("dlperf_pd_bert", "PaddlePaddle", "bert-base", "fp32"),
    ("dlperf_ms_rn50", MINDSPORE, "resnet50", "fp32"),
    ("dlperf_ms_bert", MINDSPORE, "bert-base", "fp32"),
    ("dlperf_pt_rn50", "PyTorch", "resnet50", "fp32"),
    ("dlperf_ngc_pt_rn50", "NGC PyTorch", "resnet50", "fp32"),
    ("dlperf_ngc_pt_bert", "NGC PyTorch", "bert-base", "fp32"),
    ("dlperf_ngc_tf_rn50", "NGC TensorFlow 1.x", "resnet50", "fp32"),
    ("dlperf_ngc_tf_bert", "NGC TensorFlow 1.x", "bert-base", "fp32"),
    ("dlperf_ngc_mx_rn50", "NGC MXNet", "resnet50", "fp32"),
    ("dlperf_of_rn50_0821", ("OneFlow v0.1.9",) + DLPERF_FRAMEWORKS["OneFlow"][1:], "resnet50", "fp32"),
    ("dlperf_of_rn50_v02", "OneFlow", "resnet50", "fp32"),
    ("dlperf_of_rn50_v031", ("OneFlow v0.3.1",) + DLPERF_FRAMEWORKS["OneFlow"][1:], "resnet50", "fp32"),
    ("dlperf_of_bert_0822", ("OneFlow v0.1.9",) + DLPERF_FRAMEWORKS["OneFlow"][1:], "bert-base", "fp32"),
    ("dlperf_of_bert_v02", "OneFlow", "bert-base", "fp32"),
    ("dlperf_of_bert_v031", ("OneFlow v0.3.1",) + DLPERF_FRAMEWORKS["OneFlow"][1:], "bert-base", "fp32"),
]
_HEADING = re.compile(r"^\s*(?:-\s*)?(#+)\s*(.*?)\s*$")


def _summary_numbers() -> set[float]:
    """Every number the DLPerf summary report's six tables print (excerpts dlperf_rn50_* / dlperf_bert_*),
    as values ('5115.40' there is '5115.4' in the PyTorch README)."""
    out = set()
    for name, *_ in DLPERF_TABLES:
        out.update(float(x) for x in re.findall(r"\d+\.\d+", "\n".join(excerpt(name)[1])))
    return out


def dlperf_readme_rows() -> list[dict]:
    summary = _summary_numbers()
    rows = []
    for name, fwkey, model, default_prec in DLPERF_READMES:
        head, lines = excerpt(name)
        m = re.match(r"<!-- Oneflow-Inc/DLPerf@(\w+) (\S+) lines (\d+)-(\d+), verbatim -->", head)
        assert m and m.group(1) == DLPERF_COMMIT, head
        path, first = m.group(2), int(m.group(3))
        fw, scheme, detail, amp_wire = DLPERF_FRAMEWORKS[fwkey] if isinstance(fwkey, str) else fwkey
        headings: dict[float, str] = {}
        i = 0
        while i < len(lines):
            h = _HEADING.match(lines[i])
            if h and not lines[i].lstrip().startswith("|"):
                # a heading inside a list item ('- ### batch size = 160') sits below the plain heading above it
                level = len(h.group(1)) + (0.5 if lines[i].lstrip().startswith("-") else 0)
                headings = {k: v for k, v in headings.items() if k < level}
                headings[level] = h.group(2).strip("# ")
                i += 1
                continue
            if not (lines[i].strip().startswith("|") and re.search(r"node", lines[i], re.I)):
                i += 1
                continue
            j = i
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            table = md_table(lines[i:j])
            header, body = [c.lower() for c in table[0]], table[1:]
            c_n = next(k for k, c in enumerate(header) if "node" in c)
            c_pn = next((k for k, c in enumerate(header) if "per_node" in c), None)
            c_g = c_pn if c_pn is not None else next(k for k, c in enumerate(header) if c.startswith("gpu"))
            c_b = next((k for k, c in enumerate(header) if c.startswith("batch")), None)
            c_t = next(k for k, c in enumerate(header) if "samples/s" in c or c == "throughput")
            chain = " / ".join(headings[k] for k in sorted(headings))
            low = chain.lower()
            prec = "amp" if re.search(r"fp16|amp|混合精度", low) else ("fp32" if "fp32" in low else default_prec)
            hb = re.findall(r"batch[ _]size\s*=\s*(\d+)", low)
            table_line = first + i  # lines[0] is the source's line `first`
            if re.search(r"worker=8\b", low):
                i = j
                continue
            for r in body:
                nodes = int(r[c_n])
                gpus = nodes * int(r[c_g]) if c_pn is not None else int(r[c_g])
                batch = r[c_b] if c_b is not None else (hb[-1] if hb else None)
                if gpus == 1 or batch is None:
                    continue
                base = next((x for x in body if int(x[c_n]) == 1 and int(x[c_g]) == 1
                             and (c_b is None or x[c_b] == batch)), None)
                if base is None:
                    continue
                v, single = num(r[c_t]), num(base[c_t])
                if float(v) in summary and float(single) in summary:
                    continue
                data = "synthetic" if "synthetic" in low else "real"
                rows.append(row(
                    source=f"DLPerf {path.rsplit('/', 1)[0]} ({path.rsplit('/', 1)[1]})",
                    source_url=f"https://github.com/Oneflow-Inc/DLPerf/blob/{DLPERF_COMMIT}/{path}",
                    source_loc=f"lines {m.group(3)}-{m.group(4)}, table at line {table_line} under '{chain}', "
                    f"row nodes={nodes} GPUs={gpus} batch={batch}, column '{table[0][c_t]}'",
                    read_from="table", system="dlperf-v100-cluster", **SYSTEMS["dlperf-v100-cluster"],
                    framework=fw, scheme=scheme, scheme_detail=detail, model=model, batch_per_gpu=batch,
                    accumulate=1, precision=prec, grad_wire=amp_wire if prec == "amp" else "fp32",
                    comm_overlap=DLPERF_OVERLAP.get(fwkey, "during-backward") if isinstance(fwkey, str)
                    else "during-backward", data=data, gpus=gpus, nodes=-(-gpus // 8),
                    samples_per_s=v, unit="images/s" if model == "resnet50" else
                    "sequences/s (sequence length 128)", single_gpu_samples_per_s=single, single_gpu_batch=batch,
                    single_gpu_loc="same table, row nodes=1 GPUs=1",
                    note=f"configuration as the headings state: {chain}"
                    + ("; ResNet50-v1b (gluon-cv): the v1.5 layout, same tensors" if "v1b" in path else "")))
            i = j
    return rows


# CSC's ml-benchmarks (mvsjober/ml-benchmarks results.md): ResNet-50 with PyTorch DDP on CSC's Puhti (4x V100
# per node) and Mahti (4x A100 per node), 1, 2, 4 GPUs in one node and 8 GPUs on two nodes. The README:
# 'mahti-gpu8-mpi.sh reserves two nodes, with 4 GPUs ... per node'; run-all-benchmarks.sh runs TWONODES="8".
# Model and batch: benchmarks/pytorch_visionmodel_ddp.py and pytorch_visionmodel_lightning.py, --model default
# 'resnet50', --batchsize default 32 (unchanged in every version of both files), no option given by
# run-all-benchmarks.sh. Only the DDP rows have a 1-GPU rate of the same benchmark, framework and date; the
# DeepSpeed and Horovod rows (no 1-GPU row), LUMI's MI250X rows (no GPU preset) and run_clm are left out.
CSC_COMMIT = "d5c4253c418e74811ea38367d165b4af84cd8fb2"
CSC_URL = f"https://github.com/mvsjober/ml-benchmarks/blob/{CSC_COMMIT}/results.md"
CSC_DETAIL = {
    "DDP": "torch.nn.parallel.DistributedDataParallel over NCCL, launched by torch.distributed.run "
           "(benchmarks/pytorch_visionmodel_ddp.py line 112, pytorch-ddp.sh)",
    "DDP Lightning": "PyTorch Lightning Trainer on several devices, whose default strategy is DDP over NCCL "
                     "(benchmarks/pytorch_visionmodel_lightning.py; README: 'PyTorch Lightning example using DDP')",
}


def csc_rows(clusters: tuple[str, ...] = ("puhti", "mahti"), systems: dict | None = None) -> list[dict]:
    """The DDP and Lightning rows of CSC's results.md on ``clusters`` (systems: SYSTEMS by default, keyed
    csc-<cluster>)."""
    systems = SYSTEMS if systems is None else systems
    head, lines = excerpt("csc_ml_benchmarks")
    assert head.startswith(f"<!-- mvsjober/ml-benchmarks@{CSC_COMMIT} results.md lines 1-"), head
    recs = []
    for i, ln in enumerate(lines, start=1):  # lines[0] is the file's line 1
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) != 6 or not cells[3].isdigit():
            continue
        bench, fw, cluster, gpus, date, rate = cells
        recs.append(dict(line=i, bench=bench, fw=fw, cluster=cluster, gpus=int(gpus), date=date, rate=rate))
    rows = []
    for r in recs:
        kind = r["bench"].split(",")[0].strip()
        if r["cluster"] not in clusters or kind not in CSC_DETAIL or r["gpus"] == 1:
            continue
        if num(r["rate"]) is None or r["rate"].upper() == "ERROR":
            continue
        same = [x for x in recs if x["gpus"] == 1 and (x["bench"], x["fw"], x["cluster"], x["date"])
                == (r["bench"], r["fw"], r["cluster"], r["date"])]
        if len(same) != 1:
            continue
        s = same[0]
        sysname = f"csc-{r['cluster']}"
        prec = "amp" if "fp16" in r["bench"] else ("tf32" if r["cluster"] == "mahti" else "fp32")
        gpn = systems[sysname]["gpus_per_node"]
        rows.append(row(
            source="CSC ml-benchmarks results (mvsjober/ml-benchmarks)", source_url=CSC_URL,
            source_loc=f"results.md line {r['line']}, row '{r['bench']} | {r['fw']} | {r['cluster']} | {r['gpus']} | "
            f"{r['date']}', column 'Img/sec'", read_from="table", system=sysname, **systems[sysname],
            framework=r["fw"] + (", Lightning" if kind == "DDP Lightning" else ""), scheme="pytorch-ddp",
            scheme_detail=CSC_DETAIL[kind], model="resnet50", batch_per_gpu=32, accumulate=1, precision=prec,
            grad_wire="fp32", comm_overlap="during-backward",
            data="real" if "Imagenet" in r["bench"] else "synthetic", gpus=r["gpus"], nodes=-(-r["gpus"] // gpn),
            samples_per_s=num(r["rate"]), unit="images/s", single_gpu_samples_per_s=num(s["rate"]),
            single_gpu_batch=32, single_gpu_loc=f"same table, line {s['line']} (GPUs 1, same benchmark, framework, "
            "cluster and date)",
            note="batch per GPU: the scripts' --batchsize default 32 (not printed in the table)"
            + ("; precision tf32: an fp32 model on A100, whose cuDNN convolutions run TF32 by default in PyTorch "
               "(torch.backends.cudnn.allow_tf32 defaults to True)" if prec == "tf32" else "")))
    return rows


# TensorFlow 1 BERT README as of NVIDIA/DeepLearningExamples@58a3ed6 (May 2020): the TensorFlow 19.08 NGC
# container's tables, replaced later by the 20.06 tables used above (different measurements). Pre-training
# 'with number of accumulation steps set to 1', so optimization.py (lines 96-97 at that commit) wraps the
# optimizer in hvd.DistributedOptimizer: gradients are allreduced as backprop produces them, fp16 on the
# wire with mixed precision. Multi-node tables take the single-GPU rate from the single-node table of the
# same container (DGX-1 16G; DGX-2 for the DGX-2H rows).
DLE_1908 = "58a3ed6baba5a1e42311e7bd590fc37c512f1a70"
DLE_1908_TABLES = [  # excerpt, system, single-GPU excerpt for multi-node tables, SQuAD fine-tuning
    ("dle1908_tf1_bert_dgx1_16g", "dgx1-v100", None, False),
    ("dle1908_tf1_bert_dgx1_16g_multi", "dgx1-v100", "dle1908_tf1_bert_dgx1_16g", False),
    ("dle1908_tf1_bert_dgx1_32g", "dgx1-v100", None, False),
    ("dle1908_tf1_bert_dgx2", "dgx2", None, False),
    ("dle1908_tf1_bert_dgx2h_multi", "dgx2", "dle1908_tf1_bert_dgx2", False),
    ("dle1908_tf1_squad_dgx1_16g", "dgx1-v100", None, True),
    ("dle1908_tf1_squad_dgx1_32g", "dgx1-v100", None, True),
]


def _dle1908_table(name: str):
    """(path, 'a-b' lines, heading line, heading, text, header, body) of a 19.08 excerpt."""
    head, lines = excerpt(name)
    m = re.match(r"<!-- NVIDIA/DeepLearningExamples@(\w+) (\S+) lines (\d+-\d+) \(heading at line (\d+)\)", head)
    assert m and m.group(1) == DLE_1908, head
    table = md_table([ln for ln in lines if ln.startswith("|")])
    header = [h.replace("*", "").strip() for h in table[0]]
    return m.group(2), m.group(3), m.group(4), lines[0].lstrip("#").strip(), "\n".join(lines), header, table[1:]


def dle1908_rows() -> list[dict]:
    rows = []
    for name, sysname, single_name, squad in DLE_1908_TABLES:
        path, lines_r, hline, heading, text, header, body = _dle1908_table(name)
        assert squad or "accumulation steps set to 1" in text, name
        multi = single_name is not None
        c_seq = header.index("Sequence Length") if "Sequence Length" in header else None
        c_b = header.index("Batch size / GPU: mixed precision, FP32")
        c_tp = {"amp": header.index("Throughput - mixed precision"), "fp32": header.index("Throughput - FP32")}
        if multi:
            _, s_lines, s_h, s_heading, _, s_header, s_body = _dle1908_table(single_name)
        else:
            s_heading, s_header, s_body = heading, header, body
        for r in body:
            n = int(r[0])
            if n == 1:
                continue
            seq = r[c_seq] if c_seq is not None else "384"
            srow = next(x for x in s_body if x[0] == "1" and (c_seq is None or x[s_header.index("Sequence Length")] == seq))
            for p, k in (("amp", 0), ("fp32", 1)):
                batch = _pair(r[c_b])[k]
                s_batch = _pair(srow[s_header.index("Batch size / GPU: mixed precision, FP32")])[k]
                note = ["TensorFlow 19.08 container; pre-training with 1 accumulation step as the README states"
                        if not squad else "BERT-large with the SQuAD span head (run_squad.sh: bert_model large, "
                        "seq_length 384); the library's bert-large tensors stand for it"]
                if s_batch != batch:
                    note.append(f"single-GPU rate measured at batch {s_batch}, this row at batch {batch}")
                if sysname == "dgx2" and multi:
                    note.append("multi-node rows on DGX-2H (450 W V100); the single-GPU rate is from the DGX-2 "
                                "single-node table of the same README version")
                gpn = SYSTEMS[sysname]["gpus_per_node"]
                rows.append(row(
                    source="NVIDIA DeepLearningExamples TensorFlow BERT README, 19.08 tables (May 2020)",
                    source_url=f"https://github.com/NVIDIA/DeepLearningExamples/blob/{DLE_1908}/{path}",
                    source_loc=f"lines {lines_r}, table under '{heading}' (line {hline}), row "
                    f"{'Nodes' if multi else 'GPUs'}={n}" + (f", sequence length {seq}" if c_seq is not None else "")
                    + f", column '{header[c_tp[p]]}'", read_from="table", system=sysname, **SYSTEMS[sysname],
                    framework="TensorFlow 1 (19.08 NGC), XLA", scheme="horovod-nccl",
                    scheme_detail="hvd.DistributedOptimizer when num_accumulation_steps is 1, Compression.fp16 with "
                    f"fp16 (TensorFlow/LanguageModeling/BERT/optimization.py lines 96-97 at {DLE_1908[:7]})",
                    model="bert-large", batch_per_gpu=batch, accumulate=1, precision=p,
                    grad_wire="fp16" if p == "amp" else "fp32", comm_overlap="during-backward", data="real",
                    gpus=n * gpn if multi else n, nodes=n if multi else 1, samples_per_s=num(r[c_tp[p]]),
                    unit=f"sequences/s (sequence length {seq})", single_gpu_samples_per_s=num(srow[
                        (s_header if multi else header).index(header[c_tp[p]])]),
                    single_gpu_batch=s_batch,
                    single_gpu_loc=(f"{path} lines {s_lines}, table under '{s_heading}', row GPUs=1, sequence "
                                    f"length {seq}") if multi else "same table, row GPUs=1"
                    + (f", sequence length {seq}" if c_seq is not None else ""),
                    note="; ".join(note)))
    return rows


# BERT-large SQuAD v1.1 fine-tuning, one node (no gradient accumulation): TensorFlow 1 (Horovod's
# DistributedOptimizer, gradients allreduced as backprop produces them) and PyTorch (apex DDP).
SQUAD = [  # excerpt, framework, system
    ("dle_tf1_squad_dgx1_16g", "TensorFlow 1 (20.06 NGC), XLA", "dgx1-v100"),
    ("dle_tf1_squad_dgx1_32g", "TensorFlow 1 (20.06 NGC), XLA", "dgx1-v100"),
    ("dle_tf1_squad_dgx2", "TensorFlow 1 (20.06 NGC), XLA", "dgx2"),
    ("dle_tf1_squad_dgxa100", "TensorFlow 1 (20.06 NGC), XLA", "dgx-a100"),
    ("dle_pt_squad_dgxa100", "PyTorch (21.11 NGC)", "dgx-a100"),
    ("dle_pt_squad_dgx1_32g", "PyTorch (21.11 NGC)", "dgx1-v100"),
]
SQUAD_SCHEME = {
    "TensorFlow 1": ("horovod-nccl", "hvd.DistributedOptimizer (num_accumulation_steps 1), Compression.fp16 when "
                     "use_fp16 (TensorFlow/LanguageModeling/BERT/optimization.py lines 96-97); run_squad.sh "
                     "defaults: bert_model large, seq_length 384, use_xla true", "fp16"),
    "PyTorch": ("pytorch-ddp", "apex.parallel.DistributedDataParallel (PyTorch/LanguageModeling/BERT/run_squad.py "
                "lines 993-998); run_squad.sh: bert-large-uncased, max_seq_length 384", "unknown"),
}


def squad_rows() -> list[dict]:
    rows = []
    for name, fw, sysname in SQUAD:
        path, lines_r, hline = _dle_meta(name)
        heading, header, body = _bert_table(name)
        clean = [h.replace("*", "").strip() for h in header]
        fp = "tf32" if sysname == "dgx-a100" else "fp32"
        c_b = next(i for i, h in enumerate(clean) if h.lower().startswith("batch size"))
        c_tp = {"amp": next(i for i, h in enumerate(clean) if h.lower().startswith("throughput - mixed")),
                fp: next(i for i, h in enumerate(clean) if h.lower().startswith(f"throughput - {fp}"))}
        hb = clean[c_b].lower()
        amp_first = hb.index("mixed") < hb.index(fp) if "mixed" in hb else hb.index("fp16") < hb.index(fp)
        scheme, detail, amp_wire = SQUAD_SCHEME[fw.split(" (")[0]]
        base = next(r for r in body if r[0].strip() == "1")
        for r in body:
            g = int(r[0].strip())
            if g == 1:
                continue
            for p, c in c_tp.items():
                k = 0 if (p == "amp") == amp_first else 1
                batch = _pair(r[c_b])[k]
                rows.append(row(
                    source=f"NVIDIA DeepLearningExamples {path.split('/')[0]} BERT README (SQuAD v1.1 fine-tuning)",
                    source_url=dle_url(path), source_loc=f"lines {lines_r}, table under '{heading}' (line {hline}), "
                    f"row GPUs={g}, column '{clean[c]}'", read_from="table", system=sysname, **SYSTEMS[sysname],
                    framework=fw, scheme=scheme, scheme_detail=detail, model="bert-large", batch_per_gpu=batch,
                    accumulate=1, precision=p, grad_wire=amp_wire if p == "amp" else "fp32",
                    comm_overlap="during-backward", data="real", gpus=g, nodes=1, samples_per_s=num(r[c]),
                    unit="sequences/s (sequence length 384)", single_gpu_samples_per_s=num(base[c]),
                    single_gpu_batch=_pair(base[c_b])[k], single_gpu_loc="same table, row GPUs=1",
                    note="BERT-large with the SQuAD span head; the library's bert-large tensors stand for it"))
    return rows


def half(source: str, source_loc: str) -> str:
    """The row's half, declared before any model change: "held-out" when the SHA-256 of
    "<source>|<source_loc>" (UTF-8) read as a hexadecimal integer is odd, else "dev"."""
    h = int(hashlib.sha256(f"{source}|{source_loc}".encode()).hexdigest(), 16)
    return "held-out" if h % 2 == 1 else "dev"


def main(out: Path = HERE / "runs.csv") -> None:
    rows, seen = [], set()
    for r in (tf_rows() + rn50_rows() + effnet_rows() + bert_rows() + squad_rows() + dlperf_rows() +
              dlperf_readme_rows() + csc_rows() + dle1908_rows()):
        # DLPerf prints some measurements twice (NGC TF1 BERT AMP at bsz=64 in the 'AMP, batch size = 64'
        # and 'AMP, batch size = max' tables): keep the first
        key = (r["source"], r["system"], r["framework"], r["model"], r["precision"], r["batch_per_gpu"],
               r["accumulate"], r["data"], r["unit"], r["gpus"], r["samples_per_s"])
        if key not in seen:
            seen.add(key)
            if r["gpu"] == "a100" and "80GB" in r["source_loc"]:  # the table's heading names the 80 GB A100
                r["gpu"] = "a100-80gb"
            rows.append(r)
    write_rows(rows, out, "p")


def write_rows(rows: list[dict], out: Path, id_prefix: str) -> None:
    """Number the rows (<id_prefix>001...), give each its half, write them as CSV and say how many."""
    for i, r in enumerate(rows, start=1):
        r["id"] = f"{id_prefix}{i:03d}"
        r["half"] = half(r["source"], r["source_loc"])
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    multi = sum(int(r["nodes"]) > 1 for r in rows)
    print(f"{out.name}: {len(rows)} rows, {multi} across nodes")


if __name__ == "__main__":
    main()
