"""WCAG 2.1 AA, checked by axe-core in Chromium on every page the course shows a reader: the
reading site (index, each notebook, each guide of docs/), a student's feedback page, the TA's
class report, and a student's notebook in JupyterLab once its cells have run (only the
notebook's own content: the lab around it is JupyterLab's). No image may carry a placeholder
for its description.

axe-core is pinned by tests/browser/package-lock.json; `make test` installs it into build/axe/
with npm (`make build/axe/node_modules/axe-core/axe.min.js` alone). Without it these tests say so
and skip, except in CI (the CI variable set), where a missing checker fails them."""

from __future__ import annotations

import json
import os
import re

import labdriver as lab
import nbformat
import pytest
from conftest import ROOT, copy_course
from test_browser_site import browser_page, open_page, served, site  # noqa: F401 (fixtures)
from test_feedback_names import graded_notebook

from mlmcourse.build.docs_pages import read_docs
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.results.feedback import FeedbackExporter, ReadableFeedback
from mlmcourse.lab import STUDENT, WORK, ensure_work_copies, kernel_language_info
from mlmcourse.report.build import write_class_report
from mlmcourse.report.collect import ClassData, read_autograded, read_release

pytestmark = [pytest.mark.browser]

AXE = ROOT / "build" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Every page of the site: the index, a page per notebook, a page per guide of docs/.
SITE_PAGES = ["index.html"] + [
    f"{nb.stem}.html" for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))] + [
    doc.html_name for doc in read_docs(ROOT)]
# A graded sample with failed checks: the feedback page shows its "To fix" list and table.
FEEDBACK_OF = ("wrong_labels_every_token", "01_corruption")
# The notebook opened in a student's lab, answered (the reference sample's hand-in) so that Run
# All reaches every figure. Its scope is what the course wrote: the rendered text cells and the
# outputs; the editors, prompts and buttons around them are JupyterLab's own (upstream's).
LAB_NOTEBOOK = "01_corruption"
IN_NOTEBOOK = f"{lab.NOTEBOOK} .jp-Notebook"
COURSE_CONTENT = [f"{IN_NOTEBOOK} .jp-MarkdownOutput", f"{IN_NOTEBOOK} .jp-OutputArea-output"]
# What a figure's description may not be: empty, or a stand-in that says nothing about it.
PLACEHOLDER_ALT = re.compile(
    r"^\s*$|^No description has been provided for this image$|^saved panel$|^figure$"
    r"|^<Figure size", re.I)
SHOWN_NODES = 3  # nodes shown per violated rule
REPORTS = ROOT / "build" / "accessibility"


@pytest.fixture(scope="module")
def axe_script() -> str:
    if not AXE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{AXE.relative_to(ROOT)} is missing in CI: `make test` installs it with "
                        "npm ci (tests/browser/package-lock.json); is npm there?")
        pytest.skip(f"{AXE.relative_to(ROOT)} is missing: `make test` installs axe-core there "
                    "with npm (tests/browser/package-lock.json)")
    return AXE.read_text(encoding="utf-8")


def audit(page, axe_script: str, include: list[str] | None = None) -> list[dict]:
    """axe's WCAG 2.1 A and AA violations on the page (or inside `include`, CSS selectors)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_script)
    return page.evaluate(
        """async ([include, tags]) => {
            const context = include ? {include} : document;
            const result = await axe.run(context, {runOnly: {type: 'tag', values: tags},
                                                   resultTypes: ['violations']});
            return result.violations.map((v) => ({
                id: v.id, impact: v.impact, help: v.help, url: v.helpUrl,
                nodes: v.nodes.map((n) => ({target: n.target.join(' '), html: n.html,
                                             why: n.failureSummary})),
            }));
        }""",
        [include, TAGS],
    )


def placeholder_images(page, scope: list[str] | None = None) -> list[str]:
    """Every <img> (inside `scope`, CSS selectors) whose alt is missing or a placeholder: its
    alt and the start of its source."""
    images = page.evaluate(
        "(scope) => [...document.querySelectorAll(scope.map((s) => s + ' img').join(', '))]"
        ".map((img) => [img.getAttribute('alt'), (img.getAttribute('src') || '').slice(0, 60)])",
        scope or ["html"])
    return [f"alt={alt!r} src={src}" for alt, src in images
            if alt is None or PLACEHOLDER_ALT.search(alt)]


def describe(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} node(s)): {v['help']} "
                     f"<{v['url']}>")
        for node in v["nodes"][:SHOWN_NODES]:
            lines.append(f"    at {node['target']}: {node['html'][:160]}")
        why = " ".join((v["nodes"][0]["why"] or "").split()) if v["nodes"] else ""
        if why:
            lines.append(f"    (first: {why[:240]})")
        if len(v["nodes"]) > SHOWN_NODES:
            lines.append(f"    ... and {len(v['nodes']) - SHOWN_NODES} more")
    return "\n".join(lines)


def assert_accessible(page, axe_script: str, where: str, scope: list[str] | None = None) -> None:
    """No violation and no placeholder description; every violation is also written in full to
    build/accessibility/<where>.json (git-ignored) for whoever fixes them."""
    violations = audit(page, axe_script, scope)
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', where)}.json").write_text(
        json.dumps(violations, indent=1) + "\n", encoding="utf-8")
    placeholders = placeholder_images(page, scope)
    problems = []
    if violations:
        problems.append(f"{len(violations)} WCAG 2.1 AA rule(s) violated:\n" + describe(violations))
    if placeholders:
        problems.append(f"{len(placeholders)} image(s) without a real description:\n    "
                        + "\n    ".join(placeholders[:10]))
    if problems:
        pytest.fail(f"{where}:\n" + "\n".join(problems), pytrace=False)


def settle(page) -> None:
    """Wait until images are decoded and MathJax (where the page has it) has typeset."""
    page.wait_for_function("[...document.images].every((img) => img.complete)")
    if page.evaluate("!!(window.MathJax && MathJax.startup && MathJax.startup.promise)"):
        page.evaluate("MathJax.startup.promise")


@pytest.mark.parametrize("name", SITE_PAGES)
def test_every_page_of_the_reading_site(name, served, browser_page, axe_script):  # noqa: F811
    open_page(browser_page, served, name)
    settle(browser_page)
    assert_accessible(browser_page, axe_script, f"the reading site's {name}")


def test_a_feedback_page(browser_page, axe_script):  # noqa: F811
    """The feedback of a graded sample with failed checks, rendered by the course's exporter
    from its committed autograded notebook (what `make grade` writes into feedback/)."""
    student, notebook = FEEDBACK_OF
    nb = graded_notebook(student, notebook)
    resources = {"nbgrader": {"notebook": notebook, "student": student, "assignment": SERIES,
                              "score": 0.0, "max_score": 24.0, "late_penalty": 0.0}}
    nb, resources = ReadableFeedback().preprocess(nb, resources)
    html, _ = FeedbackExporter().from_notebook_node(nb, resources=resources)
    browser_page.set_content(html, wait_until="load")
    settle(browser_page)
    assert_accessible(browser_page, axe_script, f"the feedback page of {student}/{notebook}")


def test_the_class_report(browser_page, axe_script, tmp_path):  # noqa: F811
    """The class report of the committed sample class (what `make grade` writes into reports/)."""
    release = read_release(ROOT)
    page = write_class_report(ClassData(release, read_autograded(ROOT, release), "test"),
                              tmp_path)
    browser_page.set_content(page.read_text(encoding="utf-8"), wait_until="load")
    settle(browser_page)
    lab.shoot(browser_page, "a11y-class-report", full_page=True)
    assert_accessible(browser_page, axe_script, "the class report")


@pytest.fixture(scope="module")
def student_kit(tmp_path_factory):
    """A course copy whose student kit holds notebook 1 answered (the reference sample's)."""
    course = copy_course(tmp_path_factory.mktemp("a11y") / "course")
    answered = nbformat.read(course / "submitted" / "reference" / SERIES
                             / f"{LAB_NOTEBOOK}.ipynb", as_version=4)
    answered.metadata["language_info"] = kernel_language_info()
    (course / WORK / SERIES).mkdir(parents=True)
    nbformat.write(answered, course / WORK / SERIES / f"{LAB_NOTEBOOK}.ipynb")
    ensure_work_copies(course)  # the other notebooks, as the release has them
    return course


def test_a_notebook_run_in_a_students_lab(student_kit, browser_page, axe_script):  # noqa: F811
    page = browser_page  # one browser per module (the lab is on 127.0.0.1 too)
    with lab.serve_lab(student_kit, student_kit.parent / "lab", role=STUDENT) as url:
        lab.open_notebook(page, url, f"{SERIES}/{LAB_NOTEBOOK}.ipynb")
        lab.run_all(page)
        errors = lab.error_outputs(page)
        assert errors.count() == 0, f"a cell failed:\n{errors.first.inner_text()}"
        assert page.locator(f"{IN_NOTEBOOK} .jp-OutputArea-output img").count() >= 1, (
            f"{LAB_NOTEBOOK} shows no figure after Run All")
        settle(page)
        assert_accessible(page, axe_script, f"{LAB_NOTEBOOK} run in a student's lab",
                          scope=COURSE_CONTENT)
