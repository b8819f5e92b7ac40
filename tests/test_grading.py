"""Grading through nbgrader itself: every sample student gets exactly the score it should."""

from __future__ import annotations

import csv
import shutil

import pytest
from conftest import run_course

from mlmcourse.build.samples import expected_scores, load_samples
from mlmcourse.course import nbio
from mlmcourse.course.cells import total_points
from mlmcourse.course.layout import ASSIGNMENT, notebook_names
from mlmcourse.grader.grading import read_scores

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scores(built_course):
    return {(s.student, s.notebook): s for s in read_scores(built_course)}


@pytest.fixture(scope="module")
def samples(built_course):
    return {s.student_id: s for s in load_samples(built_course)}


def full_points(root, name):
    return total_points(nbio.read(root / "source" / ASSIGNMENT / f"{name}.ipynb"))


def test_reference_scores_full_marks(built_course, scores):
    for name in notebook_names(built_course):
        got = scores[("reference", name)]
        assert got.score == got.max_score == full_points(built_course, name), name


def test_blank_release_scores_zero(built_course, scores):
    for name in notebook_names(built_course):
        assert scores[("blank", name)].score == 0, f"the untouched release earns points in {name}"


def test_every_sample_scores_exactly_as_expected(built_course, scores, samples):
    wrong = []
    for student in samples.values():
        for name, points in expected_scores(built_course, student).items():
            got = scores.get((student.student_id, name))
            if got is None or got.score != points:
                wrong.append(f"{student.student_id}/{name}: got {got and got.score}, want {points}")
    assert not wrong, "\n".join(wrong)


def test_each_wrong_student_loses_points(built_course, samples):
    for student in samples.values():
        if not student.student_id.startswith("wrong_"):
            continue
        lost = [
            name for name, points in student.expected.items()
            if points < full_points(built_course, name)
        ]
        assert lost, f"{student.student_id} ({student.summary}) loses no points anywhere"


def test_every_submission_folder_is_a_known_sample(built_course, samples):
    folders = {p.name for p in (built_course / "submitted").iterdir()}
    assert folders == set(samples), "submitted/ and samples/ disagree"


def test_grade_command_prints_the_table_and_writes_csv(built_course, tmp_path):
    course = shutil.copytree(built_course, tmp_path / "course")
    done = run_course(course, "grade", "--student", "reference")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reference" in done.stdout and "total" in done.stdout
    rows = list(csv.DictReader((course / "grades.csv").open()))
    assert {"student", "notebook", "score", "max_score"} <= set(rows[0])
    assert any(r["student"] == "reference" and r["score"] == r["max_score"] for r in rows)
    assert (course / "feedback" / "reference" / ASSIGNMENT).is_dir()
