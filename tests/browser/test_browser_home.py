"""Validate in a student's home (issue 19): JupyterLab served from a home folder with no course
nbgrader_config.py, as a hub leaves a fetched assignment. A plausible first draft that misses
one clause of the contract (no NaN check) fails Validate, and the dialog shows the visible
check's message whole, cause first; the right answer passes. Then a *Predict, then run*
question opens to say why a choice is right. A draft that fails several checks opens the dialog
with how many fail and every message in view, then each message before its check's code."""

from __future__ import annotations

import contextlib

import labdriver as lab
import pytest
from conftest import ROOT

from mlmcourse.build.samples import load_samples, sample_home
from mlmcourse.course.layout import SERIES

pytestmark = pytest.mark.browser

NOTEBOOK = "01_corruption"
DRAFT = "draft_no_nan_check"
WHOLE_MESSAGE = "a NaN draw: expected ValueError, but nothing was raised"
# A draft with no input validation at all fails the five checks that expect a ValueError.
NO_VALIDATION = "wrong_no_validation"
FIRST_MESSAGE = "CheckFailed: all four tensors 1-D: expected ValueError, but nothing was raised"
LAST_LISTED = "5. CheckFailed: mask_token_id=-1: expected ValueError, but nothing was raised"
SECOND_CODE = '"""ValueError for a tensor of the wrong dtype'


@pytest.fixture(scope="module")
def browser_page():
    with lab.chromium_page() as page:
        yield page


@contextlib.contextmanager
def draft_in_home(page, tmp_path_factory, student_id: str):
    """JupyterLab on a home where `student_id` has drafted the notebook, open in `page`."""
    samples = {sample.student_id: sample for sample in load_samples(ROOT)}
    home = tmp_path_factory.mktemp("home")
    sample_home(ROOT, samples[student_id], NOTEBOOK, home)
    assert not list(home.rglob("nbgrader_config.py"))
    with lab.serve_home(home, tmp_path_factory.mktemp("lab")) as url:
        lab.open_notebook(page, url, f"{SERIES}/{NOTEBOOK}.ipynb")
        yield home, url


@pytest.fixture(scope="module")
def home_lab(browser_page, tmp_path_factory):
    with draft_in_home(browser_page, tmp_path_factory, DRAFT) as (home, url):
        yield home, browser_page, url


def test_a_draft_fails_validate_in_a_home_with_the_whole_message(home_lab):
    _, page, _ = home_lab
    kind, text = lab.validate(page)
    lab.shoot(page, "home-1-validate-draft")
    lab.close_dialog(page)
    assert kind == "failed", (
        f"Validate passed a draft that loses hidden points:\n{lab.excerpt(text)}")
    assert WHOLE_MESSAGE in text, f"the probe's message is missing or cut:\n{lab.excerpt(text)}"
    assert "..." not in text.split(WHOLE_MESSAGE)[0][-200:], lab.excerpt(text)


def test_a_question_opens_to_say_why(home_lab):
    _, page, _ = home_lab
    question = page.locator(".jp-MarkdownCell", has_text="Predict, then run").first
    question.scroll_into_view_if_needed()
    right = question.locator("details", has_text="Right.")  # (the option that is right)
    right.locator("summary").click()
    assert right.get_attribute("open") is not None
    assert "Right." in right.inner_text()
    lab.shoot(page, "home-2-question-opened")


def in_view_as_the_dialog_opens(element, phrase: str) -> bool:
    """The line of `element` that holds `phrase` lies inside the dialog's scrolled body as it
    opens (and in the window): read without scrolling."""
    return element.evaluate("""(node, phrase) => {
        const body = node.closest('.jp-Dialog-body').getBoundingClientRect();
        const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            if (!walker.currentNode.textContent.includes(phrase)) continue;
            const range = document.createRange();
            range.selectNodeContents(walker.currentNode);
            const box = range.getBoundingClientRect();
            return box.height > 0 && box.top >= body.top && box.bottom <= body.bottom
                && box.bottom <= window.innerHeight;
        }
        return false;
    }""", phrase)


def test_validate_opens_with_the_count_and_every_message(browser_page, tmp_path_factory):
    page = browser_page
    with draft_in_home(page, tmp_path_factory, NO_VALIDATION):
        kind, text = lab.validate(page)
        lab.shoot(page, "home-3-validate-five-failures")
        first = page.locator("#validation-message .jp-RenderedText pre").first
        first_text = first.inner_text()
        in_view = {phrase: in_view_as_the_dialog_opens(first, phrase)
                   for phrase in ("5 checks fail:", FIRST_MESSAGE, LAST_LISTED)}
        lab.close_dialog(page)
    assert kind == "failed", f"Validate passed a draft with no input checks:\n{lab.excerpt(text)}"
    assert first_text.startswith("5 checks fail:"), f"the dialog opens without the count:\n{text}"
    assert first_text.index(FIRST_MESSAGE) < first_text.index(LAST_LISTED), first_text
    assert all(in_view.values()), f"below the dialog's fold as it opens: {in_view}"
    for number in range(1, 6):
        assert f"Failing check {number} of 5:" in text
    second = text.index("Failing check 2 of 5:")
    assert second < text.index(SECOND_CODE), f"a message follows its code:\n{text[:4000]}"


@pytest.mark.parametrize("student_id", ["honest_old_attempt_markdown", "honest_old_attempt_code"])
def test_validate_reads_an_old_attempt_kept_as_a_copy_as_the_grader_does(
        browser_page, tmp_path_factory, student_id):
    """An old attempt kept as a copy of the answer cell (Markdown: nbgrader's Validate said "type
    changed"; code: "the nbgrader metadata may be corrupted") passes, as it grades full marks."""
    with draft_in_home(browser_page, tmp_path_factory, student_id):
        kind, text = lab.validate(browser_page)
        lab.shoot(browser_page, f"home-4-validate-{student_id}")
        lab.close_dialog(browser_page)
    assert kind == "success", f"Validate refused an honest layout:\n{lab.excerpt(text)}"
