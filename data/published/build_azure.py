"""Generator of data/published/azure_runs.csv: `python data/published/build_azure.py`.

A family the model had never been checked on: Microsoft's Azure Batch AI Horovod benchmarks (Mathew Salvaris,
msalvaris/BatchAIHorovodBenchmark and msalvaris/BatchAIPyTorchHorovodBenchmark, July and November 2018). On Azure
RDMA-capable GPU VMs with 4 GPUs each (Standard_NC24rs_v3: V100, Standard_NC24rs_v2: P100, Standard_NC24r: K80,
Standard_ND24rs: P40), 1-4 GPUs in one VM and 8, 16, 32 GPUs on 2, 4, 8 VMs, batch 64 per GPU, fp32, synthetic data:
* TensorFlow 1.8 tf_cnn_benchmarks (tensorflow/benchmarks@3b90c14) with Horovod 0.13.2, two series per chart:
  "IntelMPI" (Intel MPI 2017.3.196 over DAPL on the InfiniBand interface, I_MPI_FABRICS=dapl, Horovod built
  without HOROVOD_GPU_ALLREDUCE: the allreduce is MPI's, on host memory: scheme horovod-mpi) and "OpenMPI+NCCL"
  (OpenMPI 3.0.0, Horovod with HOROVOD_GPU_ALLREDUCE=NCCL, NCCL 2.2.12 with NCCL_IB_DISABLE=1 and
  NCCL_SOCKET_IFNAME=eth0: NCCL over TCP on the standard Ethernet interface: scheme horovod-nccl), plus one
  "Single GPU" bar (tf_cnn_benchmarks without MPI or Horovod). Metric: 'total images/sec' (all GPUs).
* PyTorch 0.4.1 with Horovod 0.15.1 (horovod examples/pytorch_synthetic_benchmark.py@4370712), V100 only, the
  OpenMPI+NCCL series only (same TCP flags); metric 'Total img/sec' = rank 0's rate x hvd.size().

The numbers are printed nowhere as text: the repositories commit only Bokeh bar charts (experiments/*/plot.svg,
export_svgs); results files are git-ignored. Every value here is DERIVED from the chart's geometry (read_from =
plot), parsed from verbatim elements of the SVG (excerpts/azure_tf_<gpu>_<model>.md, azure_pt_v100_<model>.md):
1. The plot frame is the clip path 'M 133 31 L 1295 31 L 1295 528 L 133 528': the value axis runs from y=528
   (0, p.y_range.start = 0 in produce_plot.py) upwards. Every bar rect ends exactly at y+height = 528.
2. Bars are the rects in the palette colours; produce_plot.py's factor_cmap maps '#717cbb' to IntelMPI,
   '#89b9df' to OpenMPI+NCCL, '#8a4b9a' to Single GPU (excerpts/azure_tf_setup.md). Each bar's GPU count is the
   nearest x-group label ('1'...'32', bold 20px), and its series is checked against the nearest rotated x label.
3. Scale: the y-axis tick marks are integer pixel positions (major 'M 127 y L 135 y' under the printed labels
   '0', '1000', ...; minor 'M 129 y L 133 y' at a fifth of the major step; x relative to the frame's left edge,
   133 or 155). Bokeh rounds each tick to the nearest
   pixel, so each tick at value v > 0 bounds the scale s (pixels per image/s): |528 - v*s - y| <= 0.5. The
   intersection over all ticks gives [s_lo, s_hi] (relative half-width 0.002%-0.052%); s = its midpoint.
   (Flooring or ceiling the tick positions instead leaves no consistent scale in 18 of the 20 charts.)
4. value = bar height / s, printed to 0.1 image/s; the note gives the bounds height/s_hi .. height/s_lo. Ratios
   within one chart are exact (the tallest bar is 497/1.05 px: Bokeh's DataRange1d end = 1.05 x the maximum,
   checked for every chart).

Transcribed: every multi-GPU bar (2, 3, 4 GPUs in one VM; 8, 16, 32 GPUs on 2, 4, 8 VMs) of the 17 TensorFlow
charts on V100, P100 and K80 (ResNet-50, ResNet-50 v2, ResNet-101, ResNet-101 v2, ResNet-152 (not on K80: no plot),
MobileNet = tf_cnn_benchmarks 'mobilenet' = MobileNetV2) and of the 3 PyTorch V100 charts (ResNet-50/101/152).
The single-GPU rate is the chart's 'Single GPU' bar (TensorFlow) or its 1-GPU OpenMPI+NCCL bar (PyTorch; there is
no other). Not transcribed: the six P40 (Standard_ND24rs) charts (no P40 GPU preset); the PyTorch repository's
k80/p100/p40 plot.svg files (byte-identical copies of the TensorFlow charts, commented out of its README); the
PyTorch charts' earlier versions (f444ad0, 848a2ad; replaced by 064be1e). ResNet v2 (pre-activation) rows use the
library's resnet50/resnet101 tensors (same convolution and classifier weights; said per row).

Hardware: 4 GPUs per VM (PROCESSES_PER_NODE:=4, Azure's size tables: 4 GPUs; NC24r: '1 GPU = one-half K80 card').
The InfiniBand interface runs at 'FDR rates for ... RDMA-capable N-series virtual machines' (Azure sizes-hpc.md,
excerpts/azure_hardware.md): ib-fdr x1 for the IntelMPI rows. The OpenMPI+NCCL rows cross the 'standard Azure
network interface' (eth0) over TCP; Azure states no speed for it on these sizes: eth-10g x1 is an ASSUMPTION (said
per row). GPUs are taken as PCIe cards ('one V100 card', 'one P100 card'; no NVLink on these sizes): v100-pcie,
and p100 (the only P100 preset; its figures are the SXM2 part's), intra pcie3 (an assumption: Azure states no
intra-VM topology).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows

TF_REPO, TF_HEAD = "msalvaris/BatchAIHorovodBenchmark", "0d23f48c017dfed6e4969206bdd5c613ee620569"
PT_REPO, PT_HEAD = "msalvaris/BatchAIPyTorchHorovodBenchmark", "1077edff6e0b3b97b91d51f087f8b9e13392b520"
TF_SOURCE = ("Azure Batch AI Horovod benchmark, TensorFlow tf_cnn_benchmarks (msalvaris/BatchAIHorovodBenchmark, "
             "experiments/*/plot.svg)")
PT_SOURCE = ("Azure Batch AI Horovod benchmark, PyTorch (msalvaris/BatchAIPyTorchHorovodBenchmark, "
             "experiments/v100/*/plot.svg)")
DOCS = "https://github.com/MicrosoftDocs/azure-docs/blob"
# chart gpu -> (VM size, system, GPU preset, azure-docs page with its '1 GPU = ...' line)
VMS = {
    "v100": ("Standard_NC24rs_v3", "azure-nc24rs-v3", "v100-pcie", "ncv3-series.md", "1 GPU = one V100 card."),
    "p100": ("Standard_NC24rs_v2", "azure-nc24rs-v2", "p100", "ncv2-series.md", "1 GPU = one P100 card."),
    "k80": ("Standard_NC24r", "azure-nc24r", "k80", "nc-series.md", "1 GPU = one-half K80 card."),
}
TF_MODELS = {  # chart directory suffix -> (tf_cnn_benchmarks --model, library model)
    "resnet50": ("resnet50", "resnet50"), "resnet50_v2": ("resnet50_v2", "resnet50"),
    "resnet101": ("resnet101", "resnet101"), "resnet101_v2": ("resnet101_v2", "resnet101"),
    "resnet152": ("resnet152", "resnet152"), "mobilenetv2": ("mobilenet", "mobilenet-v2"),
}
TF_CHARTS = [(g, m) for g in VMS for m in TF_MODELS if not (g == "k80" and m == "resnet152")]
PT_MODELS = ("resnet50", "resnet101", "resnet152")
SCHEMES = {"IntelMPI": "horovod-mpi", "OpenMPI+NCCL": "horovod-nccl"}

_FRAME = re.compile(r'<clipPath id="[^"]*"><path fill="none" stroke="none" '
                    r'd=" M (\d+) (\d+) L (\d+) \2 L \3 (\d+) L \1 \4 L \1 \2 Z"/></clipPath>$')
_RECT = re.compile(r'^<rect fill="(#[0-9a-f]{6})" stroke="none" x="([-\d.]+)" y="([-\d.]+)" '
                   r'width="([-\d.]+)" height="([-\d.]+)"/>$')
_TICK = re.compile(r'^<path [^>]*d=" M (\d+) (\d+) L (\d+) \2"[^>]*/>$')
_TEXT = re.compile(r'^(?:<g transform="([^"]*)">)?<text [^>]*font-size="(\d+)px"[^>]*font-weight="(\w+)"[^>]*'
                   r'text-anchor="(\w+)"[^>]*>([^<]*)</text>$')


def _setup(name: str) -> dict:
    """{(path, line): text} of a setup excerpt ('### path' headings, 'N: text' lines)."""
    head, lines = excerpt(name)
    out, path = {}, None
    for ln in lines:
        if ln.startswith("### "):
            path = ln[4:]
        elif path and re.match(r"^\d+: ", ln):
            n, text = ln.split(": ", 1)
            out[(path, int(n))] = text
    return out


def _find(setup: dict, path: str, text: str) -> int:
    """The line number of the one line of ``path`` in a setup excerpt that contains ``text``."""
    hits = [n for (p, n), t in setup.items() if p == path and text in t]
    assert len(hits) == 1, (path, text, hits)
    return hits[0]


def _palette(setup: dict, path: str) -> dict:
    """Colour -> series name from produce_plot.py: _PALETTE and factor_cmap's factors, in order."""
    pal = setup[(path, _find(setup, path, "_PALETTE = "))]
    cmap = setup[(path, _find(setup, path, "fill_color=factor_cmap("))]
    colours = re.findall(r'"(#[0-9a-f]{6})"', pal)
    factors = re.findall(r"'([^']+)'", cmap.split("factors=[", 1)[1].split("]", 1)[0])
    assert len(colours) == len(factors) == 3, (colours, factors)
    _find(setup, path, "p.y_range.start = 0")
    return dict(zip(colours, factors))


def derive(name: str, palette: dict) -> dict:
    """The bars of one chart excerpt with their derived values: {(gpus, series): bar}, plus the scale."""
    head, lines = excerpt(name)
    frame, rects, major, minor, labels, groups, subs = None, [], [], [], [], [], []
    for i, ln in enumerate(lines, start=2):  # excerpt file line numbers
        if m := _FRAME.search(ln):
            frame = frame or tuple(int(v) for v in m.groups())
        elif m := _RECT.match(ln):
            fill, x, y, w, h = m.group(1), *(float(v) for v in m.groups()[1:])
            rects.append(dict(fill=fill, x=x, y=y, w=w, h=h, line=i, text=ln))
        elif m := _TICK.match(ln):  # relative to the frame's left edge: major -6..+2, minor -4..0
            dx = (int(m.group(1)) - frame[0], int(m.group(3)) - frame[0])
            assert dx in ((-6, 2), (-4, 0)), (name, ln)
            (major if dx == (-6, 2) else minor).append(int(m.group(2)))
        elif m := _TEXT.match(ln):
            transform, size, weight, anchor, text = m.groups()
            tr = re.findall(r"translate\((-?\d+),(-?\d+)\)", transform or "")
            pos = (int(tr[-1][0]), int(tr[-1][1])) if tr else None
            if size == "20" and anchor == "end" and re.fullmatch(r"\d+", text):
                labels.append((int(text), pos[1]))
            elif size == "20" and weight == "bold" and anchor == "middle":
                groups.append((text, pos[0]))
            elif size == "15":
                subs.append((text, pos[0]))
    x0, y0, x1, y1 = frame
    bars = [r for r in rects if r["x"] < x1]  # legend swatches lie right of the frame
    assert all(r["x"] >= x1 for r in rects if r not in bars)
    for b in bars:
        assert abs(b["y"] + b["h"] - y1) < 1e-9, (name, b)
    assert abs(max(b["h"] for b in bars) - (y1 - y0) / 1.05) < 1e-9, name  # DataRange1d end = 1.05 x max
    # y scale from the tick marks
    assert [y for _, y in labels] == major and labels[0] == (0, y1), (name, labels, major)
    step = labels[1][0] - labels[0][0]
    assert all(b[0] - a[0] == step for a, b in zip(labels, labels[1:])), labels
    s0 = (y1 - labels[-1][1]) / labels[-1][0]
    ticks = list(labels)
    ks = [round((y1 - y) / s0 / (step / 5)) for y in minor]
    assert ks == list(range(len(minor))), (name, ks)
    ticks += [(k * step / 5, y) for k, y in zip(ks, minor)]
    lo, hi = 0.0, float("inf")
    for v, y in ticks:
        if v == 0:
            assert abs(y1 - y) <= 0.5
            continue
        lo, hi = max(lo, (y1 - y - 0.5) / v), min(hi, (y1 - y + 0.5) / v)
    assert lo < hi, (name, lo, hi)
    s = (lo + hi) / 2
    out = {}
    for b in bars:
        cx = b["x"] + b["w"] / 2
        series = palette[b["fill"]]
        gpus = min(groups, key=lambda g: abs(g[1] - cx))[0]
        sub = min(subs, key=lambda g: abs(g[1] - cx))[0]
        assert sub == series, (name, b, sub, series)
        key = (int(gpus), series)
        assert key not in out, (name, key)
        out[key] = dict(b, value=b["h"] / s, lo=b["h"] / hi, hi=b["h"] / lo, series=series)
    return dict(bars=out, scale=(lo, hi), head=head, ticks=len(ticks))


def _fmt(v: float) -> str:
    return f"{v:.1f}"


# (the x group before, this x group) of every chart's multi-GPU bars
GPU_STEPS = tuple(zip((1, 2, 3, 4, 8, 16), (2, 3, 4, 8, 16, 32)))


def _bar_columns(b: dict, one: dict, gpus: int) -> dict:
    """The columns every row shares: batch 64 per GPU, fp32, synthetic, exchange during backprop, 4 GPUs per VM,
    the bar's and its 1-GPU bar's derived values."""
    return dict(batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward",
                data="synthetic", gpus=gpus, nodes=-(-gpus // 4), samples_per_s=_fmt(b["value"]), unit="images/s",
                single_gpu_samples_per_s=_fmt(one["value"]), single_gpu_batch=64)


def _derived(b: dict, d: dict) -> str:
    """The note's opening: the bar's value and bounds at the chart's scale (module docstring)."""
    return (f"DERIVED from the bar's height, not printed: {_fmt(b['value'])} images/s (bounds "
            f"{_fmt(b['lo'])}-{_fmt(b['hi'])}) at the scale the chart's {d['ticks']} integer-pixel y ticks allow, "
            f"{d['scale'][0]:.6f}-{d['scale'][1]:.6f} px per image/s (module docstring); ")


def _hardware() -> dict:
    head, lines = excerpt("azure_hardware")
    text = "\n".join(lines)
    assert "operating at HDR rates for HBv2, EDR rates for HB, HC, FDR rates for H16r, H16mr, and RDMA-capable " \
           "N-series virtual machines" in text
    assert "H-series features 56 Gb/sec Mellanox FDR InfiniBand" in text
    assert "such as the NC24rs configurations (NC24rs_v3, NC24rs_v2 and NC24r) are also RDMA-capable. This " \
           "interface is in addition to the standard Azure network interface" in text
    sha = {m.group(1): m.group(2) for m in re.finditer(r"^### articles/virtual-machines/(\S+)@([0-9a-f]{40})",
                                                        text, re.M)}
    out = {}
    for g, (vm, system, gpu, page, one) in VMS.items():
        assert one in lines and re.search(rf"^\| {vm}\* \| 24 \| \d+ \| \d+ \| 4 \|", text, re.M), (g, vm)
        common = (f"Azure {vm}, 4 GPUs per VM (azure-docs {page}@{sha[page][:7]}: '| {vm}* | 24 | ... | 4 |' in "
                  f"the GPU column, '{one}', '*RDMA capable'; excerpts/azure_hardware.md); the GPUs taken as PCIe "
                  "cards on PCIe 3.0 (Azure says 'card' and names no NVLink; the intra-VM topology is not stated: "
                  "an assumption)")
        out[g] = dict(
            ib=dict(system=system, gpu=gpu, gpus_per_node=4, intra="pcie3", network="ib-fdr", nics=1,
                    hardware_source=common + f"; InfiniBand 'FDR rates for H16r, H16mr, and RDMA-capable N-series "
                    f"virtual machines' (sizes-hpc.md@{sha['sizes-hpc.md'][:7]}; FDR = '56 Gb/sec' on the same "
                    "page), one RDMA interface per VM ('a network interface for remote direct memory access (RDMA) "
                    "connectivity'): ib-fdr x1"),
            eth=dict(system=system, gpu=gpu, gpus_per_node=4, intra="pcie3", network="eth-10g", nics=1,
                     hardware_source=common + "; the run crosses 'the standard Azure network interface' (eth0) "
                     f"over TCP (sizes-hpc.md@{sha['sizes-hpc.md'][:7]}), whose speed Azure does not state for this "
                     "size: eth-10g x1 is an ASSUMPTION"))
    return out


def _tf_rows(hw: dict) -> list[dict]:
    setup = _setup("azure_tf_setup")
    spec, mk = "experiments/generate_job_spec.py", "experiments/include/control.mk"
    intel_l = _find(setup, spec, "-env I_MPI_FABRICS=dapl")
    ofa_l = _find(setup, spec, "I_MPI_DAPL_PROVIDER=ofa-v2-ib0")
    ibdis_l = _find(setup, spec, "-x NCCL_IB_DISABLE=1")
    eth_l = _find(setup, spec, "-x NCCL_SOCKET_IFNAME=eth0")
    cmds = [n for (p, n), t in setup.items() if p == spec and "--batch_size 64 --variable_update horovod" in t]
    assert len(cmds) == 2, cmds
    for n in (8, 16, 32):
        _find(setup, mk, f"$(call generate_job_intel, {n // 4}, $(MODEL), 4)")
        _find(setup, mk, f"$(call generate_job_openmpi, {n // 4}, $(MODEL), 4)")
    nccl_build = _find(setup, "Horovod/Docker/dockerfile", "HOROVOD_GPU_ALLREDUCE=NCCL HOROVOD_WITH_TENSORFLOW=1 pip "
                       "install --no-cache-dir horovod==0.13.2")
    mpi_build = _find(setup, "Horovod-intel/Docker/dockerfile", "HOROVOD_WITH_TENSORFLOW=1 pip install --no-cache-dir "
                      "horovod==0.13.2")
    assert "HOROVOD_GPU_ALLREDUCE" not in setup[("Horovod-intel/Docker/dockerfile", mpi_build)]
    assert not [t for (p, _), t in setup.items() if p == "Horovod-intel/Docker/dockerfile" and "HOROVOD_GPU" in t]
    tf_v = setup[("Horovod/Docker/dockerfile", _find(setup, "Horovod/Docker/dockerfile", "ENV TENSORFLOW_VERSION="))]
    assert tf_v.endswith("=1.8.0")
    _find(setup, "Horovod/Docker/dockerfile", "ENV NCCL_VERSION=2.2.12-1+cuda9.0")
    _find(setup, "Horovod/Docker/dockerfile", "cd openmpi-3.0.0 && ")
    _find(setup, "Horovod-intel/Docker/dockerfile", "l_mpi_2017.3.196.tgz'")
    bcnn = "scripts/tf_cnn_benchmarks/benchmark_cnn.py"
    _find(setup, bcnn, "flags.DEFINE_boolean('use_fp16', False,")
    total_l = _find(setup, bcnn, "log_fn('total images/sec: %.2f' % images_per_sec)")
    palette = _palette(setup, "experiments/produce_plot.py")
    frameworks = {
        "IntelMPI": "TensorFlow 1.8.0, Horovod 0.13.2 (built without HOROVOD_GPU_ALLREDUCE), Intel MPI 2017.3.196, "
                    "tf_cnn_benchmarks@3b90c14 (image masalvar/horovod-batchai-bench-intel:9-1.8-0.13.2)",
        "OpenMPI+NCCL": "TensorFlow 1.8.0, Horovod 0.13.2 (HOROVOD_GPU_ALLREDUCE=NCCL), NCCL 2.2.12, OpenMPI 3.0.0, "
                        "tf_cnn_benchmarks@3b90c14 (image masalvar/horovod-batchai-bench:9-1.8-0.13.2)",
    }
    details = {
        "IntelMPI": (f"Horovod allreduce through Intel MPI on host memory (Horovod-intel/Docker/dockerfile line "
                     f"{mpi_build}: 'HOROVOD_WITH_TENSORFLOW=1 pip install --no-cache-dir horovod==0.13.2', no "
                     "HOROVOD_GPU_ALLREDUCE); mpirun -n <gpus> -ppn <per VM> -env I_MPI_FABRICS=dapl -env "
                     f"I_MPI_DAPL_PROVIDER=ofa-v2-ib0 (experiments/generate_job_spec.py lines {intel_l}-{ofa_l}): "
                     "DAPL over the InfiniBand interface, inside a VM as well (no shm fabric named); "
                     "tf_cnn_benchmarks --variable_update horovod, one process per GPU; Horovod 0.13.2 defaults "
                     "(fusion threshold 64 MiB, no HOROVOD_* tuning set)"),
        "OpenMPI+NCCL": (f"Horovod allreduce through NCCL (Horovod/Docker/dockerfile line {nccl_build}: "
                         "'HOROVOD_GPU_ALLREDUCE=NCCL'); mpirun -np <gpus> -bind-to none -map-by slot -mca "
                         "btl_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -mca btl ^openib -x NCCL_IB_DISABLE=1 "
                         f"(generate_job_spec.py lines {eth_l}-{ibdis_l}): NCCL's socket transport over TCP on "
                         "eth0 between VMs, InfiniBand disabled; NCCL's own intra-VM transport inside one VM; "
                         "tf_cnn_benchmarks --variable_update horovod, one process per GPU; Horovod 0.13.2 "
                         "defaults (fusion threshold 64 MiB, no HOROVOD_* tuning set)"),
    }
    rows = []
    for g, m in TF_CHARTS:
        mk_path = f"experiments/{g}_{m}/Makefile"
        tf_model, lib_model = TF_MODELS[m]
        vm = VMS[g][0]
        assert setup[(mk_path, _find(setup, mk_path, "VM_SIZE:="))] == f"VM_SIZE:={vm}"
        assert setup[(mk_path, _find(setup, mk_path, "MODEL:="))] == f"MODEL:={tf_model}"
        assert setup[(mk_path, _find(setup, mk_path, "PROCESSES_PER_NODE:="))] == "PROCESSES_PER_NODE:=4"
        assert setup[(mk_path, _find(setup, mk_path, "GPU_TYPE:="))] == f"GPU_TYPE:={g}"
        name = f"azure_tf_{g}_{m}"
        d = derive(name, palette)
        path = f"experiments/{g}_{m}/plot.svg"
        assert d["head"].startswith(f"<!-- {TF_REPO}@{TF_HEAD} {path}, selected elements, verbatim"), d["head"]
        last = re.search(r"committed in ([0-9a-f]{40}) \((\d{4}-\d\d-\d\d)\)", d["head"])
        one = d["bars"][(1, "Single GPU")]
        for series, scheme in SCHEMES.items():
            own1 = d["bars"][(1, series)]
            for prev, gpus in GPU_STEPS:
                b = d["bars"][(gpus, series)]
                h = hw[g]["ib" if series == "IntelMPI" else "eth"]
                drop = (f"; lower than the same series at {prev} GPU(s), {_fmt(d['bars'][(prev, series)]['value'])}, "
                        "as the chart shows") if b["value"] < d["bars"][(prev, series)]["value"] else ""
                v2 = (f"; tf_cnn_benchmarks '{tf_model}' (pre-activation ResNet v2) stands as the library's "
                      f"{lib_model} (same weight tensors)") if tf_model.endswith("_v2") else ""
                mob = ("; tf_cnn_benchmarks 'mobilenet' is MobileNetV2 (models/model_config.py: 'mobilenet': "
                       "mobilenet_v2.MobilenetModel, 224x224)") if tf_model == "mobilenet" else ""
                net = ("" if series == "IntelMPI" else "; network eth-10g x1 is an assumption (Azure does not state "
                       "the Ethernet speed of this size)")
                rows.append(row(
                    source=TF_SOURCE, source_url=f"https://github.com/{TF_REPO}/blob/{TF_HEAD}/{path}",
                    source_loc=(f"{path}@{TF_HEAD[:7]} (last changed {last.group(1)[:7]}, {last.group(2)}), chart "
                                f"'{vm} / {tf_model}', x group '{gpus}' bar '{series}' (excerpts/{name}.md line "
                                f"{b['line']}: rect fill {b['fill']} height {b['h']})"),
                    read_from="plot", **h,
                    framework=frameworks[series], scheme=scheme, scheme_detail=details[series],
                    model=lib_model, **_bar_columns(b, one, gpus),
                    single_gpu_loc=(f"same chart, x group '1' bar 'Single GPU' (excerpts/{name}.md line "
                                    f"{one['line']}: height {one['h']}): tf_cnn_benchmarks --batch_size 64 without "
                                    "MPI or Horovod (generate_job_spec.py cmd_local)"),
                    note=(_derived(b, d) + f"single-GPU bar {_fmt(one['value'])} "
                          f"({_fmt(one['lo'])}-{_fmt(one['hi'])}); "
                          f"the series' own 1-GPU bar (Horovod, one rank) derives to {_fmt(own1['value'])}; the "
                          f"rate is 'total images/sec' (benchmark_cnn.py line {total_l}; all GPUs), averaged over "
                          "the ranks' log lines (parse_results.py); batch 64 per GPU from generate_job_spec.py, "
                          "fp32 (use_fp16 defaults to False), synthetic (no --data_dir), sgd, NCHW, 100 batches "
                          "after 10 warm-up" + v2 + mob + net + drop)))
    return rows


def _pt_rows(hw: dict) -> list[dict]:
    setup = _setup("azure_pt_setup")
    spec = "experiments/generate_job_spec.py"
    ibdis_l = _find(setup, spec, "-x NCCL_IB_DISABLE=1")
    eth_l = _find(setup, spec, "-x NCCL_SOCKET_IFNAME=eth0")
    _find(setup, spec, "python /benchmarks/pytorch_synthetic_benchmark.py --model {model} --batch-size 64")
    _find(setup, "experiments/v100/experiment_config.mk", "VM_SIZE:=Standard_NC24rs_v3")
    _find(setup, "experiments/include/workspace_config.mk", "PROCESSES_PER_NODE:=4")
    build_l = _find(setup, "Horovod/Docker/dockerfile", "HOROVOD_GPU_ALLREDUCE=NCCL HOROVOD_WITH_PYTORCH=1 pip "
                    "install --no-cache-dir horovod==0.15.1")
    _find(setup, "Horovod/Docker/dockerfile", "ENV PYTORCH_VERSION=0.4.1")
    _find(setup, "Horovod/Docker/dockerfile", "ENV NCCL_VERSION=2.3.5-2+cuda9.0")
    bench = "examples/pytorch_synthetic_benchmark.py"
    _find(setup, bench, "parser.add_argument('--fp16-allreduce', action='store_true', default=False,")
    total_l = _find(setup, bench, "log('Total img/sec on %d %s(s): %.1f +-%.1f' %")
    palette = _palette(setup, "experiments/produce_plot.py")
    rows = []
    for m in PT_MODELS:
        assert setup[(f"experiments/v100/v100_{m}/Makefile", 2)] == f"MODEL:={m}"
        name = f"azure_pt_v100_{m}"
        d = derive(name, palette)
        path = f"experiments/v100/v100_{m}/plot.svg"
        assert d["head"].startswith(f"<!-- {PT_REPO}@{PT_HEAD} {path}, selected elements, verbatim"), d["head"]
        assert {s for _, s in d["bars"]} == {"OpenMPI+NCCL"}
        one = d["bars"][(1, "OpenMPI+NCCL")]
        for prev, gpus in GPU_STEPS:
            b = d["bars"][(gpus, "OpenMPI+NCCL")]
            before = d["bars"][(prev, "OpenMPI+NCCL")]["value"]
            drop = (f"; lower than the same series at {prev} GPUs, {_fmt(before)}, as the chart shows"
                    if b["value"] < before else "")
            rows.append(row(
                source=PT_SOURCE, source_url=f"https://github.com/{PT_REPO}/blob/{PT_HEAD}/{path}",
                source_loc=(f"{path}@{PT_HEAD[:7]} (last changed 064be1e, 2018-11-23), chart 'Standard_NC24rs_v3 / "
                            f"{m}', x group '{gpus}' bar 'OpenMPI+NCCL' (excerpts/{name}.md line {b['line']}: rect "
                            f"fill {b['fill']} height {b['h']})"),
                read_from="plot", **hw["v100"]["eth"],
                framework=("PyTorch 0.4.1, Horovod 0.15.1 (HOROVOD_GPU_ALLREDUCE=NCCL), NCCL 2.3.5, OpenMPI 3.1.2, "
                           "horovod examples/pytorch_synthetic_benchmark.py@4370712, torchvision " + m),
                scheme="horovod-nccl",
                scheme_detail=(f"hvd.DistributedOptimizer over NCCL (Horovod/Docker/dockerfile line {build_l}); "
                               "mpirun -np <gpus> -mca btl_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -mca btl "
                               f"^openib -x NCCL_IB_DISABLE=1 (generate_job_spec.py lines {eth_l}-{ibdis_l}): "
                               "NCCL's socket transport over TCP on eth0 between VMs, InfiniBand disabled; one "
                               "process per GPU; no fp16 compression; Horovod 0.15.1 defaults"),
                model=m, **_bar_columns(b, one, gpus),
                single_gpu_loc=(f"same chart, x group '1' bar 'OpenMPI+NCCL' (excerpts/{name}.md line "
                                f"{one['line']}: height {one['h']}): one rank, still under Horovod (the chart has no "
                                "other 1-GPU bar)"),
                note=(_derived(b, d) + f"1-GPU bar {_fmt(one['value'])} ({_fmt(one['lo'])}-{_fmt(one['hi'])}); "
                      "the rate is rank 0's "
                      f"'Total img/sec' = hvd.size() x its mean per-GPU rate (pytorch_synthetic_benchmark.py line "
                      f"{total_l}), 10 iterations of 10 batches after 10 warm-up; batch 64 per GPU "
                      "(generate_job_spec.py), fp32, synthetic torch.randn data held on the GPU, SGD; network "
                      "eth-10g x1 is an assumption (Azure does not state the Ethernet speed of this size)" + drop)))
    return rows


def azure_rows() -> list[dict]:
    """Every multi-GPU bar of the TensorFlow V100/P100/K80 charts and the PyTorch V100 charts."""
    hw = _hardware()
    return _tf_rows(hw) + _pt_rows(hw)


def main(out: Path = HERE / "azure_runs.csv") -> None:
    """Write the rows to ``out`` (azure_runs.csv)."""
    write_rows(azure_rows(), out, "a")


if __name__ == "__main__":
    main()
