"""Feedback a student can read: which checks failed and why, not the hidden tests' source.

`nbgrader generate_feedback` turns each autograded notebook into HTML. Its default shows every
test cell in full (the hidden tests with it), a traceback through the tests' own code for each
failure, and 500 KB of inlined CSS per file. Here it runs with two parts of ours:

- `ReadableFeedback`, a preprocessor that runs after nbgrader's `GetGrades` (which fills in the
  scores from the gradebook, a TA's manual grades included): each graded test cell keeps only
  its visible part (the one-line docstring of what it checks) and each error output only its
  message; a summary of the checks (each named by the notebook's heading above it, what it
  checks, points, and why it failed: the message of the engine's verdict) goes
  into the resources for the template, and a notebook whose every check failed on an unwritten
  function (`NotImplementedError`) is summed up in one "not attempted" line;
- `FeedbackExporter`, an HTML exporter with a compact template
  (mlmcourse/grader/results/templates/mlm_feedback.html.j2): the summary table first, then the
  notebook as graded, with small CSS of its own (a file is tens of KB, not hundreds).

The same two can serve a TA's own `nbgrader generate_feedback` through nbgrader_config.py:
`c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades",
"mlmcourse.grader.results.feedback.ReadableFeedback"]` and
`c.GenerateFeedback.exporter_class = "mlmcourse.grader.results.feedback.FeedbackExporter"`.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
from jinja2 import FileSystemLoader
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, default

from mlmcourse.course.cells import (
    TIMING_TAG,
    has_tag,
    is_graded,
    is_hidden_helper,
    is_solution,
    without_hidden_tests,
)
from mlmcourse.course.headings import check_headings
from mlmcourse.grader.limits import CAPS
from mlmcourse.grader.results.verdict import error_line, verdict_of

# The template is package data (mlmcourse/grader/results/templates/, see pyproject.toml).
TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE_FILE = "mlm_feedback.html.j2"
HIDDEN_NOTE = "# (the hidden tests of this check ran here; they are not shown in the feedback)"
HELPER_NOTE = "# (helpers for the hidden tests were defined here; they are not shown in feedback)"
# Outputs that mean nothing in a static page (and carry random ids): live widgets, scripts.
_DROPPED_MIME = ("application/vnd.jupyter.widget-view+json", "application/javascript")
UNWRITTEN = "NotImplementedError"  # what a release stub raises until the student writes it


def clip(text: str, limit: int = CAPS.feedback_output_chars) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters not shown)"


def short_output(output):
    """An output as the feedback shows it: errors as their message, no widgets or scripts."""
    kind = output.get("output_type")
    if kind == "error":
        output["traceback"] = [clip(error_line(output))]
    elif kind == "stream":
        output["text"] = clip(output.get("text", ""))
    elif kind in ("display_data", "execute_result"):
        data = output.get("data", {})
        for mime in _DROPPED_MIME:
            data.pop(mime, None)
        if not data:
            return None
        if "text/plain" in data and isinstance(data["text/plain"], str):
            data["text/plain"] = clip(data["text/plain"])
    return output


TIMING_NOTE = "(timings: they change from run to run, so the feedback leaves them out)\n"


# Written by the class report (`mlmcourse.report.build`), read here when c.Grading.class_feedback
# is set: {notebook: {grade_id: "34% of the class failed this check; ..."}} (no names).
CLASS_LINES = Path("reports") / "class-lines.json"


def class_lines(config, notebook: str) -> dict[str, str]:
    """The class's line for each check of `notebook`, when the course asks for them
    (c.Grading.class_feedback) and the class report has written them; else {}."""
    import json

    from nbgrader.coursedir import CourseDirectory

    from mlmcourse.grader.config import grading_settings

    if not grading_settings(config).class_feedback:
        return {}
    path = Path(CourseDirectory(config=config).root) / CLASS_LINES
    try:
        lines = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = lines.get(notebook, {}) if isinstance(lines, dict) else {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


class ReadableFeedback(Preprocessor):
    """Hide hidden-test source, shorten errors to their message, summarize the checks."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        headings = check_headings(nb)  # before the hidden tests are cut out of the cells
        notebook = resources.get("nbgrader", {}).get("notebook", "")
        in_class = class_lines(self.config, notebook) if notebook else {}
        verdict = verdict_of(nb)
        messages = {c.grade_id: c.message for c in verdict.checks} if verdict else {}
        checks = []
        for cell in nb.cells:
            if cell.cell_type == "code":
                shorten_outputs(cell)
            if is_hidden_helper(cell):
                cell.source = (without_hidden_tests(cell.source) + "\n" + HELPER_NOTE).lstrip()
            if is_graded(cell) and not is_solution(cell):
                checks.append(check_summary(cell, headings, messages))
                if not checks[-1]["passed"]:
                    checks[-1]["in_class"] = in_class.get(checks[-1]["grade_id"], "")
                shown = without_hidden_tests(cell.source)
                if shown != cell.source.rstrip():
                    cell.source = (shown + "\n" if shown else "") + HIDDEN_NOTE
        resources["mlm_feedback"] = {
            "checks": checks,
            "names": {check["grade_id"]: check["name"] for check in checks},
            "not_attempted": not_attempted(checks),
            "css": _pygments_css(),
        }
        return nb, resources


def shorten_outputs(cell) -> None:
    outputs = [short_output(output) for output in cell.get("outputs", [])]
    cell.outputs = [output for output in outputs if output is not None]
    if has_tag(cell, TIMING_TAG) and cell.outputs:
        # the same feedback on every rebuild (the build commits it)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=TIMING_NOTE)]


def check_summary(cell, headings: dict, messages: dict[str, str]) -> dict:
    """One row of the feedback's table: the check's name (its heading), what it checks, its
    score (the gradebook's) and why it failed (the verdict's message)."""
    meta = cell.metadata.nbgrader
    grade_id = meta.get("grade_id", "")
    score, points = float(meta.get("score") or 0), float(meta.get("points") or 0)
    message = "" if score >= points else messages.get(grade_id, "")
    if score < points and not message:
        message = "no points for this check (see the grader's comments)"
    heading = headings.get(grade_id)
    return {
        "grade_id": grade_id,
        "name": code_spans_html(heading.title if heading else grade_id),
        "what": heading.what if heading else "",
        "score": score,
        "points": points,
        "passed": score >= points,
        "message": message,
    }


def code_spans_html(text: str) -> str:
    """A heading's text as HTML: escaped, its `code spans` as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def not_attempted(checks: list[dict]) -> str | None:
    """One line for a notebook left blank (every check failed on `NotImplementedError`), said
    instead of the same failure once per check; None otherwise."""
    if not checks or any(check["passed"] or UNWRITTEN not in check["message"]
                         for check in checks):
        return None
    messages = {check["message"] for check in checks}
    if len(messages) == 1 and messages != {UNWRITTEN}:
        # one shared reason (notebook 4: "finish notebook 1 first") is worth saying once
        return f"Not attempted: all {len(checks)} checks failed with {messages.pop()}"
    return (f"Not attempted: all {len(checks)} checks failed because the functions still raise "
            f"{UNWRITTEN}. Fill in the cells marked YOUR CODE HERE, run the visible checks, "
            "then submit again.")


def _pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".highlight")


class FeedbackExporter(HTMLExporter):
    """HTML feedback with the compact template of templates/ (no inlined notebook CSS or
    bootstrap); it extends nbconvert's classic template."""

    @default("extra_loaders")
    def _extra_loaders_default(self):
        return [FileSystemLoader(TEMPLATES)]

    @default("template_file")
    def _template_file_default(self):
        return TEMPLATE_FILE

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter's conversion (nbconvert 7.17) without its last pass, which parses and
        re-serializes the whole page with BeautifulSoup, two thirds of the feedback's time, to
        mark JupyterLab-template cells focusable (this classic-based template has none) and to
        give an image with no alt text nbconvert's placeholder (kept, by a pattern)."""
        from nbconvert.exporters import TemplateExporter
        from nbconvert.filters.highlight import Highlight2HTML
        from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        self.register_filter("highlight_code", self.filters.get(
            "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return _IMAGE_WITHOUT_ALT.sub(f'<img alt="{NO_ALT_PLACEHOLDER}"', page), resources


# An <img> tag with no alt attribute, and what nbconvert says in its place.
_IMAGE_WITHOUT_ALT = re.compile(r"<img(?![^>]*\balt=)")
NO_ALT_PLACEHOLDER = "No description has been provided for this image"


FEEDBACK_PREPROCESSORS = [
    "nbgrader.preprocessors.GetGrades",
    "mlmcourse.grader.results.feedback.ReadableFeedback",
]
