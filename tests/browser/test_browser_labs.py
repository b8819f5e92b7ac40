"""A student's lab and a TA's lab (`make lab`, `make lab-ta`) as each sees them in Chromium.

The student's lab shows the kit only (no source/, notebooks/, submitted/), no Formgrader, no
news popup, and a released notebook opens unmodified; the TA's lab has the Formgrader."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import labdriver as lab
import nbformat
import pytest
from conftest import copy_course, run_course

from mlmcourse.build.samples import SUBMITTED_AT, build_submissions
from mlmcourse.course import nbio
from mlmcourse.course.layout import SERIES
from mlmcourse.lab import STUDENT, TA, WORK, ensure_work_copies

pytestmark = pytest.mark.browser

NOTEBOOK = "01_corruption.ipynb"
# Only the cell-rendering pin of the tests: the news and update settings are the lab's own.
CELLS_ONLY = {name: values for name, values in lab.PINNED_SETTINGS.items()
              if "notification" not in name}
HIDDEN_FOLDERS = ("source", "notebooks", "submitted", "autograded", "feedback", "release")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of the course with the student kit made, as `make lab` makes it."""
    course = copy_course(tmp_path_factory.mktemp("labs") / "course")
    ensure_work_copies(course)
    return course


def nbgrader_menu_items(page) -> list[str]:
    """The labels of the Nbgrader menu (empty when there is no such menu)."""
    menu = page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$"))
    if menu.count() == 0:
        return []
    menu.click()
    labels = page.locator(".lm-Menu:visible .lm-Menu-itemLabel").all_inner_texts()
    page.keyboard.press("Escape")
    return [label.strip() for label in labels]


def test_student_lab_shows_the_kit_only_quietly_and_unmodified(course, tmp_path):
    kit_copy = course / WORK / SERIES / NOTEBOOK
    before = kit_copy.read_bytes()  # as `make lab` copied it
    with lab.chromium_page() as page, \
            lab.serve_lab(course, tmp_path / "lab", role=STUDENT, pinned=CELLS_ONLY) as url:
        top = json.loads(urllib.request.urlopen(f"{url}/api/contents", timeout=10).read())
        assert [item["name"] for item in top["content"]] == [SERIES], (
            "the student's lab must serve the kit (work/) and nothing else"
        )
        for folder in HIDDEN_FOLDERS:
            assert lab.http_status(f"{url}/api/contents/{folder}") == 404, (
                f"the lab serves {folder}/")
            assert lab.http_status(f"{url}/api/contents/../{folder}") in (400, 403, 404)
        assert lab.http_status(f"{url}/formgrader") == 404, (
            "the formgrader answers in the student's lab")

        lab.open_notebook(page, url, f"{SERIES}/{NOTEBOOK}")
        time.sleep(3)  # the news question and the kernel's metadata come shortly after start
        lab.shoot(page, "lab-1-student-notebook")
        toasts = page.locator(".Toastify__toast").all_inner_texts()
        assert not toasts, f"the student's lab shows a popup: {toasts}"
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0, (
            "the released notebook opens as modified"
        )
        browser_items = page.locator(".jp-DirListing-itemText").all_inner_texts()
        assert not set(browser_items) & set(HIDDEN_FOLDERS), browser_items

        items = nbgrader_menu_items(page)
        lab.shoot(page, "lab-2-student-menu")
        assert not any("Formgrader" in item or "Course" in item for item in items), items
        assert page.locator(".nbgrader-CreateAssignmentWidget").count() == 0

        # Validate works from the kit (the server's root) with the course's config: the blank
        # release fails its visible checks.
        page.locator("jp-button.validate-button").click()
        dialog = page.locator(".nbgrader-SuccessDialog, .nbgrader-ErrorDialog")
        dialog.wait_for(timeout=lab.VALIDATE_WAIT_MS)
        lab.shoot(page, "lab-2b-student-validate")
        assert "nbgrader-ErrorDialog" in dialog.get_attribute("class"), dialog.inner_text()[:500]
        assert "cell failed" in dialog.inner_text(), dialog.inner_text()[:500]
    # Validate saves the notebook first (JupyterLab writes sources as lists of lines): the
    # saved notebook must be the one the student opened, metadata included.
    assert nbio.read(kit_copy) == nbformat.reads(before.decode(), as_version=4), (
        "opening and validating the notebook changed the student's copy"
    )


def test_ta_lab_has_the_formgrader(course, tmp_path):
    with lab.chromium_page() as page, lab.serve_lab(course, tmp_path / "lab", role=TA) as url:
        top = json.loads(urllib.request.urlopen(f"{url}/api/contents", timeout=10).read())
        assert "source" in {item["name"] for item in top["content"]}
        page.goto(f"{url}/lab")
        menu = page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$"))
        menu.wait_for()
        menu.click()  # opened once: its items are read and clicked in the same open menu
        labels = page.locator(".lm-Menu:visible .lm-Menu-itemLabel")
        labels.first.wait_for()
        items = [label.strip() for label in labels.all_inner_texts()]
        assert "Formgrader" in items, f"the TA's Nbgrader menu: {items}"
        page.locator(".lm-Menu-item[data-command='nbgrader:open-formgrader']").click()
        frame = page.frame_locator("iframe").first
        frame.locator("td.name", has_text=SERIES).wait_for()
        lab.shoot(page, "lab-3-ta-formgrader")


# Two quick sample students (the untouched release, and an honest partial answer).
GRADED = ("blank", "honest_time_magic")


def only_timings_changed(before: dict[str, bytes], after_folder) -> list[str]:
    """Autograded files whose bytes changed although only their timing outputs did."""
    changed = []
    for name, old in before.items():
        path = after_folder / name
        new = path.read_bytes() if path.is_file() else None
        if new is not None and new != old and name.endswith(".ipynb") and (
            nbio.without_timings(new.decode()) == nbio.without_timings(old.decode())
        ):
            changed.append(name)
    return changed


@pytest.mark.slow
def test_make_grade_on_a_fresh_clone_fills_the_formgrader(tmp_path):
    """A fresh clone has no gradebook: after `make grade` the TA's formgrader shows each graded
    student's score, name and timestamp, with no exchange warning; the run printed a line per
    student (its output is not a terminal here) and rewrote no autograded file for its timings."""
    course = copy_course(tmp_path / "course")
    build_submissions(course)  # as `make build` writes them: with nbgrader's timestamp.txt
    autograded = course / "autograded"
    before = {p.relative_to(autograded).as_posix(): p.read_bytes()
              for p in autograded.rglob("*") if p.is_file()}
    args = [arg for student in GRADED for arg in ("--student", student)]
    done = run_course(course, "grade", "--workers", "2", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    progress = [line for line in done.stderr.splitlines() if line.startswith("grading ")]
    assert progress[0].startswith(f"grading {len(GRADED)} submissions"), done.stderr[-2000:]
    assert len(progress) == 1 + len(GRADED) and progress[-1].endswith("(done)"), progress
    assert not only_timings_changed(before, autograded), "make grade rewrote files for timings"
    assert (course / "grades-lms.csv").is_file(), "make grade exports for the school's system"

    with lab.chromium_page() as page, lab.serve_lab(course, tmp_path / "lab", role=TA) as url:
        page.goto(f"{url}/formgrader/manage_assignments")
        page.locator("td.name", has_text=SERIES).wait_for()
        assert page.locator("#warning-exchange").count() == 0, "the exchange warning is shown"
        page.goto(f"{url}/formgrader/manage_submissions/{SERIES}")
        for student in GRADED:
            row = page.locator("tbody tr", has=page.locator(
                "td.student-id", has_text=re.compile(f"^{student}$")))
            row.wait_for()
            name, stamp, score = (row.locator(f"td.{part}").inner_text().strip()
                                  for part in ("student-name", "timestamp", "score"))
            assert "None" not in name and name.startswith(student), f"{student}'s name: {name!r}"
            assert stamp != "None" and stamp.startswith(SUBMITTED_AT[:10]), stamp
            assert re.fullmatch(r"\d+(\.\d+)? / \d+(\.\d+)?", score), f"{student}: {score!r}"
        lab.shoot(page, "lab-4-ta-submissions-after-make-grade", full_page=True)
