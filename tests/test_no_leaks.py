"""No solution, hidden test or nbgrader marker reaches a student or the importable package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

from mlmcourse import nbclean
from mlmcourse.cells import has_markers
from mlmcourse.course import ASSIGNMENT, source_notebooks

MIN_LENGTH = 16  # shorter lines (`return x`, `import torch`) are too common to prove a leak


def region_lines(source: str, kind: str) -> tuple[set[str], set[str]]:
    """Lines inside `### BEGIN <kind>` regions, and the lines outside them."""
    inside, outside, depth = set(), set(), False
    for line in source.split("\n"):
        stripped = line.strip()
        if re.fullmatch(rf"### BEGIN {kind}", stripped):
            depth = True
        elif re.fullmatch(rf"### END {kind}", stripped):
            depth = False
        elif stripped:
            (inside if depth else outside).add(stripped)
    return inside, outside


def secret_lines() -> dict[str, set[str]]:
    """Per notebook: solution and hidden-test lines that appear nowhere else in the source."""
    secrets = {}
    for path in source_notebooks(ROOT):
        nb = nbclean.read(path)
        inside, outside = set(), set()
        for cell in nb.cells:
            for kind in ("SOLUTION", "HIDDEN TESTS"):
                secret, public = region_lines(cell.source, kind)
                inside |= secret
                outside |= public
        secrets[path.stem] = {
            line for line in inside - outside
            if len(line) >= MIN_LENGTH and not line.startswith("#")
        }
    return secrets


def student_facing_files() -> list[Path]:
    files = sorted((ROOT / "release").rglob("*.ipynb"))
    files += sorted(p for p in (ROOT / "mlmcourse").rglob("*.py"))
    return files


def test_there_are_secrets_to_protect():
    secrets = secret_lines()
    assert secrets and all(secrets.values()), "every notebook should have solutions and tests"


@pytest.mark.parametrize("path", student_facing_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_solution_or_hidden_test_line_leaks(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = nbclean.read(path).cells
        lines = {line.strip() for cell in cells for line in cell.source.split("\n")}
    else:
        lines = {line.strip() for line in text.split("\n")}
    leaked = sorted({line for secret in secret_lines().values() for line in secret} & lines)
    assert not leaked, f"{path.relative_to(ROOT)} shows solution/hidden-test lines: {leaked[:5]}"
    assert not has_markers(text), f"{path.relative_to(ROOT)} carries nbgrader markers"


def test_release_has_every_notebook_and_no_hidden_tests():
    release = {p.name for p in (ROOT / "release" / ASSIGNMENT).glob("*.ipynb")}
    assert release == {p.name for p in source_notebooks(ROOT)}
