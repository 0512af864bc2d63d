"""Generator of data/published/dleconv_runs.csv: `python data/published/build_dleconv.py`.

A family not in runs.csv: the image-classification READMEs of NVIDIA DeepLearningExamples in the versions that
runs.csv (which reads them @729963d) and dleold_runs.csv (TF2 EfficientNet 21.02) do not read. Every table is
one machine (DGX-1 V100 16G/32G, DGX-2, DGX A100 40GB/80GB), 2-16 GPUs, with the same table's 1-GPU rate; none
of these READMEs printed a multi-node ResNet-50 table at any commit (the only multi-node ConvNets tables are
the EfficientNet ones runs.csv and dleold_runs.csv already read). Each excerpt is a verbatim line range of one
file at one commit (excerpts/dleconv_*.md, first line: repository@commit, path, lines). Transcribed:

* TensorFlow 1 ResNet-50 v1.5 (Horovod): tensorflow-19.02 DGX-1 1/4/8 GPUs (@7a8544e0); 19.05 DGX-1 1/4/8 and
  DGX-2 1/4/8/16, AMP, FP32 and AMP+XLA (@0663b67c; @a6443505 relabels the same numbers 19.06); 19.07 DGX-1
  AMP+XLA (@11f6038c; only that table: its AMP/FP32 4- and 8-GPU cells repeat the 19.05 ones, with a new 1-GPU
  AMP cell); 20.03-tf1 DGX-1 8 and DGX-2 16 GPUs (@f11884b3); 20.06-tf1 DGX A100 40GB 8 GPUs (@57d9cc04; runs.csv
  reads the later A100 numbers of the same container, and the DGX-1/DGX-2 tables of this commit, @729963d).
* PyTorch ResNet-50 v1.5 (DDP): pytorch-19.10 (apex DDP, apex AMP O2) DGX-1 16G/32G 8 GPUs, DGX-2 16 GPUs
  (@f0ef8493); pytorch-20.06 (apex DDP, AMP O1) DGX A100 40GB, DGX-1 16G/32G (@46ff3707); pytorch-20.12 (torch
  DDP, native AMP) DGX A100 80GB, DGX-1 16G/32G (@097c7ff9).
* PyTorch EfficientNet B0/B4 (DDP): PyTorch 20.12 tables, DGX A100 80GB, DGX-1 16GB and 32GB (@2bdf2775, the
  first release); the 21.03 DGX-1 32GB table that runs.csv skips, B0 only (@7bdfc81d, runs.csv's text).
* MXNet ResNet-50 v1.5: mxnet-18.12 DGX-1 1/4/8 (kv-store device, @a8e1d1cd); mxnet-19.07 DGX-1 1/2/4/8 and
  DGX-2 1/2/4/8/16 (Horovod, @e470c215); mxnet-20.12 DGX A100 80GB 1/2/4/8 (Horovod, @8c42220b).
* PaddlePaddle ResNet-50 v1.5 (fleet collective): DGX A100 80GB 1/8 GPUs, first release (@76da8548) and after
  the CUDNNv8 ResUnit fusion (@fc9c09b0).

Not transcribed: ResNeXt101-32x4d and SE-ResNeXt101-32x4d (not in the model library); the ConvNets overview
READMEs (8/16-GPU rates without a 1-GPU rate); the PyTorch RN50 18.09 table (its benchmark command passes no
batch, whose default is 256 at every precision, while the training scripts use 128 for FP32, and apex's 2018 DDP
with shared_param could not be checked), its 16-GPU DGX-2 row (no 1-GPU rate); the PyTorch EfficientNet 21.03
DGX-1 32GB B4 and widese rows (1-GPU rates 36/89 img/s against 8-GPU 641/1565, strong scaling printed 17.6x);
the PaddlePaddle ASP (sparsity) table; the TF1 19.07 AMP/FP32 tables (the 19.05 cells again).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
md_table, num, row, write_rows, SYSTEMS = _build.md_table, _build.num, _build.row, _build.write_rows, _build.SYSTEMS


def _ex(name: str):
    """(commit, path, first line, lines) of an excerpt."""
    sha, path, first, _, lines = _build.dle_excerpt(name)
    return sha, path, first, lines


def _ref(name: str, needle: str) -> tuple[str, str]:
    """(line text, 'path@sha7 line N') of the first excerpt line containing needle."""
    sha, path, first, lines = _ex(name)
    i = next(i for i, ln in enumerate(lines) if needle in ln)
    return lines[i], f"{path}@{sha[:8]} line {first + i}"


def _tables(name: str):
    """[(heading, [(line number, cells)])] for each markdown table of an excerpt; heading = nearest '#' line."""
    sha, path, first, lines = _ex(name)
    out, heading, cur = [], "", None
    for i, ln in enumerate(lines):
        if ln.startswith("#"):
            heading = ln.lstrip("#").strip()
        if ln.startswith("|"):
            if cur is None:
                cur = (heading, [])
                out.append(cur)
            if not re.fullmatch(r"[|:\- ]+", ln.strip()):
                cur[1].append((first + i, [c.strip() for c in ln.strip().strip("|").split("|")]))
        else:
            cur = None
    return out


def _gpus(cell: str) -> int:
    return int(cell.replace("*", "").strip())


# ------------------------------------------------------------------------------------------ batch sources
def _tf_bench_batch(name: str, xla: bool) -> tuple[int, str]:
    """Largest per-GPU batch the benchmark.py sweep of a trainbench script runs (--bs list), plain or XLA line."""
    sha, path, first, lines = _ex(name)
    cands = [(i, ln) for i, ln in enumerate(lines) if "benchmark.py" in ln and (("use_xla" in ln) == xla)]
    (i, ln), = cands
    bs = [int(x) for x in re.search(r"--bs ([\d ]+)", ln).group(1).split()]
    return max(bs), f"{path}@{sha[:8]} line {first + i} (--bs {' '.join(map(str, bs))}: the largest assumed)"


def _script_b(name: str) -> tuple[int, str]:
    """-b N of a one-line training script."""
    sha, path, first, lines = _ex(name)
    (i, b), = [(i, m.group(1)) for i, ln in enumerate(lines) if (m := re.search(r" -b (\d+)", ln))]
    return int(b), f"{path}@{sha[:8]} line {first + i} (-b {b}, 'mini-batch size ... per gpu')"


def _config_batch(name: str, model: str | None, platform: str, precision: str) -> tuple[int, str]:
    """batch_size under <model>: <platform>: <precision>: in a configs.yml excerpt (walked by indentation)."""
    sha, path, first, lines = _ex(name)
    i = 0
    if model is not None:
        i = next(k for k, ln in enumerate(lines) if ln.strip().startswith(f"{model}:"))
    i = next(k for k in range(i, len(lines)) if lines[k].strip() == f"{platform}:")
    i = next(k for k in range(i, len(lines)) if lines[k].strip() == f"{precision}:")
    for k in range(i + 1, len(lines)):
        m = re.match(r"\s*batch_size: (\d+)", lines[k])
        if m:
            return int(m.group(1)), f"{path}@{sha[:8]} line {first + k} ({model or 'resnet50'} {platform} {precision})"
        if lines[k].strip().endswith(":") and "<<" not in lines[k]:
            break
    raise ValueError((name, model, platform, precision))


def _pd_batch(name: str) -> tuple[int, str]:
    sha, path, first, lines = _ex(name)
    i = next(i for i, ln in enumerate(lines) if "'--batch-size'" in ln)
    k = next(k for k in range(i, len(lines)) if "default=" in lines[k])
    b = re.search(r"default=(\d+)", lines[k]).group(1)
    return int(b), f"{path}@{sha[:8]} line {first + k} (default of --batch-size; the training scripts pass none)"


# ------------------------------------------------------------------------------------------------ schemes
def _tf_detail(hv: str) -> str:
    line, loc = _ref(hv, "hvd.DistributedOptimizer")
    assert "compression" not in line.lower()
    return (f"Horovod over NCCL, one process per GPU (mpiexec --allow-run-as-root --bind-to socket -np <num_gpus>); "
            f"'{line.strip()}' ({loc}, excerpts/{hv}.md): no compression, fp32 gradients on the wire")


def _pt_detail(ddp: str, amp: str | None) -> tuple[str, str]:
    """(scheme detail, gradient wire)."""
    line, loc = _ref(ddp, "DDP")
    detail = f"'{line.strip()}' ({loc}, excerpts/{ddp}.md)"
    wire = "fp32"
    if "apex" in line:
        detail = "apex.parallel.DistributedDataParallel (default bucketed allreduce over NCCL during backward); " + detail
    else:
        detail = "torch.nn.parallel.DistributedDataParallel over NCCL; " + detail
    if amp is not None:
        opt, oloc = _ref(amp, "opt_level")
        detail += f"; AMP: apex amp.initialize {opt.strip()} ({oloc})"
        if '"O2"' in opt:
            wire = "fp16"
            detail += " (O2 casts the model to fp16, so its gradients, which apex DDP allreduces, are fp16)"
    return detail, wire


MX_KV = {
    "dleconv_mx_1812_runner": ("mxnet-kvstore-device", "fp16"),
    "dleconv_mx_1907_runner": ("horovod-nccl", "fp16"),
    "dleconv_mx_2012_runner": ("horovod-nccl", "fp16"),
}


def _mx_detail(runner: str) -> str:
    sha, path, first, lines = _ex(runner)
    kv = next((i, ln) for i, ln in enumerate(lines) if "kv-store" in ln and ("default" in ln or "device" in ln))
    env = next(i for i, ln in enumerate(lines) if "MXNET_UPDATE_ON_KVSTORE" in ln)
    return (f"'{kv[1].strip()}' ({path}@{sha[:8]} line {first + kv[0]}); MXNET_UPDATE_ON_KVSTORE=0 (line "
            f"{first + env}); single process with the gradients reduced across the GPUs by the device kvstore"
            if "kv-store device" in kv[1] else
            f"'{kv[1].strip()}' ({path}@{sha[:8]} line {first + kv[0]}): horovodrun -np <ngpus>, Horovod allreduce "
            f"over NCCL; MXNET_UPDATE_ON_KVSTORE=0 (line {first + env})") + (
            "; the float16 model's gradients are fp16 on the wire (as runs.csv encodes the MXNet AMP rows)")


def _pd_detail() -> str:
    sha, path, first, lines = _ex("dleconv_pd_2205_strategy")
    keep = [ln.strip() for ln in lines if "dist_strategy." in ln and "=" in ln and "strategy =" not in ln]
    return ("paddle.distributed.launch --gpus=0,...,7, fleet.init(is_collective=True), static graph; "
            f"{'; '.join(keep)} ({path}@{sha[:8]} lines {first}-{first + len(lines) - 1}): NCCL allreduce of "
            "fused 16 MB gradient groups (the same settings at @fc9c09b0, program.py lines 168-172)")


# --------------------------------------------------------------------------------------------- the tables
SRC = "NVIDIA DeepLearningExamples image-classification READMEs, earlier versions (dleconv)"


def _rows_from(ex, t_index, system, gpu, framework, scheme, detail, wire, cols, model="resnet50",
               model_col=None, models=None, note="", data="real"):
    """Rows of the t_index-th table of excerpt ex; cols: {header text: (precision, batch, batch_loc, fw suffix)}."""
    sha, path, first, _ = _ex(ex)
    heading, table = _tables(ex)[t_index]
    (hline, header), *body = table
    clean = [h.replace("*", "").strip() for h in header]
    out = []
    for col, (prec, batch, bloc, fws) in cols.items():
        c = clean.index(col)
        groups = {}
        for ln, cells in body:
            key = cells[model_col].strip() if model_col is not None else model
            groups.setdefault(key, []).append((ln, cells))
        for key, rows in groups.items():
            if models is not None and key not in models:
                continue
            mdl = models[key] if models is not None else model
            b, bl = (batch[key] if isinstance(batch, dict) else (batch, bloc))
            (bl_no, base), = [(ln, r) for ln, r in rows if _gpus(r[1 if model_col == 0 else 0]) == 1]
            for ln, r in rows:
                g = _gpus(r[1 if model_col == 0 else 0])
                if g == 1:
                    continue
                gpn = SYSTEMS[system]["gpus_per_node"]
                assert g <= gpn
                out.append(row(
                    source=SRC, source_url=_build.dle_url(path, sha),
                    source_loc=f"{path}@{sha[:8]} line {ln}, table under '{heading}'"
                    + (f", model {key}" if model_col is not None else "") + f", row GPUs={g}, column '{col}'",
                    read_from="table", system=system, **{**SYSTEMS[system], "gpu": gpu}, framework=framework + fws,
                    scheme=scheme, scheme_detail=detail, model=mdl, batch_per_gpu=b, accumulate=1, precision=prec,
                    grad_wire=wire if prec == "amp" else "fp32",
                    comm_overlap="during-backward", data=data, gpus=g, nodes=1, samples_per_s=num(r[c]),
                    unit="images/s", single_gpu_samples_per_s=num(base[c]), single_gpu_batch=b,
                    single_gpu_loc=f"same table, line {bl_no}, row GPUs=1",
                    note="; ".join(x for x in (f"batch per GPU from {bl}", note) if x)))
    return out


def tf_rows() -> list[dict]:
    out = []
    d02 = _tf_detail("dleconv_tf1_1902_horovod")
    cmd, cloc = _ref("dleconv_tf1_1902_commands", "mpiexec")
    a, al = _tf_bench_batch("dleconv_tf1_1902_bench_fp16", False)
    f, fl = _tf_bench_batch("dleconv_tf1_1902_bench_fp32", False)
    n02 = (f"the README's own multi-GPU training commands use --batch_size=128 (FP32) / 256 (AMP) ({cloc}); "
           "real ImageNet TFRecords (--data_dir)")
    out += _rows_from("dleconv_tf1_1902", 0, "dgx1-v100", "v100", "TensorFlow 1 (tensorflow-19.02-py3)", "horovod-nccl",
                      d02, "fp32", {"mixed precision img/s": ("amp", a, al, ""), "FP32 img/s": ("fp32", f, fl, "")},
                      note=n02)
    d05 = _tf_detail("dleconv_tf1_1905_horovod")
    n05 = ("the 19.05 numbers are printed unchanged at @a6443505 under 'tensorflow-19.06-py3'; real ImageNet "
           "TFRecords (--data_dir)")
    for t, system, tag in ((0, "dgx1-v100", "dgx1"), (1, "dgx2", "dgx2"), (2, "dgx1-v100", "dgx1"),
                           (3, "dgx2", "dgx2")):
        a, al = _tf_bench_batch(f"dleconv_tf1_1905_bench_{tag}_fp16", t >= 2)
        cols = ({"mixed precision img/s": ("amp", a, al, ""),
                 "FP32 img/s": ("fp32", *_tf_bench_batch(f"dleconv_tf1_1905_bench_{tag}_fp32", False), "")}
                if t < 2 else {"mixed precision + XLA img/s": ("amp", a, al, ", XLA")})
        out += _rows_from("dleconv_tf1_1905", t, system, "v100", "TensorFlow 1 (tensorflow-19.05-py3)", "horovod-nccl",
                          d05, "fp32", cols, note=n05)
    d07 = _tf_detail("dleconv_tf1_1907_horovod")
    a, al = _tf_bench_batch("dleconv_tf1_1907_bench_dgx1_fp16", True)
    out += _rows_from("dleconv_tf1_1907", 1, "dgx1-v100", "v100", "TensorFlow 1 (tensorflow-19.07-py3)", "horovod-nccl",
                      d07, "fp32", {"mixed precision + XLA img/s": ("amp", a, al, ", XLA")},
                      note="the 1-GPU AMP cell (825.2) is new in this version, the 4- and 8-GPU AMP cells and the "
                      "AMP/FP32 tables repeat 19.05's (not transcribed); real ImageNet TFRecords (--data_dir)")
    d20 = _tf_detail("dleconv_tf1_2003_horovod")
    for t, system in ((0, "dgx1-v100"), (1, "dgx1-v100"), (2, "dgx2"), (3, "dgx2")):
        _, tab = _tables("dleconv_tf1_2003")[t]
        bcell = tab[1][1][1]
        m = re.findall(r"(\d+)\s*\((\w+)\)", bcell)
        bb = {k: int(v) for v, k in m} if m else {"FP32": int(bcell), "AMP": int(bcell)}
        bl = "the table's 'Batch Size / GPU' column"
        cols = ({"Throughput - FP32": ("fp32", bb["FP32"], bl, ""),
                 "Throughput - mixed precision": ("amp", bb["AMP"], bl, "")} if t in (0, 2) else
                {"Throughput - mixed precision + XLA": ("amp", bb["AMP"], bl, ", XLA")})
        out += _rows_from("dleconv_tf1_2003", t, system, "v100", "TensorFlow 1 (20.03-tf1-py3 NGC)", "horovod-nccl",
                          d20, "fp32", cols, note="'averaged over an entire training epoch' (real ImageNet)")
    d26 = _tf_detail("dleconv_tf1_2006_horovod")
    _, tab = _tables("dleconv_tf1_2006")[0]
    b = int(tab[1][1][1])
    bl = "the table's 'Batch Size / GPU' column"
    out += _rows_from("dleconv_tf1_2006", 0, "dgx-a100", "a100", "TensorFlow 1 (20.06-tf1-py3 NGC), XLA", "horovod-nccl",
                      d26, "fp32", {"Throughput - TF32 + XLA": ("tf32", b, bl, ""),
                                    "Throughput - mixed precision + XLA": ("amp", b, bl, "")},
                      note="resnet50v1.5/training/training_perf.sh; 'averaged over an entire training epoch' (real "
                      "ImageNet); runs.csv @729963d prints later A100 numbers (909/2375, 7000/17400) for the same "
                      "container")
    return out


def pt_rows() -> list[dict]:
    out = []
    d, w = _pt_detail("dleconv_pt_rn50_1910_ddp", "dleconv_pt_rn50_1910_amp")
    _, sl = _ref("dleconv_pt_rn50_1910_setup", "Our results were obtained")
    n = f"'Our results were obtained by running the applicable training script' ({sl}); DALI, real ImageNet"
    for t, system, tag in ((0, "dgx1-v100", "dgx1"), (1, "dgx1-v100", "dgx1"), (2, "dgx2", "dgx2")):
        out += _rows_from("dleconv_pt_rn50_1910", t, system, "v100", "PyTorch (pytorch-19.10 NGC), apex", "pytorch-ddp",
                          d, w, {"Mixed Precision": ("amp", *_script_b(f"dleconv_pt_rn50_1910_{tag}_amp"), ""),
                                 "FP32": ("fp32", *_script_b(f"dleconv_pt_rn50_1910_{tag}_fp32"), "")},
                          note=n + ("; the DGX-1 32G table assumed run with the DGX1 scripts (no 32G script)"
                                    if t == 1 else ""))
    d, w = _pt_detail("dleconv_pt_rn50_2006_ddp", "dleconv_pt_rn50_2006_amp")
    _, sl = _ref("dleconv_pt_rn50_2006_setup", "Our results were obtained")
    n = f"'Our results were obtained by running the applicable training script' ({sl}); DALI, real ImageNet"
    for t, system, gpu, tag, fp in ((0, "dgx-a100", "a100", "dgxa100", "TF32"), (1, "dgx1-v100", "v100", "dgx1", "FP32"),
                                    (2, "dgx1-v100", "v100", "dgx1", "FP32")):
        out += _rows_from("dleconv_pt_rn50_2006", t, system, gpu, "PyTorch (pytorch-20.06 NGC), apex", "pytorch-ddp",
                          d, w, {"Mixed Precision": ("amp", *_script_b(f"dleconv_pt_rn50_2006_{tag}_amp"), ""),
                                 fp: (fp.lower(), *_script_b(f"dleconv_pt_rn50_2006_{tag}_{fp.lower()}"), "")},
                          note=n + ("; the DGX-1 32GB table assumed run with the DGX1 scripts (no 32GB script)"
                                    if t == 2 else ""))
    d, w = _pt_detail("dleconv_pt_rn50_2012_ddp", None)
    d += "; native AMP (torch.cuda.amp, 'Moved from APEX AMP to Native AMP'), fp32 gradients"
    n = ("launch.py --mode benchmark_training <path to imagenet> (README training benchmark commands, "
         "excerpts/dleconv_pt_rn50_2012_setup.md): real ImageNet, PyTorch data loader")
    for t, system, gpu, plat, fp in ((0, "dgx-a100", "a100-80gb", "DGXA100", "TF32"), (1, "dgx1-v100", "v100", "DGX1V", "FP32"),
                                     (2, "dgx1-v100", "v100", "DGX1V", "FP32")):
        out += _rows_from("dleconv_pt_rn50_2012", t, system, gpu, "PyTorch (pytorch-20.12 NGC)", "pytorch-ddp", d, w,
                          {"Mixed Precision": ("amp", *_config_batch("dleconv_pt_rn50_2012_configs", None, plat, "AMP"), ""),
                           fp: (fp.lower(), *_config_batch("dleconv_pt_rn50_2012_configs", None, plat, fp), "")},
                          note=n + ("; the DGX-1 32GB table assumed run with the DGX1V config (one V100 config)"
                                    if t == 2 else ""))
    return out


def effnet_rows() -> list[dict]:
    out = []
    d, w = _pt_detail("dleconv_pt_effnet_2012_ddp", None)
    d += "; native AMP, fp32 gradients"
    n = "configs.yml mode benchmark_training, data_backend pytorch: real ImageNet"
    for t, system, gpu, plat, fp in ((0, "dgx-a100", "a100-80gb", "DGXA100", "TF32"), (1, "dgx1-v100", "v100", "DGX1V-16G", "FP32"),
                                     (2, "dgx1-v100", "v100", "DGX1V-32G", "FP32")):
        batch = {p: {m: _config_batch(f"dleconv_pt_effnet_2012_configs_{m[-2:]}", m, plat, p)
                     for m in ("efficientnet-b0", "efficientnet-b4")} for p in ("AMP", fp)}
        models = {"efficientnet-b0": "efficientnet-b0", "efficientnet-b4": "efficientnet-b4"}
        out += _rows_from("dleconv_pt_effnet_2012", t, system, gpu, "PyTorch (20.12 NGC)", "pytorch-ddp", d, w,
                          {"Throughput - mixed precision": ("amp", batch["AMP"], None, ""),
                           fp: (fp.lower(), batch[fp], None, "")}, model_col=0, models=models,
                          note=n + ("; the heading says DGX-1 (8x V100 32GB), the sentence under it 'NVIDIA DGX-1 (8x "
                                    "V100 16GB)': batch from the DGX1V-32G config, an assumption" if t == 2 else ""))
    batch = {p: {"efficientnet-b0": _config_batch("dleconv_pt_effnet_2103_configs_b0", "efficientnet-b0", "DGX1V-32G", p)}
             for p in ("AMP", "FP32")}
    out += _rows_from("dleconv_pt_effnet_2103_32g", 0, "dgx1-v100", "v100", "PyTorch (21.03 NGC)", "pytorch-ddp", d, w,
                      {"Throughput - mixed precision": ("amp", batch["AMP"], None, ""),
                       "FP32": ("fp32", batch["FP32"], None, "")}, model_col=0,
                      models={"efficientnet-b0": "efficientnet-b0"},
                      note=n + "; the heading says DGX-1 (8x V100 32GB), the sentence under it 'NVIDIA DGX-1 (8x V100 "
                      "16GB)': batch from the DGX1V-32G config, an assumption; the B4 and widese rows of this table "
                      "are not transcribed (1-GPU 36 and 89 img/s, strong scaling printed 17.6x)")
    return out


def mx_rows() -> list[dict]:
    out = []
    spec = [("dleconv_mx_1812", 0, "dgx1-v100", "v100", "MXNet (mxnet-18.12-py3)", "dleconv_mx_1812_runner",
             {"FP16 img/s": "float16", "FP32 img/s": "float32"}, "fp32"),
            ("dleconv_mx_1907", 0, "dgx1-v100", "v100", "MXNet (mxnet-19.07-py3 NGC)", "dleconv_mx_1907_runner",
             {"Throughput - mixed precision": "float16", "Throughput - FP32": "float32"}, "fp32"),
            ("dleconv_mx_1907", 1, "dgx2", "v100", "MXNet (mxnet-19.07-py3 NGC)", "dleconv_mx_1907_runner",
             {"Throughput - mixed precision": "float16", "Throughput - FP32": "float32"}, "fp32"),
            ("dleconv_mx_2012", 0, "dgx-a100", "a100-80gb", "MXNet (mxnet-20.12-py3 NGC)", "dleconv_mx_2012_runner",
             {"Throughput - mixed precision": "float16", "Throughput - TF32": "float32"}, "tf32")]
    for ex, t, system, gpu, fw, runner, cols, fp in spec:
        scheme, _ = MX_KV[runner]
        detail = _mx_detail(runner)
        sha, path, first, lines = _ex(ex)
        # the benchmark commands of this table: the lines after the table's heading, before the table
        heading, tab = _tables(ex)[t]
        hi = next(i for i, ln in enumerate(lines) if ln.lstrip("#").strip() == heading) if heading else 0
        ti = tab[0][0] - first
        sub = lines[hi:ti]
        bat = {}
        for col, dt in cols.items():
            (i, b), = [(i, m.group(1)) for i, ln in enumerate(sub)
                       if (m := re.search(rf"benchmark\.py .*-b (\d+) --dtype {dt}", ln))]
            bat[col] = (int(b), f"{path}@{sha[:8]} line {first + hi + i} (-b {b} --dtype {dt}; runner: '-b' is "
                        "'batch size per GPU')")
        prec = {"float16": "amp", "float32": fp}
        note = "'Total IPS (data + compute time taken into account)': DALI over ImageNet RecordIO (real data)"
        if ex == "dleconv_mx_1907" and t == 1:
            note += ("; the sentence under the DGX-2 heading ends 'on NVIDIA DGX-1 with (8x V100 16G) GPUs' (16 GPUs "
                     "and the DGX-2 heading: read as DGX-2)")
        out += _rows_from(ex, t, system, gpu, fw, scheme, detail, "fp16",
                          {col: (prec[dt], *bat[col], "") for col, dt in cols.items()}, note=note)
    return out


def pd_rows() -> list[dict]:
    out = []
    detail = _pd_detail()
    cont, cl = _ref("dleconv_pd_2205_container", "NGC container")
    for ex, bex, fw in (("dleconv_pd_2205", "dleconv_pd_2205_batch", "PaddlePaddle (NGC 22.05-py3 or newer)"),
                        ("dleconv_pd_2307", "dleconv_pd_2307_batch",
                         "PaddlePaddle (NGC container), --fuse-resunit (CUDNNv8 ResUnit fusion) in the AMP script")):
        b, bl = _pd_batch(bex)
        out += _rows_from(ex, 0, "dgx-a100", "a100-80gb", fw, "nccl-allreduce", detail, "unknown",
                          {"Throughput - TF32": ("tf32", b, bl, ""), "Throughput - mixed precision": ("amp", b, bl, "")},
                          note="DALI over ImageNet (real data); AMP gradient wire not settled (predicted as fp32, as "
                          "runs.csv's PaddlePaddle AMP rows)")
    return out


def dleconv_rows() -> list[dict]:
    return tf_rows() + pt_rows() + effnet_rows() + mx_rows() + pd_rows()


def main(out: Path = HERE / "dleconv_runs.csv") -> None:
    """Write the rows to ``out`` (dleconv_runs.csv)."""
    write_rows(dleconv_rows(), out, "j")


if __name__ == "__main__":
    main()
