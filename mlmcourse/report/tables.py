"""The report's tables as CSV files, one per table of the page."""

from __future__ import annotations

import csv
from pathlib import Path

from mlmcourse.grader.class_run.grading import late_text
from mlmcourse.grader.results.verdict import Status


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_tables(report, folder: Path) -> list[Path]:
    """scores.csv, checks.csv (one row per cause group), incidents.csv, similar.csv, changes.csv
    of a `report.build.ClassReport`."""
    data = report.data
    names = data.release.notebooks
    scores = [[s.student, *[_score(s.submissions.get(n)) for n in names],
               f"{sum(x.score for x in s.submissions.values()):g}",
               late_text(s.late_seconds), f"{s.late_penalty:g}"]
              for s in sorted(data.students.values(), key=lambda s: s.student)]
    checks = [[c.notebook, c.grade_id, c.title, c.graded, c.failed, len(g.students), g.cause,
               " ".join(g.students)] for c in report.checks for g in c.groups]
    return [
        write_csv(folder / "scores.csv", ["student", *names, "total", "late", "late_penalty"],
                  scores),
        write_csv(folder / "checks.csv", ["notebook", "grade_id", "check", "graded", "failed",
                                          "in_group", "cause", "students"], checks),
        write_csv(folder / "incidents.csv", ["student", "notebook", "kind", "what",
                                             "what_the_grader_did", "detail"],
                  [[i.student, i.notebook, i.kind, i.what, i.action, i.detail]
                   for i in report.incidents]),
        write_csv(folder / "similar.csv", ["notebook", "grade_id", "first", "second",
                                           "shared_fingerprints", "overlap"],
                  [[p.notebook, p.grade_id, p.first, p.second, p.shared, f"{p.overlap:.2f}"]
                   for p in report.similarity.pairs]),
        write_csv(folder / "changes.csv", ["student", "notebook", "before", "after",
                                           "now_failing", "now_passing"],
                  [[m.student, m.notebook, _num(m.before), _num(m.after),
                    " ".join(m.now_failing), " ".join(m.now_passing)] for m in report.moved]),
    ]


def _score(submission) -> str:
    if submission is None or submission.status is Status.MISSING:
        return ""
    return f"{submission.score:g}"


def _num(value) -> str:
    return "" if value is None else f"{value:g}"
