"""The committed reading edition (notebooks/) is what a self-study reader should get."""

from __future__ import annotations

import nbformat
import pytest
from conftest import ROOT

from mlmcourse.build.editions import (
    HIDDEN_TESTS_TITLE,
    READER_NOTE,
    WORKING_TITLE,
    reading_edition,
)
from mlmcourse.course.cells import STUDENTS_ONLY_TAG, has_markers, has_tag, is_solution
from mlmcourse.course.headings import check_headings, heading_text, is_heading_only, is_test_cell
from mlmcourse.course.layout import source_notebooks

SOURCES = source_notebooks(ROOT)


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_reading_edition_is_worked_folded_and_speaks_to_readers(source):
    answers_in_source = any(is_solution(cell) for cell in nbformat.read(source, 4).cells)
    edition = nbformat.read(ROOT / "notebooks" / source.name, 4)
    for cell in edition.cells:
        assert not has_tag(cell, STUDENTS_ONLY_TAG), "instructions for students reached readers"
        assert not has_markers(cell.source), "an nbgrader marker reached the reading edition"
        if is_solution(cell):
            assert cell.metadata["jupyter"]["source_hidden"] is True
            assert "NotImplementedError" not in cell.source, "the answer is missing"
    notes = [cell for cell in edition.cells if cell.source == READER_NOTE]
    assert len(notes) == (1 if answers_in_source else 0)
    if notes:
        at = edition.cells.index(notes[0])
        assert heading_text(edition.cells[at - 1]) == WORKING_TITLE, (
            "the reader's note belongs in the closing section, not before the lesson")
        assert not any(cell.source.startswith("## ") for cell in edition.cells[at:]), (
            "the closing section is the last one")


def test_a_notebook_without_the_closing_section_gets_one_for_the_note():
    """An instructor's new notebook with an answer cell but no "Working on this notebook"
    section still gets the reader's note, in a section of its own at the end."""
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n"
                                       "    ### END SOLUTION")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False,
                                   "grade_id": "f", "schema_version": 3}
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"), answer]
    edition = reading_edition(nb)
    assert [cell.source for cell in edition.cells[-2:]] == [f"## {WORKING_TITLE}", READER_NOTE]


def test_students_only_cells_stay_in_the_release():
    tagged = [cell for path in SOURCES for cell in nbformat.read(path, 4).cells
              if has_tag(cell, STUDENTS_ONLY_TAG)]
    assert tagged, "the source has no students-only instructions to test"
    released = {cell.source for path in sorted((ROOT / "release").rglob("*.ipynb"))
                for cell in nbformat.read(path, 4).cells}
    assert all(cell.source in released for cell in tagged)


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_hidden_test_sections_become_one_list(source):
    """No empty graded-test sections for readers: each run of them is one list saying what the
    hidden tests check, one line per test with its label, points and one-line docstring."""
    original = nbformat.read(source, 4)
    headings = check_headings(original)
    edition = reading_edition(nbformat.read(source, 4))
    assert not any(is_test_cell(cell) for cell in edition.cells), "a graded test stub is left"
    shown = {heading_text(cell) for cell in edition.cells if is_heading_only(cell)}
    for heading in headings.values():
        assert not any(text.startswith(heading.title) for text in shown if text), (
            f"the empty section {heading.title!r} is still in the reading edition")
    lists = [cell.source for cell in edition.cells
             if cell.source.startswith(f"**{HIDDEN_TESTS_TITLE}**")]
    if not headings:
        assert not lists, "a notebook without hidden tests needs no list of them"
        return
    items = [line for text in lists for line in text.splitlines() if line.startswith("- **")]
    assert len(items) == len(headings), "one line per hidden test"
    for item, heading in zip(items, headings.values()):
        points = f"{heading.points:g} point" + ("" if heading.points == 1 else "s")
        assert item.startswith(f"- **{heading.label}** ({points}): "), item
        words = heading.what.split()[:3]
        assert all(word.replace("_", "\\_") in item for word in words), (item, heading.what)
    total = sum(h.points for h in headings.values())
    assert total == sum(cells_points(original)), "the lists should cover every graded point"


def cells_points(nb):
    return [float(cell.metadata.nbgrader.points) for cell in nb.cells if is_test_cell(cell)]


def test_the_list_keeps_part_headings_and_escapes_markdown():
    source = next(p for p in SOURCES if p.stem == "01_corruption")
    edition = reading_edition(nbformat.read(source, 4))
    at = next(i for i, cell in enumerate(edition.cells)
              if cell.source.startswith(f"**{HIDDEN_TESTS_TITLE}**"))
    first = edition.cells[at].source
    assert edition.cells[at - 1].source.startswith("### Part A · The three branches"), (
        "the part's own heading stays right above its list")
    part_d = next(cell.source for cell in edition.cells if "**D1**" in cell.source)
    assert "*Part D · Edge cases and a large random comparison*" in part_d, (
        "a part heading inside a run of test sections becomes a sub-heading of the list")
    assert "`make check`" in first, "the first list says how to run the hidden tests"
    assert "mask\\_token\\_id" in first, "a docstring's underscores must not turn into emphasis"
