"""source/ is clean and follows the course's nbgrader conventions."""

from __future__ import annotations

import ast
import re

import pytest
from conftest import ROOT

from mlmcourse.build.editions import WORKING_TITLE
from mlmcourse.build.site import CORE_LAST
from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    STUDENTS_ONLY_TAG,
    grade_id,
    has_tag,
    is_graded,
    is_hidden_helper,
    is_solution,
    nbgrader_meta,
    without_hidden_tests,
)
from mlmcourse.course.headings import heading_text
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


# The visible-check helpers return None, so a cell ending with a call to one echoes nothing.
NONE_RETURNING_CHECKS = {"expect", "expect_equal", "expect_close", "expect_raises",
                         "expect_no_library_loss", "expect_returns", "expect_rejects",
                         "expect_backward_agrees", "expect_grad_output_used",
                         "expect_target_log_probs_gradient", "compare_gradient_by_hand",
                         "compare_site_gradient"}
# A few short checks (the setup cell imports them); an error test's public part
# lists one bad input of every kind its hidden block tries (so Validate tries them all).
PUBLIC_PART_LINES = 16


def echoes_a_value(statement: ast.stmt) -> bool:
    """Would IPython show this last statement as Out[n]? (nbgrader then reads it as a grade)"""
    if not isinstance(statement, ast.Expr):
        return False
    call = statement.value
    return not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id in NONE_RETURNING_CHECKS)


def public_parts(path):
    """(grade_id, the statements between the docstring and the hidden tests, their line count)"""
    for cell in nbio.read(path).cells:
        if is_graded(cell):
            released = without_hidden_tests(cell.source)
            yield grade_id(cell), ast.parse(released).body[1:], len(released.split("\n")) - 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_graded_cells_have_a_public_part_that_echoes_nothing(path):
    """Between the docstring and the hidden tests: a short check the released cell runs, whose
    last statement is no value (a released cell holding only its docstring echoes it as Out[n],
    and nbgrader's Validate warns that it "cannot be converted to a float")."""
    for gid, public, lines in public_parts(path):
        assert public, f"{path.name} {gid}: no public part before the hidden tests"
        assert lines <= PUBLIC_PART_LINES, f"{path.name} {gid}: a public part of {lines} lines"
        assert not echoes_a_value(public[-1]), (
            f"{path.name} {gid}: the public part ends with an expression that has a value, so "
            "the released cell prints Out[n]")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_the_checks_import_and_the_stderr_rule_come_once_from_the_setup_cell(path):
    """The setup cell imports what the checks need from mlmcourse.teaching.checks (whose import
    shows stderr as ordinary output under Validate, which fails a cell that writes to stderr:
    grading does not); no graded cell's public part imports anything or wraps its checks
    again (a hidden block may import what only it needs)."""
    cells = nbio.read(path).cells
    graded = [cell for cell in cells if is_graded(cell) and not is_solution(cell)]
    if not graded:
        return
    setup = next(cell for cell in cells if grade_id(cell) == "setup")
    assert "from mlmcourse.teaching.checks import" in setup.source, path.name
    for cell in graded:
        public = ast.parse(without_hidden_tests(cell.source))
        imports = [node for node in ast.walk(public)
                   if isinstance(node, ast.Import | ast.ImportFrom)]
        assert not imports, f"{path.name} {grade_id(cell)}: imports belong in the setup cell"
        assert "mlmcourse.teaching.checks" not in cell.source, f"{path.name} {grade_id(cell)}"
        assert "stderr_as_output" not in cell.source, f"{path.name} {grade_id(cell)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_hidden_regions_live_in_graded_cells_or_hidden_helper_cells(path):
    """A hidden helper cell (helpers that a notebook's graded tests share) is locked, shows only
    a comment, defines only private names, and comes before the first graded cell."""
    cells = nbio.read(path).cells
    first_graded = next((i for i, cell in enumerate(cells) if is_graded(cell)), len(cells))
    for index, cell in enumerate(cells):
        if "### BEGIN HIDDEN TESTS" not in cell.source or is_graded(cell):
            continue
        gid = grade_id(cell)
        assert is_hidden_helper(cell) and nbgrader_meta(cell).get("locked"), (
            f"{path.name} {gid}: a hidden region outside a graded cell must be a hidden helper")
        assert index < first_graded, f"{path.name} {gid}: define shared helpers before the tests"
        visible = [line for line in without_hidden_tests(cell.source).split("\n") if line.strip()]
        assert visible and all(line.lstrip().startswith("#") for line in visible), (
            f"{path.name} {gid}: outside its hidden region a helper cell holds one comment")
        body = cell.source.split("### BEGIN HIDDEN TESTS", 1)[1].split("### END HIDDEN TESTS")[0]
        for node in ast.parse(body).body:
            names = ([node.name] if isinstance(node, ast.FunctionDef | ast.ClassDef) else
                     [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)])
            assert all(name.startswith("_") for name in names), (
                f"{path.name} {gid}: shared test helpers get private names, not {names}")


def least_questions(path) -> int:
    """How many "Predict, then run" questions a notebook asks, at the least: two in the core
    series, one in an appendix (a notebook numbered past `CORE_LAST`)."""
    return 2 if int(path.name[:2]) <= CORE_LAST else 1

_CHOICE = re.compile(r"<details><summary><b>\([a-d]\)</b> .+</summary><p><b>(Right|Not quite)\.</b>"
                     r" .+</p></details>")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_questions_have_one_right_choice_each_on_one_line(path):
    """Each question is a locked markdown cell: the question, then three or four choices, one
    <details> line each (nbconvert closes a <details> at a blank line), exactly one of them
    right; a notebook of the core series asks two or three, an appendix at least one."""
    questions = [cell for cell in nbio.read(path).cells
                 if "question" in cell.metadata.get("tags", [])]
    assert len(questions) >= least_questions(path), f"{path.name}: too few questions"
    for cell in questions:
        gid = grade_id(cell)
        assert cell.cell_type == "markdown" and nbgrader_meta(cell).get("locked"), gid
        assert cell.source.startswith("### Predict, then run\n\n**Question.** "), gid
        choices = [line for line in cell.source.split("\n") if line.startswith("<details>")]
        assert 3 <= len(choices) <= 4, f"{gid}: {len(choices)} choices"
        verdicts = []
        for line in choices:
            match = _CHOICE.fullmatch(line)
            assert match, f"{gid}: a choice is not one <details> line: {line[:80]}"
            verdicts.append(match.group(1))
        assert verdicts.count("Right") == 1, f"{gid}: {verdicts.count('Right')} right choices"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_each_question_comes_before_what_answers_it(path):
    """A question is followed by the cell that runs it; the explanation comes after the run, so
    no paragraph on the same screen gives the answer away (issue 29's learner trial)."""
    cells = nbio.read(path).cells
    for index, cell in enumerate(cells):
        if "question" in cell.metadata.get("tags", []):
            after = cells[index + 1]
            assert after.cell_type == "code", (
                f"{path.name} {grade_id(cell)}: the next cell is {grade_id(after)}, not the run")


# The grader's side of a notebook (how to work, what an answer cell may use, what the grader
# cannot check) is said in its closing section, never before the lesson.
WORKING_PHRASES = ("How to work.", "What an answer cell may use.", "what the grader cannot check")


def level_two_headings(cells) -> list[int]:
    return [index for index, cell in enumerate(cells)
            if cell.cell_type == "markdown" and cell.source.startswith("## ")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_each_notebook_opens_on_its_idea(path):
    """Title, what you will be able to do (BERT named first), the points, one line pointing to
    the closing section; then only code (the setup) before Step 1: no cell about working or
    grading comes before the lesson."""
    cells = nbio.read(path).cells
    title = cells[0]
    assert title.cell_type == "markdown" and title.source.startswith("# "), path.name
    opening = title.source.split("**Points available", 1)[0]
    assert "BERT" in opening, f"{path.name}: the opening paragraph should say what it does for BERT"
    if any(is_graded(cell) for cell in cells):
        assert "**Points available" in title.source, f"{path.name}: the points are in the title"
    if any(has_tag(cell, STUDENTS_ONLY_TAG) for cell in cells):
        last_line = title.source.rstrip().split("\n")[-1]
        assert "the last section" in last_line, (
            f"{path.name}: the title cell ends with one line pointing to the last section")
    first_step = level_two_headings(cells)[0]
    assert cells[first_step].source.startswith("## Step 1"), (
        f"{path.name}: the first section is Step 1, not {grade_id(cells[first_step])}")
    for cell in cells[1:first_step]:
        assert cell.cell_type == "code", (
            f"{path.name} {grade_id(cell)}: nothing but the setup between the title and Step 1")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_working_and_grading_cells_close_the_notebook(path):
    """Every students-only cell and every word on what the grader cannot check lies in the last
    section, "Working on this notebook", which holds nothing else (the reading edition puts
    its note for readers there instead); a notebook with neither has no such section."""
    cells = nbio.read(path).cells
    about_working = [index for index, cell in enumerate(cells)
                     if has_tag(cell, STUDENTS_ONLY_TAG)
                     or any(phrase in cell.source for phrase in WORKING_PHRASES)]
    headings = level_two_headings(cells)
    working = [index for index in headings if heading_text(cells[index]) == WORKING_TITLE]
    if not about_working:
        assert not working, f"{path.name}: a section on working with nothing in it"
        return
    assert working == [headings[-1]], f"{path.name}: end with one section {WORKING_TITLE!r}"
    start = working[0]
    assert not has_tag(cells[start], STUDENTS_ONLY_TAG), (
        f"{path.name}: the section's heading stays in the reading edition, for its note")
    assert about_working == list(range(start + 1, len(cells))), (
        f"{path.name}: cells about working or grading belong in {WORKING_TITLE!r}, and only "
        f"they: {[grade_id(cells[i]) for i in about_working if i <= start]} come before it")
    for index in about_working:
        assert has_tag(cells[index], STUDENTS_ONLY_TAG), (
            f"{path.name} {grade_id(cells[index])}: instructions for students, tag them "
            f"{STUDENTS_ONLY_TAG!r}")


def points_under(cells, start: int) -> float:
    """The points of the graded cells after the heading at `start`, up to the next heading of
    the same or a higher level."""
    level = len(cells[start].source) - len(cells[start].source.lstrip("#"))
    total = 0.0
    for cell in cells[start + 1:]:
        if cell.cell_type == "markdown" and re.match(rf"#{{1,{level}}} ", cell.source):
            break
        if is_graded(cell):
            total += nbgrader_meta(cell).get("points", 0)
    return total


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_the_points_a_heading_or_the_title_names_are_the_points_of_its_cells(path):
    """A heading's "(N points)" and "(... no points)", and the title's "Part A: N", say what
    the graded cells under them are worth: a point moved between checks moves in the text too."""
    cells = nbio.read(path).cells
    wrong = []
    for index, cell in enumerate(cells):
        first = cell.source.split("\n", 1)[0] if cell.cell_type == "markdown" else ""
        said = re.search(r"\((\d+) points?\)\s*$", first)
        if first.startswith("#") and said and index > 0:
            # "## Graded tests (N points)" heads the notebook's tests, with checks in between
            held = (sum(nbgrader_meta(c).get("points", 0) for c in cells if is_graded(c))
                    if "Graded tests" in first else points_under(cells, index))
            if float(said.group(1)) != held:
                wrong.append(f"{first!r}: the cells under it hold {held:g}")
        if first.startswith("#") and "no points" in first and points_under(cells, index):
            wrong.append(f"{first!r}: the cells under it hold {points_under(cells, index):g}")
    parts = {m.group(1): i for i, c in enumerate(cells) if c.cell_type == "markdown"
             for m in [re.match(r"## Part ([A-Z])\b", c.source)] if m}
    for letter, said in re.findall(r"Part ([A-Z]): (\d+)", cells[0].source):
        held = points_under(cells, parts[letter]) if letter in parts else None
        if held != float(said):
            wrong.append(f"the title's 'Part {letter}: {said}': its cells hold {held}")
    assert not wrong, f"{path.name}: " + "; ".join(wrong)
