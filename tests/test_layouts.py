"""Honest layouts grade as the student's kernel ran them, by one rule on every way in.

The rule (`course.cells.answer_cells`): every code cell nbgrader marks as an answer runs, in the
notebook's order, as Run All runs them; a Markdown cell runs nothing; an answer the notebook lacks
runs the release's stub. Validate and the grading log word it (`cells.layout_notes`). The
samples honest_split_cell, honest_old_attempt_markdown, honest_old_attempt_code,
honest_pasted_answer and honest_pasted_across_notebooks hold full marks through `make grade`
(the build) and plain `nbgrader autograde` (tests/test_nbgrader_autograde.py grades every
honest_* sample of this kind). A submission's time (timestamp.txt) is read by one rule too.
"""

from __future__ import annotations

import copy
import os
from datetime import datetime

import nbformat
from conftest import ROOT

from mlmcourse.build.samples import load_sample, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.cells import layout_notes
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.engine.rebuild import cells_to_run, trusted_notebooks
from mlmcourse.grader.results.gradebook import submission_time

FIRST = "01_corruption"


def source(name: str = FIRST):
    return nbio.read(ROOT / "source" / SERIES / f"{name}.ipynb")


def handed_in(sample_id: str, name: str):
    return sample_notebook(ROOT, load_sample(ROOT / "samples" / f"{sample_id}.py",
                                             notebook_names(ROOT)), name)


def test_a_split_answer_runs_both_halves_in_order_and_shows_them():
    name = "02_stable_log_softmax"
    student = handed_in("honest_split_cell", name)
    cells, _ = cells_to_run(name, source(name), student)
    parts = [cell for cell in cells if cell["grade_id"] == "target_log_probs"]
    assert len(parts) == 2
    assert parts[0]["source"].startswith("def labels_to_gather(")
    assert parts[1]["source"].startswith("def target_log_probs(")
    assert parts[1]["filename"].endswith("part 2>")
    shown, _ = trusted_notebooks(source(name), student)
    [answer] = [c for c in shown.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == "target_log_probs"]
    assert answer.source.index("labels_to_gather(") < answer.source.index("def target_log_probs(")


def test_a_markdown_copy_of_an_answer_runs_nothing():
    student = handed_in("honest_old_attempt_markdown", FIRST)
    cells, _ = cells_to_run(FIRST, source(), student)
    [answer] = [cell for cell in cells if cell["grade_id"] == "make_mlm_inputs"]
    assert "draws < 0.8" in answer["source"] and "NotImplementedError" not in answer["source"]


def test_every_code_copy_runs_in_the_notebook_order():
    student = handed_in("honest_old_attempt_code", FIRST)
    cells, _ = cells_to_run(FIRST, source(), student)
    order = [cell["source"].split("(", 1)[0] for cell in cells[1:]]
    assert order == ["def make_mlm_inputs", "def make_mlm_inputs_first_try"]


def test_a_cell_pasted_from_another_notebook_runs_and_binds_nothing():
    name = "03_empty_mask_and_gradient"
    student = handed_in("honest_pasted_across_notebooks", name)
    cells, bindings = cells_to_run(name, source(name), student)
    assert "target_log_probs" in [cell["grade_id"] for cell in cells]
    assert "target_log_probs" not in bindings


def test_an_answer_left_out_runs_the_release_stub():
    student = copy.deepcopy(source())
    student.cells = [c for c in student.cells
                     if c.metadata.get("nbgrader", {}).get("grade_id") != "make_mlm_inputs"]
    cells, _ = cells_to_run(FIRST, source(), student)
    assert "raise NotImplementedError()" in cells[-1]["source"]


def test_validate_and_the_log_say_how_a_layout_is_read():
    """The words Validate prints (`checks.visible_checks_passed`) and the grading log shows."""
    assert layout_notes(source()) == []
    split = layout_notes(handed_in("honest_split_cell", "02_stable_log_softmax"))
    assert split == ["2 cells carry the answer id 'target_log_probs': the grader runs them all, "
                     "in the notebook's order, as Run All does (a name defined twice keeps its "
                     "later definition)"]
    kept = layout_notes(handed_in("honest_old_attempt_markdown", FIRST))
    assert kept == ["a Markdown cell carries the answer id 'make_mlm_inputs': the grader does "
                    "not run it"]
    name = "03_empty_mask_and_gradient"
    own = {"masked_lm_loss_function", "masked_lm_loss"}
    pasted = layout_notes(handed_in("honest_pasted_across_notebooks", name), own)
    assert pasted == ["the answer cell 'target_log_probs' comes from another notebook: it runs "
                      "as Run All runs it, and nothing is graded from it"]


def test_an_answer_turned_into_markdown_is_said_to_count_as_blank():
    student = copy.deepcopy(source())
    for cell in student.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_mlm_inputs":
            cell.cell_type = "markdown"
    student = nbformat.from_dict(student)
    [note] = layout_notes(student, {"make_mlm_inputs"})
    assert note.endswith("the answer counts as left blank")


def test_a_timestamp_is_read_by_one_rule(tmp_path):
    """nbgrader's time when it parses; none without the file (on time); otherwise (empty, not a
    time, not a regular file) the file's modification time, never 'on time' by default."""
    stamp = tmp_path / "timestamp.txt"
    assert submission_time(tmp_path) is None
    stamp.write_text("2026-01-15 17:00:00.000000 UTC\n")
    assert submission_time(tmp_path) == datetime(2026, 1, 15, 17, 0)
    written = datetime(2026, 2, 1, 12, 0, 0)
    seconds = (written - datetime(1970, 1, 1)).total_seconds()
    for broken in ("", "handed in on time, honest", "2026-13-45 99:99"):
        stamp.write_text(broken)
        os.utime(stamp, (seconds, seconds))
        assert submission_time(tmp_path) == written, broken
    stamp.unlink()
    stamp.mkdir()
    os.utime(stamp, (seconds, seconds))
    assert submission_time(tmp_path) == written


def test_validates_last_cell_says_how_it_read_a_split_answer(tmp_path, monkeypatch, capsys):
    """The notebook's last cell (`checks.visible_checks_passed`, what Validate shows last) reads
    the saved file beside the kernel and says how the grader takes a split answer."""
    from mlmcourse.teaching.checks import visible_checks_passed

    name = "02_stable_log_softmax"
    nbio.write(handed_in("honest_split_cell", name), tmp_path / f"{name}.ipynb")
    monkeypatch.chdir(tmp_path)
    visible_checks_passed(name, 15)
    shown = capsys.readouterr().out
    assert shown.startswith("Note: 2 cells carry the answer id 'target_log_probs': the grader "
                            "runs them all, in the notebook's order")
    nbio.write(handed_in("reference", name), tmp_path / f"{name}.ipynb")
    visible_checks_passed(name, 15)
    assert "Note:" not in capsys.readouterr().out


def test_validates_last_cell_speaks_of_error_tests_only_where_the_notebook_has_them(
        tmp_path, monkeypatch, capsys):
    """"one bad input of every kind the hidden tests try" is said where a graded cell's public
    part tries bad inputs (`expect_rejects`, notebook 1), not in a notebook without error tests
    (notebook 2), nor when the file cannot be read (it claims nothing it cannot see)."""
    from mlmcourse.teaching import checks

    monkeypatch.setattr(checks, "_FAILED_LAST_RUN", {})
    monkeypatch.chdir(tmp_path)
    clause = "for the error tests one bad input of every kind the hidden tests try"
    shown = {}
    for name in (FIRST, "02_stable_log_softmax", "not_saved"):
        if name != "not_saved":
            nbio.write(handed_in("reference", name), tmp_path / f"{name}.ipynb")
        checks.visible_checks_passed(name, 15)
        shown[name] = " ".join(capsys.readouterr().out.split())
        assert shown[name].startswith("Every visible check passes."), shown[name]
        assert "a quick case of what it checks" in shown[name]
    assert clause in shown[FIRST]
    assert "error tests" not in shown["02_stable_log_softmax"] + shown["not_saved"]


def test_make_check_says_how_it_read_a_layout():
    """`make check` (the learner's report) shows the layout note under the notebook."""
    from mlmcourse.check import report
    from mlmcourse.grader.results.verdict import Check, Incident, Kind, Status, Verdict

    note = "2 cells carry the answer id 'target_log_probs': the grader runs them all"
    verdict = Verdict("02_stable_log_softmax", Status.OK, [Check("t", 1.0, 1.0)],
                      [Incident(Kind.PASTED, note)])
    assert f"      note: {note}" in report(verdict).splitlines()


def test_an_answer_cell_that_lost_its_solution_mark_still_runs_by_its_id():
    student = copy.deepcopy(source())
    for cell in student.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_mlm_inputs":
            cell.metadata.nbgrader.pop("solution")
    cells, _ = cells_to_run(FIRST, source(), student)
    [answer] = [cell for cell in cells if cell["grade_id"] == "make_mlm_inputs"]
    assert "NotImplementedError()" not in answer["source"]


def test_validates_last_cell_counts_failed_cells_without_cell_ids(monkeypatch, capsys):
    """nbclient and nbconvert send no cell id: a failed cell still counts (by its text) until
    the same text runs again and passes, so the last cell never says every check passes after
    a run that went on past an error (nbconvert --allow-errors)."""
    from types import SimpleNamespace

    from mlmcourse.teaching import checks

    monkeypatch.setattr(checks, "_FAILED_LAST_RUN", {})

    def ran(text: str, success: bool, cell_id=None) -> None:
        info = SimpleNamespace(cell_id=cell_id, raw_cell=text)
        checks._remember_cell_outcome(SimpleNamespace(info=info, success=success))

    ran("check_a()", False)
    ran("print('fine')", True)
    assert checks.cells_that_failed() == 1
    ran("check_a()", True)
    assert checks.cells_that_failed() == 0
    ran("x = 1", False, cell_id="answer")
    ran("x = 2", True, cell_id="answer")  # an edited cell with an id: its last run counts
    assert checks.cells_that_failed() == 0
