"""Validate in a student's home (issue 19): JupyterLab served from a home folder with no course
nbgrader_config.py, as a hub leaves a fetched assignment. A plausible first draft that misses
one clause of the contract (no NaN check) fails Validate, and the dialog shows the visible
check's message whole, cause first; the right answer passes. Then a *Predict, then run*
question opens to say why a choice is right."""

from __future__ import annotations

import labdriver as lab
import pytest
from conftest import ROOT

from mlmcourse.build.samples import load_samples, sample_home
from mlmcourse.course.layout import ASSIGNMENT

pytestmark = pytest.mark.browser

NOTEBOOK = "01_corruption"
DRAFT = "draft_no_nan_check"
WHOLE_MESSAGE = "a NaN draw: expected ValueError, but nothing was raised"


@pytest.fixture(scope="module")
def home_lab(tmp_path_factory):
    samples = {sample.student_id: sample for sample in load_samples(ROOT)}
    home = tmp_path_factory.mktemp("home")
    sample_home(ROOT, samples[DRAFT], NOTEBOOK, home)
    assert not list(home.rglob("nbgrader_config.py"))
    with lab.chromium_page() as page, lab.serve_home(home, tmp_path_factory.mktemp("lab")) as url:
        lab.open_notebook(page, url, f"{ASSIGNMENT}/{NOTEBOOK}.ipynb")
        yield home, page, url


def test_a_draft_fails_validate_in_a_home_with_the_whole_message(home_lab):
    _, page, _ = home_lab
    kind, text = lab.validate(page)
    lab.shoot(page, "home-1-validate-draft")
    lab.close_dialog(page)
    assert kind == "failed", f"Validate passed a draft that loses hidden points:\n{text[:2000]}"
    assert WHOLE_MESSAGE in text, f"the probe's message is missing or cut:\n{text[:3000]}"
    assert "..." not in text.split(WHOLE_MESSAGE)[0][-200:], text[:3000]


def test_a_question_opens_to_say_why(home_lab):
    _, page, _ = home_lab
    question = page.locator(".jp-MarkdownCell", has_text="Predict, then run").first
    question.scroll_into_view_if_needed()
    right = question.locator("details", has_text="random, random, keep")
    right.locator("summary").click()
    assert right.get_attribute("open") is not None
    assert "Right." in right.inner_text()
    lab.shoot(page, "home-2-question-opened")
