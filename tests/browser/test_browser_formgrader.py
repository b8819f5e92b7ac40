"""A TA in JupyterLab: the formgrader lists the sample students' scores; feedback shows failures;
the Autograde button grades through the course's engine."""

from __future__ import annotations

import re
import shutil

import labdriver as lab
import pytest

from mlmcourse.build.graded import SAMPLES_GRADEBOOK
from mlmcourse.build.samples import expected_scores, load_sample
from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, is_graded
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.class_run.grading import read_scores

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def ta(built_course, tmp_path_factory):
    """JupyterLab on a copy of the built course (gradebook, submissions, feedback)."""
    course = tmp_path_factory.mktemp("ta") / "course"
    shutil.copytree(built_course, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    # The build grades the samples into a gradebook of their own; here they are the TA's class.
    shutil.copy2(course / SAMPLES_GRADEBOOK, course / "gradebook.db")
    with lab.chromium_page() as page, lab.serve_lab(course, course.parent / "lab") as url:
        yield course, page, url


def totals(course) -> dict[str, tuple[float, float]]:
    """Each student's score and maximum over the assignment, from the gradebook."""
    result: dict[str, tuple[float, float]] = {}
    for score in read_scores(course):
        got, out_of = result.get(score.student, (0.0, 0.0))
        result[score.student] = (got + score.score, out_of + score.max_score)
    return result


def numbers(text: str) -> tuple[float, float]:
    found = re.findall(r"-?\d+(?:\.\d+)?", text)
    assert len(found) == 2, f"not a score: {text!r}"
    return float(found[0]), float(found[1])


def test_formgrader_lists_the_assignment_and_every_students_score(ta):
    course, page, url = ta
    expected = totals(course)
    assert expected, "the built course has no graded submissions"

    page.goto(f"{url}/lab")
    page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).click()
    page.locator(".lm-Menu-item[data-command='nbgrader:open-formgrader']").click()
    frame = page.frame_locator("iframe").first
    row = frame.locator("tr", has=frame.locator("td.name", has_text=SERIES))
    row.wait_for()
    submissions = row.locator("td.num-submissions").inner_text().strip()
    assert submissions == str(len(expected)), (
        f"the formgrader counts {submissions} submissions, the gradebook {len(expected)}"
    )
    row.scroll_into_view_if_needed()
    lab.shoot(page, "ta-1-formgrader-assignments")

    page.goto(f"{url}/formgrader/manage_submissions/{SERIES}")
    rows = page.locator("tbody tr", has=page.locator("td.student-id"))
    rows.first.wait_for()
    page.wait_for_function(
        f"document.querySelectorAll('tbody td.student-id').length >= {len(expected)}"
    )
    shown = {}
    for i in range(rows.count()):
        student = rows.nth(i).locator("td.student-id").inner_text().strip()
        shown[student] = numbers(rows.nth(i).locator("td.score").inner_text())
    lab.shoot(page, "ta-2-formgrader-submissions", full_page=True)
    assert sorted(shown) == sorted(expected), "the formgrader lists other students"
    for student, (got, out_of) in expected.items():
        assert shown[student] == pytest.approx((got, out_of), abs=0.01), (
            f"{student}: the formgrader shows {shown[student]}, the gradebook {got} / {out_of}"
        )


def partly_failed(course) -> tuple[str, str, list[str]]:
    """A student and notebook with some graded tests failed, and those tests' messages."""
    for score in read_scores(course):
        if 0 < score.score < score.max_score:
            path = course / "autograded" / score.student / SERIES / f"{score.notebook}.ipynb"
            messages = []
            for cell in nbio.read(path).cells:
                for output in cell.get("outputs", []) if is_graded(cell) else []:
                    if output.output_type == "error":
                        messages.append((grade_id(cell), output.evalue.strip().splitlines()[0]))
            if messages:
                return score.student, score.notebook, messages
    pytest.skip("no sample student has a partly failed notebook")


def test_feedback_shows_the_failed_checks(ta):
    course, page, _ = ta
    student, notebook, failures = partly_failed(course)
    feedback = course / "feedback" / student / SERIES / f"{notebook}.html"
    assert feedback.is_file(), f"no feedback for {student}/{notebook}"
    page.goto(feedback.as_uri())  # the file nbgrader hands back to the student
    page.wait_for_load_state("load")
    text = page.locator("body").inner_text()
    for cell_id, message in failures:
        assert message[:60] in text, f"feedback for {student} does not show why {cell_id} failed"
    first = page.get_by_text(failures[0][1][:60]).first
    first.scroll_into_view_if_needed()
    lab.shoot(page, "ta-3-feedback-failed-check")


# In the grader's own kernel (nbgrader's Execute) the first reached the gradebook, and the second
# scored 12 of 24 in notebook 1 where the engine gives 21.
BUTTON_STUDENTS = ("hostile_gradebook", "hostile_patched_helpers")


def files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def scores_of(course, student: str) -> dict[str, float]:
    return {s.notebook: s.score for s in read_scores(course) if s.student == student}


def press_autograde(page, url: str, student: str) -> None:
    """The Autograde button of one submission; fails with nbgrader's log when it reports one."""
    page.goto(f"{url}/formgrader/manage_submissions/{SERIES}")
    row = page.locator("tbody tr", has=page.locator("td.student-id", has_text=re.compile(
        f"^{student}$")))
    row.locator("td.autograde a").click()
    outcome = page.locator("#success-modal.in, #error-modal.in")  # shown (Bootstrap 3)
    outcome.wait_for(state="visible", timeout=600_000)
    lab.shoot(page, f"ta-4-autograde-button-{student}")
    assert outcome.get_attribute("id") == "success-modal", outcome.inner_text()[-3000:]


def test_the_autograde_button_grades_through_the_engine(ta):
    """The formgrader's per-submission Autograde button runs nbgrader's autograde in the server,
    with the engine plugged in (nbgrader_config.py): a hostile submission earns what `make grade`
    gave it, and reaches neither its own files nor the gradebook."""
    course, page, url = ta
    for student in BUTTON_STUDENTS:
        sample = load_sample(course / "samples" / f"{student}.py", notebook_names(course))
        made = scores_of(course, student)
        assert made.items() >= expected_scores(course, sample).items(), "make grade disagrees"
        submitted = files(course / "submitted" / student)
        press_autograde(page, url, student)
        pressed = scores_of(course, student)
        assert pressed == made, f"{student}: the button gives {pressed}, make grade {made}"
        assert files(course / "submitted" / student) == submitted, f"{student} was changed"
    assert not list(course.rglob("HACKED_BY_*")), "a submission wrote next to the TA's files"
