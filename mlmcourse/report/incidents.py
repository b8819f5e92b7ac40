"""What went wrong on the way, per student: the grader's incidents, with what it did about each."""

from __future__ import annotations

from dataclasses import dataclass

from mlmcourse.report.collect import ClassData

# kind (as the engine records it, `grader.results.NotebookResult.incidents`) -> (what it is,
# what the grader did)
KINDS = {
    "tamper": ("reached into the grader",
               "the checks that rest on the worker's claims earned nothing; the rest stand"),
    "timeout": ("a call ran past its time limit",
                "stopped it; that check failed, the others ran"),
    "budget": ("the notebook's time budget ran out", "stopped the student's code; the checks "
               "still to run failed"),
    "crash": ("the process running the student's code died (a crash, or a memory or output cap)",
              "started a fresh one for the next checks; the check it died in failed"),
    "setup": ("the grader's sandbox failed", "graded the notebook once more from scratch; "
              "look at it by hand"),
    "pasted": ("answer cells pasted with their nbgrader id", "graded the last copy of each"),
    "unreadable": ("a notebook that cannot be read", "graded it as not handed in"),
}


@dataclass(frozen=True)
class Incident:
    student: str
    notebook: str
    kind: str
    what: str
    action: str
    detail: str


def incidents(data: ClassData) -> list[Incident]:
    found = []
    for student in sorted(data.students):
        for name, submission in sorted(data.students[student].submissions.items()):
            for incident in submission.incidents:
                kind = str(incident.get("kind", "?"))
                what, action = KINDS.get(kind, (kind, ""))
                found.append(Incident(student, name, kind, what, action,
                                      str(incident.get("detail", ""))))
    return found
