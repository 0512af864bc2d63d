"""Generator of data/published/lumi_runs.csv: `python data/published/build_lumi.py`.

A vendor the model had never been checked on: AMD MI250X on CSC's share of LUMI-G (8 GCDs per node,
each counted as one GPU; Infinity Fabric inside the node; four 200 Gb/s Slingshot-11 endpoints per node),
PyTorch DDP and Lightning over RCCL (torch's "nccl" backend on ROCm), ResNet-50 at 32 images per GCD.
The rows are the LUMI lines of the CSC ml-benchmarks table that runs.csv already reads for Puhti and
Mahti (excerpts/csc_ml_benchmarks.md, build.csc_rows); the node and network are from the LUMI user guide
(excerpts/lumi_hardware.md). Kept apart from runs.csv, like pcie_runs.csv: transcribed after the model of
issue 27 was fixed, and judged once against it (docs/validation.md, "AMD MI250X on LUMI").
"""
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)

LUMI_COMMIT = "6c3a26c0fc8f2174e1dde45adb75def88d8010a4"
LUMI = dict(
    gpu="mi250x-gcd", gpus_per_node=8, intra="50GB/s,2us", network="200Gb/s,2us", nics=4,
    hardware_source="LUMI-G (Lumi-supercomputer/lumi-userguide@" + LUMI_COMMIT[:7] + " docs/hardware/lumig.md, "
    "network.md; excerpts/lumi_hardware.md): 4 MI250X per node, each 2 GCDs that Slurm and HIP count as "
    "GPUs ('considered as 8 GPUs nodes'); GCDs of one module joined by 400 GB/s bidirectional Infinity "
    "Fabric, GCDs of different modules by 'a single or double Infinity Fabric link' of 100 or 200 GB/s "
    "bidirectional: intra is the single link's 50 GB/s per direction, the slowest hop a ring over the 8 "
    "GCDs can take (nominal, no measured figure; latency 2 us as the NVLink presets, an estimate); network "
    "4 Slingshot-11 endpoints per node, 200 Gbps each ('up to 25+25 GB/s' per module), nominal, latency "
    "2 us (estimate)")


def lumi_rows() -> list[dict]:
    rows = _build.csc_rows(clusters=("lumi",), systems={"csc-lumi": LUMI})
    for r in rows:
        r["scheme_detail"] += "; on LUMI torch's nccl backend is RCCL (PyTorch for ROCm)"
    return rows


def main(out: Path = HERE / "lumi_runs.csv") -> None:
    _build.write_rows(lumi_rows(), out, "l")


if __name__ == "__main__":
    main()
