"""What each graded test cell is called and says: the markdown heading above it
("#### B1 · Labels: ... (2 points)") and its one-line docstring.

The feedback names its checks by these headings (not by grade ids) and the reading edition lists
them in place of the test cells; both read them here, so a check has one name everywhere.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import nbformat

from mlmcourse.course.cells import grade_id, is_graded, is_solution, points, without_hidden_tests

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_POINTS = re.compile(r"\s*\(\s*\d+(\.\d+)?\s+points?\s*\)\s*$")


@dataclass(frozen=True)
class CheckHeading:
    grade_id: str
    title: str  # the heading without its points, markdown kept ("B3 · A custom `ignore_index`")
    points: float
    what: str  # the test cell's one-line docstring

    @property
    def label(self) -> str:
        """The short label before ' · ' ('B3'), else the whole title."""
        label, dot, _ = self.title.partition(" · ")
        return label if dot else self.title


def heading_text(cell: nbformat.NotebookNode) -> str | None:
    """The text of a markdown cell's last heading line (None when it has no heading)."""
    if cell.get("cell_type") != "markdown":
        return None
    found = None
    for line in cell.source.splitlines():
        match = _HEADING.match(line)
        if match:
            found = match.group(1)
    return found


def is_heading_only(cell: nbformat.NotebookNode) -> bool:
    """A markdown cell that is one heading line and nothing else."""
    lines = [line for line in cell.get("source", "").splitlines() if line.strip()]
    if cell.get("cell_type") != "markdown" or len(lines) != 1:
        return False
    return bool(_HEADING.match(lines[0]))


def without_points(title: str) -> str:
    return _POINTS.sub("", title).strip()


def is_test_cell(cell: nbformat.NotebookNode) -> bool:
    return is_graded(cell) and not is_solution(cell)


def what_it_checks(source: str) -> str:
    """The one-line docstring a test cell opens with (its visible part), else ''."""
    try:
        tree = ast.parse(without_hidden_tests(source))
    except SyntaxError:
        return ""
    doc = ast.get_docstring(tree, clean=True) if tree.body else None
    return " ".join((doc or "").split())


def check_headings(nb: nbformat.NotebookNode) -> dict[str, CheckHeading]:
    """grade_id -> the check's heading, for every graded test cell. A cell with no heading
    above it is called by its grade_id."""
    found, heading = {}, None
    for cell in nb.cells:
        text = heading_text(cell)
        if text is not None:
            heading = text
        if is_test_cell(cell) and grade_id(cell):
            title = without_points(heading) if heading else grade_id(cell)
            found[grade_id(cell)] = CheckHeading(grade_id(cell), title, points(cell),
                                                 what_it_checks(cell.source))
            heading = None  # the next check needs a heading of its own
    return found
