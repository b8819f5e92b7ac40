"""The committed reading edition (notebooks/) is what a self-study reader should get."""

from __future__ import annotations

import nbformat
import pytest
from conftest import ROOT

from mlmcourse.build.editions import READER_NOTE
from mlmcourse.course.cells import STUDENTS_ONLY_TAG, has_markers, has_tag, is_solution
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
        assert edition.cells.index(notes[0]) == 1, "the reader's note belongs under the title"


def test_students_only_cells_stay_in_the_release():
    tagged = [cell for path in SOURCES for cell in nbformat.read(path, 4).cells
              if has_tag(cell, STUDENTS_ONLY_TAG)]
    assert tagged, "the source has no students-only instructions to test"
    released = {cell.source for path in sorted((ROOT / "release").rglob("*.ipynb"))
                for cell in nbformat.read(path, 4).cells}
    assert all(cell.source in released for cell in tagged)
