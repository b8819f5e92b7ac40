"""The grades for the school's system, `grades-lms.csv`: one layout from every way in.

`nbgrader export` (a TA's terminal, the hub, `make export`) uses this plugin through
nbgrader_config.py's `c.ExportApp.plugin_class`, and `make grade` calls it directly
(`grading.export_for_lms`): nbgrader's CSV columns in nbgrader's order, then `submitted`,
`late` and `seconds_late`; a row for every student of the gradebook (the roster), whether or not
anything came; every time in UTC with its offset.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin

COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
           "email", "raw_score", "late_submission_penalty", "score", "max_score",
           "submitted", "late", "seconds_late"]


def with_zone(moment: datetime | None) -> str:
    """nbgrader keeps times in UTC without a zone; say so (ISO 8601, +00:00)."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def number(value) -> str:
    return "" if value is None else f"{float(value):g}"


def after_penalty(submission) -> float:
    """The score the school's system gets: raw (autograded and manual) less the late penalty."""
    return max(0.0, submission.score - (submission.late_submission_penalty or 0.0))


def final_score(gradebook: Gradebook, assignment: str, student: str) -> float:
    """One student's score for the LMS (0 when nothing was handed in), as grades-lms.csv has it."""
    try:
        return after_penalty(gradebook.find_submission(assignment, student))
    except MissingEntry:
        return 0.0


class RosterCsvExport(ExportPlugin):
    """nbgrader's CSV columns (same order), then `submitted` (yes / no: a student who handed
    nothing in still gets a row, with score 0 and no timestamp), `late` (yes / no) and
    `seconds_late`. Times are UTC with their offset."""

    def export(self, gradebook: Gradebook) -> None:
        destination = self.to or "grades.csv"
        self.log.info("Exporting grades to %s (times in UTC)", destination)
        students = [str(s) for s in self.student]
        assignments = [str(a) for a in self.assignment]
        with open(destination, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    writer.writerow(self.row(gradebook, assignment, student))

    def row(self, gradebook: Gradebook, assignment, student) -> list[str]:
        row = {"assignment": assignment.name, "duedate": with_zone(assignment.duedate),
               "student_id": student.id, "last_name": student.last_name or "",
               "first_name": student.first_name or "", "email": student.email or "",
               "max_score": number(assignment.max_score)}
        try:
            submission = gradebook.find_submission(assignment.name, student.id)
        except MissingEntry:
            row.update(timestamp="", raw_score="0", late_submission_penalty="0", score="0",
                       submitted="no", late="no", seconds_late="")
        else:
            penalty = submission.late_submission_penalty or 0.0
            late = (submission.total_seconds_late or 0) > 0
            row.update(timestamp=with_zone(submission.timestamp),
                       raw_score=number(submission.score),
                       late_submission_penalty=number(penalty),
                       score=number(after_penalty(submission)),
                       submitted="yes", late="yes" if late else "no",
                       seconds_late=f"{submission.total_seconds_late or 0:.0f}")
        return [row[column] for column in COLUMNS]
