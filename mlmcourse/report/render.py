"""The class report as one self-contained HTML page (templates/class_report.html.j2)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from mlmcourse.grader.class_run.grading import late_text
from mlmcourse.report.figures import score_histograms

TEMPLATES = Path(__file__).parent / "templates"
MAX_LISTED = 40  # students named in one group before "and N more" (the CSV lists them all)
MAX_PAIRS = 60  # pairs shown side by side, the closest first (similar.csv lists them all)


def code_spans(text: str) -> str:
    """A check's heading as HTML: escaped, its `code spans` as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def render_page(report) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(["html", "j2"]))
    env.filters["code_spans"] = code_spans
    env.filters["late"] = late_text
    data = report.data
    students = sorted(data.students.values(), key=lambda s: s.student)
    submitted = [s for s in students if s.submitted]
    late = [s for s in submitted if s.late_seconds > 0]
    failing = sorted((c for c in report.checks if c.failed), key=lambda c: -c.failed)
    return env.get_template("class_report.html.j2").render(
        data=data, report=report, students=students, submitted=submitted, late=late,
        not_submitted=[s for s in students if not s.submitted], failing=failing,
        histograms=score_histograms(data), max_listed=MAX_LISTED,
        pairs=report.similarity.pairs[:MAX_PAIRS], more_pairs=max(
            0, len(report.similarity.pairs) - MAX_PAIRS),
        total_points=sum(data.release.max_scores.values()),
    )
