"""Generator of data/published/dlenew_runs.csv: `python data/published/build_dlenew.py`.

A family not in runs.csv: NVIDIA DeepLearningExamples' PyTorch BERT-large pre-training tables that the
README printed before (or beside) the ones runs.csv reads (runs.csv has the pytorch:21.11 DGX A100 80GB
single- and multi-node tables @729963d). Transcribed here, all from excerpts/dlenew_*.md:

* @8b249ef (Sep 2019, pytorch:19.07-py3): the multi-node tables "Pre-training on multiple NVIDIA DGX-1 With
  16G" (1, 4, 16 nodes of 8) and "... DGX-2H With 32G" (1, 4, 16, 64 nodes of 16), FP16 cells. Accumulation
  steps from the same README's "Pre-training loss results" table (one row per node count; phase 1 =
  sequence length 128, phase 2 = 512, run.sub PHASE1/PHASE2), which the README says are the variables of
  the performance results ("Variables to re-run the Training performance results are available in the
  configurations.yml file"). The single-GPU rate: the 1-GPU row of the same README's single-node table
  (same container, same batch): DGX-1 16G, and DGX-2 for the DGX-2H rows (said per row).
* @78ec680 (the last commit with them, Aug 2021; first printed Jul 2020), pytorch:20.06-py3: the single-node
  pre-training tables on DGX A100 40GB, DGX-2, DGX-1 32G and DGX-1 16G. Their 'Batch size / GPU' column is
  the accumulated batch per GPU (run_pretraining.py divides train_batch_size by the accumulation steps,
  line 327); batch_per_gpu = printed / accumulation steps (all divide exactly).
* @729963d (the commit runs.csv reads), pytorch:21.11-py3: "Pre-training NVIDIA DGX-1 With 32G" (not in
  runs.csv), same reading of 'Batch size / GPU'.

Not transcribed: the FP32 cells of the 64-node DGX-2H rows (run.sub always passes --fp16, and in the 19.07
code take_optimizer_step reads amp's loss scaler, so how an FP32 run exchanged is not known), the 4-16 GPU
rows of the 19.07 single-node tables (their accumulation steps are printed nowhere), the 19.07 multi-node
tables as reprinted unchanged in later commits (the same numbers), SQuAD tables.

Columns and encodings as build.bert_rows for the PyTorch BERT README: scheme nccl-allreduce,
after-backward, grad_wire fp16 for mixed precision and fp32 otherwise.
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
_col, _pair = _build._col, _build._pair  # a table's column by its heading words; 'a and b' -> (a, b)

README = "PyTorch/LanguageModeling/BERT/README.md"


def _meta(name: str):
    """(sha, path, first line number, lines) of an excerpt."""
    sha, path, first, _, lines = _build.dle_excerpt(name)
    return sha, path, first, lines


def _url(sha: str, path: str) -> str:
    return _build.dle_url(path, sha)


def _tables(lines: list[str], first: int):
    """[(heading line no, heading, header, [(line no, cells)])] for every '#' heading followed by a table."""
    out, heading = [], None
    for i, ln in enumerate(lines):
        no = first + i
        if ln.startswith("#"):
            heading = (no, ln.lstrip("#").strip())
        elif ln.startswith("|") and heading:
            cells = md_table([ln])
            if not cells:
                continue
            if not out or out[-1][0] != heading[0]:
                out.append((heading[0], heading[1], [c.strip() for c in cells[0]], []))
            else:
                out[-1][3].append((no, cells[0]))
    return out


def _container(lines: list[str]) -> str:
    found = {m for ln in lines for m in re.findall(r"pytorch:(\d\d\.\d\d)-py3", ln)}
    assert len(found) == 1, found
    return found.pop()


# ------------------------------------------------------------------------------- scheme (per code version)
SCHEME_1907 = (
    "torch.distributed NCCL allreduce of one flat fp16 gradient buffer after the last accumulation step, no "
    "DDP (run_pretraining.py@8b249ef lines 344-345: DDP only without --allreduce_post_accumulation; lines "
    "355-372: allreduce_dtype float16 with --allreduce_post_accumulation_fp16, torch.distributed.all_reduce"
    "(flat_raw); excerpts/dlenew_pt_bert_1907_allreduce.md); run.sub lines 61-72 pass --fp16 "
    "--allreduce_post_accumulation --allreduce_post_accumulation_fp16 --gradient_accumulation_steps="
    "${GRADIENT_STEPS} (excerpts/dlenew_pt_bert_1907_runsub.md)")
SCHEME_2006 = (
    "torch.distributed NCCL allreduce of the flat gradient after the last accumulation step's backward, no "
    "DDP (run_pretraining.py@78ec680 lines 420-421, 434-451; excerpts/dlenew_pt_bert_2006_code.md); "
    "scripts/run_pretraining.sh defaults allreduce_post_accumulation and allreduce_post_accumulation_fp16 "
    "'true' (lines 30-31, 89-97)")
SCHEME_2111 = (
    "DDP with one bucket as large as GPU memory (bucket_cap_mb = total_memory) and no_sync on the "
    "accumulation steps, so one NCCL allreduce after the last accumulation step's backward; fp16 model and "
    "gradients with --allreduce_post_accumulation_fp16 (run_pretraining.py@729963d lines 414-417, 451-457, "
    "679-681; excerpts/dlenew_pt_bert_2111_code.md, dlenew_pt_bert_2111_nosync.md); the same encoding as "
    "runs.csv's rows of this README's DGX A100 tables")
WIRE_NOTE_FP32 = ("grad_wire fp32 as runs.csv encodes this README's FP32/TF32 rows; the script's default "
                  "allreduce_post_accumulation_fp16='true' is passed whatever the precision (run_pretraining.sh "
                  "lines 31, 94-97), and the README does not print the FP32 command")
WIRE_NOTE_FP32_HEAD = ("grad_wire fp32: without --fp16 the model is not halved (run_pretraining.py@729963d lines "
                       "414-417: 'If allreduce_post_accumulation_fp16 is not set, Native AMP Autocast is used along "
                       "with FP32 gradient accumulation and all-reduce'; model.half() only with --fp16)")


def _source(sha: str, container: str) -> str:
    if sha == _build.DLE_COMMIT:
        return "NVIDIA DeepLearningExamples PyTorch BERT README (pre-training, BERT-large)"
    return (f"NVIDIA DeepLearningExamples PyTorch BERT README (pre-training, BERT-large), pytorch:{container} "
            f"tables @{sha[:7]}")


# ------------------------------------------------------------------------- 19.07 multi-node (8b249ef)
MULTI_1907 = [  # excerpt, system, 'DGX System' prefix in the accumulation table
    ("dlenew_pt_bert_1907_dgx1_16g", "dgx1-v100", "NVIDIA DGX-1 With 16G"),
    ("dlenew_pt_bert_1907_dgx2", "dgx2", "NVIDIA DGX-2H With 32G"),
]


def _accumulation_1907() -> dict:
    """{(system label, nodes): {(phase, 'fp16'|'fp32'): (accumulated batch or None, steps)}}."""
    sha, path, first, lines = _meta("dlenew_pt_bert_1907_accumulation")
    (_, _, header, body), = _tables(lines, first)
    c_sys, c_acc_b = _col(header, "DGX System"), _col(header, "Accumulated Batch")
    c_steps = _col(header, "Accumulation steps")
    assert "Phase 1 and Phase 2" in header[c_acc_b] and "Phase 1 and Phase 2" in header[c_steps], header
    out = {}
    for no, r in body:
        m = re.fullmatch(r"(\d+) x (.+)", r[c_sys].strip())
        nodes, label = int(m.group(1)), m.group(2)
        b1, b2 = _pair(r[c_acc_b])
        steps = r[c_steps].strip()
        mm = re.fullmatch(r"\((\d+) and (\d+)\)FP16 and \((\d+) and (\d+)\)FP32", steps)
        d = {}
        if mm:  # '(1 and 4)FP16 and (2 and 8)FP32': the accumulated batch column is then the FP16 one
            d[(1, "fp16")], d[(2, "fp16")] = (b1, mm.group(1)), (b2, mm.group(2))
            d[(1, "fp32")], d[(2, "fp32")] = (None, mm.group(3)), (None, mm.group(4))
        else:  # FP16 only (run.sub: --fp16)
            s1, s2 = _pair(steps)
            d[(1, "fp16")], d[(2, "fp16")] = (b1, s1), (b2, s2)
        out[(label, nodes)] = (no, d)
    return out


def multi_1907_rows() -> list[dict]:
    """The 19.07 multi-node tables' FP16 cells (DGX-1 16G, DGX-2H), with the 19.07 one-node table's 1-GPU rates."""
    acc = _accumulation_1907()
    _, _, acc_first, _ = _meta("dlenew_pt_bert_1907_accumulation")
    rows = []
    for name, sysname, label in MULTI_1907:
        sha, path, first, lines = _meta(name)
        assert path == README
        container = _container(lines)
        tables = _tables(lines, first)
        (s_hline, s_heading, s_header, s_body), = [t for t in tables if not t[2][0].startswith("Nodes")]
        (hline, heading, header, body), = [t for t in tables if t[2][0].startswith("Nodes")]
        gpn = SYSTEMS[sysname]["gpus_per_node"]
        c_n, c_g = _col(header, "Nodes"), _col(header, "GPUs")
        c_b = {"fp32": _col(header, "Batch size / GPU (FP32)"), "amp": _col(header, "Batch size / GPU (FP16)")}
        c_seq = _col(header, "Sequence length")
        c_tp = {"fp32": _col(header, "Throughput - FP32"), "amp": _col(header, "Throughput - mixed precision")}
        s_b = {"fp32": _col(s_header, "Batch size / GPU (FP32)"), "amp": _col(s_header, "Batch size / GPU (FP16)")}
        s_seq = _col(s_header, "Sequence length")
        s_tp = {"fp32": _col(s_header, "Throughput - FP32"), "amp": _col(s_header, "Throughput - mixed precision")}
        for no, r in body:
            nodes, g = int(r[c_n]), int(r[c_g])
            assert g == gpn, (g, gpn)
            seq = r[c_seq].strip()
            phase = {"128": 1, "512": 2}[seq]
            acc_line, acc_d = acc[(label, nodes)]
            for p in ("amp", "fp32"):
                v = num(r[c_tp[p]])
                if v is None:
                    continue  # N/A
                if p == "fp32":
                    continue  # the 64-node FP32 cells: exchange path not known (module docstring)
                batch = r[c_b[p]].strip()
                acc_b, steps = acc_d[(phase, "fp16")]
                note = [f"container pytorch:{container}; accumulation steps {steps} from the same README's "
                        f"'Pre-training loss results' table (line {acc_line}, phase {phase} = sequence length "
                        f"{seq}), which the README says holds the variables of the performance results "
                        "(configurations.yml)"]
                if int(acc_b) != int(batch) * int(steps):
                    note.append(f"that table prints accumulated batch {acc_b} per GPU for {steps} steps of batch "
                                f"{batch} ({int(batch) * int(steps)}); the steps are used")
                srow_no, srow = next((n_, x) for n_, x in s_body if x[0].strip() == "1" and x[s_seq].strip() == seq
                                     and x[s_b[p]].strip() == batch)
                if sysname == "dgx2":
                    note.append("multi-node rows on DGX-2H (450 W V100; the README: 'Multi-node performance "
                                "numbers below are on DGX-2H whereas the single node performance numbers above "
                                "are on DGX-2'); the single-GPU rate is from the DGX-2 single-node table")
                if nodes == 1:
                    note.append("one node of the multi-node table (a run of its own, not the single-node "
                                "table's row)")
                rows.append(row(
                    source=_source(sha, container), source_url=_url(sha, path),
                    source_loc=f"{path} line {no}, table under '{heading}' (line {hline}), row Nodes={nodes}, "
                    f"sequence length {seq}, column '{header[c_tp[p]]}'", read_from="table", system=sysname,
                    **SYSTEMS[sysname], framework=f"PyTorch ({container} NGC)", scheme="nccl-allreduce",
                    scheme_detail=SCHEME_1907, model="bert-large", batch_per_gpu=batch, accumulate=steps,
                    precision=p, grad_wire="fp16", comm_overlap="after-backward", data="real",
                    gpus=nodes * gpn, nodes=nodes, samples_per_s=v, unit=f"sequences/s (sequence length {seq})",
                    single_gpu_samples_per_s=num(srow[s_tp[p]]), single_gpu_batch=batch,
                    single_gpu_loc=f"{path} line {srow_no}, table under '{s_heading}' (line {s_hline}), row "
                    f"GPUs=1, sequence length {seq}", note="; ".join(note)))
    return rows


# ------------------------------------------------------ single-node tables, accumulated batch column
SINGLE = [  # excerpt, system, scheme detail
    ("dlenew_pt_bert_2006_dgxa100", "dgx-a100", SCHEME_2006),
    ("dlenew_pt_bert_2006_dgx2", "dgx2", SCHEME_2006),
    ("dlenew_pt_bert_2006_dgx1_32g", "dgx1-v100", SCHEME_2006),
    ("dlenew_pt_bert_2006_dgx1_16g", "dgx1-v100", SCHEME_2006),
    ("dlenew_pt_bert_2111_dgx1_32g", "dgx1-v100", SCHEME_2111),
]


def single_rows() -> list[dict]:
    """The 20.06 one-node tables and 729963d's DGX-1 32G table, each row with its table's 1-GPU rate."""
    rows = []
    for name, sysname, detail in SINGLE:
        sha, path, first, lines = _meta(name)
        assert path == README
        text = "\n".join(lines)
        if sha == _build.DLE_COMMIT:
            assert "pytorch:21.11-py3" in text
        container = _container(lines)
        (hline, heading, header, body), = _tables(lines, first)
        fp = "tf32" if sysname == "dgx-a100" else "fp32"
        c_b = _col(header, "Batch size / GPU")
        c_acc = _col(header, "Accumulation steps")
        c_seq = _col(header, "Sequence length")
        c_tp = {fp: _col(header, f"Throughput - {fp}"), "amp": _col(header, "Throughput - mixed precision")}
        order = re.search(r"\((\w+) and (\w+)\)", header[c_b]).groups()
        assert order == re.search(r"\((\w+) and (\w+)\)", header[c_acc]).groups() == (fp.upper(), "FP16"), header
        gpu = SYSTEMS[sysname]["gpu"]
        if "80GB" in heading or "80GB" in text:
            gpu = "a100-80gb"
        for no, r in body:
            g = int(r[0])
            if g == 1:
                continue
            seq = r[c_seq].strip()
            s_no, srow = next((n_, x) for n_, x in body if int(x[0]) == 1 and x[c_seq].strip() == seq)
            for p, k in ((fp, 0), ("amp", 1)):
                acc_b, steps = _pair(r[c_b])[k], _pair(r[c_acc])[k]
                assert int(acc_b) % int(steps) == 0, (acc_b, steps)
                batch = str(int(acc_b) // int(steps))
                s_acc_b, s_steps = _pair(srow[c_b])[k], _pair(srow[c_acc])[k]
                s_batch = str(int(s_acc_b) // int(s_steps))
                head = sha == _build.DLE_COMMIT
                note = [f"the table's 'Batch size / GPU' prints {acc_b}, the accumulated batch per GPU "
                        f"(train_batch_size, divided by gradient_accumulation_steps in run_pretraining.py, line "
                        + ("363; excerpts/dlenew_pt_bert_2111_batch.md" if head else
                           "327; excerpts/dlenew_pt_bert_2006_batch.md")
                        + f"); batch_per_gpu = {acc_b} / {steps} steps"]
                if s_batch != batch:
                    note.append(f"single-GPU rate measured at batch {s_batch}, this row at batch {batch}")
                if p != "amp":
                    note.append(WIRE_NOTE_FP32_HEAD if head else WIRE_NOTE_FP32)
                rows.append(row(
                    source=_source(sha, container), source_url=_url(sha, path),
                    source_loc=f"{path} line {no}, table under '{heading}' (line {hline}), row GPUs={g}, "
                    f"sequence length {seq}, column '{header[c_tp[p]]}'", read_from="table", system=sysname,
                    **{**SYSTEMS[sysname], "gpu": gpu}, framework=f"PyTorch ({container} NGC)",
                    scheme="nccl-allreduce", scheme_detail=detail, model="bert-large", batch_per_gpu=batch,
                    accumulate=steps, precision=p, grad_wire="fp16" if p == "amp" else "fp32",
                    comm_overlap="after-backward", data="real", gpus=g, nodes=1, samples_per_s=num(r[c_tp[p]]),
                    unit=f"sequences/s (sequence length {seq})", single_gpu_samples_per_s=num(srow[c_tp[p]]),
                    single_gpu_batch=s_batch, single_gpu_loc=f"same table, line {s_no}, row GPUs=1, sequence "
                    f"length {seq}", note="; ".join(note)))
    return rows


def main(out: Path = HERE / "dlenew_runs.csv") -> None:
    """Write the rows to ``out`` (dlenew_runs.csv)."""
    write_rows(multi_1907_rows() + single_rows(), out, "n")


if __name__ == "__main__":
    main()
