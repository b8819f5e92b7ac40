"""What changed since the previous grading of the same class: scores that moved, and the checks
that moved them (a regrade after a fixed test, a late submission, a TA's manual grade).

Each report keeps a snapshot of the class (`snapshot`: per student and notebook, the score and
the checks failed) beside the page; the one before the last *different* grading is kept too, so
that building the report twice from the same grades still shows what the last regrade changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mlmcourse.grader.results.verdict import Status
from mlmcourse.report.collect import ClassData

SNAPSHOT = "snapshot.json"
PREVIOUS = "snapshot-previous.json"


def snapshot(data: ClassData) -> dict:
    return {
        "graded_at": data.graded_at,
        "scores": {
            student.student: {
                name: {"score": round(sub.score, 4),
                       "failed": sorted(t.grade_id for t in sub.tests if not t.passed)}
                for name, sub in sorted(student.submissions.items())
                if sub.status is not Status.MISSING
            }
            for student in sorted(data.students.values(), key=lambda s: s.student)
        },
    }


@dataclass
class Moved:
    student: str
    notebook: str
    before: float | None  # None: not graded before (a new or late submission)
    after: float | None
    now_failing: list[str] = field(default_factory=list)
    now_passing: list[str] = field(default_factory=list)


def rotate(folder: Path, current: dict) -> dict | None:
    """Write `current` as the latest snapshot in `folder`; return the one to compare with (the
    latest before, when it differs, else the previous one kept), or None on a first report."""
    latest, previous = folder / SNAPSHOT, folder / PREVIOUS
    folder.mkdir(parents=True, exist_ok=True)
    before = _read(latest)
    if before is not None and before["scores"] != current["scores"]:
        latest.replace(previous)
    latest.write_text(json.dumps(current, indent=1, sort_keys=True), encoding="utf-8")
    return _read(previous)


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data.get("scores"), dict) else None


def changes(before: dict | None, after: dict) -> list[Moved]:
    """Every (student, notebook) whose score or failed checks differ between two snapshots."""
    if before is None:
        return []
    moved = []
    old, new = before["scores"], after["scores"]
    for student in sorted(set(old) | set(new)):
        for name in sorted(set(old.get(student, {})) | set(new.get(student, {}))):
            was, now = old.get(student, {}).get(name), new.get(student, {}).get(name)
            if was == now:
                continue
            failed_before = set(was["failed"]) if was else set()
            failed_after = set(now["failed"]) if now else set()
            moved.append(Moved(student, name, was and was["score"], now and now["score"],
                               sorted(failed_after - failed_before),
                               sorted(failed_before - failed_after)))
    return moved
