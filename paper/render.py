"""Render the paper notebooks (jupytext py:percent) to HTML, executing them: paper/_build/<name>.html.

Usage: python paper/render.py [NAME ...] [--results DIR] [--scale SCALE] [--timeout S] [--show-code]
The notebooks read results/ (or $DSGD_RESULTS / --results) and the published numbers in
data/paper_tables/. A notebook whose results are missing says so in its output rather than failing.
Each report shows one scale, named in its title: --scale, else the largest present in
results/<name>/ (paper/_scales.py).
Each report shows text, tables and figures; the code of every cell is folded under a "code" line that
opens it (paper/templates/folded.html.j2), or shown in full with --show-code. Tables and figures get
their presentation from paper/_common.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (HERE, ROOT):  # paper/_scales.py, and the reproduce package it reads the scales from
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
NOTEBOOKS = ("zhang2016", "wen2017", "barkai2020", "hermans2018", "coquelin2021", "validation", "published")


def exporter(show_code: bool = False):
    """The HTML exporter: JupyterLab's template with code cells folded, or shown in full."""
    from nbconvert import HTMLExporter

    if show_code:
        return HTMLExporter()
    return HTMLExporter(template_name="lab", template_file=str(HERE / "templates" / "folded.html.j2"))


def title_with_scale(nb, scale: str | None) -> None:
    """Name the report's scale in its first heading and in the HTML title."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            first, _, rest = cell.source.partition("\n")
            title = first[2:].strip() + (f" — {scale} scale" if scale else "")
            cell.source = f"# {title}" + (f"\n{rest}" if rest else "")
            nb.metadata["title"] = title
            return


def render(name: str, build: Path, results: Path, timeout: int = 600, show_code: bool = False,
           scale: str | None = None) -> Path:
    """Execute paper/<name>.py as a notebook at one scale (`scale`, else the largest in results/<name>/)
    and write build/<name>.html atomically."""
    import jupytext
    import nbformat
    from _scales import ENV, choose_scale
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    src = HERE / f"{name}.py"
    if not src.exists():
        raise FileNotFoundError(f"no notebook {src}")
    nb = jupytext.read(src)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    scale = choose_scale(results / name, scale)
    title_with_scale(nb, scale)
    if scale == "smoke" or (scale is None and "smoke" in result_scales(results, name)):
        label_smoke(nb)
    sockets = None
    old = {k: os.environ.get(k) for k in ("DSGD_RESULTS", ENV)}
    os.environ["DSGD_RESULTS"] = str(results)
    os.environ.pop(ENV, None)
    if scale:
        os.environ[ENV] = scale
    try:
        # the kernel talks over local IPC sockets: nothing on the network, and no warning from ipykernel
        # that TCP goes unencrypted on every run
        # (sockets under an absolute path: the kernel runs in paper/, the client wherever it was started)
        sockets = tempfile.mkdtemp(prefix="dsgd-render-")
        km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        try:
            NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(HERE)}}).execute()
        finally:  # a kernel manager handed in is ours to stop
            if km.has_kernel:
                km.shutdown_kernel(now=False)
    finally:
        if sockets:
            shutil.rmtree(sockets, ignore_errors=True)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    body, _ = exporter(show_code).from_notebook_node(nbformat.from_dict(nb))
    from perfmodel.fileio import atomic_write_text

    out = build / f"{name}.html"
    atomic_write_text(out, body)
    return out


SMOKE_TEXT = ("> **{banner}.** The results below were made with `--scale smoke`: a few steps on synthetic "
              "data, to show that the scripts and this report run end to end. They say nothing about the paper; "
              "text that quotes figures describes the committed small-scale runs, not these.")


def result_scales(results: Path, name: str) -> set[str]:
    """The values of the ``scale`` column in the result tables a notebook reads (results/<name>/*.csv)."""
    import pandas as pd

    scales: set[str] = set()
    for table in sorted((results / name).glob("*.csv")):
        try:
            frame = pd.read_csv(table, usecols=lambda c: c == "scale", dtype=str, keep_default_na=False)
        except (ValueError, OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
            continue
        if "scale" in frame.columns:
            scales.update(frame["scale"])
    return scales


def label_smoke(nb) -> None:
    """Mark a notebook made from smoke-scale results: "smoke:" before its title, a banner below it."""
    import nbformat

    from reproduce.common import SMOKE_BANNER

    at = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            text = cell.source.lstrip()
            cell.source = f"# {SMOKE_BANNER.split(':')[0]}: {text[2:]}"
            at = i + 1
            break
    nb.cells.insert(at, nbformat.v4.new_markdown_cell(SMOKE_TEXT.format(banner=SMOKE_BANNER)))


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def last_line(text: str) -> str:
    """The last non-empty line of an error text, without terminal colour codes (a cell's traceback has them)."""
    lines = [ln for ln in ANSI_ESCAPE.sub("", text).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"notebooks (default all: {', '.join(NOTEBOOKS)})")
    ap.add_argument("--results", default=os.environ.get("DSGD_RESULTS", str(ROOT / "results")))
    ap.add_argument("--build", default=str(HERE / "_build"))
    from reproduce.common import SCALES

    ap.add_argument("--scale", choices=SCALES, default=None,
                    help="the one scale each report shows (default: the largest in its results)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    ap.add_argument("--show-code", action="store_true", help="show every code cell in full (default: folded)")
    args = ap.parse_args(argv)
    names = args.names or [n for n in NOTEBOOKS if (HERE / f"{n}.py").exists()]
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        print(f"render: error: unknown notebook(s) {', '.join(unknown)}; choose from {', '.join(NOTEBOOKS)}",
              file=sys.stderr)
        return 2
    results = Path(args.results).resolve()  # the notebooks run from paper/: make the path absolute
    for name in names:
        try:
            out = render(name, Path(args.build), results, args.timeout, args.show_code, args.scale)
        except Exception as e:  # a failing cell: one line naming the notebook and the error
            print(f"render: error: {name}: {type(e).__name__}: {last_line(str(e))}", file=sys.stderr)
            return 2
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
