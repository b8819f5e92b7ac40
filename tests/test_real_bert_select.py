"""Notebook 6's `select_for_masking`: the checks a student sees and the messages grading gives.

`special_ids` may be a list, a tuple or a set. The typical wrong answer `torch.tensor(special_ids)`
works on a list and fails on a set; the hidden test and the public checks must then say which
input failed and what to do, not only `RuntimeError: Could not infer dtype of set`. Validate
in a folder that holds nothing but the notebook (a student's home on a hub) must say the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from mlmcourse.build.samples import load_sample, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    cells_by_grade_id,
    is_graded,
    is_solution,
    run_cell,
    without_hidden_tests,
    without_solution_markers,
)
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.engine.submission import grade_submission
from mlmcourse.grader.limits import Limits

NOTEBOOK = "06_real_bert"
SET_SAMPLE = "wrong_tensor_of_special_ids"


def sample(sample_id: str):
    return load_sample(ROOT / "samples" / f"{sample_id}.py", notebook_names(ROOT))


def source_cells() -> dict:
    return cells_by_grade_id(nbio.read(ROOT / "source" / SERIES / f"{NOTEBOOK}.ipynb"))


def answer(sample_id: str) -> str:
    """The sample's answer cell (its other cells come from the committed release, which may
    be older than source/: everything else here is read from source/)."""
    nb = sample_notebook(ROOT, sample(sample_id), NOTEBOOK)
    return without_solution_markers(cells_by_grade_id(nb)["select_for_masking"].source)


def hidden_block(source: str) -> str:
    """The hidden tests of a graded cell, as the autograder runs them (markers dropped)."""
    start = source.index("### BEGIN HIDDEN TESTS")
    end = source.index("### END HIDDEN TESTS")
    return source[start:end].split("\n", 1)[1]


def test_hidden_test_says_which_input_failed_and_what_to_do():
    namespace: dict = {}
    run_cell("import torch", namespace, "<setup>")
    run_cell(answer(SET_SAMPLE), namespace, "<answer>")
    source = source_cells()["test_select_excludes_special"].source
    with pytest.raises(AssertionError) as failed:
        run_cell(hidden_block(source), namespace, "<hidden tests>")
    message = str(failed.value)
    assert "RuntimeError: Could not infer dtype of set" in message  # what happened ...
    assert "the set {0, 1, 2, 3, 4}" in message  # ... on which input ...
    assert "torch.tensor(list(special_ids))" in message  # ... and what to do
    assert "list, tuple or set" in message


def test_hidden_test_still_passes_the_reference():
    namespace: dict = {}
    run_cell("import torch", namespace, "<setup>")
    run_cell(answer("reference"), namespace, "<answer>")
    for grade_id, cell in source_cells().items():
        if is_graded(cell):
            run_cell(hidden_block(cell.source), namespace, f"<{grade_id}>")


def student_copy(sample_id: str):
    """What the student's own file holds: their answer, every other cell as source/ releases it
    (test cells without their hidden part)."""
    nb = nbio.read(ROOT / "source" / SERIES / f"{NOTEBOOK}.ipynb")
    for cell in nb.cells:
        if is_solution(cell):
            cell.source = answer(sample_id)
        elif is_graded(cell):
            cell.source = without_hidden_tests(cell.source)
    return nb


def validate_alone(sample_id: str, folder) -> str:
    """`nbgrader validate` in a folder holding only this notebook (no course config)."""
    folder.mkdir()
    path = folder / f"{NOTEBOOK}.ipynb"
    nbio.write(student_copy(sample_id), path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBGRADER")}
    env["PYTHONPATH"] = str(ROOT)  # the course package, installed on a hub
    env["MLMCOURSE_BERT_STANDIN"] = "1"
    nbgrader = shutil.which("nbgrader", path=os.path.dirname(sys.executable))
    done = subprocess.run([nbgrader, "validate", path.name], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert sorted(p.name for p in folder.iterdir()) == [path.name], "validate wrote files"
    return done.stdout + done.stderr


@pytest.mark.slow
def test_validate_tells_the_set_student_which_input_alone_in_a_folder(tmp_path):
    """(tests/test_validate_anywhere.py runs Validate on the reference and on
    wrong_selects_special_tokens.)"""
    out = validate_alone(SET_SAMPLE, tmp_path / "home")
    assert "VALIDATION FAILED" in out, out[-3000:]
    # Validate cuts each line after 87 characters; a failed check's message comes in lines
    # short enough (mlmcourse.teaching.checks.message_lines), so it reaches the student whole.
    assert not any(line.endswith("...") for line in out.splitlines() if "CheckFailed" in line)
    words = " ".join(out.split())
    assert ("CheckFailed: special_ids {2, 3}: raised RuntimeError: Could not infer dtype of set"
            in words), out[-3000:]
    assert "torch.tensor() cannot read a set: list() it first" in words, out[-3000:]


@pytest.mark.slow
def test_grading_tells_the_set_student_which_input_and_what_to_do(tmp_path):
    """Through the grading engine (the path of `make grade`, `make check` and `nbgrader
    autograde`); every sample's score of notebook 6 is checked by tests/test_grading.py."""
    folder = tmp_path / "submitted" / SET_SAMPLE / SERIES
    nbio.write(sample_notebook(ROOT, sample(SET_SAMPLE), NOTEBOOK), folder / f"{NOTEBOOK}.ipynb")
    (result,) = grade_submission(ROOT, SET_SAMPLE, folder, tmp_path / "scratch", Limits(),
                                 notebooks=[NOTEBOOK])
    tests = {t.grade_id: t for t in result.checks}
    failed = tests["test_select_excludes_special"]
    assert not failed.passed
    first_line = failed.message.splitlines()[0]
    assert first_line.endswith(
        "special_ids {2, 3}: raised RuntimeError: Could not infer dtype of set"), failed.message
    assert "torch.tensor() cannot read a set: list() it first" in failed.message
    assert result.score == sample(SET_SAMPLE).expected[NOTEBOOK]
