"""source/ is clean and follows the course's nbgrader conventions."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, is_graded, is_solution, nbgrader_meta
from mlmcourse.course.layout import source_notebooks

NOTEBOOKS = source_notebooks(ROOT)
ids = [p.name for p in NOTEBOOKS]


def test_the_series_exists():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "01_corruption.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_source_is_normalized(path):
    text = path.read_text(encoding="utf-8")
    assert '"output_type"' not in text, f"{path.name} keeps outputs: run `make normalize`"
    assert text == nbio.dumps(nbio.clean_source_notebook(nbio.read(path))), (
        f"{path.name} is not normalized: run `make normalize`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_cell_is_an_nbgrader_cell_with_a_readable_id(path):
    nb = nbio.read(path)
    for index, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        assert meta.get("schema_version") == 3, f"{path.name} cell {index} lacks nbgrader metadata"
        assert re.fullmatch(r"[a-z0-9_]+", grade_id(cell) or ""), (
            f"{path.name} cell {index}: grade_id should be snake_case, got {grade_id(cell)!r}"
        )
        if not is_solution(cell):
            assert meta.get("locked"), f"{path.name} {grade_id(cell)}: must be locked (read-only)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_graded_cells_open_with_a_docstring_and_hold_hidden_tests(path):
    for cell in nbio.read(path).cells:
        if not is_graded(cell):
            continue
        first = cell.source.lstrip().split("\n", 1)[0]
        assert first.startswith('"""'), f"{grade_id(cell)}: open with a one-line docstring"
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{grade_id(cell)}: no hidden tests"
        assert nbgrader_meta(cell).get("points", 0) > 0, f"{grade_id(cell)}: no points"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_notebook_starts_with_a_setup_cell(path):
    code = [cell for cell in nbio.read(path).cells if cell.cell_type == "code"]
    assert grade_id(code[0]) == "setup", f"{path.name}: the first code cell must be `setup`"
