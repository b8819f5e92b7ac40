"""Feedback a student can read: which checks failed and why, not the hidden tests' source.

`nbgrader generate_feedback` turns each autograded notebook into HTML. Its default shows every
test cell in full (the hidden tests with it), a traceback through the tests' own code for each
failure, and 500 KB of inlined CSS per file. Here it runs with two parts of ours:

- `ReadableFeedback`, a preprocessor that runs after nbgrader's `GetGrades` (which fills in the
  scores from the gradebook): each graded test cell keeps only its visible part (the one-line
  docstring of what it checks) and each error output only its message; a summary of the checks
  (what each checks, points, why it failed) goes into the resources for the template;
- `FeedbackExporter`, an HTML exporter with a compact template: the summary table first, then
  the notebook as graded, with small CSS of its own (a file is tens of KB, not hundreds).

The same two can serve a TA's own `nbgrader generate_feedback` through nbgrader_config.py:
`c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades",
"mlmcourse.grader.feedback.ReadableFeedback"]` and
`c.GenerateFeedback.exporter_class = "mlmcourse.grader.feedback.FeedbackExporter"`.
"""

from __future__ import annotations

import ast
import re

import nbformat
from jinja2 import DictLoader
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, default

from mlmcourse.course.cells import TIMING_TAG, has_tag, is_graded, is_solution, without_hidden_tests

TEMPLATE_FILE = "mlm_feedback.html.j2"
HIDDEN_NOTE = "# (the hidden tests of this check ran here; they are not shown in the feedback)"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Outputs that mean nothing in a static page (and carry random ids): live widgets, scripts.
_DROPPED_MIME = ("application/vnd.jupyter.widget-view+json", "application/javascript")
MAX_TEXT = 4000  # characters of one text output kept in the feedback


def plain(text: str) -> str:
    return _ANSI.sub("", text)


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


def failure_message(cell) -> str:
    """Why a test cell failed, in the words of its assertion (or what went wrong around it)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            message = f"{output.get('ename', 'Error')}: {plain(output.get('evalue', ''))}"
            return message.strip().rstrip(":")
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            first = plain(output.get("text", "")).strip().splitlines()[:1]
            return "the check wrote to stderr: " + (first[0] if first else "")
    if cell.get("execution_count") is None:
        return "this check did not run (the notebook stopped before it)"
    return ""


def short_output(output):
    """An output as the feedback shows it: errors as their message, no widgets or scripts."""
    kind = output.get("output_type")
    if kind == "error":
        message = f"{output.get('ename', 'Error')}: {plain(output.get('evalue', ''))}"
        output["traceback"] = [clip(message.rstrip().rstrip(":"))]
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


TEMPLATE = r"""
{%- extends 'nbconvert/templates/classic/index.html.j2' -%}

{%- macro fmt(value) -%}{{ '%g' | format(value | float) }}{%- endmacro -%}

{%- block header -%}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{{ resources.nbgrader.notebook }}: feedback for {{ resources.nbgrader.student }}</title>
<style type="text/css">
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 60rem; margin: 1rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
main > h2 { font-size: 1.15rem; }
ul.tofix li { color: #a4161a; margin: .2rem 0; }
.who { color: #555; margin-top: 0; }
table.checks { border-collapse: collapse; width: 100%; margin: 1rem 0 2rem; }
table.checks th, table.checks td { border-bottom: 1px solid #ddd; padding: .35rem .5rem;
       text-align: left; vertical-align: top; }
table.checks td.points { white-space: nowrap; text-align: right; }
tr.failed td.result { color: #a4161a; }
tr.passed td.result { color: #2b7a0b; }
td code, .label code { font-size: .85em; }
.cell { margin: .6rem 0; }
.prompt { display: none; }
.input_area, .output_area pre { border-radius: 4px; }
.input_area { background: #f7f7f7; border: 1px solid #e3e3e3; padding: .4rem .6rem;
       overflow-x: auto; }
.input_area pre, .output_area pre { margin: 0; font: 13px/1.4 ui-monospace, Menlo, Consolas,
       monospace; white-space: pre-wrap; }
.output_area { padding: .3rem .6rem; }
.output_error pre { color: #a4161a; }
.output_stderr pre { color: #8a5a00; }
.output_area img { max-width: 100%; }
.graded { border: 1px solid #bcd; border-radius: 6px; }
.graded.failed { border-color: #e5a3a3; }
.graded .label { background: #eef3f8; padding: .25rem .6rem; border-radius: 6px 6px 0 0;
       display: flex; justify-content: space-between; font-size: .9rem; }
.graded.failed .label { background: #fbeaea; }
.graded .body { padding: .4rem; }
.comment { padding: .3rem .6rem; font-size: .9rem; background: #fffbe6; }
{{ resources.mlm_feedback.css }}
</style>
{{ mathjax(resources.mathjax_url) }}
</head>
{%- endblock header -%}

{% block body_header %}
<body>
<main>
<h1>{{ resources.nbgrader.notebook }}:
{{ fmt(resources.nbgrader.score) }} / {{ fmt(resources.nbgrader.max_score) }} points</h1>
<p class="who">Feedback for <b>{{ resources.nbgrader.student }}</b>, assignment
<code>{{ resources.nbgrader.assignment }}</code>.
{%- if resources.nbgrader.late_penalty > 0 %} Late submission penalty:
-{{ fmt(resources.nbgrader.late_penalty) }} points.{% endif %}</p>
{%- set checks = resources.mlm_feedback.checks %}
{%- set failed = checks | rejectattr('passed') | list %}
<p>{{ checks | length }} checks, {{ failed | length }} failed.
{%- if failed %} Each failed check says what to fix; the notebook as graded follows, with the
hidden tests left out.{% endif %}</p>
{%- if failed %}
<h2>To fix</h2>
<ul class="tofix">
{%- for check in failed %}
<li><a href="#{{ check.grade_id }}"><code>{{ check.grade_id }}</code></a>
({{ fmt(check.score) }} / {{ fmt(check.points) }}): {{ check.message | e }}</li>
{%- endfor %}
</ul>
<h2>All checks</h2>
{%- endif %}
<table class="checks">
<thead><tr><th>check</th><th>what it checks</th><th>points</th><th>result</th></tr></thead>
<tbody>
{%- for check in checks %}
<tr class="{{ 'passed' if check.passed else 'failed' }}">
<td><a href="#{{ check.grade_id }}"><code>{{ check.grade_id }}</code></a></td>
<td>{{ check.what | e }}</td>
<td class="points">{{ fmt(check.score) }} / {{ fmt(check.points) }}</td>
<td class="result">{% if check.passed %}passed{% else %}{{ check.message | e }}{% endif %}</td>
</tr>
{%- endfor %}
</tbody>
</table>
<div id="notebook">
{% endblock body_header %}

{% block body_footer %}
</div>
</main>
</body>
{% endblock body_footer %}

{%- macro label(cell) -%}
{%- set meta = cell.metadata.nbgrader -%}
<a id="{{ meta.grade_id }}"></a>
<div class="label"><span>
{%- if meta.solution %}Your answer <code>{{ meta.grade_id }}</code>
{%- else %}Check <code>{{ meta.grade_id }}</code>{% endif -%}
</span>
{%- if meta.grade %}<span>{{ fmt(meta.score) }} / {{ fmt(meta.points) }}</span>{% endif -%}
</div>
{%- endmacro -%}

{%- macro comment(cell) -%}
{%- if cell.metadata.nbgrader.comment -%}
<div class="comment"><b>Comment:</b> {{ cell.metadata.nbgrader.comment | e }}</div>
{%- endif -%}
{%- endmacro -%}

{%- macro graded_class(cell) -%}
{%- set meta = cell.metadata.nbgrader -%}
graded{% if meta.grade and (meta.score | float) < (meta.points | float) %} failed{% endif %}
{%- endmacro -%}

{% block codecell %}
{%- set meta = cell.metadata.get('nbgrader', {}) -%}
{%- if meta.solution or meta.grade -%}
<div class="cell code_cell {{ graded_class(cell) }}">
{{ label(cell) }}
<div class="body">{{ super() }}</div>
{{ comment(cell) }}
</div>
{%- else -%}
{{ super() }}
{%- endif -%}
{%- endblock codecell %}

{% block markdowncell scoped %}
{%- set meta = cell.metadata.get('nbgrader', {}) -%}
{%- if meta.solution or meta.grade -%}
<div class="cell text_cell {{ graded_class(cell) }}">
{{ label(cell) }}
<div class="body text_cell_render rendered_html">
{{ cell.source | markdown2html | strip_files_prefix }}
</div>
{{ comment(cell) }}
</div>
{%- else -%}
<div class="cell text_cell rendered_html">
{{ cell.source | markdown2html | strip_files_prefix }}
</div>
{%- endif -%}
{%- endblock markdowncell %}

{% block input %}
<div class="input_area">
{{ cell.source | highlight_code(metadata=cell.metadata) }}
</div>
{%- endblock input %}
"""


class FeedbackExporter(HTMLExporter):
    """HTML feedback with the compact template above (no inlined notebook CSS or bootstrap)."""

    @default("extra_loaders")
    def _extra_loaders_default(self):
        return [DictLoader({TEMPLATE_FILE: TEMPLATE})]

    @default("template_file")
    def _template_file_default(self):
        return TEMPLATE_FILE


FEEDBACK_PREPROCESSORS = [
    "nbgrader.preprocessors.GetGrades",
    "mlmcourse.grader.feedback.ReadableFeedback",
]
