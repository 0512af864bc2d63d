"""Generator of data/published/dleold_runs.csv: `python data/published/build_dleold.py`.

A family not in runs.csv: NVIDIA DeepLearningExamples' TensorFlow 2 EfficientNet README as first released
(Apr 2021, TensorFlow2/Classification/ConvNets/efficientnet/README.md, tensorflow:21.02-tf2-py3), whose
training-performance tables were replaced in Mar 2022 (2132ae7) by the efficientnet_v1 README's 21.09 tables
that runs.csv reads @729963d (different measurements: e.g. B4 DGX A100 TF32 on 64 GPUs 9838 here, 9473 there).
Read @49e23b4 (Jul 2021), the last commit of that file; its four training tables are the same from 4a66a00
(the release) to 49e23b4. All from excerpts/dleold_tf2_effnet_*.md:

* B0, DGX A100 (8x A100 80GB): 1, 8, 16 GPUs (16 = two nodes); B0, DGX-1 (8x V100 16GB): 1, 8 GPUs.
* B4, DGX A100 (8x A100 80GB): 1, 8, 32, 64 GPUs; B4, DGX-1 (8x V100 32GB): 1, 8, 32, 64 GPUs (4 and 8 nodes).

Columns as build.effnet_rows encodes the TensorFlow 2 EfficientNet rows (horovod-nccl, during-backward,
accumulate 1, batch per GPU from the train_benchmark_8x*.sh script of the precision, runs on more than 8 GPUs
assumed at the same batch), except grad_wire: the code at this commit wraps the optimizer in
hvd.DistributedOptimizer(optimizer, compression=hvd.Compression.fp16) unconditionally (runtime/runner.py line
174, excerpts/dleold_tf2_effnet_runner.md), so every row, FP32/TF32 included, is fp16 on the wire.
"""
import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("published_build", HERE / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
excerpt, md_table, num, row, write_rows, SYSTEMS = (_build.excerpt, _build.md_table, _build.num, _build.row,
                                                    _build.write_rows, _build.SYSTEMS)

SHA = "49e23b4597a6fca461321a085d8eb8abf1e215e2"
DIR = "TensorFlow2/Classification/ConvNets/efficientnet"
README = f"{DIR}/README.md"


def _meta(name: str):
    """(path, first line number, last line number, lines) of an excerpt at SHA."""
    sha, path, first, last, lines = _build.dle_excerpt(name)
    assert sha == SHA, (name, sha)
    return path, first, last, lines


def _url(path: str) -> str:
    return _build.dle_url(path, SHA)


# excerpt, system, model, {precision: script excerpt}
TABLES = [
    ("dleold_tf2_effnet_b0_dgxa100", "dgx-a100", "efficientnet-b0",
     {"tf32": "dleold_tf2_effnet_script_b0_tf32_a100", "amp": "dleold_tf2_effnet_script_b0_amp_a100"}),
    ("dleold_tf2_effnet_b0_dgx1", "dgx1-v100", "efficientnet-b0",
     {"fp32": "dleold_tf2_effnet_script_b0_fp32_v100", "amp": "dleold_tf2_effnet_script_b0_amp_v100"}),
    ("dleold_tf2_effnet_b4_dgxa100", "dgx-a100", "efficientnet-b4",
     {"tf32": "dleold_tf2_effnet_script_b4_tf32_a100", "amp": "dleold_tf2_effnet_script_b4_amp_a100"}),
    ("dleold_tf2_effnet_b4_dgx1", "dgx1-v100", "efficientnet-b4",
     {"fp32": "dleold_tf2_effnet_script_b4_fp32_v100", "amp": "dleold_tf2_effnet_script_b4_amp_v100"}),
]


def _script_batch(name: str, model: str, precision: str) -> tuple[str, str]:
    """(batch per GPU, 'path line N') from a train_benchmark script excerpt, checking arch and --use_amp."""
    path, first, _, lines = _meta(name)
    text = "\n".join(lines)
    assert f'--arch "{model}"' in text, (name, model)
    assert ("--use_amp" in text) == (precision == "amp"), name
    assert "horovodrun -np 8" in text, name
    (i, b), = [(i, m.group(1)) for i, ln in enumerate(lines) if (m := re.search(r"--train_batch_size (\d+)", ln))]
    return b, f"{path} line {first + i}"


def _check_code() -> None:
    """The code facts the encoding rests on, read from the excerpts."""
    _, first, _, lines = _meta("dleold_tf2_effnet_runner")
    assert any("hvd.DistributedOptimizer(optimizer, compression=hvd.Compression.fp16)" in ln for ln in lines)
    assert first + next(i for i, ln in enumerate(lines) if "Compression.fp16" in ln) == 174
    assert any("self.model.fit(" in ln for ln in lines)
    _, _, _, lines = _meta("dleold_tf2_effnet_cmdline")
    assert any("Training batch size per GPU." in ln for ln in lines)
    _, _, _, lines = _meta("dleold_tf2_effnet_horovod")
    assert any("Horovod to implement efficient multi-GPU training with NCCL" in ln for ln in lines)


SCHEME_DETAIL = (
    "Horovod over NCCL (README@49e23b4 lines 126-133: 'Our model uses Horovod to implement efficient multi-GPU "
    "training with NCCL', 'Our model also uses Horovod to implement efficient multi-node training'); Keras "
    "model.fit with hvd.DistributedOptimizer(optimizer, compression=hvd.Compression.fp16) (runtime/runner.py "
    "lines 174, 183, 217; excerpts/dleold_tf2_effnet_runner.md): gradients allreduced as backprop produces them, "
    "cast to fp16 for the exchange whatever the precision")


def dleold_rows() -> list[dict]:
    """The four 21.02 training tables' multi-GPU rows, each with its table's GPUs=1 rate."""
    _check_code()
    _, _, _, b4sub = _meta("dleold_tf2_effnet_b4_multinode_sub")
    b4sub_batch = re.search(r"--train_batch_size (\d+)", b4sub[0]).group(1)
    _, _, _, b0sub = _meta("dleold_tf2_effnet_b0_multinode_sub")
    b0sub_batch = re.search(r"--train_batch_size (\d+)", b0sub[0]).group(1)
    out = []
    for name, sysname, model, scripts in TABLES:
        path, first, _, lines = _meta(name)
        assert path == README
        text = "\n".join(lines)
        assert "tensorflow:21.02-tf2-py3" in text
        heading_i = next(i for i, ln in enumerate(lines) if ln.startswith("#"))
        heading = lines[heading_i].lstrip("#").strip()
        t_i = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
        table = md_table(lines[t_i:])
        header, body = [h.strip() for h in table[0]], table[1:]
        body_lines = [first + i for i, ln in enumerate(lines) if ln.startswith("|") and not ln.startswith("|-")][1:]
        fp = "tf32" if sysname == "dgx-a100" else "fp32"
        c_g = header.index("GPUs")
        c_tp = {fp: header.index(f"Throughput - {fp.upper()}"), "amp": header.index("Throughput - mixed precision")}
        gpu = SYSTEMS[sysname]["gpu"]
        if "80GB" in heading:
            gpu = "a100-80gb"
        gpn = SYSTEMS[sysname]["gpus_per_node"]
        (s_no, base), = [(n_, r) for n_, r in zip(body_lines, body) if int(r[c_g]) == 1]
        for no, r in zip(body_lines, body):
            g = int(r[c_g])
            if g == 1:
                continue
            nodes = -(-g // gpn)
            for p in (fp, "amp"):
                batch, bloc = _script_batch(scripts[p], model, p)
                note = [f"batch per GPU from {bloc} (--train_batch_size, 'Training batch size per GPU', "
                        "utils/cmdline_helper.py line 298; the table does not print it)"]
                if g > 8:
                    note.append("runs on more than 8 GPUs assumed at the 8-GPU script's per-GPU batch, as runs.csv "
                                "does for this README's later tables")
                    if p == "amp" and model == "efficientnet-b4" and b4sub_batch != batch:
                        note.append(f"the README's multi-node launch example run_B4_multinode.sub (line 37) passes "
                                    f"--use_amp --train_batch_size {b4sub_batch}, the AMP benchmark script {batch}")
                    if p == "amp" and model == "efficientnet-b0":
                        assert b0sub_batch == batch
                if "V100 32GB" in heading:
                    note.append("the heading says DGX-1 (8x V100 32GB), the sentence under it 'NVIDIA DGX-1 (8x "
                                "V100 16GB)'; the B4 benchmark scripts are the V100-32G ones (README line 444 says "
                                "B4 was run on 'NVIDIA DGX-1 V100 32GB')")
                if "copy.sh" in bloc:
                    note.append("the script's file name ends in ' copy.sh' (README line 442 names "
                                "train_benchmark_8x{A100-80G, V100-16G}.sh; no other script of this precision exists)")
                note.append("--batch_norm syncbn in the script: batch-norm moments are also allreduced in the "
                            "forward pass (model/layers/normalization.py), as in runs.csv's later tables")
                out.append(row(
                    source="NVIDIA DeepLearningExamples TensorFlow2 EfficientNet README, 21.02 tables (Apr 2021)",
                    source_url=_url(path), source_loc=f"{path} line {no}, table under '{heading}' (line "
                    f"{first + heading_i}), {model}, row GPUs={g}, column '{header[c_tp[p]]}'", read_from="table",
                    system=sysname, **{**SYSTEMS[sysname], "gpu": gpu}, framework="TensorFlow 2 (21.02-tf2 NGC)",
                    scheme="horovod-nccl", scheme_detail=SCHEME_DETAIL, model=model, batch_per_gpu=batch,
                    accumulate=1, precision=p, grad_wire="fp16", comm_overlap="during-backward", data="real",
                    gpus=g, nodes=nodes, samples_per_s=num(r[c_tp[p]]), unit="images/s",
                    single_gpu_samples_per_s=num(base[c_tp[p]]), single_gpu_batch=batch,
                    single_gpu_loc=f"same table, line {s_no}, row GPUs=1 (same benchmark script)",
                    note="; ".join(note)))
    return out


def main(out: Path = HERE / "dleold_runs.csv") -> None:
    """Write the rows to ``out`` (dleold_runs.csv)."""
    write_rows(dleold_rows(), out, "o")


if __name__ == "__main__":
    main()
