"""docs/: every "docs/<page>.md section N" cited in the code names a section that exists there, and no
code cites the outside ALGORITHMS.md any more."""

import re
from pathlib import Path

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
