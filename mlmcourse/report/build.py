"""The class report, built: collect, group, compare, render, into `reports/` of the course.

`write_report(config)` is what `make grade` and `python -m mlmcourse report` run: it reads the
gradebook and autograded/ (so it works after the formgrader's Autograde and after manual
grading too) and writes `reports/class-report.html` (one page, offline) with its CSV files.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlmcourse.grader.results.feedback import (
    CLASS_LINES,  # the feedback reads the class's lines there
)
from mlmcourse.report.changes import Moved, changes, rotate, snapshot
from mlmcourse.report.collect import ClassData, collect
from mlmcourse.report.groups import (
    CheckFailures,
    check_failures,
    class_lines,
    students_needing_help,
)
from mlmcourse.report.incidents import Incident, incidents
from mlmcourse.report.similarity import Similarity, similar_answers

REPORTS = CLASS_LINES.parent.name  # reports/ of the course root: the TA's side, not the kit's
PAGE = "class-report.html"


@dataclass
class ClassReport:
    data: ClassData
    checks: list[CheckFailures]
    incidents: list[Incident]
    similarity: Similarity
    moved: list[Moved] = field(default_factory=list)
    needs_help: list[tuple[str, float]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # time per step (the bench reads it)


def analyse(data: ClassData) -> ClassReport:
    """Everything the page shows, computed from the class once."""
    timer = _Timer()
    checks = timer("groups", check_failures, data)
    found = timer("incidents", incidents, data)
    similarity = timer("similarity", similar_answers, data)
    report = ClassReport(data, checks, found, similarity,
                         needs_help=students_needing_help(data))
    report.seconds = timer.seconds
    return report


def write_report(config, folder: Path | None = None) -> Path:
    """Collect the class of `config` (a `grader.config.GradingConfig`), write the page and its
    CSV files into `folder` (default: reports/ of the course root); returns the page's path."""
    folder = Path(folder) if folder else config.root / REPORTS
    return write_class_report(collect(config), folder)


def write_class_report(data: ClassData, folder: Path) -> Path:
    from mlmcourse.report.render import render_page
    from mlmcourse.report.tables import write_tables

    report = analyse(data)
    folder.mkdir(parents=True, exist_ok=True)
    report.moved = changes(rotate(folder, snapshot(data)), snapshot(data))
    write_tables(report, folder)
    write_class_lines(report, folder / CLASS_LINES.name)
    page = folder / PAGE
    page.write_text(render_page(report), encoding="utf-8")
    return page


def write_class_lines(report: ClassReport, path: Path) -> None:
    """{notebook: {grade_id: line}}: how common each check's failure was, no names (what the
    feedback shows when c.Grading.class_feedback is set)."""
    lines: dict[str, dict[str, str]] = {}
    for (notebook, grade_id), line in class_lines(report.checks).items():
        lines.setdefault(notebook, {})[grade_id] = line
    path.write_text(json.dumps(lines, indent=1, sort_keys=True), encoding="utf-8")


class _Timer:
    def __init__(self):
        self.seconds: dict[str, float] = {}

    def __call__(self, name, function, *args):
        started = time.perf_counter()
        value = function(*args)
        self.seconds[name] = time.perf_counter() - started
        return value
