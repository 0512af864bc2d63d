"""docs/ and README.md: every "docs/<page>.md section N" cited in the code names a section that exists
there, no code cites the outside ALGORITHMS.md any more; the README is at most 200 lines, its links
into docs/ resolve, and every command of its quickstart runs: the cheap ones are run here and their
output compared with the README's, the expensive ones (a profile, an MPI training run) are checked
against the files they recorded (tests/data/quickstart/) and against their --help."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE = ("perfmodel", "trainers", "reproduce", "paper", "benchmarks", "tests")
CITE = re.compile(r"docs/(\w+)\.md,? sections? ([\d.]+(?:(?:,| and|-| or) ?[\d.]+)*)")


def _sections(page: str) -> set[str]:
    heads = re.findall(r"^#{2,3} ([\d.]+)\.? ", (ROOT / "docs" / f"{page}.md").read_text(), flags=re.M)
    return {h.rstrip(".") for h in heads}


def _numbers(text: str) -> list[str]:
    out = []
    for part in re.split(r",| and | or ", text):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-")
            out += [str(i) for i in range(int(lo), int(hi) + 1)]
        elif part:
            out.append(part.rstrip("."))
    return out


def _sources():
    for folder in CODE:
        for f in (ROOT / folder).rglob("*.py"):
            yield f, f.read_text(encoding="utf-8")
    yield ROOT / "README.md", (ROOT / "README.md").read_text(encoding="utf-8")


def test_pages_have_numbered_sections():
    assert {"1", "2", "3", "3.3", "4", "5", "5.3", "5.4", "6"} <= _sections("model")
    assert {"1", "2", "3", "4", "5"} <= _sections("algorithms")


def test_every_citation_names_an_existing_section():
    found = 0
    for f, text in _sources():
        for page, nums in CITE.findall(text):
            have = _sections(page)
            for n in _numbers(nums):
                found += 1
                assert n in have, f"{f.relative_to(ROOT)} cites docs/{page}.md section {n}, which is not there"
    assert found >= 10  # the model's and the trainers' module docstrings cite these pages


def test_no_code_cites_the_outside_algorithms_file():
    for folder in ("perfmodel", "trainers", "reproduce"):
        for f in (ROOT / folder).rglob("*.py"):
            for line in f.read_text(encoding="utf-8").splitlines():
                if "ALGORITHMS.md" in line:
                    assert "docs/" in line, f"{f.relative_to(ROOT)}: {line.strip()}"


# -- README.md ----------------------------------------------------------------------------------------

README = ROOT / "README.md"
QUICKSTART_FILES = ROOT / "tests" / "data" / "quickstart"  # profile.json and run.jsonl the README's commands made
#: how each program of the quickstart is started from this checkout (no installed console script needed)
PROGRAMS = {"perfmodel": [sys.executable, "-m", "perfmodel.cli"],
            "trainers": [sys.executable, "-m", "trainers"],
            "dsgd-reproduce": [sys.executable, "-m", "reproduce"],
            "python": [sys.executable]}
#: commands too slow for the default run: (how the README's command starts, the recorded file it made)
EXPENSIVE = {("perfmodel", "profile"): "profile.json", ("trainers", "run"): "run.jsonl"}


def _quickstart() -> list[tuple[str, list[str]]]:
    """(command, recorded output lines) for each `$ ` line of the ```console blocks under ## Quickstart."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif out:
                out[-1][1].append(line)
    return out


def _argv(command: str) -> tuple[list[str], list[str]]:
    """(the argv that starts it from this checkout, its words after the launcher) of a README command."""
    words = shlex.split(command)
    if words[0] == "mpiexec":  # the ranks' own command: what follows mpiexec's options
        words = words[next(i for i, w in enumerate(words) if w in PROGRAMS):]
    return PROGRAMS[words[0]] + words[1:], words


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def _assert_printed(recorded: list[str], printed: str, command: str) -> None:
    """Each recorded line, in order, is a line of the output; `...` stands for lines left out, and a
    recorded line ending in `...` is a line's beginning."""
    lines = [ln.rstrip() for ln in printed.splitlines()]
    i = 0
    for want in (w.rstrip() for w in recorded):
        if want in ("", "..."):
            continue
        prefix = want.endswith("...")
        want = want[:-3].rstrip() if prefix else want
        while i < len(lines) and not (lines[i].startswith(want) if prefix else lines[i] == want):
            i += 1
        assert i < len(lines), f"README's output line {want!r} of `{command}` is not in what it prints:\n{printed}"
        i += 1


def test_readme_is_at_most_200_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 200, f"README.md has {n} lines; move detail into docs/"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_links_into_docs_resolve():
    links = re.findall(r"\]\((docs/[\w.]+\.md)(?:#([\w-]+))?\)", README.read_text(encoding="utf-8"))
    assert {p for p, _ in links} >= {"docs/cli.md", "docs/validation.md", "docs/reproductions.md",
                                      "docs/model.md", "docs/algorithms.md"}
    for page, anchor in links:
        text = (ROOT / page).read_text(encoding="utf-8")
        if anchor:
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
            assert anchor in slugs, f"README links {page}#{anchor}, which has no such heading"


def test_quickstart_has_every_step():
    commands = [c for c, _ in _quickstart()]
    for start in ("perfmodel predict", "perfmodel profile", "perfmodel predict --profile", "mpiexec ",
                  "perfmodel validate", "dsgd-reproduce "):
        assert any(c.startswith(start) for c in commands), f"no `{start}...` in the README's quickstart"


def test_quickstart_cheap_commands_print_what_the_readme_shows(tmp_path):
    """Run in a folder holding the recorded profile and run log, as the README's commands left them."""
    for name in EXPENSIVE.values():
        (tmp_path / name).write_bytes((QUICKSTART_FILES / name).read_bytes())
    ran = 0
    for command, recorded in _quickstart():
        argv, words = _argv(command)
        if tuple(words[:2]) in EXPENSIVE:
            continue
        res = subprocess.run(argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, f"`{command}` failed:\n{res.stderr}"
        _assert_printed(recorded, res.stdout, command)
        ran += 1
    assert ran >= 5


def test_quickstart_expensive_commands_match_their_recorded_files():
    """The profile and the run log in tests/data/quickstart were made by the README's commands (each
    file records its command), the run printed the accuracy its log holds, and every option the
    README gives is one the command takes."""
    import json

    checked = 0
    for command, recorded in _quickstart():
        argv, words = _argv(command)
        name = EXPENSIVE.get(tuple(words[:2]))
        if name is None:
            continue
        if name.endswith(".json"):
            made_by = json.loads((QUICKSTART_FILES / name).read_text())["command"]
        else:
            lines = [json.loads(ln) for ln in (QUICKSTART_FILES / name).read_text().splitlines()]
            made_by = lines[0]["command"]
            last_eval = [ln for ln in lines if ln["type"] == "eval"][-1]
            summary = next(ln for ln in lines if ln["type"] == "summary")
            assert recorded == [f"step {summary['steps_run']}/{summary['total_steps']}: test loss "
                                f"{last_eval['test_loss']:.4f}, accuracy {100 * last_eval['test_acc']:.2f}%"]
        made = shlex.split(made_by)
        assert Path(made[0]).name == words[0] and made[1:] == words[1:], (command, made_by)
        helptext = subprocess.run(argv[:len(argv) - len(words) + 2] + ["--help"], env=_env(),
                                  capture_output=True, text=True, timeout=120)
        assert helptext.returncode == 0, helptext.stderr
        for opt in (w.split("=")[0] for w in words if w.startswith("--")):
            assert re.search(rf"{re.escape(opt)}\b", helptext.stdout), f"`{command}`: {opt} is not an option"
        checked += 1
    assert checked == len(EXPENSIVE)


def _doc_commands(text: str, program: str) -> list[str]:
    """Each `<program> ...` command of a page's code blocks and inline code, continuation lines joined;
    what follows ` -- ` (a command run by `perfmodel emulate`) is a command of its own."""
    text = re.sub(r"\\\n\s*", " ", text)
    found = re.findall(rf"(?:^ {{4,}}|`)({re.escape(program)} [a-z-]+[^`\n]*)", text, flags=re.M)
    out = []
    for cmd in found:
        out += [part.strip() for part in cmd.split(" -- ")]
    return [c for c in out if c.startswith(program + " ")]


def test_every_perfmodel_option_in_the_docs_exists():
    """Every `--option` a perfmodel command in README.md or docs/*.md gives is an option of its verb."""
    import argparse

    from perfmodel.cli import build_parser

    verbs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    checked = 0
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for cmd in _doc_commands(page.read_text(encoding="utf-8"), "perfmodel"):
            verb = cmd.split()[1]
            if not re.fullmatch(r"[a-z][a-z-]*", verb):  # `perfmodel --version`, `perfmodel predict|presets`
                continue
            assert verb in verbs, f"{page.name}: `{cmd}`: perfmodel has no verb {verb}"
            for opt in re.findall(r"(?<![\w-])--[a-z][\w-]*", cmd.split("#")[0]):
                assert opt in verbs[verb]._option_string_actions, f"{page.name}: `{cmd}`: no option {opt}"
                checked += 1
    assert checked >= 50


def test_readme_setup_commands_are_the_ones_ci_runs():
    """.ci/run runs the README's two set-up commands exactly; both must stay in the README's Set-up."""
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.startswith("pip install")]
    setup = README.read_text(encoding="utf-8").split("\n## Set-up", 1)[1].split("\n## ", 1)[0]
    shown = [ln.strip() for ln in setup.splitlines() if ln.startswith("    ")]
    assert len(ci) == 2 and shown == ci, (ci, shown)
