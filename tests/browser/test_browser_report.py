"""The class report as a TA meets it: `python -m mlmcourse report` in the course, then the TA's
lab (`make lab-ta`), the file browser, reports/, class-report.html. A student's lab (`make lab`)
cannot reach it: it serves work/ only."""

from __future__ import annotations

import re

import labdriver as lab
import pytest
from conftest import copy_course, run_course

from mlmcourse.lab import STUDENT, TA, ensure_work_copies

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of the course with the class report written, and the student kit made."""
    course = copy_course(tmp_path_factory.mktemp("report") / "course")
    done = run_course(course, "report", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (course / "reports" / "class-report.html").is_file()
    ensure_work_copies(course)
    return course


def open_in_file_browser(page, name: str) -> None:
    """Double-click an entry of JupyterLab's file browser, as a person does."""
    item = page.locator(".jp-DirListing-item", has=page.locator(
        ".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$")))
    item.first.dblclick()


def test_the_ta_opens_the_report_from_the_lab(course, tmp_path):
    with lab.serve_lab(course, tmp_path / "ta", role=TA) as url, lab.chromium_page() as page:
        page.goto(f"{url}/lab")
        page.locator(".jp-DirListing-itemText").first.wait_for()
        page.locator(".jp-BreadCrumbs-home").first.click()  # the course root
        open_in_file_browser(page, "reports")
        open_in_file_browser(page, "class-report.html")
        frame = page.frame_locator(".jp-HTMLViewer iframe").first
        frame.locator("h1", has_text="What the class got wrong").wait_for(timeout=30_000)
        lab.shoot(page, "report-ta-lab-top")
        frame.locator("#checks").evaluate("heading => heading.scrollIntoView()")
        lab.shoot(page, "report-ta-lab-checks")
        pair = frame.locator("details.pair-entry", has_text="copied_log_probs_a")
        pair.locator("summary").click()
        pair.locator("pre").first.wait_for()
        pair.evaluate("entry => entry.scrollIntoView()")
        assert "row_max" in pair.inner_text()
        lab.shoot(page, "report-ta-lab-pair")
        assert frame.locator("tr.incident[data-kind='unchecked']").count() >= 6
        images = frame.locator(".figs img")
        assert images.count() >= 2
        assert images.first.evaluate("img => img.naturalWidth") > 100  # rendered, offline


def test_a_students_lab_cannot_reach_the_report(course, tmp_path):
    with lab.serve_lab(course, tmp_path / "student", role=STUDENT) as url:
        assert lab.http_status(f"{url}/api/contents/bert_mlm") == 200  # the kit is there
        assert lab.http_status(f"{url}/api/contents/reports") == 404
        assert lab.http_status(f"{url}/api/contents/..%2Freports") in (400, 403, 404)
        assert lab.http_status(f"{url}/files/reports/class-report.html") in (403, 404)
