"""Generator of data/published/charts_runs.csv: `python data/published/build_charts.py`.

A family the model had never been checked on: benchmark charts committed as image files to public GitHub
repositories, whose values are printed nowhere as text. Every throughput here is READ OFF A CHART (read_from =
plot): the pixel rows of the gridlines and of each marker or bar were measured on the PNG at the stated commit and
are written down in an excerpt (excerpts/charts_*.md, with a description of the chart); this generator turns those
pixel rows into values through the chart's own gridlines. Nothing measured is typed here.

1. DeepSpeed's 1-bit Adam blog post (microsoft/DeepSpeed@093f09f, docs/_posts/2020-09-09-onebit-adam-blog-post.md,
   Figures 5-8: docs/assets/images/bert-tcp.png, bert-ib.png, squad-tcp.png, squad-ib.png). Line charts of
   'Samples/second' against 'No. of GPUs (4 GPUs/node)' (1, 2, 4, 8, 16, 32; 16 at most for squad-ib), two series
   each: 'Adam' (DeepSpeed's data-parallel Adam: fp16 gradients allreduced by torch.distributed after backward) and
   '1-bit Adam'. Transcribed: every 'Adam' point above 1 GPU, with the same chart's 1-GPU 'Adam' point as the
   single-GPU rate; BERT-large pre-training at sequence length 128 and 16 sequences per GPU (blog line 89, tutorial
   lines 220-225) and SQuAD fine-tuning at sequence length 384 and 3 per GPU (blog line 93, tutorial lines 139-145),
   fp16 (tutorial line 239), on '40 gigabit Ethernet' and '40 gbps InfiniBand QDR' (blog line 121). Network: the
   blog's own measured figures (line 85: 'the effective bandwidth on 40 Gigabit Ethernet is 4.1 Gbps based on iperf
   benchmarks whereas InfiniBand provides near-peak bandwidth of 32Gbps based on InfiniBand perftest'), given as
   bare figures (achievable bandwidth) with fabrics.toml's Ethernet latency (15 us, the runs files' TCP convention)
   and InfiniBand latency (1 us). Not transcribed: the '1-bit Adam' series (a compressed exchange no scheme of the
   model describes), Figure 3/4 (bert-scaling.png, squad-scaling.png: the same measurements again from 4 GPUs, no
   1-GPU point; bert-scaling.png was used only to check the reading, not transcribed).
   ASSUMPTIONS (said per row): V100 PCIe in PCIe 3.0 nodes (the source says 'V100 GPUs' and '4 GPUs/node' only);
   one NIC per node; real data; no gradient accumulation in the measured runs (the tutorial's convergence
   configurations set train_batch_size 4096 / total batch 96, which would mean accumulation below 256 / 32 GPUs; the
   charts do not say, and their Adam (TCP) points at 8 GPUs, below the 1-GPU rate, fit one exchange per
   micro-batch, not one per 4096 or 96 samples).
   Reading: markers are 11-row circles; a marker hidden under the '1-bit Adam' marker is placed from its visible rim
   (top or bottom row +- 10) or, when wholly hidden, at the covering marker's rows (the excerpt says which). Error:
   +-1 pixel row on a centre = +-3.2 samples/s (bert-tcp), +-6.1 (bert-ib), +-0.85 (squad charts).

2. Bluefog's throughput benchmark (Bluefog-Lib/bluefog@0f23999, docs/performance.rst and its first chart
   docs/_static/bf_full_benchmark1.png): 'P3.16xlarge/25 Gbps/ResNet50/64 batch size', 'Total img/sec' bars for
   Horovod and two Bluefog optimizers on 4-128 GPUs, each group inside a black box that 'represents the idea of
   linear scaling' (lines 44-45). Transcribed: the Horovod bars at 8 (one whole p3.16xlarge), 16, 32, 64 and 128 GPUs;
   the single-GPU rate is the boxes' slope (each box top = N x one rate: least squares through the origin over the
   six boxes, each within 1.5 rows of the line, checked here). Not transcribed: the 4-GPU Horovod bar (its top lies
   under its box's line), the Bluefog series (neighbour averaging is no scheme of the model), the batch-32 chart
   (bf_full_benchmark2.png: no linear-scaling boxes, so no single-GPU rate). Hardware from the page (line 8-9:
   p3.16xlarge, '8 V100 GPUs ... with NVLink-enabled and inter-connected communication speed is 25Gbps'): v100,
   nvlink2 (the p3.16xlarge's hybrid cube-mesh: an assumption from AWS's instance page the doc links, line 74, not
   quoted here), eth-25g x1. Scheme horovod-nccl: an ASSUMPTION (the script imports horovod.torch and wraps SGD in
   hvd.DistributedOptimizer without compression, lines 68-69 and 122-124; which allreduce Horovod was built with is
   not stated). Synthetic data (torch.rand, lines 135-146), fp32, torchvision resnet50 (lines 35, 99).
   Reading: a bar's value row is 1.5 rows above its first red row (its thin white edge; the excerpt says how); error
   +-1.5 rows = +-160 img/s.
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

DS_COMMIT = "093f09ff27ba3350b6e014a524075240612d5187"
DS_SOURCE = ("DeepSpeed 1-bit Adam blog post charts (microsoft/DeepSpeed@093f09f, "
             "docs/_posts/2020-09-09-onebit-adam-blog-post.md Figures 5-8)")
BF_COMMIT = "0f239993615f1927ceb65d40b627215c2c73592d"
BF_SOURCE = ("Bluefog throughput benchmark chart (Bluefog-Lib/bluefog@0f23999, docs/performance.rst, "
             "docs/_static/bf_full_benchmark1.png)")
BF_IMAGE = "docs/_static/bf_full_benchmark1.png"

# excerpt -> (image, figure, task, sequence length, batch per GPU, network label, system, network LINK)
DS_CHARTS = {
    "charts_deepspeed_bert_tcp": ("bert-tcp", 5, "BERT-Large pre-training", 128, 16, "TCP", "msft-1bitadam-40gbe-v100x4",
                                  "4.1Gb/s,15us"),
    "charts_deepspeed_bert_ib": ("bert-ib", 6, "BERT-Large pre-training", 128, 16, "InfiniBand",
                                 "msft-1bitadam-ib-qdr-v100x4", "32Gb/s,1us"),
    "charts_deepspeed_squad_tcp": ("squad-tcp", 7, "SQuAD fine-tuning", 384, 3, "TCP", "msft-1bitadam-40gbe-v100x4",
                                   "4.1Gb/s,15us"),
    "charts_deepspeed_squad_ib": ("squad-ib", 8, "SQuAD fine-tuning", 384, 3, "InfiniBand",
                                  "msft-1bitadam-ib-qdr-v100x4", "32Gb/s,1us"),
}
DS_GPUS_PER_NODE = 4


def _setup(name: str) -> dict:
    """{(path, line): text} of a text excerpt (build.numbered_lines)."""
    return numbered_lines(excerpt(name)[1])


def _quote(setup: dict, path: str, line: int, text: str) -> str:
    """``text`` checked to stand in ``path`` line ``line`` of a text excerpt; returned for a citation."""
    return quote(setup, (path, line), text)


def _fmt(v: float) -> str:
    return f"{v:.1f}"


def ds_text() -> tuple[dict, dict]:
    """The text excerpt and the citations every DeepSpeed row carries."""
    s = _setup("charts_deepspeed_text")
    blog, tut, eng = ("docs/_posts/2020-09-09-onebit-adam-blog-post.md", "docs/_tutorials/onebit-adam.md",
                      "deepspeed/runtime/engine.py")
    cite = dict(
        bandwidth=_quote(s, blog, 85, "the effective bandwidth on 40 Gigabit Ethernet is 4.1 Gbps based on iperf "
                         "benchmarks whereas InfiniBand provides near-peak bandwidth of 32Gbps based on InfiniBand "
                         "perftest microbenchmarks"),
        nets=_quote(s, blog, 121, "1) 40 gigabit Ethernet (Figure 5) and 2) 40 gbps InfiniBand QDR (Figure 6)"),
        bert_batch=_quote(s, blog, 89, "on V100 GPUs with batch size of 16/GPU"),
        squad_batch=_quote(s, blog, 93, "on V100 GPUs with batch size of 3/GPU"),
        fp16=_quote(s, blog, 111, "for 16-bit (FP16) training"),
        squad_seq=_quote(s, tut, 145, "| Sequence-length                | 384"),
        squad_total=_quote(s, tut, 141, "| Total batch size               | 96"),
        bert_seq=_quote(s, tut, 220, "BERT-large pre-training with sequence length of 128"),
        bert_total=_quote(s, tut, 224, '"train_batch_size": 4096'),
        fp16_cfg=_quote(s, tut, 239, '"enabled": true'),
        boundary=_quote(s, eng, 757, "elif self.is_gradient_accumulation_boundary():"),
        fallback=_quote(s, eng, 765, "self.buffered_allreduce_fallback(elements_per_buffer=bucket_size)"),
        after=_quote(s, eng, 829, "self.allreduce_gradients()"),
        allreduce=_quote(s, eng, 1026, "dist.all_reduce(tensor_to_allreduce, group=self.data_parallel_group)"),
        fp32_default=_quote(s, "deepspeed/runtime/constants.py", 196, "FP32_ALLREDUCE_DEFAULT = False"),
        zero_default=_quote(s, "deepspeed/runtime/zero/constants.py", 40,
                            "ZERO_OPTIMIZATION_STAGE_DEFAULT = ZERO_OPTIMIZATION_DISABLED"),
    )
    return s, cite


def ds_points(name: str) -> tuple[dict, float, str]:
    """{gpus: (value, centre row, reading)} of a DeepSpeed chart's 'Adam' series, the value of one row, the head."""
    head, lines = excerpt(name)
    image = DS_CHARTS[name][0]
    assert head.startswith(f"<!-- microsoft/DeepSpeed@{DS_COMMIT} docs/assets/images/{image}.png "), head
    sec = sections(lines)
    grid = sec["Gridlines"]
    assert grid[0] == ["label", "pixel rows"], grid[0]
    a, b = line_fit([(pixel_centre(r), float(lab)) for lab, r in grid[1:]])
    for lab, r in grid[1:]:  # the gridlines are evenly spaced: each within 0.5 row of the fit
        assert abs(a + b * pixel_centre(r) - float(lab)) <= 0.5 * abs(b), (name, lab, r)
    series = [k for k in sec if k.startswith("Markers of the series 'Adam")]
    assert len(series) == 1, sec.keys()
    table = sec[series[0]]
    assert table[0] == ["GPUs", "marker columns", "top row", "bottom row", "how read"], table[0]
    out = {}
    for gpus, cols, top, bottom, how in table[1:]:
        assert 9 <= int(bottom) - int(top) <= 10, (name, gpus, top, bottom)
        centre = (int(top) + int(bottom)) / 2
        out[int(gpus)] = (a + b * centre, centre, how)
    return out, abs(b), series[0]


def ds_rows() -> list[dict]:
    s, c = ds_text()
    rows = []
    for name, (image, fig, task, seq, batch, net, system, link) in DS_CHARTS.items():
        pts, per_row, series = ds_points(name)
        one, one_centre, one_how = pts[1]
        url = f"https://github.com/microsoft/DeepSpeed/blob/{DS_COMMIT}/docs/assets/images/{image}.png"
        total = c["bert_total"] if seq == 128 else c["squad_total"]
        hw = (f"'{c['nets']}' (blog line 121); "
              f"'{c['bert_batch'] if seq == 128 else c['squad_batch']}' (blog line {89 if seq == 128 else 93}); "
              f"x axis 'No. of GPUs (4 GPUs/node)' (4/node); network as a bare figure from blog line 85: "
              f"'{c['bandwidth']}' ({'4.1 Gb/s' if net == 'TCP' else '32 Gb/s'} achievable, latency "
              f"{'15 us as fabrics.toml eth-*' if net == 'TCP' else '1 us as fabrics.toml ib-*'}); ASSUMED: V100 PCIe "
              f"(v100-pcie), PCIe 3.0 inside a node, one NIC per node (none stated)")
        scheme_detail = (f"DeepSpeed engine without ZeRO ('{c['zero_default']}', zero/constants.py line 40): after "
                         f"loss.backward, engine.backward line 829 '{c['after']}' -> line 757 "
                         f"'{c['boundary']}' -> line 765 '{c['fallback']}' (500M-element buckets, line 37) -> line 1026 "
                         f"'{c['allreduce']}' (NCCL, torch.distributed); gradients stay fp16 on the wire "
                         f"('{c['fp32_default']}', constants.py line 196); excerpts/charts_deepspeed_text.md")
        for gpus, (v, centre, how) in sorted(pts.items()):
            if gpus < 2:
                continue
            nodes = math.ceil(gpus / DS_GPUS_PER_NODE)
            note = [f"read off the chart (read_from plot): marker centre row {centre:g} of {image}.png "
                    f"({how}); +-1 row = +-{per_row:.1f} samples/s",
                    f"single-GPU rate: the same series' 1-GPU marker, centre row {one_centre:g} ({one_how})",
                    "ASSUMED accumulate 1: the tutorial's convergence configuration has "
                    f"'{total.strip('| ').replace('  ', ' ')}' ({'tutorial line 224' if seq == 128 else 'tutorial line 141'}), "
                    "which would mean gradient accumulation below "
                    f"{4096 // batch if seq == 128 else 96 // batch} GPUs; the chart does not say, and the Adam (TCP) "
                    "points at 8 GPUs, below the 1-GPU rate, fit one exchange per micro-batch",
                    "ASSUMED real data (pre-training corpus / SQuAD v1.1; not stated for the benchmark)"]
            if nodes == 1 and gpus < DS_GPUS_PER_NODE:
                note.append("2 of the node's 4 GPUs")
            rows.append(row(
                source=DS_SOURCE, source_url=url,
                source_loc=f"docs/assets/images/{image}.png (Figure {fig}, {task}, 40 Gbps {net}), series "
                f"'{series.split(chr(39))[1]}', x = {gpus} GPUs",
                read_from="plot", system=system, gpu="v100-pcie", gpus_per_node=DS_GPUS_PER_NODE, intra="pcie3",
                network=link, nics=1, hardware_source=hw,
                framework=f"DeepSpeed@{DS_COMMIT[:7]} (Sept 2020, before v0.3.0), PyTorch; DeepSpeedExamples "
                f"{'bing_bert' if seq == 128 else 'BingBertSQuAD'}, optimizer Adam",
                scheme="nccl-allreduce", scheme_detail=scheme_detail, model="bert-large", batch_per_gpu=batch,
                accumulate=1, precision="amp", grad_wire="fp16", comm_overlap="after-backward", data="real",
                gpus=gpus, nodes=nodes, samples_per_s=_fmt(v), unit=f"sequences/s (sequence length {seq})",
                single_gpu_samples_per_s=_fmt(one), single_gpu_batch=batch,
                single_gpu_loc=f"same chart ({image}.png), series '{series.split(chr(39))[1]}', x = 1 GPU (read off "
                f"the chart)",
                note="; ".join(note) + f"; fp16: blog line 111 '{c['fp16']}', tutorial line 239 '{c['fp16_cfg']}' "
                "(DeepSpeed fp16 = mixed precision with fp32 master weights)"))
    return rows


def bf_rows() -> list[dict]:
    s = _setup("charts_bluefog_text")
    doc, script = "docs/performance.rst", "examples/pytorch_benchmark.py"
    machine = _quote(s, doc, 8, "We use p3.16xlarge as basic machine.")
    node = _quote(s, doc, 9, "Each machine has 8 V100 GPUs (64GB memory) with NVLink-enabled and inter-connected "
                  "communication speed is 25Gbps.")
    box = _quote(s, doc, 44, "the black")
    box2 = _quote(s, doc, 45, "box represents the idea of linear scaling")
    eff = _quote(s, doc, 45, "Horovod is around 66%")
    hvd = _quote(s, doc, 37, "We also provided the option of set dist-optimizer as horovod for easy comparison.")
    imp = _quote(s, script, 69, "import horovod.torch as bf")
    opt = _quote(s, script, 123, "optimizer = optimizer = bf.DistributedOptimizer(")
    fake = _quote(s, script, 146, "data = torch.rand(args.batch_size, 3, 224, 224)")
    total = _quote(s, script, 250, "log('Total img/sec on %d %s(s): %.1f +-%.1f' %")
    model = _quote(s, script, 35, "parser.add_argument('--model', type=str, default='resnet50',")

    head, lines = excerpt("charts_bluefog_resnet50_bs64")
    assert head.startswith(f"<!-- Bluefog-Lib/bluefog@{BF_COMMIT} {BF_IMAGE} "), head
    assert "'P3.16xlarge/25 Gbps/ResNet50/64 batch size'" in lines[1] + "".join(lines), "title"
    sec = sections(lines)
    grid = sec["Gridlines"]
    assert grid[0] == ["label", "pixel row"], grid[0]
    a, b = line_fit([(float(r), float(lab)) for lab, r in grid[1:]])
    for lab, r in grid[1:]:
        assert abs(a + b * float(r) - float(lab)) <= 0.5 * abs(b), (lab, r)
    table = sec["Linear-scaling boxes and Horovod bars"]
    assert table[0] == ["GPUs", "group columns", "box column", "box top row (dark)", "Horovod bar columns",
                        "first red row"], table[0]
    boxes = {int(t[0]): a + b * float(t[3]) for t in table[1:]}
    bars = {int(t[0]): (a + b * (float(t[5]) - 1.5), float(t[5]) - 1.5) for t in table[1:]}
    rate = sum(v * n for n, v in boxes.items()) / sum(n * n for n in boxes)  # least squares through the origin
    for n, v in boxes.items():
        assert abs(v - n * rate) <= 1.5 * abs(b), (n, v, n * rate)
    url = f"https://github.com/Bluefog-Lib/bluefog/blob/{BF_COMMIT}/{BF_IMAGE}"
    rows = []
    for n in sorted(bars):
        if n < 8:
            continue  # the 4-GPU bar's top lies under its box's line (excerpt)
        v, vrow = bars[n]
        rows.append(row(
            source=BF_SOURCE, source_url=url,
            source_loc=f"{BF_IMAGE} ('P3.16xlarge/25 Gbps/ResNet50/64 batch size'), bar 'Horovod', x = {n} GPUs",
            read_from="plot", system="aws-p3.16xlarge", gpu="v100", gpus_per_node=8, intra="nvlink2",
            network="eth-25g", nics=1,
            hardware_source=f"docs/performance.rst lines 8-9: '{machine} {node}' (the chart's title: "
            "'P3.16xlarge/25 Gbps'); nvlink2 (hybrid cube-mesh) and one 25 Gb/s ENA NIC: the p3.16xlarge as AWS "
            "describes it (the page's link, line 74), an assumption not quoted here",
            framework="PyTorch + Horovod (versions not stated), Bluefog examples/pytorch_benchmark.py "
            "--batch-size 64 --dist-optimizer horovod (Nov 2020)",
            scheme="horovod-nccl",
            scheme_detail=f"docs/performance.rst line 37 '{hvd}'; the script, line 69 '{imp}', line 123 '{opt}' "
            "(SGD, no compression); Horovod's GPU allreduce backend is not stated: NCCL ASSUMED",
            model="resnet50", batch_per_gpu=64, accumulate=1, precision="fp32", grad_wire="fp32",
            comm_overlap="during-backward", data="synthetic", gpus=n, nodes=math.ceil(n / 8),
            samples_per_s=_fmt(v), unit="images/s", single_gpu_samples_per_s=_fmt(rate), single_gpu_batch=64,
            single_gpu_loc=f"same chart: the linear-scaling boxes ('{box} {box2}', docs/performance.rst lines 44-45), "
            f"each N x this rate (least-squares slope through the six box tops)",
            note=f"read off the chart (read_from plot): bar top row {vrow:g} (first red row - 1.5) of "
            f"bf_full_benchmark1.png; +-1.5 rows = +-{1.5 * abs(b):.0f} img/s"
            f"{' (+-6% of this short bar)' if n == 8 else ''}; the page's text gives '{eff}' scaling efficiency "
            f"on 128 GPUs (this reading: {100 * bars[128][0] / (128 * rate):.1f}%); the single-GPU rate is the "
            f"ideal line's slope, which the page does not say was measured on one GPU; the script's '{total.split(chr(39))[1]}' "
            f"(line 250) sums every rank's img/sec; synthetic data ('{fake}', line 146), torchvision {model.split(chr(39))[3]} "
            f"(line 35), fp32; the page's '(64GB memory)' printed as is"))
    return rows


def main(out: Path = HERE / "charts_runs.csv") -> None:
    """Write the rows to ``out`` (charts_runs.csv)."""
    write_rows(ds_rows() + bf_rows(), out, "x")


if __name__ == "__main__":
    main()
