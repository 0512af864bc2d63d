"""Generator of data/published/cloud_runs.csv: `python data/published/build_cloud.py`.

A family the model had never been checked on: an HPC centre's own PyTorch benchmarks, NERSC's
"NERSC PyTorch benchmarks" (sparticlesteve/pytorch-benchmarks, by NERSC staff; README: "PyTorch benchmarks
used to check performance of PyTorch on NERSC systems"), run on Cori GPU (8x V100 SXM2 16 GB per node in the
hybrid cube-mesh, 4 dual-port ConnectX-5 EDR InfiniBand HCAs per node) with PyTorch DistributedDataParallel
over NCCL, one process per GPU, 1-64 GPUs (up to 8 nodes), synthetic data, batch 128 per GPU, fp32, Adam.
The results are printed as text: the pandas table that notebooks/ScalingAnalysisGPU.ipynb prints (cell 9,
the `results.txt` files of one run per GPU count), in four versions of the notebook, each a separate set of
measurements (PyTorch v1.3.1, Feb 2020; v1.5.0, May 2020; v1.5.0 rerun with longer runs, Jun 2020; 1.7.1,
Jan 2021). Sources: excerpts/cloud_cori_v131.md, cloud_cori_v150a.md, cloud_cori_v150b.md,
cloud_cori_v171.md (the table lines), excerpts/cloud_cori_setup.md (run script, configurations and
training code at each of those commits) and excerpts/cloud_cori_hardware.md (NERSC's Cori GPU hardware
page). Kept apart from runs.csv, like the other *_runs.csv families: transcribed without looking at the
model's predictions, to be judged once against it.

Columns as runs.csv (data/published/README.md). Transcribed: every multi-GPU row (2, 4, 8 GPUs in one node;
16, 32, 64 GPUs on 2, 4, 8 nodes) of the models in the model library (resnet50, alexnet, vgg11,
inception-v3), with the same table's 1-GPU row of the same model as the single-GPU rate. `train_rate` is
the sum over ranks of each rank's samples / epoch time, averaged over epochs (trainers/base.py,
parse.py): the global throughput. Not transcribed: lstm, cnn3d and transformer (custom models not in the
library); the notebook's inference rates; the versions at d7348cc ("pytorch-benchmarks-gpudirect") and
40235ed ("results-test"), whose run directories the committed run script does not write (their settings are
not in the repository) and which d6f5900 replaced a day later; the PyTorch 1.7.0 Gloo table at 33aca91 (Gloo
over TCP: the path it took on Cori GPU, IPoIB or Ethernet, is not stated).
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, num, row, write_rows = _build.excerpt, _build.num, _build.row, _build.write_rows

REPO = "sparticlesteve/pytorch-benchmarks"
NB = "notebooks/ScalingAnalysisGPU.ipynb"
SOURCE = ("NERSC PyTorch benchmarks on Cori GPU (sparticlesteve/pytorch-benchmarks, "
          "notebooks/ScalingAnalysisGPU.ipynb)")
# excerpt tag -> (commit, PyTorch version as in the results directory, notebook date)
SETS = {
    "v131": ("d6f5900791ebdf948d0878a4e3945e930e6716f3", "v1.3.1", "2020-02-25"),
    "v150a": ("ddb4f4de1384bd258d4c2badbff6b0b2ed114d1b", "v1.5.0", "2020-05-14"),
    "v150b": ("b63059635a209c2c3536b6284fa4099703b2519f", "v1.5.0", "2020-06-05"),
    "v171": ("7e3b50a172b654dbae8fe13a54f722566f7a2388", "1.7.1", "2021-01-13"),
}
MODELS = {"resnet50": "resnet50", "alexnet": "alexnet", "vgg11": "vgg11", "inceptionV3": "inception-v3"}
HW_URL = "https://docs-dev.nersc.gov/cgpu/hardware/"
_ROW = re.compile(r'^(\d+): \s*"(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+(\d+)\s+gpu\s+(\S+)\s+nccl\s+(\w+)\\n",$')
_SETUP = re.compile(r"^(\S+?):(\d+): (.*)$")


def _hardware() -> dict:
    head, lines = excerpt("cloud_cori_hardware")
    assert head.startswith(f"<!-- {HW_URL} "), head
    text = "\n".join(lines)
    m = re.search(r"- (\d+) NVIDIA Tesla V100 \('Volta'\) GPUs, each with with 16 GB HBM2", text)
    gpn = int(m.group(1))
    m = re.search(r"- (\d+) dual-port Mellanox MT27800 \(ConnectX-5\) EDR InfiniBand HCAs", text)
    hcas = int(m.group(1))
    assert "'hybrid cube-mesh'" in text and "Connected with NVLink interconnect" in text
    return dict(gpu="v100", gpus_per_node=gpn, intra="nvlink2", network="ib-edr", nics=hcas, hardware_source=(
        f"NERSC Cori GPU node ({HW_URL}, excerpts/cloud_cori_hardware.md): '{gpn} NVIDIA Tesla V100 ('Volta') "
        "GPUs, each with with 16 GB HBM2 memory', 'Connected with NVLink interconnect' in the 'hybrid cube-mesh' "
        "(two single and two doubly-bonded NVLinks per GPU: the DGX-1 V100 layout, preset nvlink2; SXM2 parts, "
        f"preset v100), '{hcas} dual-port Mellanox MT27800 (ConnectX-5) EDR InfiniBand HCAs' on the PCIe 3.0 "
        f"switches: ib-edr x{hcas}, one port per HCA counted (whether the second ports are cabled is not "
        "stated; an assumption)"))


def _setup() -> dict:
    """{commit: {(path, key): (line, value)}} from excerpts/cloud_cori_setup.md."""
    head, lines = excerpt("cloud_cori_setup")
    assert head.startswith(f"<!-- {REPO} (NERSC PyTorch benchmarks), selected lines"), head
    out, cur = {}, None
    for ln in lines:
        if ln.startswith("## commit "):
            cur = out.setdefault(ln.split()[2], {})
            continue
        m = _SETUP.match(ln)
        if not m:
            continue
        path, n, text = m.group(1), int(m.group(2)), m.group(3).strip()
        if ":" in text and path.startswith("configs/"):
            k, v = text.split(":", 1)
            cur[(path, k.strip())] = (n, v.strip())
        elif text.startswith("#SBATCH --ntasks-per-node="):
            cur[(path, "ntasks-per-node")] = (n, text.split("=", 1)[1])
        elif re.match(r"^(version|backend)=", text):
            k, v = text.split("=", 1)
            cur[(path, k)] = (n, v)
        else:
            cur[(path, text)] = (n, text)
    return out


def cloud_rows() -> list[dict]:
    """The train_rate rows of the four notebook versions for library models, each with its 1-GPU row."""
    hw = _hardware()
    setup = _setup()
    rows = []
    for tag, (commit, version, date) in SETS.items():
        s = setup[commit]
        assert s[("scripts/run_cgpu.sh", "version")][1] == version, (tag, version)
        assert s[("scripts/run_cgpu.sh", "backend")][1] == "nccl"
        npn_line, npn = s[("scripts/run_cgpu.sh", "ntasks-per-node")]
        assert int(npn) == hw["gpus_per_node"], npn
        ddp = [n for (p, k), (n, _) in s.items() if p == "trainers/generic.py" and "DistributedDataParallel(" in k]
        assert len(ddp) == 1
        head, lines = excerpt(f"cloud_cori_{tag}")
        assert head.startswith(f"<!-- {REPO}@{commit} {NB}, selected lines"), head
        assert any(f"gpu-{version}-nccl-n*/results.txt" in ln for ln in lines), tag
        recs = []
        for ln in lines:
            m = _ROW.match(ln)
            if m:
                line, idx, train, _inf, ranks, ver, model = m.groups()
                assert ver == version, ln
                recs.append(dict(line=int(line), idx=idx, rate=num(train), ranks=int(ranks), model=model))
        for r in recs:
            if r["ranks"] == 1:
                continue
            one = [x for x in recs if x["model"] == r["model"] and x["ranks"] == 1]
            assert len(one) == 1, (tag, r)
            one = one[0]
            cfg = f"configs/{r['model']}.yaml"
            b_line, batch = s[(cfg, "batch_size")]
            _, shape = s[(cfg, "input_shape")]
            _, epochs = s[(cfg, "n_epochs")]
            _, ntrain = s[(cfg, "n_train")]
            assert s[(cfg, "name")][1] == "dummy" and s[(cfg, "use_dist_sampler_train")][1] == "false"
            assert s[(cfg, "optimizer")][1] == "'Adam'"
            gpn = hw["gpus_per_node"]
            nodes = -(-r["ranks"] // gpn)
            steps = int(ntrain) // int(batch)
            rows.append(row(
                source=SOURCE, source_url=f"https://github.com/{REPO}/blob/{commit}/{NB}",
                source_loc=f"{NB}@{commit[:7]} ({date}) line {r['line']}, cell 9 output row {r['idx']} "
                f"'ranks {r['ranks']} | gpu | {version} | nccl | {r['model']}', column 'train_rate'",
                read_from="table", system="nersc-cori-gpu", **hw,
                framework=f"PyTorch {version} (NERSC module pytorch/{version}-gpu), torchvision "
                f"{r['model'] if r['model'] != 'inceptionV3' else 'inception_v3 (aux_logits False)'}, Adam",
                scheme="pytorch-ddp",
                scheme_detail=("torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu]) over the NCCL "
                               f"backend (trainers/generic.py line {ddp[0]}; run_cgpu.sh '-d $backend', "
                               "backend=nccl), one process per GPU, "
                               f"{npn} per node (run_cgpu.sh line {npn_line} '#SBATCH --ntasks-per-node={npn}'), "
                               "GPU = rank % 8; default buckets; NCCL's transport (InfiniBand verbs assumed, "
                               "not stated)"),
                model=MODELS[r["model"]], batch_per_gpu=batch, accumulate=1, precision="fp32", grad_wire="fp32",
                comm_overlap="during-backward", data="synthetic", gpus=r["ranks"], nodes=nodes,
                samples_per_s=r["rate"], unit="images/s", single_gpu_samples_per_s=one["rate"],
                single_gpu_batch=batch,
                single_gpu_loc=f"same table, line {one['line']}, row {one['idx']} 'ranks 1 | gpu | {version} | "
                f"nccl | {one['model']}' (one rank, still wrapped in DistributedDataParallel)",
                note=(f"batch per GPU {batch} from {cfg} line {b_line} at the same commit (excerpts/"
                      f"cloud_cori_setup.md), input {shape}; synthetic: torch.randn tensors held in host memory "
                      "and copied to the GPU every step (DataLoader without workers), every rank iterating "
                      f"the whole {ntrain}-sample set ({steps} steps per epoch, no DistributedSampler), "
                      f"{epochs} epoch(s); rate = sum over ranks of samples / epoch wall time, averaged over "
                      "epochs (trainers/base.py lines 89-90, parse.py line 30), so the first epoch's warm-up "
                      "counts; fp32: the code has no mixed precision; the PyTorch version is the results "
                      "directory's name (gpu-<version>-nccl-n<ranks>)")))
    return rows


def main(out: Path = HERE / "cloud_runs.csv") -> None:
    """Write the rows to ``out`` (cloud_runs.csv)."""
    write_rows(cloud_rows(), out, "c")


if __name__ == "__main__":
    main()
