"""Feedback a student can read: which checks failed and why, not the hidden tests' source.

`nbgrader generate_feedback` turns each autograded notebook into HTML. Its default shows every
test cell in full (the hidden tests with it), a traceback through the tests' own code for each
failure, and 500 KB of inlined CSS per file. Here it runs with two parts of ours:

- `ReadableFeedback`, a preprocessor that runs after nbgrader's `GetGrades` (which fills in the
  scores from the gradebook): each graded test cell keeps only its visible part (the one-line
  docstring of what it checks) and each error output only its message; a summary of the checks
  (what each checks, points, why it failed) goes into the resources for the template;
- `FeedbackExporter`, an HTML exporter with a compact template
  (mlmcourse/grader/templates/mlm_feedback.html.j2): the summary table first, then the notebook
  as graded, with small CSS of its own (a file is tens of KB, not hundreds).

The same two can serve a TA's own `nbgrader generate_feedback` through nbgrader_config.py:
`c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades",
"mlmcourse.grader.feedback.ReadableFeedback"]` and
`c.GenerateFeedback.exporter_class = "mlmcourse.grader.feedback.FeedbackExporter"`.
"""

from __future__ import annotations

import ast
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
from mlmcourse.grader.results import error_line, failure_message

# The template is package data (mlmcourse/grader/templates/, see pyproject.toml).
TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE_FILE = "mlm_feedback.html.j2"
HIDDEN_NOTE = "# (the hidden tests of this check ran here; they are not shown in the feedback)"
HELPER_NOTE = "# (helpers for the hidden tests were defined here; they are not shown in feedback)"
# Outputs that mean nothing in a static page (and carry random ids): live widgets, scripts.
_DROPPED_MIME = ("application/vnd.jupyter.widget-view+json", "application/javascript")
MAX_TEXT = 4000  # characters of one text output kept in the feedback



def clip(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters not shown)"


def what_it_checks(source: str) -> str:
    """The one-line docstring a test cell opens with (the visible part), else ''."""
    visible = without_hidden_tests(source)
    try:
        tree = ast.parse(visible)
    except SyntaxError:
        return ""
    doc = ast.get_docstring(tree, clean=True) if tree.body else None
    return " ".join((doc or "").split())


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


class ReadableFeedback(Preprocessor):
    """Hide hidden-test source, shorten errors to their message, summarize the checks."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        checks = []
        for cell in nb.cells:
            if cell.cell_type == "code":
                outputs = [short_output(output) for output in cell.get("outputs", [])]
                cell.outputs = [output for output in outputs if output is not None]
                if has_tag(cell, TIMING_TAG) and cell.outputs:
                    # the same feedback on every rebuild (the build commits it)
                    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                           text=TIMING_NOTE)]
            if is_hidden_helper(cell):
                cell.source = (without_hidden_tests(cell.source) + "\n" + HELPER_NOTE).lstrip()
            if not is_graded(cell) or is_solution(cell):
                continue
            meta = cell.metadata.nbgrader
            score, points = float(meta.get("score") or 0), float(meta.get("points") or 0)
            message = "" if score >= points else failure_message(cell)
            if score < points and not message:
                message = "no points for this check (see the grader's comments)"
            checks.append({
                "grade_id": meta.get("grade_id", ""),
                "what": what_it_checks(cell.source),
                "score": score,
                "points": points,
                "passed": score >= points,
                "message": message,
            })
            shown = without_hidden_tests(cell.source)
            if shown != cell.source.rstrip():
                cell.source = (shown + "\n" if shown else "") + HIDDEN_NOTE
        resources["mlm_feedback"] = {"checks": checks, "css": _pygments_css()}
        return nb, resources


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


FEEDBACK_PREPROCESSORS = [
    "nbgrader.preprocessors.GetGrades",
    "mlmcourse.grader.feedback.ReadableFeedback",
]
