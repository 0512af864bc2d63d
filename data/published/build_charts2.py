"""Generator of data/published/charts2_runs.csv: `python data/published/build_charts2.py`.

A second family of benchmark charts committed as image files to a public GitHub repository, whose values are
printed nowhere as text: Bagua's benchmark page (BaguaSys/tutorials, src/benchmark/index.md and its figures).
Every throughput here is READ OFF A CHART (read_from = plot): the pixel rows of the gridlines and of each bar were
measured on the PNG at the stated commit and are written down in an excerpt (excerpts/charts2_bagua_*.md, with a
description of the chart); this generator turns those pixel rows into values through the chart's own gridlines.
Nothing measured is typed here.

1. 'Scalability' chart (BaguaSys/tutorials@4bee2a2, src/benchmark/figures/scalability_vgg16.png, blob f476ae6,
   shown on the page from 2021-08-20 until commented out on 2021-08-30 as 'old scalability results'): grouped bars
   of 'Samples / Second' against 'Number of GPUs' (1, 8, 16, 32, 64, 128) for BytePS, Horovod, PyTorch-DDP and
   Bagua, each group inside a black 'Linear' box. Transcribed: the BytePS, Horovod and PyTorch-DDP bars at 8 (one
   whole server), 16, 32, 64 and 128 GPUs: three schemes on the same machines, model, batch and GPU counts. The
   single-GPU rate is the 'Linear' boxes' slope (least squares through the origin over the boxes at 8-128 GPUs,
   each within 1.5 rows of the line, checked here); the 1-GPU bars (all four at the same row) agree with it within
   their reading error (checked here). Not transcribed: the Bagua bars (its ByteGrad algorithm compresses
   gradients, a scheme the model lacks; the line-chart version's legend says 'Bagua(ByteGrad)').
2. 'e2e_vgg16_128' chart (BaguaSys/tutorials@842752a, src/benchmark/figures/e2e_vgg16_128.png, blob b312f28,
   2021-08-30): 'Speed img/sec' of VGG16 on 128 GPUs at '100Gbps' and '10Gbps'. Transcribed: the 'BytePS
   (AllReduce)', 'PyTorch DDP (AllReduce)' and 'Horovod (AllReduce)' bars at both bandwidths. This chart has no
   1-GPU mark: the single-GPU rate is chart 1's (same page, same servers, model and batch; a different measurement
   campaign, said per row). Not transcribed: the six Bagua bars (decentralized, low-precision, QAdam, ByteGrad,
   asynchronous: not schemes of the model; 'Bagua (AllReduce)' is Bagua's own allreduce, no scheme of the model).
Setup, from the page (index.md line 5): 'up to 16 servers ..., each of which is equipped with 8 NVIDIA V100 32GB
GPUs interconnected by NVLink. Servers are connected by 100 Gbps TCP/IP network.'; 'VGG16 on ImageNet with 128
GPUs; batch size per GPU: 32' (line 14). ASSUMPTIONS (said per row): batch 32 per GPU for every GPU count of chart
1 (the page states it for the 128-GPU VGG16 run only); fp32 (not stated); real data (the page says 'VGG16 on
ImageNet'); V100 SXM2 in a hybrid cube-mesh (nvlink2; the page says only 'interconnected by NVLink'); one 100 Gb/s
NIC per server used over TCP (eth-100g x1); the '10Gbps' bars: the same servers with the inter-server bandwidth
limited to 10 Gb/s (the page, line 38: 'we manually change the bandwidth and latency of connections between
servers'), taken as eth-10g x1; Horovod allreduces with NCCL (its backend is not stated); BytePS in co-locate mode
(one server process on every worker machine: BytePS's best practice without additional CPU servers; the page does
not say), which on one machine runs non-distributed (no server at all; docs/best-practice.md line 5).
Reading: hard pixel edges (no anti-aliasing); a bar's value row is its first coloured row - 0.5; a box's value
row is the centre of its black top line; error +-1 row = +-30 samples/s (chart 1), +-62 img/s (chart 2).
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

REPO = "BaguaSys/tutorials"
SCAL_COMMIT = "4bee2a21c2d55a1fadcc4974855a5f16171d4259"
E2E_COMMIT = "842752a1a3ee76a15806b88adc15af40b85f42ac"
BYTEPS_COMMIT = "040cad746fd7092cf51afc0ea467fbf8f20f766c"
SCAL_IMAGE = "src/benchmark/figures/scalability_vgg16.png"
E2E_IMAGE = "src/benchmark/figures/e2e_vgg16_128.png"
SOURCE = ("Bagua benchmark page charts (BaguaSys/tutorials src/benchmark/index.md, figures scalability_vgg16.png "
          "and e2e_vgg16_128.png, Aug 2021)")
GPUS_PER_NODE = 8
SCAL_SERIES = {"BytePS": "byteps", "Horovod": "horovod-nccl", "PyTorch-DDP": "pytorch-ddp"}
E2E_SERIES = {"BytePS (AllReduce)": "byteps", "Horovod (AllReduce)": "horovod-nccl",
              "PyTorch DDP (AllReduce)": "pytorch-ddp"}
NETWORK = {"100Gbps": ("eth-100g", "bagua-v100x8-100gbe"), "10Gbps": ("eth-10g", "bagua-v100x8-10gbps")}


def _setup(name: str) -> dict:
    """{(path, commit prefix, line): text} of a text excerpt (build.numbered_lines by commit)."""
    return numbered_lines(excerpt(name)[1], by_commit=True)


def _quote(setup: dict, path: str, commit: str, line: int, text: str) -> str:
    """``text`` checked to stand in ``path`` at ``commit`` line ``line`` of a text excerpt; returned for a citation."""
    return quote(setup, (path, commit[:7], line), text)


def _grid(sec: dict, name: str) -> tuple[float, float]:
    grid = sec["Gridlines"]
    assert grid[0] == ["label", "pixel rows"], (name, grid[0])
    a, b = line_fit([(pixel_centre(r), float(lab)) for lab, r in grid[1:]])
    for lab, r in grid[1:]:  # evenly spaced: each gridline within 0.5 row of the fit
        assert abs(a + b * pixel_centre(r) - float(lab)) <= 0.5 * abs(b), (name, lab, r)
    return a, b


def _fmt(v: float) -> str:
    return f"{v:.1f}"


def scal_readings() -> tuple[dict, float, float, dict]:
    """({(series, gpus): (value, value row)}, single-GPU rate, value of one row, {gpus: box value}) of chart 1."""
    head, lines = excerpt("charts2_bagua_scalability_vgg16")
    assert head.startswith(f"<!-- {REPO}@{SCAL_COMMIT} {SCAL_IMAGE} "), head
    sec = sections(lines)
    a, b = _grid(sec, "scalability")
    boxes_t = sec["Linear boxes"]
    assert boxes_t[0] == ["GPUs", "box columns", "black top rows"], boxes_t[0]
    boxes = {int(g): a + b * pixel_centre(r) for g, _, r in boxes_t[1:]}
    rate = sum(v * n for n, v in boxes.items()) / sum(n * n for n in boxes)  # least squares through the origin
    for n, v in boxes.items():
        assert abs(v - n * rate) <= 1.5 * abs(b), (n, v, n * rate)
    bars_t = sec["Bars"]
    assert bars_t[0] == ["GPUs", "series", "bar columns", "first coloured row"], bars_t[0]
    bars = {}
    for g, series, _, first in bars_t[1:]:
        vrow = int(first) - 0.5
        bars[(series, int(g))] = (a + b * vrow, vrow)
    for series in ("BytePS", "Horovod", "PyTorch-DDP", "Bagua"):  # the 1-GPU bars agree with the boxes' slope
        assert abs(bars[(series, 1)][0] - rate) <= 1.0 * abs(b), (series, bars[(series, 1)][0], rate)
    return bars, rate, abs(b), boxes


def e2e_readings() -> tuple[dict, float]:
    """({(series, bandwidth): (value, value row)}, value of one row) of chart 2."""
    head, lines = excerpt("charts2_bagua_e2e_vgg16_128")
    assert head.startswith(f"<!-- {REPO}@{E2E_COMMIT} {E2E_IMAGE} "), head
    sec = sections(lines)
    a, b = _grid(sec, "e2e")
    bars_t = sec["Bars"]
    assert bars_t[0] == ["bandwidth", "series", "bar columns", "first coloured row"], bars_t[0]
    out = {}
    for bw, series, _, first in bars_t[1:]:
        vrow = int(first) - 0.5
        out[(series, bw)] = (a + b * vrow, vrow)
    return out, abs(b)


def _cites() -> dict:
    s = _setup("charts2_bagua_text")
    idx = "src/benchmark/index.md"
    return dict(
        servers=_quote(s, idx, SCAL_COMMIT, 5, "We use up to 16 servers for benchmarks, each of which is equipped with "
                       "8 NVIDIA V100 32GB GPUs interconnected by NVLink."),
        net=_quote(s, idx, SCAL_COMMIT, 5, "Servers are connected by 100 Gbps TCP/IP network."),
        systems=_quote(s, idx, SCAL_COMMIT, 5, "We compare the performance of Bagua with Horovod, PyTorch-DDP and BytePS"),
        batch=_quote(s, idx, SCAL_COMMIT, 14, "VGG16 on ImageNet with 128 GPUs; batch size per GPU: 32"),
        scal=_quote(s, idx, SCAL_COMMIT, 23, "This figure shows the scalability of four systems on VGG16 with up to "
                    "128 GPUs."),
        hidden=_quote(s, idx, E2E_COMMIT, 22, "<!-- This figure shows the scalability of four systems"),
        e2e=_quote(s, idx, E2E_COMMIT, 28, "The following figure shows the training throughput for VGG16 on ImageNet "
                   "with 128 GPUs under different network bandwidth."),
        manual=_quote(s, idx, E2E_COMMIT, 38, "we manually change the bandwidth and latency of connections between "
                      "servers"),
        nondist=_quote(s, "docs/best-practice.md", BYTEPS_COMMIT, 5, "When `DMLC_NUM_WORKER=1`, BytePS will not use the "
                       "parameter servers or schedulers at all."),
        colocate=_quote(s, "docs/best-practice.md", BYTEPS_COMMIT, 30, "for each physical machine, you should launch a "
                        "worker and a server process. We call this *co-locate* mode"),
        hook=_quote(s, "byteps/torch/__init__.py", BYTEPS_COMMIT, 125, "grad_acc.register_hook(self._make_hook(p))"),
        pushpull=_quote(s, "byteps/torch/__init__.py", BYTEPS_COMMIT, 139,
                        'handle = byteps_push_pull(tensor_compressed, average=True, name="Gradient."+name)'),
    )


def _scheme_detail(scheme: str, c: dict) -> str:
    if scheme == "pytorch-ddp":
        return ("legend 'PyTorch-DDP' / 'PyTorch DDP (AllReduce)': torch.nn.parallel.DistributedDataParallel (NCCL over "
                "TCP; version and bucket size not stated, defaults assumed)")
    if scheme == "horovod-nccl":
        return ("legend 'Horovod' / 'Horovod (AllReduce)': hvd.DistributedOptimizer; Horovod's version and GPU allreduce "
                "backend are not stated: NCCL ASSUMED")
    return (f"legend 'BytePS' / 'BytePS (AllReduce)': byteps.torch DistributedOptimizer, which pushes and pulls each "
            f"gradient from a backward hook (byteps/torch/__init__.py@{BYTEPS_COMMIT[:7]} line 125 '{c['hook']}', line "
            f"139 '{c['pushpull']}'); version not stated; ASSUMED co-locate mode (docs/best-practice.md line 30: "
            f"'{c['colocate']}'), no additional CPU servers being mentioned by the page")


def _row(c: dict, scheme: str, gpus: int, value: float, rate: float, *, loc: str, url: str, network: str,
         system: str, note: list[str], single_loc: str) -> dict:
    nodes = math.ceil(gpus / GPUS_PER_NODE)
    byteps = scheme == "byteps"
    if byteps and nodes == 1:
        note = note + [f"BytePS on one machine runs non-distributed (docs/best-practice.md line 5: '{c['nondist']}'); "
                       "the chart's 8-GPU BytePS bar is far below Horovod's and DDP's on the same machine, unexplained "
                       "by the page"]
    hw = (f"index.md line 5: '{c['servers']} {c['net']}'; ASSUMED: V100 SXM2 (v100) in a hybrid cube-mesh "
          f"(nvlink2), one NIC per server ({'100 Gb/s Ethernet over TCP, eth-100g' if network == 'eth-100g' else 'the 100 Gb/s TCP network limited to 10 Gb/s, eth-10g'})")
    if network == "eth-10g":
        hw += f"; index.md@{E2E_COMMIT[:7]} line 38: '{c['manual']}' (how the 10 Gbps was set is not stated)"
    return row(
        source=SOURCE, source_url=url, source_loc=loc, read_from="plot", system=system, gpu="v100",
        gpus_per_node=GPUS_PER_NODE, intra="nvlink2", network=network, nics=1, hardware_source=hw,
        framework="PyTorch with Horovod / DDP / BytePS (versions not stated), Bagua benchmark, Aug 2021",
        scheme=scheme, scheme_detail=_scheme_detail(scheme, c),
        ps_servers=(1 if nodes == 1 else nodes) if byteps else None, ps_placement="colocated" if byteps else None,
        model="vgg16", batch_per_gpu=32, accumulate=1, precision="fp32", grad_wire="fp32",
        comm_overlap="during-backward", data="real", gpus=gpus, nodes=nodes, samples_per_s=_fmt(value),
        unit="images/s", single_gpu_samples_per_s=_fmt(rate), single_gpu_batch=32, single_gpu_loc=single_loc,
        note="; ".join(note + [f"ASSUMED batch 32 per GPU (index.md line 14: '{c['batch']}')",
                               "ASSUMED fp32 (precision not stated)",
                               "real data: the page's 'VGG16 on ImageNet'"]))


def rows() -> list[dict]:
    c = _cites()
    bars, rate, per_row, boxes = scal_readings()
    out = []
    url = f"https://github.com/{REPO}/blob/{SCAL_COMMIT}/{SCAL_IMAGE}"
    single_loc = (f"same chart: the 'Linear' boxes, each N x this rate (least-squares slope through the box tops at 8-128 "
                  f"GPUs; the 128-GPU box reads {boxes[128]:.0f}); the four 1-GPU bars read "
                  f"{bars[('BytePS', 1)][0]:.0f} +-{per_row:.0f}")
    for series, scheme in SCAL_SERIES.items():
        for gpus in (8, 16, 32, 64, 128):
            v, vrow = bars[(series, gpus)]
            out.append(_row(
                c, scheme, gpus, v, rate, url=url, network="eth-100g", system="bagua-v100x8-100gbe",
                loc=f"{SCAL_IMAGE} ('Samples / Second' vs 'Number of GPUs'), bar '{series}', x = {gpus} GPUs",
                single_loc=single_loc,
                note=[f"read off the chart (read_from plot): bar top row {vrow:g} (first coloured row - 0.5) of "
                      f"scalability_vgg16.png; +-1 row = +-{per_row:.0f} samples/s",
                      f"the page's text (index.md line 23): '{c['scal']}'; later commented out ('{c['hidden']}', "
                      f"index.md@{E2E_COMMIT[:7]} line 22, commit e4bc657 'docs: hide old scalability results')"]))
    e2e, per_row2 = e2e_readings()
    url2 = f"https://github.com/{REPO}/blob/{E2E_COMMIT}/{E2E_IMAGE}"
    for series, scheme in E2E_SERIES.items():
        for bw in ("100Gbps", "10Gbps"):
            v, vrow = e2e[(series, bw)]
            network, system = NETWORK[bw]
            out.append(_row(
                c, scheme, 128, v, rate, url=url2, network=network, system=system,
                loc=f"{E2E_IMAGE} ('Speed img/sec' vs 'Bandwidth'), bar '{series}', x = '{bw}' (128 GPUs)",
                single_loc=(f"another chart of the same page: {SCAL_IMAGE}'s 'Linear' boxes (slope; a different "
                            f"measurement campaign, before 2021-08-20), BaguaSys/tutorials@{SCAL_COMMIT[:7]}"),
                note=[f"read off the chart (read_from plot): bar top row {vrow:g} (first coloured row - 0.5) of "
                      f"e2e_vgg16_128.png; +-1 row = +-{per_row2:.0f} img/s",
                      f"the page's text (index.md@{E2E_COMMIT[:7]} line 28): '{c['e2e']}'",
                      "128 GPUs = 16 servers of 8 (index.md line 5)"]))
    return out


def main(out: Path = HERE / "charts2_runs.csv") -> None:
    """Write the rows to ``out`` (charts2_runs.csv)."""
    write_rows(rows(), out, "t")


if __name__ == "__main__":
    main()
