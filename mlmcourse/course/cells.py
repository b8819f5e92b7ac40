"""Reading nbgrader cells: their ids, kinds and the marker regions inside them."""

from __future__ import annotations

import re

import nbformat

_SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
_HIDDEN_BEGIN = re.compile(r"^\s*### (BEGIN) HIDDEN TESTS\s*$")
_HIDDEN_END = re.compile(r"^\s*### (END) HIDDEN TESTS\s*$")


SETUP_GRADE_ID = "setup"  # the imports cell that answer cells may rely on (and loaders run)
TIMING_TAG = "timing"  # cells whose printed numbers change from run to run
STUDENTS_ONLY_TAG = "students-only"  # instructions for the graded exercise; not for readers


def is_solution_marker(line: str) -> bool:
    return bool(_SOLUTION_MARKER.match(line))


def nbgrader_meta(cell: nbformat.NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def has_tag(cell: nbformat.NotebookNode, tag: str) -> bool:
    return tag in cell.get("metadata", {}).get("tags", [])


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_solution(cell: nbformat.NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_graded(cell: nbformat.NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("grade"))


def points(cell: nbformat.NotebookNode) -> float:
    return float(nbgrader_meta(cell).get("points", 0)) if is_graded(cell) else 0.0


def total_points(nb: nbformat.NotebookNode) -> float:
    return sum(points(cell) for cell in nb.cells)


def cells_by_grade_id(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {grade_id(cell): cell for cell in nb.cells if grade_id(cell)}


def without_solution_markers(source: str) -> str:
    """The reference solution as a student would have typed it: marker lines dropped."""
    return "\n".join(line for line in source.split("\n") if not is_solution_marker(line))


def without_hidden_tests(source: str) -> str:
    """The test cell as the release shows it: hidden regions (and their markers) dropped."""
    kept, hidden = [], False
    for line in source.split("\n"):
        if _HIDDEN_BEGIN.match(line):
            hidden = True
        elif _HIDDEN_END.match(line):
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept).rstrip()


def has_markers(text: str) -> bool:
    """True when nbgrader's solution or hidden-test markers appear anywhere in `text`."""
    return bool(re.search(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", text))
