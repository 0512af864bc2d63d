"""Generator of data/published/chainermn_runs.csv: `python data/published/build_chainermn.py`.

A family the model had never been checked on: Preferred Networks' ChainerMN benchmark of Jan/Feb 2017, the post
'Performance of Distributed Deep Learning using ChainerMN' (Takuya Akiba, chainer.org, Feb 8 2017; source
chainer/chainer.org@3a3d95c, _posts/2017-02-08-Performance-of-Distributed-Deep-Learning-Using-ChainerMN.md, a
translation of research.preferred.jp/2017/02/chainermn-benchmark-results/). ResNet-50 on ImageNet-1k at 32 images
per GPU on 1-128 GPUs of a Sakura Internet cluster: 32 nodes of 4 GeForce GTX TITAN X (Maxwell), InfiniBand FDR 4X.
Four frameworks on the same machines: ChainerMN (pre-release), MXNet 0.9.1 (kvstore dist_sync), CNTK (GitHub master of
Jan 2017, OpenMPI) and TensorFlow 0.12 (parameter servers, n - 1 for n nodes).

Every throughput here is READ OFF A CHART (read_from = plot): the figure 'Training samples per second'
(assets/dlsummit_06_framework-samples-per-second.png, post line 45), a log-scale line chart of '#Samples per second'
against '#GPUs' with one series per framework. The pixel rows of its gridlines and of each marker were measured on the
PNG and are written in excerpts/chainermn_samples_per_second.md; this generator turns them into values through the
chart's own gridlines (value = 10 ** (a + b * row), least squares over the four decade gridlines). Nothing measured is
typed here. The post's text is excerpts/chainermn_text.md (numbered verbatim lines), with ChainerMN's first public
release (chainer/chainermn@570f7f4, v1.0.0b1) for how ChainerMN exchanges gradients.

Transcribed: every marker above 1 GPU of the four series (2, 4, 8, 16, 32, 64, 128 GPUs: 28 rows; 8 and more GPUs
cross nodes, post line 28: 'Up to 4 GPUs, only one node is used'), each with the same series' 1-GPU marker as the
single-GPU rate (post line 47: every framework, TensorFlow included, ran in its distributed mode even on one GPU).
Checked, not transcribed: the Chainer speedup chart (assets/dlsummit_01_throughput.png, a ratio of whole-training
times), whose speedups match the Chainer throughput ratios read here within 2% (asserted below); the 128-GPU bar
chart of training times (dlsummit_05); the learning curves (dlsummit_02). Not transcribed either: the May 2018 post
'New ChainerMN functions ...' (its charts start at 8 GPUs: no single-GPU rate).

ASSUMPTIONS (said per row): batch 32 per GPU for all four frameworks (the post states it under 'Experimental setting'
without naming a framework); fp32 (Maxwell, 2017; not stated); real data (ImageNet-1k pre-resized to 256x256, line
74); PCIe 3.0 inside a node (4 GeForce cards; topology not stated); one FDR 4X port per node (line 70 names the
network only). Schemes, from the post and the code it links: ChainerMN -> horovod-mpi-cuda-aware (NCCL reduce inside
a node, CUDA-aware MPI allreduce between nodes, NCCL broadcast: the 'hierarchical' default of v1.0.0b1; the model has
no hierarchical scheme: the nearest), after-backward (allreduce_grad after loss.backward, multi_node_optimizer.py);
CNTK -> horovod-mpi (MPI over OpenMPI 1.10.3, not said to be CUDA-aware; the post says CNTK uses NCCL inside a node,
line 43), after-backward (CNTK's data-parallel learner aggregates after the backward pass: not quoted here);
MXNet -> mxnet-dist-device-sync for kvstore dist_sync (line 100; dist_sync sums a worker's GPUs on the host, not on
a device: the nearest scheme), one worker per node and as many servers as workers (the launcher's default), colocated;
TensorFlow -> tf-distributed-replicated with n - 1 parameter servers colocated on the workers (lines 121-122, 127),
one worker per GPU (the inception example's way; not stated), 1 server on one node (n - 1 = 0 is not possible; not
stated).
Reading error: +-1 pixel row on a centre where both edges of the marker are visible, +-1.5 rows where one edge is
hidden under another series' marker; one row = 0.60% of the value (log scale, 385 rows per decade).
"""
import importlib.util
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows
numbered_lines, quote, sections = _build.numbered_lines, _build.quote, _build.sections
line_fit, pixel_centre = _build.line_fit, _build.pixel_centre

BLOG_COMMIT = "3a3d95c43c1af135f655c3c99cb3ad15b1ba0dc6"
MN_COMMIT = "570f7f46d74c196e56cebf66f10594fe3f5d713d"
POST = "_posts/2017-02-08-Performance-of-Distributed-Deep-Learning-Using-ChainerMN.md"
IMAGE = "assets/dlsummit_06_framework-samples-per-second.png"
SOURCE = ("ChainerMN benchmark post, Feb 2017 (chainer/chainer.org@3a3d95c, "
          "_posts/2017-02-08-Performance-of-Distributed-Deep-Learning-Using-ChainerMN.md, figure "
          "'Training samples per second')")
URL = f"https://github.com/chainer/chainer.org/blob/{BLOG_COMMIT}/{IMAGE}"
GPUS_PER_NODE = 4


def _setup() -> dict:
    """{(path, line): text} of excerpts/chainermn_text.md (build.numbered_lines)."""
    head, lines = excerpt("chainermn_text")
    assert head.startswith(f"<!-- chainer/chainer.org@{BLOG_COMMIT} "), head
    assert f"chainer/chainermn@{MN_COMMIT}" in head, head
    return numbered_lines(lines)


def _quote(s: dict, path: str, line: int, text: str) -> str:
    return quote(s, (path, line), text)


def _log_axis(grid: list[list[str]]) -> tuple[float, float]:
    """(a, b) of log10(value) = a + b * row through the decade gridlines, each within 0.5 row of the fit."""
    assert grid[0] == ["label", "pixel rows"], grid[0]
    pts = [(pixel_centre(r), math.log10(float(lab))) for lab, r in grid[1:]]
    a, b = line_fit(pts)
    for r, v in pts:
        assert abs(a + b * r - v) <= 0.5 * abs(b), (r, v)
    return a, b


def chart() -> tuple[dict, float]:
    """{(series, gpus): (value, centre row, how read)} and the relative change of one pixel row."""
    head, lines = excerpt("chainermn_samples_per_second")
    assert head.startswith(f"<!-- chainer/chainer.org@{BLOG_COMMIT} {IMAGE} "), head
    sec = sections(lines)
    a, b = _log_axis(sec["Gridlines"])
    table = sec["Markers"]
    assert table[0] == ["series", "GPUs", "column", "top row", "bottom row", "how read"], table[0]
    out = {}
    for series, gpus, col, top, bottom, how in table[1:]:
        span = int(bottom) - int(top)
        # 28 = a full 29-row marker; 26 = the 27-row chord read 2.5 columns off the centre next to the frame
        assert span == 28 or (col == "2280" and span == 26), (series, gpus, top, bottom)
        centre = (int(top) + int(bottom)) / 2
        out[(series, int(gpus))] = (10 ** (a + b * centre), centre, how)
    assert len(out) == 32, len(out)
    # check against the Chainer speedup chart (dlsummit_01): speedup = throughput ratio within 2%
    sa, sb = _log_axis(sec["Speedup gridlines"])
    check = sec["Check: Chainer speedup chart (not transcribed)"]
    assert check[0] == ["GPUs", "column", "top row", "bottom row"], check[0]
    for gpus, _col, top, bottom in check[1:]:
        speedup = 10 ** (sa + sb * (int(top) + int(bottom)) / 2)
        ratio = out[("Chainer", int(gpus))][0] / out[("Chainer", 1)][0]
        assert abs(ratio / speedup - 1) < 0.02, (gpus, ratio, speedup)
    return out, 10 ** abs(b) - 1


def _fmt(v: float) -> str:
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def rows() -> list[dict]:
    s = _setup()
    c = dict(
        nodes_gpus=_quote(s, POST, 66, "32 node, 128 GPUs in total"),
        gpu=_quote(s, POST, 68, "GPU: 4 * GeForce GTX TITAN X (Maxwell)"),
        cpu=_quote(s, POST, 69, "CPU: 2 * Intel(R) Xeon(R) CPU E5-2623 v3 @ 3.00GHz"),
        net=_quote(s, POST, 70, "Network: InfiniBand FDR 4X"),
        one_node=_quote(s, POST, 28, "Up to 4 GPUs, only one node is used, but multiple nodes are needed for 8 or "
                        "more GPUs."),
        sakura=_quote(s, POST, 22, "All of the experiments ran on a computing environment provided by Sakura Internet."),
        data=_quote(s, POST, 74, "Dataset: ImageNet-1k (1,281,158 images, already resized to 256x256 pixels before "
                    "training)"),
        model=_quote(s, POST, 75, "Model: ResNet-50 (input image size: 224x224)"),
        batch=_quote(s, POST, 77, "Batch size: 32 per GPU (32 x #GPU is the total batch size)"),
        unstable=_quote(s, POST, 43, "Though the measured throughputs seem a bit unstable due to small number of "
                        "iterations, you can still see a trend among them."),
        nccl=_quote(s, POST, 43, "This can be because CNTK and ChainerMN uses NVIDIA’s NCCL for collective "
                    "communication between GPUs in each node."),
        distmode=_quote(s, POST, 47, "The reason why it performed poorly even with 1 GPU is that it also runs in "
                        "distributed mode as well as the other frameworks."),
        mn_mpi=_quote(s, POST, 18, "ChainerMN depends on MPI for inter-node communication"),
        mn_nccl=_quote(s, POST, 18, "NVIDIA’s NCCL is then used for intra-node communication between GPUs."),
        mx_ver=_quote(s, POST, 93, "MXNet version: GitHub master at Jan. 2016 (0.9.1, "
                      "`3a820bf7526d5c78f418a0ec2b01d4cd9977bbe7`)"),
        mx_kv=_quote(s, POST, 100, "We tried `dist_device_sync` mode instead of `dist_sync`, but the result was not "
                     "better. Therefore, we decided to use `dist_sync` as with the official example."),
        mx_example=_quote(s, POST, 96, "Out training code is based on the [official ImageNet example]"),
        cntk_ver=_quote(s, POST, 106, "CNTK Version: GitHub master at Jan. 2016 "
                        "(`d21dd4f47d4ed1bf6e5a04bad7e372364b8236b6`)"),
        cntk_mpi=_quote(s, POST, 107, "MPI: OpenMP 1.10.3"),
        cntk_ompi=_quote(s, POST, 111, "so we used OpenMPI for CNTK"),
        cntk_example=_quote(s, POST, 109, "Our training code is based on [the official example for distributed "
                            "training on CIFAR dataset]"),
        tf_ver=_quote(s, POST, 117, "tensorflow_gpu-0.12.0-cp27-none-linux_x86_64.whl"),
        tf_example=_quote(s, POST, 119, "Our training code is based on the [official ImageNet example]"),
        tf_coloc=_quote(s, POST, 121, "Parameter servers are different processes on the same nodes as those of "
                        "workers."),
        tf_n1=_quote(s, POST, 122, "The number of parameter servers are n - 1, where n is the number of nodes."),
        tf_n1_all=_quote(s, POST, 127, "we used n - 1 for other experiments using different number of nodes."),
        mn_cuda=_quote(s, "README.md", 15, "it makes full use of the latest technologies such as NVIDIA NCCL and "
                       "CUDA-Aware MPI"),
        mn_default=_quote(s, "chainermn/communicators/__init__.py", 2, "communicator_name='hierarchical'"),
        mn_hier=_quote(s, "chainermn/communicators/__init__.py", 16, "hierarchical        OK  Required Each node "
                       "has a single NIC or HCA"),
        mn_backward=_quote(s, "chainermn/multi_node_optimizer.py", 20, "loss.backward()"),
        mn_allreduce=_quote(s, "chainermn/multi_node_optimizer.py", 28, "self.communicator.allreduce_grad(target)"),
        mn_intra=_quote(s, "chainermn/communicators/hierarchical_communicator.py", 36, "# Intra-node reduce"),
        mn_inter=_quote(s, "chainermn/communicators/hierarchical_communicator.py", 43, "# Inter-node allreduce"),
        mn_bcast=_quote(s, "chainermn/communicators/hierarchical_communicator.py", 50, "# Intra-node bcast"),
    )
    pts, per_row = chart()
    hw = (f"post lines 66-70 (Appendix 'Experimental environment'): '{c['nodes_gpus']}', '{c['gpu']}', "
          f"'{c['cpu']}', '{c['net']}'; line 22: '{c['sakura']}'; line 28: '{c['one_node']}'. gpu preset titanx "
          "(data/presets/gpus.toml: Maxwell GM200 GTX Titan X). ASSUMED: PCIe 3.0 between the 4 GPUs of a node "
          "(GeForce cards, no NVLink; the PCIe topology is not stated) and one FDR 4X port per node (the post names "
          "the network, not the port count)")
    fw = {
        "Chainer": dict(
            framework="Chainer + ChainerMN (pre-release of Jan 2017; first public release v1.0.0b1 in May 2017)",
            scheme="horovod-mpi-cuda-aware", overlap="after-backward", ps=(None, None),
            detail=(f"post line 18: '{c['mn_mpi']}' ... '{c['mn_nccl']}'; chainermn@{MN_COMMIT[:7]} (v1.0.0b1, the "
                    f"first public release, not the benchmarked build): README line 15 '{c['mn_cuda']}'; default "
                    f"communicator (communicators/__init__.py line 2 '{c['mn_default']}', line 16 "
                    f"'{c['mn_hier']}'): hierarchical_communicator.py lines 36-51 '{c['mn_intra']}' (NCCL) -> "
                    f"'{c['mn_inter']}' (CUDA-aware MPI on the node leaders) -> '{c['mn_bcast']}' (NCCL), one "
                    f"packed fp32 buffer; multi_node_optimizer.py line 20 '{c['mn_backward']}' then line 28 "
                    f"'{c['mn_allreduce']}' (after the whole backward pass). horovod-mpi-cuda-aware is the nearest "
                    "scheme (the model has no hierarchical NCCL+MPI scheme); which communicator the Jan 2017 build "
                    "used is not stated")),
        "MXNet": dict(
            framework="MXNet 0.9.1 (GitHub master 3a820bf, Jan 2017), official example/image-classification",
            scheme="mxnet-dist-device-sync", overlap="during-backward", ps=("nodes", "colocated"),
            detail=(f"post line 100: '{c['mx_kv']}' (kvstore dist_sync: a worker sums its GPUs' gradients on the "
                    "host, pushes to the servers, pulls the weights; mxnet-dist-device-sync is the nearest scheme, "
                    "which sums on a GPU); line 93 '"
                    f"{c['mx_ver']}'; line 96 '{c['mx_example']}'. ASSUMED: one worker per node using its 4 GPUs "
                    "and as many servers as workers, on the same nodes (the example's launcher default; not "
                    "stated); pushes per parameter as backward produces them")),
        "CNTK": dict(
            framework="CNTK (GitHub master d21dd4f, Jan 2017; OpenMPI 1.10.3, Python 3 / Anaconda3 4.2.0)",
            scheme="horovod-mpi", overlap="after-backward", ps=(None, None),
            detail=(f"post line 106 '{c['cntk_ver']}'; line 107 '{c['cntk_mpi']}' (sic: OpenMPI), line 111 "
                    f"'{c['cntk_ompi']}'; line 109 '{c['cntk_example']}' (data-parallel distributed learner over "
                    f"MPI); line 43: '{c['nccl']}'. ASSUMED: horovod-mpi (an MPI allreduce not said to be "
                    "CUDA-aware; NCCL inside a node is not modelled for these rows), fp32 gradients (no 1-bit "
                    "quantization stated), exchanged after the backward pass")),
        "TensorFlow": dict(
            framework="TensorFlow 0.12.0 (pip wheel), tensorflow/models inception distributed ImageNet example",
            scheme="tf-distributed-replicated", overlap="during-backward", ps=("n-1", "colocated"),
            detail=(f"post line 117 '{c['tf_ver']}'; line 119 '{c['tf_example']}'; line 121 '{c['tf_coloc']}'; "
                    f"line 122 '{c['tf_n1']}'; line 127 '{c['tf_n1_all']}'. Between-graph replication with "
                    "variables on the parameter servers (tf-distributed-replicated is the nearest scheme). ASSUMED: "
                    "one worker process per GPU (the example's way; not stated)")),
    }
    out = []
    for series in ("Chainer", "MXNet", "CNTK", "TensorFlow"):
        f = fw[series]
        one, one_centre, one_how = pts[(series, 1)]
        for gpus in (2, 4, 8, 16, 32, 64, 128):
            v, centre, how = pts[(series, gpus)]
            nodes = math.ceil(gpus / GPUS_PER_NODE)
            ps_servers = ps_place = None
            note = [f"read off the chart (read_from plot): marker centre row {centre:g} of "
                    f"dlsummit_06_framework-samples-per-second.png ({how}); +-1 row = +-{100 * per_row:.1f}%",
                    f"single-GPU rate: the same series' 1-GPU marker, centre row {one_centre:g} ({one_how}); "
                    f"post line 47: '{c['distmode']}'",
                    f"the post, line 43: '{c['unstable']}'",
                    f"ASSUMED batch 32 per GPU for every framework (line 77 '{c['batch']}', stated once for the "
                    "experiments), fp32 (not stated), real data (line 74)"]
            if f["ps"][0] == "nodes":
                ps_servers, ps_place = nodes, f["ps"][1]
                note.append(f"ASSUMED {nodes} server(s), one per node")
            elif f["ps"][0] == "n-1":
                ps_servers, ps_place = max(nodes - 1, 1), f["ps"][1]
                note.append(f"parameter servers n - 1 = {nodes - 1} for {nodes} node(s)" if nodes > 1 else
                            "ASSUMED 1 parameter server on the one node (n - 1 = 0 is impossible; not stated)")
            if nodes == 1 and gpus < GPUS_PER_NODE:
                note.append("2 of the node's 4 GPUs")
            out.append(row(
                source=SOURCE, source_url=URL,
                source_loc=f"{IMAGE} (post line 45, 'Training Throughput for ImageNet Classification (ResNet-50)'), "
                f"series '{series}', x = {gpus} GPUs",
                read_from="plot", system="sakura-titanx-x4-fdr", gpu="titanx", gpus_per_node=GPUS_PER_NODE,
                intra="pcie3", network="ib-fdr", nics=1, hardware_source=hw,
                framework=f["framework"], scheme=f["scheme"], scheme_detail=f["detail"],
                ps_servers=ps_servers, ps_placement=ps_place, model="resnet50", batch_per_gpu=32, accumulate=1,
                precision="fp32", grad_wire="fp32", comm_overlap=f["overlap"], data="real", gpus=gpus, nodes=nodes,
                samples_per_s=_fmt(v), unit="images/s", single_gpu_samples_per_s=_fmt(one), single_gpu_batch=32,
                single_gpu_loc=f"same chart, series '{series}', x = 1 GPU (read off the chart)",
                note="; ".join(note)))
    return out


def main(out: Path = HERE / "chainermn_runs.csv") -> None:
    """Write the rows to ``out`` (chainermn_runs.csv)."""
    write_rows(rows(), out, "r")


if __name__ == "__main__":
    main()
