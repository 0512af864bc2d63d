"""Generator of data/published/lambda2_runs.csv: `python data/published/build_lambda2.py`.

Lambda's PyTorch training benchmark (lambdal/deeplearning-benchmark), the systems build_lambda.py does not read:
every multi-GPU system of the pytorch/pytorch-train-throughput-{fp32,fp16}.csv tables, over their whole history,
whose GPU has a preset, ResNet-50 column only (the BERT SQuAD columns are left out for build_lambda.py's reason;
the other models are not in the model library), each row with the same table version's 1-GPU row of the same
machine. Three table versions are read, each row cited at the newest commit whose table prints it:

* @67a9bb5 (6 Jul 2022), the last version of the first-generation tables (runs of Mar 2020 - Jul 2022 in NGC
  PyTorch 20.01 (PyTorch 1.4), 20.10 (1.7), 21.0x (1.9) and 21.07 (1.10) containers, whose bundled DLE ConvNets
  examples/resnet50v1.5 is launched by multiproc.py, one process per GPU): RTX 2080Ti (SYS-4029GP-TRT folders,
  '_trt'), Quadro RTX 8000 ('_trt2'), V100 SXM2 32GB, RTX 3070, RTX 3080, A100 40GB PCIe, A100 40GB SXM4, A100
  80GB PCIe, A100 80GB SXM4, RTX A6000, RTX A5000, A40, RTX A4000, RTX A4500, RTX A5500 at 2, 4 and 8 GPUs (where
  printed). The value is the mean over a folder's logs of the last 'Summary: train.loss ... train.total_ips'
  (all GPUs; compile_results_pytorch_throughput.py lines 176-207, excerpts/lambda2_v0_scripts.md); each log's
  DLE 'PARAMETER' line (excerpts/lambda2_v0_logs.md) gives the per-GPU batch, world size, data backend and the
  precision mode, and is checked against the table (mean of the logs) and the batch table (global batch).
* @b2af268 (4 Nov 2020), the last version printing rows under their folder names: the RTX 2080Ti '_trt2' and
  Quadro RTX 8000 '_trt' runs that the renaming of 20 Nov 2020 (846c785) dropped (the table kept the other
  chassis of each), with the same 1-GPU rows ('2080Ti', 'QuadroRTX8000').
* @aa5addb (build_lambda.py's excerpts lambda_v1_*; = 4e11f68 of 24 Jul 2024, the last change to these files):
  2x RTX 3090, 2x RTX 4090, 2x RTX A6000, 2x A100 80GB PCIe, 2x RTX 6000 Ada, 2/4/8x H100 80GB PCIe Gen5; and
  @2a1c374 (15 Dec 2022), the last version printing the H100 80GB PCIe Gen4 1-GPU row: 2/4/8x H100 PCIe Gen4
  (the 'clean up' commits 4905449/aee5938 then drop the system). Second-generation (_v1) runs, NGC 22.09+
  containers, batch = the bs table's global batch / GPUs, as build_lambda.py reads them.

Machine: the sys_pytorch.txt of each run folder (excerpts/lambda2_sys.md, the first block naming the GPU); a row
is kept only where the 1-GPU folder's block names the same motherboard and PyTorch version as the multi-GPU
folder's. Precision: the fp32 tables are TF32 on Ampere and later (PyTorch >= 1.7 lets cuDNN use TF32 by
default), fp32 before; the first-generation fp16 table runs '--fp16' (the model cast to half with apex
FP16_Optimizer fp32 master weights: precision fp16, gradients all-reduced in fp16) or, for some later runs,
'--amp' (apex amp O1: fp32 weights and gradients); the second-generation fp16 table is torch.cuda.amp (amp).
Data: 'syntetic' (sic) is synthetic; 'dali-cpu' and 'pytorch' read ImageNet from disk (real).
Scheme: pytorch-ddp. First generation: ASSUMED apex.parallel.DistributedDataParallel (bucketed NCCL all-reduce
overlapped with backward), as DLE ConvNets' 20.06 release imports it (excerpts/dleconv_pt_rn50_2006_ddp.md);
the containers' bundled example code is not in the repository, but its logs print apex's FP16_Optimizer
warning and 'Selected optimization level O1', i.e. the apex-era code. Second generation: torch DDP of Lambda's
DLE fork (build_lambda.py's SCHEME_DETAIL).

Left out (lambda2_report.md): NVLink-bridged systems ('2x/4x/8x RTX 2080Ti NVLink', 'RTX Quadro 8000 NVLink',
their _trt/_trt2 twins: no preset describes bridged pairs); cloud VMs whose GPU count changes the instance
(Lambda Cloud 4x GTX 1080Ti, 2x/4x Quadro RTX 6000, 8x V100 16GB, 2x/4x RTX A6000, Linode 2x Quadro RTX 6000,
LambdaCloud 2x/4x/8x V100 16GB, LambdaCloud 8x H100 SXM5) and p3.8xlarge, p3.16xlarge, p4d.24xlarge (no 1-GPU
row of the same instance type printed); 4x/8x RTX 6000 Ada and 16x RTX A4000 (1-GPU row from another machine);
first-generation 2x/3x/4x/8x RTX 3090 (the folders mix runs of two machines and two containers, and the 1-GPU
fp16 value averages two such runs); the 8x RTX A4000 fp16 row (its run is --fp16, the 1-GPU run --amp); the
second-generation A100 40GB SXM4 runs (withdrawn by 8daed24, 'Remove A100 SXM4 results. Need re-validate');
rows whose name was later changed (the same runs under the newer name are read); GPUs without a preset (laptop
GPUs, Titan RTX, GH200). Kept apart from runs.csv: transcribed without any prediction, to be judged once.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, num, row, write_rows, numbered_lines = (_build.excerpt, _build.num, _build.row, _build.write_rows,
                                                 _build.numbered_lines)

REPO = "lambdal/deeplearning-benchmark"
V0 = "67a9bb5128d51299376bc72e02ec7459f82efe38"
OLD = "b2af268fc372f4985c00731b753eff12d1499523"
V1 = "aa5addb6a53675a649a80036dad548f1c27cbcc4"
G4 = "2a1c3745e593073c7364e8cd22ca9328dd9dc9fa"
SOURCE = "Lambda deeplearning-benchmark PyTorch training throughput tables (lambdal/deeplearning-benchmark)"
AMPERE_OR_LATER = {"rtx3070", "rtx3080", "rtx3090", "rtx4090", "a100", "a100-pcie", "a100-80gb", "a100-80gb-pcie",
                   "rtx-a4000", "rtx-a4500", "rtx-a5000", "rtx-a5500", "rtx-a6000", "a40", "rtx6000-ada", "h100-pcie"}


def _url(commit: str, path: str) -> str:
    return f"https://github.com/{REPO}/blob/{commit}/{path}"


def _csv(name: str, commit: str, path: str) -> tuple[list[str], dict[str, tuple[int, list[str]]]]:
    """Header and {first cell: (file line, cells)} of a whole-file CSV excerpt, its head checked."""
    head, lines = excerpt(name)
    assert head.startswith(f"<!-- {REPO}@{commit} {path} lines 1-"), head
    return _build.csv_cells(lines)


_int = _build.whole


# ------------------------------------------------------------------------------------- run folders
def _sys() -> dict[str, dict]:
    """{folder: {'GPU': ..., 'Motherboard': ..., 'PyTorch Version': ..., 'path': ..., 'commit7': ...}}."""
    head, lines = excerpt("lambda2_sys")
    assert head.startswith(f"<!-- {REPO} sys_pytorch.txt of each run folder"), head
    out = {}
    for (path, _line), text in numbered_lines(lines).items():
        folder = path.split("/")[2]
        d = out.setdefault(folder, {"path": path})
        k, _, v = text.partition(": ")
        d.setdefault(k.strip(), v.strip())
    for ln in lines:
        if ln.startswith("### "):
            path, _, rest = ln[4:].partition(" (")
            out[path.split("/")[2]]["commit7"] = rest.rstrip(")").split("@")[1]
    return out


SYS = _sys()


def _logs() -> dict[tuple[str, str], list[dict]]:
    """{(folder, 'FP32'|'FP16'): [{file, line numbers, batch, fp16, amp, world, backend, ips}]} of the v0 logs."""
    head, lines = excerpt("lambda2_v0_logs")
    assert head.startswith(f"<!-- {REPO}@{V0} the ResNet-50 run logs"), head
    per_file: dict[str, dict] = {}
    for (path, line), text in numbered_lines(lines).items():
        d = per_file.setdefault(path, {"file": path})
        if " - PARAMETER " in text:
            def g(k: str) -> str:
                return re.search(rf"  {k} : (\S+) ", text).group(1)
            d.update(pline=line, batch=int(g("batch_size")), fp16=g("fp16"), amp=g("amp"),
                     world=int(g("world_size")), backend=g("data_backend"))
        else:
            m = re.fullmatch(r"DLL \S+ \S+ - Summary: train\.loss : \S+  train\.total_ips : (\S+) img/s", text)
            assert m, text
            d.update(sline=line, ips=float(m.group(1)))
    out: dict[tuple[str, str], list[dict]] = {}
    for path, d in per_file.items():
        _, _, folder, task, _ = path.split("/")
        out.setdefault((folder, task.rsplit("_", 1)[1]), []).append(d)
    return out


LOGS = _logs()


def _folder_names() -> dict[str, str]:
    """{table name: results folder} of compile_results_pytorch_throughput.py's system lists (lines 20-112)."""
    head, lines = excerpt("lambda2_v0_scripts")
    assert head.startswith(f"<!-- {REPO}@{V0} the first-generation pipeline"), head
    nl = numbered_lines(lines)
    out = {}
    for (path, n), text in nl.items():
        m = re.match(r"\s+'([^']+)': \(\[\d, \d+\], '([^']+)',", text)
        if path.endswith("compile_results_pytorch_throughput.py") and m:
            out[m.group(2)] = m.group(1)
    # the pipeline facts the rows rely on
    assert "python ./multiproc.py --nproc_per_node ${NUM_GPU} ./main.py" in nl[
        ("pytorch/scripts/benchmark_pytorch.sh", 32)]
    assert "'PyTorch_resnet50_FP16': ('resnet50', \"^.*Summary: train.loss.*$\", -2)" in nl[
        ("pytorch/scripts/compile_results_pytorch_throughput.py", 149)]
    assert "int(round(total_throughput / count, 2))" in nl[
        ("pytorch/scripts/compile_results_pytorch_throughput.py", 207)]
    assert "* (num_gpu if value[2] else 1)" in nl[("pytorch/scripts/compile_results_pytorch_bs.py", 159)]
    return out


FOLDERS = _folder_names()

# first generation: (1-GPU table name, [multi-GPU table names], gpu, intra, system, words on the machine)
PCIE3_TRT = ("Supermicro X11DPG-OT-CPU is the board of Supermicro's SYS-4029GP-TRT/-TRT2 8-GPU PCIe servers "
             "(the folder suffixes _trt/_trt2), whose GPUs sit behind PCIe 3.0 switches; no NVLink bridge (the "
             "bridged runs are the separate 'NVLink' rows)")
H12DSG = ("Supermicro H12DSG-O-CPU is the board of the AS-4124GS-TNR 8-GPU PCIe 4.0 server; ASSUMED no NVLink "
          "bridges (the row names say none, while Lambda names bridged systems 'NVLink')")
TRX40 = ("ASRock TRX40 Creator: a Threadripper PCIe 4.0 workstation; ASSUMED no NVLink bridge (the row name "
         "says none)")
V0_SYSTEMS = [
    ("RTX 2080Ti", ["2x RTX 2080Ti", "4x RTX 2080Ti", "8x RTX 2080Ti"], "rtx2080ti", "pcie3",
     "lambda-4029gp-trt-rtx2080ti", PCIE3_TRT + "; the 1-GPU folder '2080Ti' names the same board, which of "
     "the two chassis it ran on is not stated (ASSUMED the same)"),
    ("Quadro RTX 8000", ["2x RTX Quadro 8000", "4x RTX Quadro 8000", "8x RTX Quadro 8000"], "quadro-rtx8000",
     "pcie3", "lambda-4029gp-trt2-quadro-rtx8000", PCIE3_TRT + "; the 1-GPU folder 'QuadroRTX8000' names the "
     "same board, which chassis is not stated (ASSUMED the same)"),
    ("V100 32GB", ["2x V100 32GB", "4x V100 32GB", "8x V100 32GB"], "v100-32gb", "nvlink2",
     "lambda-4029gp-tvrt-v100-32gb", "'Tesla_V100-SXM2-32GB' on a Supermicro X11DGO-T, the board of the "
     "SYS-4029GP-TVRT 8x SXM2 server (ASSUMED), whose V100s form the DGX-1-style NVLink2 hybrid cube-mesh"),
    ("RTX 3070", ["2x RTX 3070", "4x RTX 3070", "8x RTX 3070"], "rtx3070", "pcie4", "lambda-4124gs-rtx3070",
     H12DSG),
    ("RTX 3080", ["2x RTX 3080"], "rtx3080", "pcie4", "lambda-trx40-rtx3080", TRX40),
    ("A100 40GB PCIe", ["2x A100 40GB PCIe", "4x A100 40GB PCIe", "8x A100 40GB PCIe"], "a100-pcie", "pcie4",
     "lambda-4124gs-a100-pcie", H12DSG),
    ("A100 40GB SXM4", ["2x A100 40GB SXM4", "4x A100 40GB SXM4", "8x A100 40GB SXM4"], "a100", "nvswitch-a100",
     "lambda-nf5488a5-a100", "Inspur NF5488A5: an 8x A100 SXM4 HGX server, GPUs on NVSwitch; 1/2/4/8 GPUs of it"),
    ("A100 80GB PCIe", ["2x A100 80GB PCIe"], "a100-80gb-pcie", "pcie4", "lambda-mz22-a100-80gb-pcie",
     "GIGABYTE MZ22-G20 (a PCIe 4.0 server board); ASSUMED no NVLink bridge (the row name says none)"),
    ("A100 80GB SXM4", ["2x A100 80GB SXM4", "4x A100 80GB SXM4", "8x A100 80GB SXM4"], "a100-80gb",
     "nvswitch-a100", "lambda-v0-a100-80gb-sxm4", "Supermicro H12DGO-6, the board of the AS-4124GO-NART 8x A100 "
     "SXM4 HGX server, GPUs on NVSwitch; these are the Nov 2021 runs, not the Nov 2022 runs build_lambda.py reads"),
    ("RTX A6000", ["2x RTX A6000", "4x RTX A6000", "8x RTX A6000"], "rtx-a6000", "pcie4",
     "lambda-4124gs-rtx-a6000", H12DSG),
    ("RTX A5000", ["2x RTX A5000", "4x RTX A5000"], "rtx-a5000", "pcie4", "lambda-trx40-rtx-a5000", TRX40),
    ("RTX A40", ["2x RTX A40", "4x RTX A40", "8x RTX A40"], "a40", "pcie4", "lambda-4124gs-a40", H12DSG),
    ("RTX A4000", ["2x RTX A4000", "4x RTX A4000", "8x RTX A4000"], "rtx-a4000", "pcie4", "lambda-4124gs-rtx-a4000",
     H12DSG),
    ("RTX A4500", ["2x RTX A4500", "4x RTX A4500", "8x RTX A4500"], "rtx-a4500", "pcie4", "lambda-4124gs-rtx-a4500",
     H12DSG),
    ("RTX A5500", ["2x RTX A5500", "4x RTX A5500", "8x RTX A5500"], "rtx-a5500", "pcie4", "lambda-4124gs-rtx-a5500",
     H12DSG),
]
# b2af268: rows under their folder names
OLD_SYSTEMS = [
    ("2080Ti", ["2x2080Ti_trt2", "4x2080Ti_trt2", "8x2080Ti_trt2"], "rtx2080ti", "pcie3",
     "lambda-4029gp-trt2-rtx2080ti", PCIE3_TRT + "; these are the '_trt2' chassis runs, dropped from the table "
     "on 20 Nov 2020; the 1-GPU folder names the same board (ASSUMED the same chassis)"),
    ("QuadroRTX8000", ["2xQuadroRTX8000_trt", "4xQuadroRTX8000_trt", "8xQuadroRTX8000_trt"], "quadro-rtx8000",
     "pcie3", "lambda-4029gp-trt-quadro-rtx8000", PCIE3_TRT + "; these are the '_trt' chassis runs, dropped from "
     "the table on 20 Nov 2020; the 1-GPU folder names the same board (ASSUMED the same chassis)"),
]

V0_SCHEME = (
    "one process per GPU (pytorch/scripts/benchmark_pytorch.sh lines 32-33 'python ./multiproc.py "
    "--nproc_per_node ${NUM_GPU} ./main.py', excerpts/lambda2_v0_scripts.md) running the NGC container's "
    "bundled DLE ConvNets example (/workspace/examples/resnet50v1.5); DDP class ASSUMED "
    "apex.parallel.DistributedDataParallel (bucketed NCCL all-reduce during backward), as DLE ConvNets' 20.06 "
    "release imports it (excerpts/dleconv_pt_rn50_2006_ddp.md): the bundled code is not in the repository, but "
    "the logs print apex's 'FP16_Optimizer is deprecated' warning (--fp16) or apex amp's 'Selected optimization "
    "level O1' (--amp), i.e. the apex-era example")
V1_SCHEME = (
    "torch.nn.parallel.DistributedDataParallel over NCCL, one process per GPU, Lambda's DLE fork "
    "(LambdaLabsML/DeepLearningExamples lambda/benchmark) as build_lambda.py reads it (excerpts/lambda_dle_ddp.md, "
    "excerpts/lambda_script_resnet50.md); AMP is torch.cuda.amp with fp32 parameters, so gradients travel in fp32")


def _folder_rate(folder: str, task: str, table_value: str) -> tuple[dict, str]:
    """The folder's logs (one setting, checked) and a note; the table value checked to be their mean."""
    logs = LOGS[(folder, task)]
    keys = {(d["batch"], d["fp16"], d["amp"], d["world"], d["backend"]) for d in logs}
    assert len(keys) == 1, (folder, task, keys)
    mean = sum(d["ips"] for d in logs) / (len(logs) + 0.000001)  # compile_results_pytorch_throughput.py 181-207
    assert int(round(mean, 2)) == _int(table_value), (folder, task, mean, table_value)
    cites = "; ".join(f"{d['file']} line {d['pline']} 'batch_size : {d['batch']}', 'fp16 : {d['fp16']}', "
                      f"'amp : {d['amp']}', 'world_size : {d['world']}', 'data_backend : {d['backend']}', line "
                      f"{d['sline']} 'train.total_ips : {d['ips']:.2f} img/s'" for d in logs)
    return logs[0], cites


def _machine(multi: str, one: str) -> tuple[dict, dict] | None:
    """sys_pytorch.txt blocks of the multi- and 1-GPU folders, None unless board and PyTorch match."""
    s, s1 = SYS[multi], SYS[one]
    if (s["Motherboard"], s["PyTorch Version"]) != (s1["Motherboard"], s1["PyTorch Version"]):
        return None
    return s, s1


# the 67a9bb5 batch table spells the Quadro rows as compile_results_pytorch_bs.py lines 57-62 name them
BS_ALIAS = {f"{n}x RTX Quadro 8000": f"{n}x Quadro RTX 8000" for n in (2, 4, 8)}


def v0_rows(systems: list, commit: str, prefix: str, folder_of) -> tuple[list[dict], list[str]]:
    rows, skipped = [], []
    for tprec in ("fp32", "fp16"):
        task = tprec.upper()
        tpath = ("pytorch/" if commit == V0 else "") + f"pytorch-train-throughput-{tprec}.csv"
        bpath = ("pytorch/" if commit == V0 else "") + f"pytorch-train-bs-{tprec}.csv"
        th, tb = _csv(f"{prefix}_throughput_{tprec}", commit, tpath)
        bh, bb = _csv(f"{prefix}_bs_{tprec}", commit, bpath)
        assert th[:2] == ["name_gpu", "num_gpu"] and bh[:2] == ["name_gpu", "num_gpu"], (th, bh)
        tc, bc = th.index("resnet50"), bh.index("resnet50")
        for one_name, names, gpu, intra, system, words in systems:
            l1, c1 = tb[one_name]
            bl1, b1 = bb[one_name]
            assert _int(c1[1]) == 1 and _int(b1[1]) == 1, (c1, b1)
            f1 = folder_of(one_name)
            log1, cite1 = _folder_rate(f1, task, c1[tc])
            assert log1["world"] == 1
            gmax = max(_int(tb[nm][1][1]) for nm in names)
            for name in names:
                ln, cells = tb[name]
                bname = BS_ALIAS.get(name, name)
                bln, bcells = bb[bname]
                n = _int(cells[1])
                assert _int(bcells[1]) == n, bcells
                f = folder_of(name)
                log, cite = _folder_rate(f, task, cells[tc])
                assert log["world"] == n, (name, log)
                mach = _machine(f, f1)
                if mach is None:
                    skipped.append(f"{name} {tprec}: 1-GPU folder {f1} on another board/PyTorch")
                    continue
                if (log["fp16"], log["amp"]) != (log1["fp16"], log1["amp"]):
                    skipped.append(f"{name} {tprec}: precision mode fp16={log['fp16']} amp={log['amp']}, "
                                   f"1-GPU fp16={log1['fp16']} amp={log1['amp']}")
                    continue
                assert log["backend"] == log1["backend"], (name, log, log1)
                s, s1 = mach
                gbatch = _int(bcells[bc])
                assert gbatch == log["batch"] * n, (name, gbatch, log)
                assert _int(b1[bc]) == log1["batch"], (one_name, b1[bc], log1)
                if tprec == "fp32":
                    prec, wire = ("tf32" if gpu in AMPERE_OR_LATER else "fp32"), "fp32"
                    pnote = ("fp32 table, no --fp16/--amp: " + (
                        "PyTorch >= 1.7 lets cuDNN run convolutions in TF32 on Ampere by default, so tf32"
                        if prec == "tf32" else "a pre-Ampere GPU, fp32"))
                elif log["fp16"] == "True":
                    prec, wire = "fp16", "fp16"
                    pnote = ("fp16 table: DLE --fp16 --static-loss-scale 256, the model cast to half with apex "
                             "FP16_Optimizer fp32 master weights, so the gradients DDP all-reduces are fp16")
                else:
                    assert log["amp"] == "True", log
                    prec, wire = "amp", "fp32"
                    pnote = ("fp16 table: DLE --amp, apex amp O1 (the log prints 'Selected optimization level O1'): "
                             "fp32 weights, so fp32 gradients")
                data = "synthetic" if log["backend"] == "syntetic" else "real"
                dnote = ("data_backend 'syntetic' (sic): synthetic ImageNet-shaped input" if data == "synthetic"
                         else f"data_backend '{log['backend']}': ImageNet images read from disk and decoded "
                         + ("by DALI on the CPU" if log["backend"] == "dali-cpu" else "by PyTorch's data loader"))
                hw = (f"sys_pytorch.txt (excerpts/lambda2_sys.md) of {s['path']}: 'GPU: {s['GPU']}', 'CPU: "
                      f"{s['CPU']}', 'Motherboard: {s['Motherboard']}', 'PyTorch Version: {s['PyTorch Version']}'; "
                      f"1-GPU folder {s1['path']}: the same board and PyTorch ('GPU: {s1['GPU']}'); {words}; one "
                      "machine only (network n/a)")
                loc = f"{tpath} line {ln}, row '{name}', column 'resnet50'"
                rows.append(row(
                    source=SOURCE, source_url=_url(commit, tpath), source_loc=loc, read_from="table", system=system,
                    gpu=gpu, gpus_per_node=gmax, intra=intra, network="n/a", nics=0, hardware_source=hw,
                    framework=f"PyTorch {s['PyTorch Version']} (NGC container), DLE ConvNets example bundled in "
                    "the container", scheme="pytorch-ddp", scheme_detail=V0_SCHEME, model="resnet50",
                    batch_per_gpu=log["batch"], accumulate=1, precision=prec, grad_wire=wire,
                    comm_overlap="during-backward", data=data, gpus=n, nodes=1, samples_per_s=num(cells[tc]),
                    unit="images/s (all GPUs)", single_gpu_samples_per_s=num(c1[tc]),
                    single_gpu_batch=log1["batch"],
                    single_gpu_loc=f"same table, line {l1}, row '{one_name}' (folder {f1})",
                    note="; ".join([
                        pnote, dnote,
                        f"table value = mean of the folder's log summaries (folder {f}): {cite}",
                        f"1-GPU: {cite1}",
                        f"batch: {bpath} line {bln} (row '{bname}') prints the global batch {gbatch} (= per-GPU x GPUs, "
                        f"compile_results_pytorch_bs.py line 159); 1 GPU line {bl1}: {b1[bc]}",
                        "2 epochs of 100 iterations (--epochs 2 --prof 100); total_ips counts the first, warm-up "
                        "iterations too"])))
    return rows, skipped


# --------------------------------------------------------------------------------- second generation
def _v1_head(name: str, path: str, commit: str) -> list[str]:
    head, lines = excerpt(name)
    assert head.startswith(f"<!-- {REPO}@{commit} {path} lines "), head
    return lines


# (table excerpt prefix, commit, 1-GPU name, [names], gpu, intra, system, {name: folder}, words)
V1_SYSTEMS = [
    ("lambda_v1", V1, "RTX 3090", ["2x RTX 3090"], "rtx3090", "pcie4", "lambda-wrx80-rtx3090",
     {"RTX 3090": "3090_v1", "2x RTX 3090": "2x3090_v1"},
     "ASUS Pro WS WRX80E-SAGE SE: a Threadripper PRO PCIe 4.0 workstation; ASSUMED no NVLink bridge"),
    ("lambda_v1", V1, "RTX 4090", ["2x RTX 4090"], "rtx4090", "pcie4", "lambda-wrx80-rtx4090",
     {"RTX 4090": "4090_v1", "2x RTX 4090": "2x4090_v1"},
     "ASUS Pro WS WRX80E-SAGE SE: a Threadripper PRO PCIe 4.0 workstation (the RTX 4090 has no NVLink)"),
    ("lambda_v1", V1, "RTX A6000", ["2x RTX A6000"], "rtx-a6000", "pcie4", "lambda-mz22-rtx-a6000",
     {"RTX A6000": "A6000_v1", "2x RTX A6000": "2xA6000_v1"},
     "GIGABYTE MZ22-G20 (a PCIe 4.0 server board); ASSUMED no NVLink bridge (the row name says none)"),
    ("lambda_v1", V1, "A100 80GB PCIe", ["2x A100 80GB PCIe"], "a100-80gb-pcie", "pcie4", "lambda-mz22-a100-80gb-pcie-v1",
     {"A100 80GB PCIe": "A100_80GB_PCIe_v1", "2x A100 80GB PCIe": "2xA100_80GB_PCIe_v1"},
     "GIGABYTE MZ22-G20 (a PCIe 4.0 server board); ASSUMED no NVLink bridge (the row name says none)"),
    ("lambda_v1", V1, "RTX 6000 Ada", ["2x RTX 6000 Ada", "4x RTX 6000 Ada", "8x RTX 6000 Ada"], "rtx6000-ada", "pcie4",
     "lambda-wrx80-rtx6000-ada",
     {"RTX 6000 Ada": "AdaA6000_v1", "2x RTX 6000 Ada": "2xAdaA6000_v1", "4x RTX 6000 Ada": "4xAdaA6000_v1",
      "8x RTX 6000 Ada": "8xAdaA6000_v1"},
     "ASUS Pro WS WRX80E-SAGE SE: a Threadripper PRO PCIe 4.0 workstation (the RTX 6000 Ada has no NVLink)"),
    ("lambda_v1", V1, "H100 80GB PCIe Gen5", ["2x H100 80GB PCIe Gen5", "4x H100 80GB PCIe Gen5",
                                              "8x H100 80GB PCIe Gen5"], "h100-pcie", "pcie5", "lambda-x13deg-h100-pcie",
     {"H100 80GB PCIe Gen5": "H100_80GB_PCIe5_v1", "2x H100 80GB PCIe Gen5": "2xH100_80GB_PCIe5_v1",
      "4x H100 80GB PCIe Gen5": "4xH100_80GB_PCIe5_v1", "8x H100 80GB PCIe Gen5": "8xH100_80GB_PCIe5_v1"},
     "Supermicro X13DEG-OA with Xeon Platinum 8480+ (Sapphire Rapids, PCIe 5.0), 'Gen5' in the row name; "
     "ASSUMED no NVLink bridges between the H100 PCIe cards (the row name says none)"),
    ("lambda2_h100g4", G4, "H100 80GB PCIe Gen4", ["2x H100 80GB PCIe Gen4", "4x H100 80GB PCIe Gen4",
                                                   "8x H100 80GB PCIe Gen4"], "h100-pcie", "pcie4",
     "lambda-4124gs-h100-pcie",
     {"H100 80GB PCIe Gen4": "H100_80GB_PCIe_v1", "2x H100 80GB PCIe Gen4": "2xH100_80GB_PCIe_v1",
      "4x H100 80GB PCIe Gen4": "4xH100_80GB_PCIe_v1", "8x H100 80GB PCIe Gen4": "8xH100_80GB_PCIe_v1"},
     "Supermicro H12DSG-O-CPU (AS-4124GS-TNR, EPYC 7302, PCIe 4.0), 'Gen4' in the row name; ASSUMED no NVLink "
     "bridges between the H100 PCIe cards"),
]


def v1_rows() -> tuple[list[dict], list[str]]:
    rows, skipped = [], []
    for tprec, prec in (("fp32", "tf32"), ("fp16", "amp")):
        for prefix, commit, one_name, names, gpu, intra, system, folders, words in V1_SYSTEMS:
            tpath = f"pytorch/pytorch-train-throughput-{tprec}.csv"
            bpath = f"pytorch/pytorch-train-bs-{tprec}.csv"
            th, tb = _csv(f"{prefix}_throughput_{tprec}", commit, tpath)
            bh, bb = _csv(f"{prefix}_bs_{tprec}", commit, bpath)
            tc, bc = th.index("resnet50"), bh.index("resnet50")
            l1, c1 = tb[one_name]
            bl1, b1 = bb[one_name]
            assert _int(c1[1]) == 1 and _int(b1[1]) == 1
            one_batch = _int(b1[bc])
            gmax = max(_int(tb[nm][1][1]) for nm in names if _machine(folders[nm], folders[one_name]))
            for name in names:
                ln, cells = tb[name]
                bln, bcells = bb[name]
                n = _int(cells[1])
                assert _int(bcells[1]) == n
                f, f1 = folders[name], folders[one_name]
                mach = _machine(f, f1)
                if mach is None:
                    skipped.append(f"{name} {tprec}: 1-GPU folder {f1} on board '{SYS[f1]['Motherboard']}', "
                                   f"multi-GPU on '{SYS[f]['Motherboard']}'")
                    continue
                s, s1 = mach
                gbatch = _int(bcells[bc])
                assert gbatch % n == 0
                hw = (f"sys_pytorch.txt (excerpts/lambda2_sys.md) of {s['path']} (@{s['commit7']}): 'GPU: "
                      f"{s['GPU']}', 'CPU: {s['CPU']}', 'Motherboard: {s['Motherboard']}'; 1-GPU folder "
                      f"{s1['path']}: the same board ('GPU: {s1['GPU']}'); {words}; one machine only (network n/a); gpus_per_node = the largest GPU count the table runs "
                      "on it (ASSUMED the machine's size)")
                rows.append(row(
                    source=SOURCE, source_url=_url(commit, tpath),
                    source_loc=f"{tpath} line {ln}, row '{name}', column 'resnet50'", read_from="table",
                    system=system, gpu=gpu, gpus_per_node=gmax,
                    intra=intra, network="n/a", nics=0, hardware_source=hw,
                    framework=f"PyTorch {s['PyTorch Version']} (NGC container), DLE ConvNets "
                    "(LambdaLabsML/DeepLearningExamples lambda/benchmark)", scheme="pytorch-ddp",
                    scheme_detail=V1_SCHEME, model="resnet50", batch_per_gpu=gbatch // n, accumulate=1,
                    precision=prec, grad_wire="fp32", comm_overlap="during-backward", data="synthetic", gpus=n,
                    nodes=1, samples_per_s=num(cells[tc]), unit="images/s (all GPUs)",
                    single_gpu_samples_per_s=num(c1[tc]), single_gpu_batch=one_batch,
                    single_gpu_loc=f"same table, line {l1}, row '{one_name}' (folder {f1})",
                    note="; ".join([
                        ("the 'fp32' table: TF32 by default on Ampere and later (as build_lambda.py)" if prec == "tf32"
                         else "the 'fp16' table: DLE ConvNets --amp (torch.cuda.amp)"),
                        f"batch: {bpath} line {bln} prints the global batch {gbatch} (per-GPU x GPUs, as "
                        f"build_lambda.py reads it); 1 GPU: line {bl1}, {one_batch}",
                        "synthetic ImageNet-shaped input, second-generation (_v1) runs as build_lambda.py reads them"
                        + (f"; cited at {commit[:7]}, the last version printing this system's 1-GPU row"
                           if commit == G4 else "")])))
    return rows, skipped


def main(out: Path = HERE / "lambda2_runs.csv") -> None:
    """Write the rows to ``out`` (lambda2_runs.csv) and list what the machine/precision checks left out."""
    r0, s0 = v0_rows(V0_SYSTEMS, V0, "lambda2_v0", lambda name: FOLDERS[name])
    r1, s1 = v0_rows(OLD_SYSTEMS, OLD, "lambda2_v0old", lambda name: name)
    r2, s2 = v1_rows()
    for s in s0 + s1 + s2:
        print("left out:", s)
    write_rows(r0 + r1 + r2, out, "u")


if __name__ == "__main__":
    main()
