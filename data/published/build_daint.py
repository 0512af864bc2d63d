"""Generator of data/published/daint_runs.csv: `python data/published/build_daint.py`.

A family the model had never been checked on: a Cray system with ONE GPU per node. CSCS's Sarus cookbook page
'TensorFlow with Horovod' (eth-cscs/sarus@4a8fdc4, doc/cookbook/tensorflow_horovod/tf_hvd.rst) runs
tf_cnn_benchmarks with `--variable_update horovod --batch_size 64` (synthetic data, fp32) on Piz Daint, a Cray
XC50 whose hybrid nodes each hold one P100 16 GB, connected by the Cray Aries interconnect (test_setup.rst), natively
and inside Sarus containers. Two result figures, committed as PNG and as vector PDF (matplotlib); no value is
printed as text, so every throughput here is READ OFF A CHART (read_from = plot), from the PDF's vector drawing: the
pages' content streams are in excerpts/daint_sarus_new_pdf.md and daint_sarus_old_pdf.md (verbatim, decompressed);
this generator finds the labelled gridlines and the plotted lines in them and maps the lines' vertices through the
gridlines. matplotlib writes coordinates with six decimals, so the reading error is below 0.01 images/s; the values
are rounded here to 0.01. The setup text is excerpts/daint_sarus_text.md (numbered lines of tf_hvd.rst,
test_setup.rst, osu_mb.rst and the two Dockerfiles); every citation below is checked to stand there.

1. horovod-results_new.pdf (section 'Horovod 0.16.x with CUDA 10.0', measured 2019, mean of 5 runs): inception3,
   Resnet 50, vgg16, alexnet at 1, 2, 4, 8 and 12 nodes, series 'sarus' (TensorFlow 1.13.1 + Horovod 0.16.1 built
   with HOROVOD_GPU_ALLREDUCE=NCCL, NCCL 2.4.2, in the container) and 'native' (Horovod 0.16.0, TensorFlow 1.12.0,
   NCCL 2.4.2, CSCS modules). Transcribed: every point above 1 node (4 models x 2 series x 4 node counts = 32 rows),
   with the same series' 1-node point (one node = one P100 = one GPU) as the single-GPU rate; scheme horovod-nccl.
2. horovod-results_old.pdf (section 'Horovod 0.15.1 with CUDA 9.x', measured 2018, 'average and standard deviation
   of 50 runs'): ResNet-50 at 2-128 nodes, series 'Native' (TensorFlow 1.7.0 + Horovod 0.15.1 from pip, no NCCL on
   Piz Daint) and 'Container' (image '...-mpich3.1.4-no-nccl', Horovod built without HOROVOD_GPU_ALLREDUCE): the
   allreduce goes through MPI on host memory, scheme horovod-mpi. Transcribed: every mean (2 series x 7 node counts
   = 14 rows); the error bars' standard deviation is given in the note. The figure has no 1-node point: the
   single-GPU rate is the NEW figure's 1-node ResNet-50 point of the same deployment (native / sarus), measured with
   another TensorFlow (1.12 / 1.13.1 instead of 1.7.0) and CUDA (10.0 instead of 9.x): said per row.
   Not transcribed: the old figure's 'Speedup' panel (the same measurements divided by the native 2-node mean).

Network: the same cookbook's own measurement between two Piz Daint GPU nodes, the osu_latency output printed in
osu_mb.rst ('srun -C gpu -N2', Cray MPICH through the native MPI hook): one-way latency 1.11 us at 0 bytes and
431.85 us at 4194304 bytes, i.e. 4194304 B / 431.85 us = 9.71 GB/s, written as the LINK '9.71GB/s,1.11us', one
NIC per node. This is MPI's path over Aries. ASSUMPTION for the horovod-nccl rows: NCCL 2.4 has no Aries transport;
the container's /etc/nccl.conf sets NCCL_IB_HCA=ipogif0 (the Aries IP interface), so NCCL most likely used its
socket transport over TCP/IP on Aries, whose bandwidth no source found states: the rows keep the MPI figure and
say so. GPU: 'p100' (the only P100 preset; its figures are the SXM2 card's; the source says 'a single NVIDIA Tesla
P100 GPU with 16 GB of memory', not the form factor); intra 'pcie3' (one GPU per node: never crossed).
"""
import importlib.util
import math
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, row, write_rows = _build.excerpt, _build.row, _build.write_rows
numbered_lines, quote, line_fit = _build.numbered_lines, _build.quote, _build.line_fit

COMMIT = "4a8fdc438f0684a8966ec71d6f798949e17374c0"
SOURCE = ("Sarus cookbook 'TensorFlow with Horovod' on Piz Daint (eth-cscs/sarus@4a8fdc4, "
          "doc/cookbook/tensorflow_horovod/tf_hvd.rst and its two result figures)")
DIR = "doc/cookbook/tensorflow_horovod"
NEW_PDF, OLD_PDF = f"{DIR}/horovod-results_new.pdf", f"{DIR}/horovod-results_old.pdf"
SYSTEM = "cscs-piz-daint"
MODELS = {"inception3": "inception-v3", "Resnet 50": "resnet50", "vgg16": "vgg16", "alexnet": "alexnet"}
# panel -> the bottom panel of its column (whose x tick labels it shares)
COLUMN = {"inception3": "vgg16", "vgg16": "vgg16", "Resnet 50": "alexnet", "alexnet": "alexnet"}
TF, HVD, OSU, TS = (f"{DIR}/tf_hvd.rst", "doc/cookbook/dockerfiles/tensorflow_horovod/Dockerfile_horovod_0_",
                    "doc/cookbook/osu_mb/osu_mb.rst", "doc/cookbook/test_setup.rst")

_NUM = r"-?\d+(?:\.\d+)?"
_PT = re.compile(rf"^({_NUM}) ({_NUM}) ([ml])$")
_RG = re.compile(r"(?:^| )([\d.]+) ([\d.]+) ([\d.]+) RG\b")
_TJ = re.compile(r"\(([^()]*)\) Tj")
_CM = re.compile(rf"^1 0 0 1 ({_NUM}) ({_NUM}) cm /M\d+ Do$")


# ------------------------------------------------------------------------------------------ text excerpt
def _setup() -> dict:
    """{(path, line): text} of excerpts/daint_sarus_text.md (build.numbered_lines)."""
    head, lines = excerpt("daint_sarus_text")
    assert head.startswith(f"<!-- eth-cscs/sarus@{COMMIT} "), head
    return numbered_lines(lines)


def _q(s: dict, path: str, line: int, text: str) -> str:
    """``text`` checked to stand in ``path`` line ``line``; returned for a citation."""
    return quote(s, (path, line), text)


def _network(s: dict) -> tuple[str, str]:
    """The LINK figure from the osu_latency output (osu_mb.rst lines 61-86) and its citation."""
    _q(s, OSU, 61, "# OSU MPI Latency Test v5.3.2")
    _q(s, OSU, 62, "# Size          Latency (us)")
    table = {}
    for n in range(63, 87):
        size, lat = s[(OSU, n)].split()
        table[int(size)] = lat
    big = max(table)
    bw = big / (float(table[big]) * 1e-6)
    link = f"{bw / 1e9:.2f}GB/s,{table[0]}us"
    run = _q(s, OSU, 53, "srun -C gpu -N2 -t2")
    hook = _q(s, OSU, 11, "We use OMB to show that Sarus is able to provide the same native MPI high")
    cite = (f"network: the same cookbook's osu_latency run between two GPU nodes (osu_mb.rst line 53 '{run}', "
            f"Cray MPICH through Sarus' native MPI hook, line 11 '{hook} ...'), its printed output (lines 63-86): "
            f"'{table[0]}' us at 0 bytes and '{table[big]}' us at {big} bytes ('one-way latency', line 31) -> "
            f"{big} B / {table[big]} us = {bw / 1e9:.3f} GB/s, written '{link}'; one Aries NIC per node (the "
            f"ping-pong is one node's injection)")
    return link, cite


def _hardware(s: dict, link_cite: str) -> str:
    xc = _q(s, TS, 6, "a hybrid Cray")
    xc2 = _q(s, TS, 7, "XC50/XC40 system")
    aries = _q(s, TS, 9, "Cray Aries interconnect under a Dragonfly topology")
    node = _q(s, TS, 10, "Hybrid nodes are equipped with an Intel Xeon")
    node2 = _q(s, TS, 11, "E5-2690v3 processor, 64 GB of RAM, and a single NVIDIA Tesla P100 GPU with 16 GB")
    return (f"test_setup.rst lines 6-11: '{xc} {xc2}', '{aries}', '{node} {node2} of memory'; {link_cite}; "
            "gpu 'p100' (the preset is the SXM2 card; the source does not state the form factor), intra pcie3 "
            "(one GPU per node, never crossed)")


# ------------------------------------------------------------------------------------------ PDF streams
def _stream(name: str, path: str) -> list[str]:
    head, lines = excerpt(name)
    assert head.startswith(f"<!-- eth-cscs/sarus@{COMMIT} {path} "), head
    i = lines.index("## Content stream of page 1")
    assert lines[i + 2] == "```", lines[i + 2]
    j = lines.index("```", i + 3)
    return lines[i + 3:j]


def _paths(lines: list[str]) -> list[dict]:
    """Every 'x y m' (+ 'x y l'...) path: points, paint operator, stroke colour, the strings shown before the next
    path (labels), the cumulative marker offsets drawn right after it, and the line index."""
    out, colour, i = [], None, 0
    while i < len(lines):
        ln = lines[i]
        for m in _RG.finditer(ln):
            colour = tuple(float(v) for v in m.groups())
        m = _PT.match(ln)
        if not (m and m.group(3) == "m"):
            i += 1
            continue
        pts, j = [(float(m.group(1)), float(m.group(2)))], i + 1
        while j < len(lines) and (mm := _PT.match(lines[j])) and mm.group(3) == "l":
            pts.append((float(mm.group(1)), float(mm.group(2))))
            j += 1
        k = j
        while k < len(lines) and lines[k] == "":
            k += 1
        op = lines[k] if k < len(lines) else ""
        texts, marks, cx, cy = [], [], 0.0, 0.0
        t = k + 1
        while t < len(lines) and not (_PT.match(lines[t]) and lines[t].endswith(" m")):
            texts += _TJ.findall(lines[t])
            if mc := _CM.match(lines[t]):
                cx, cy = cx + float(mc.group(1)), cy + float(mc.group(2))
                marks.append((cx, cy))
            t += 1
        out.append(dict(pts=pts, op=op, colour=colour, texts=texts, marks=marks, line=i))
        i = j
    return out


BLUE, RED, LIGHT_BLUE = (0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 0.6, 1.0)


def new_points() -> dict:
    """{(panel title, 'sarus'|'native'): {nodes: value}} of horovod-results_new.pdf."""
    lines = _stream("daint_sarus_new_pdf", NEW_PDF)
    titles = [(i, m.group(1)) for i, ln in enumerate(lines)
              if (m := re.fullmatch(r"\((inception3|Resnet 50|vgg16|alexnet)\) Tj ET", ln))]
    assert [t for _, t in titles] == ["inception3", "Resnet 50", "vgg16", "alexnet"], titles
    panels, start = {}, 0
    for end, title in titles:  # a panel's drawing ends with its title
        panels[title] = _paths(lines[start:end + 1])
        start = end + 1
    xgrid, data = {}, {}
    for title, paths in panels.items():
        h = [(p["pts"][0][1], int(p["texts"][0])) for p in paths if len(p["pts"]) == 2 and p["op"] == "S"
             and p["pts"][0][1] == p["pts"][1][1] and p["texts"] and p["texts"][0].isdigit()]
        v = [(p["pts"][0][0], p["texts"]) for p in paths if len(p["pts"]) == 2 and p["op"] == "S"
             and p["pts"][0][0] == p["pts"][1][0]]
        assert len(h) >= 5 and len(v) == 6, (title, h, v)
        a, b = line_fit(h)
        for y, lab in h:  # the gridlines lie on one line: each within 1e-4 of a step of the fit
            assert abs(a + b * y - lab) <= 1e-4 * (h[1][1] - h[0][1]), (title, y, lab)
        xgrid[title] = v
        lines_ = [p for p in paths if len(p["pts"]) >= 5 and p["op"] == "S"]
        assert [p["colour"] for p in lines_] == [BLUE, RED], (title, [p["colour"] for p in lines_])
        for p, series in zip(lines_, ("sarus", "native")):
            assert len(p["marks"]) == len(p["pts"]), (title, series)
            for (x, y), (mx, my) in zip(p["pts"], p["marks"]):  # markers (cumulative offsets) sit on the line
                assert abs(x - mx) < 1e-5 and abs(y - my) < 1e-5, (title, series, x, y, mx, my)
            data[(title, series)] = (p["pts"], a, b)
    out = {}
    for (title, series), (pts, a, b) in data.items():
        bottom = xgrid[COLUMN[title]]
        xs = [(x, int(t[0])) for x, t in bottom]
        assert [n for _, n in xs] == [2, 4, 6, 8, 10, 12], xs
        assert [x for x, _ in xgrid[title]] == [x for x, _ in xs], title  # same x axis as its column
        xa, xb = line_fit(xs)
        vals = {}
        for x, y in pts:
            n = xa + xb * x
            assert abs(n - round(n)) < 1e-4, (title, series, x, n)
            vals[round(n)] = a + b * y
        assert sorted(vals) == [1, 2, 4, 8, 12], vals
        out[(title, series)] = vals
    return out


def old_points() -> dict:
    """{'Native'|'Container': {nodes: (mean, std)}} of the 'Performance' panel of horovod-results_old.pdf."""
    lines = _stream("daint_sarus_old_pdf", OLD_PDF)
    end = lines.index("(Performance) Tj ET")
    paths = _paths(lines[:end + 1])
    xt = {int(p["texts"][0]): p["pts"][0][0] for p in paths if p["op"] == "B" and len(p["pts"]) == 2
          and p["pts"][0][0] == p["pts"][1][0] and p["pts"][0][1] - p["pts"][1][1] == 3.5 and p["texts"]}
    assert sorted(xt) == [2, 4, 8, 16, 32, 64, 128], xt
    major = [(p["pts"][0][1], int(p["texts"][2])) for p in paths if p["op"] == "B" and len(p["pts"]) == 2
             and p["pts"][0][1] == p["pts"][1][1] and round(p["pts"][0][0] - p["pts"][1][0], 6) == 3.5]
    assert [(t[:2], len(t)) for t in (p["texts"] for p in paths if p["op"] == "B" and len(p["pts"]) == 2
            and p["pts"][0][1] == p["pts"][1][1] and round(p["pts"][0][0] - p["pts"][1][0], 6) == 3.5)] \
        == [(["1", "0"], 3)] * 2  # mathtext '10' with a superscript exponent
    assert [e for _, e in major] == [3, 4], major
    (y3, e3), (y4, e4) = major
    b = (e4 - e3) / (y4 - y3)

    def val(y: float) -> float:
        return 10 ** (e3 + b * (y - y3))
    minor = [p["pts"][0][1] for p in paths if p["op"] == "B" and len(p["pts"]) == 2
             and p["pts"][0][1] == p["pts"][1][1] and round(p["pts"][0][0] - p["pts"][1][0], 6) == 2.0]
    assert len(minor) == 15, minor
    for y in minor:  # the minor ticks sit at k x 10^e (k = 2..9): the log scale checked
        v = val(y)
        k = v / 10 ** math.floor(math.log10(v))
        assert abs(k - round(k)) < 1e-4 and 2 <= round(k) <= 9, (y, v)
    means = [p for p in paths if len(p["pts"]) == 7 and p["op"] == "S"]
    assert [p["colour"] for p in means] == [RED, LIGHT_BLUE], [p["colour"] for p in means]
    nodes_at = {round(x, 6): n for n, x in xt.items()}
    bars = [p for p in paths if len(p["pts"]) == 2 and p["op"] == "S" and p["pts"][0][0] == p["pts"][1][0]
            and p["colour"] in (RED, LIGHT_BLUE) and round(p["pts"][0][0], 6) in nodes_at]  # not the spines
    assert len(bars) == 14, len(bars)
    out = {}
    for p, series in zip(means, ("Native", "Container")):
        vals = {}
        for x, y in p["pts"]:
            n = nodes_at[round(x, 6)]
            bar = [q for q in bars if q["colour"] == p["colour"] and round(q["pts"][0][0], 6) == round(x, 6)]
            assert len(bar) == 1, (series, n)
            lo, hi = sorted(val(yy) for _, yy in bar[0]["pts"])
            mean = val(y)
            assert abs((lo + hi) / 2 - mean) <= 1e-4 * mean, (series, n, lo, hi, mean)  # mean +- std
            vals[n] = (mean, (hi - lo) / 2)
        out[series] = vals
    return out


# ------------------------------------------------------------------------------------------ rows
def _fmt(v: float) -> str:
    return f"{v:.2f}"


def rows() -> list[dict]:
    s = _setup()
    link, link_cite = _network(s)
    hw = _hardware(s, link_cite)
    synth = _q(s, TF, 26, "with a batch size of 64 and the synthetic")
    synth2 = _q(s, TF, 27, "image data which the benchmark scripts are able to generate autonomously")
    bs_new = _q(s, TF, 116, "The batch size is again 64")
    cmd_old = _q(s, TF, 42, "--model resnet50 --batch_size 64 --variable_update horovod")
    cmd_new = _q(s, TF, 130, "--model resnet50 --batch_size 64 --variable_update horovod")
    runs5 = _q(s, TF, 179, "taking the mean value based on 5 different runs for each model and node number")
    runs50 = _q(s, TS, 25, "presents the average and standard deviation of 50 runs")
    img_new = _q(s, TF, 128, "ethcscs/horovod:0.16.1-tf1.13.1-cuda10.0-mpich3.1.4-nccl")
    img_old = _q(s, TF, 40, "ethcscs/horovod:0.15.1-tf1.7.0-cuda9.0-mpich3.1.4-no-nccl")
    nat_new = (_q(s, TF, 147, "we use Horovod 0.16.0 with TensorFlow 1.12.0,") + " " +
               _q(s, TF, 148, "built using Cray Python 3.6, the Python extensions provided by the Cray") + " " +
               _q(s, TF, 149, "Programming Environment 19.03, CUDA 10.0, cuDNN 7.5.6 and NCCL 2.4.2."))
    nat_old = (_q(s, TF, 57, "we use TensorFlow 1.7.0, built using Cray Python") + " " +
               _q(s, TF, 58, "3.6, the Python extensions provided by the Cray Programming Environment 18.08,") + " " +
               _q(s, TF, 59, "CUDA 9.1 and cuDNN 7.1.4.") + " ... " +
               _q(s, TF, 62, "Horovod 0.15.1 through the ``pip`` utility."))
    nccl_build = _q(s, HVD + "16_1", 51, "HOROVOD_GPU_ALLREDUCE=NCCL HOROVOD_WITH_TENSORFLOW=1 pip install")
    nccl_conf = _q(s, HVD + "16_1", 56, "echo NCCL_IB_HCA=ipogif0 >> /etc/nccl.conf")
    nccl_text = (_q(s, TF, 161, "we instruct Horovod to use NVIDIA's NCCL") + " " +
                 _q(s, TF, 162, "library for every MPI operation"))
    mpi_build = _q(s, HVD + "15_1", 56, "HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_PYTORCH=1 pip install --no-cache-dir "
                   "horovod==${HOROVOD_VERSION}")
    no_nccl = (_q(s, TF, 74, "we instruct Horovod not to use NVIDIA's") + " " +
               _q(s, TF, 75, "NCCL library for any MPI operation, because NCCL is not available natively on") + " " +
               _q(s, TF, 76, "Piz Daint."))
    hook = _q(s, TF, 174, "Native MPI hook (MPICH-based)")
    other = _q(s, TF, 143, "option it is possible to run the benchmarks with the other models as well")
    nodes_1_12 = _q(s, TF, 117, "for each of the models we use a node range of 1 to 12 nodes")
    adv = (_q(s, TF, 107, "From 32 nodes upwards, the container") + " " +
           _q(s, TF, 108, "application shows a small performance advantage, up to 5% at 128 nodes"))
    socket_note = ("ASSUMED network for NCCL: the LINK is MPI's measured path over Aries; NCCL 2.4 has no Aries "
                   f"transport and the container sets '{nccl_conf}' (Dockerfile_horovod_0_16_1 line 56; ipogif0 is "
                   "the Aries IP interface), so NCCL most likely ran its TCP socket transport over Aries, whose "
                   "bandwidth no source found states (it is below the MPI figure)")
    new, old = new_points(), old_points()
    out = []
    new_url = f"https://github.com/eth-cscs/sarus/blob/{COMMIT}/{NEW_PDF}"
    for (title, series), vals in new.items():
        model = MODELS[title]
        one = vals[1]
        if series == "sarus":
            fw = (f"TensorFlow 1.13.1 + Horovod 0.16.1 (NCCL 2.4.2, CUDA 10.0, cuDNN 7.5.0) in the Sarus container "
                  f"'{img_new}' (MPICH 3.1.4 swapped for Cray MPICH by '{hook}'), tf_cnn_benchmarks")
        else:
            fw = f"native: '{nat_new}' (tf_hvd.rst lines 147-149), tf_cnn_benchmarks"
        detail = (f"tf_cnn_benchmarks '{cmd_new}' (tf_hvd.rst line 130) with '{other}' (line 143: --model "
                  f"{title.lower().replace(' ', '')}); Horovod allreduce on the GPU through NCCL: the container's Horovod is built with "
                  f"'{nccl_build}' (Dockerfile_horovod_0_16_1 line 51) and the page says '{nccl_text}' (lines "
                  f"161-162); the native stack is built with 'NCCL 2.4.2' (line 149); one rank per node")
        for n in (2, 4, 8, 12):
            out.append(row(
                source=SOURCE, source_url=new_url,
                source_loc=f"{NEW_PDF} (tf_hvd.rst 'Horovod 0.16.x with CUDA 10.0', Results), panel '{title}', "
                f"series '{series}', x = {n} nodes",
                read_from="plot", system=SYSTEM, gpu="p100", gpus_per_node=1, intra="pcie3", network=link, nics=1,
                hardware_source=hw, framework=fw, scheme="horovod-nccl", scheme_detail=detail, model=model,
                batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward",
                data="synthetic", gpus=n, nodes=n, samples_per_s=_fmt(vals[n]), unit="images/s",
                single_gpu_samples_per_s=_fmt(one), single_gpu_batch=64,
                single_gpu_loc=f"same chart, panel '{title}', series '{series}', x = 1 node (one P100; read off the "
                "chart)",
                note=f"read off the chart's vector drawing (read_from plot): the line vertex at x = {n} nodes mapped "
                f"through the panel's labelled gridlines, error < 0.01 images/s; '{runs5}' (tf_hvd.rst line 179); "
                f"batch: '{bs_new}' (line 116), '{nodes_1_12}' (line 117); synthetic data (no --data_dir; "
                f"line 26-27 '{synth} {synth2}' for the first test) and fp32 (no --use_fp16) ASSUMED from the "
                f"command; {socket_note}"
                + ("; the chart's y label reads 'Images/sec' on this panel, as printed" if title == "alexnet" else "")
                + ("; the 2-node rate is below the 1-node rate, as plotted" if title == "alexnet" else "")))
    old_url = f"https://github.com/eth-cscs/sarus/blob/{COMMIT}/{OLD_PDF}"
    for series, vals in old.items():
        twin = "sarus" if series == "Container" else "native"
        one = new[("Resnet 50", twin)][1]
        if series == "Container":
            fw = (f"TensorFlow 1.7.0 + Horovod 0.15.1 (CUDA 9.0, cuDNN 7.0.5, no NCCL) in the Sarus container "
                  f"'{img_old}' (MPICH 3.1.4 swapped for Cray MPICH by the native MPI hook), tf_cnn_benchmarks")
        else:
            fw = f"native: '{nat_old}' (tf_hvd.rst lines 57-62), tf_cnn_benchmarks"
        detail = (f"tf_cnn_benchmarks '{cmd_old}' (tf_hvd.rst line 42); Horovod built without "
                  f"HOROVOD_GPU_ALLREDUCE ('{mpi_build}', Dockerfile_horovod_0_15_1 line 56) and '{no_nccl}' "
                  "(lines 74-76): gradients are allreduced by MPI (Cray MPICH) on host memory; one rank per node")
        for n, (mean, std) in sorted(vals.items()):
            out.append(row(
                source=SOURCE, source_url=old_url,
                source_loc=f"{OLD_PDF} (tf_hvd.rst 'Horovod 0.15.1 with CUDA 9.x', Results), panel 'Performance', "
                f"series '{series}', x = {n} nodes",
                read_from="plot", system=SYSTEM, gpu="p100", gpus_per_node=1, intra="pcie3", network=link, nics=1,
                hardware_source=hw, framework=fw, scheme="horovod-mpi", scheme_detail=detail, model="resnet50",
                batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32", comm_overlap="during-backward",
                data="synthetic", gpus=n, nodes=n, samples_per_s=_fmt(mean), unit="images/s",
                single_gpu_samples_per_s=_fmt(one), single_gpu_batch=64,
                single_gpu_loc=f"OTHER chart of the same page: {NEW_PDF}, panel 'Resnet 50', series '{twin}', "
                "x = 1 node (TensorFlow 1.12.0 native / 1.13.1 container, CUDA 10.0; this chart has no 1-node point)",
                note=f"read off the chart's vector drawing (read_from plot): the mean line's vertex at x = {n} nodes "
                f"through the two labelled log-scale gridlines (10^3, 10^4), error < 0.01 images/s; error bar "
                f"(mean +- std, '{runs50}', test_setup.rst line 25): std {std:.1f} images/s ({100 * std / mean:.1f}%); "
                f"synthetic data: '{synth} {synth2}' (tf_hvd.rst lines 26-27); fp32 ASSUMED (no --use_fp16); "
                "SINGLE-GPU RATE FROM ANOTHER SOFTWARE STACK: the new figure's 1-node ResNet-50 point of the same "
                "deployment (TensorFlow 1.12/1.13.1 and CUDA 10.0 instead of TensorFlow 1.7.0 and CUDA 9.x)"
                + (f"; the page: '{adv}' (lines 107-108)" if n >= 32 else "")))
    return out


def main(out: Path = HERE / "daint_runs.csv") -> None:
    """Write the rows to ``out`` (daint_runs.csv)."""
    write_rows(rows(), out, "s")


if __name__ == "__main__":
    main()
