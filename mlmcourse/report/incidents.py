"""What went wrong on the way, per student: the grader's incidents, with what it did about each."""

from __future__ import annotations

from dataclasses import dataclass

from mlmcourse.grader.results.verdict import Kind
from mlmcourse.report.collect import ClassData


@dataclass(frozen=True)
class Incident:
    student: str
    notebook: str
    kind: Kind
    what: str
    action: str
    detail: str


def incidents(data: ClassData) -> list[Incident]:
    found = []
    for student in sorted(data.students):
        for name, submission in sorted(data.students[student].submissions.items()):
            for incident in submission.incidents:
                kind = incident.kind
                found.append(Incident(student, name, kind, kind.what, kind.action,
                                      incident.detail))
    return found
