"""The one gradebook writer: a `Verdict` into nbgrader's gradebook.

`make grade` (`grader.class_run.coordinator`) and nbgrader's own `autograde` (the command and the
formgrader's Autograde button, through `nbgrader_plugin.SaveVerdict` in place of nbgrader's
`SaveAutoGrades`) both write through `record_verdict`: each graded cell's `auto_score` is the
verdict's points, each answer cell's comment is "No response." exactly where the verdict says
so, and a check whose points rest on what the student's process reported is marked for a
manual look when the answers do something the grader cannot check (the formgrader then lists
the submission as needing grading). The late penalty is nbgrader's own `AssignLatePenalties`
with the course's policy, applied here on both paths and kept in the verdict.
"""

from __future__ import annotations

import logging
import stat
import warnings
from datetime import UTC, datetime
from pathlib import Path

from mlmcourse.grader.results.verdict import NO_RESPONSE, Verdict

TIMESTAMP_FILE = "timestamp.txt"  # nbgrader's: when the student submitted
_TIMESTAMP_BYTES = 1000  # a time is a line; a bigger file is not one
log = logging.getLogger("mlmcourse.grader.results.gradebook")


def submission_time(folder: Path, logger: logging.Logger | logging.LoggerAdapter = log
                    ) -> datetime | None:
    """When the submission in `folder` was handed in, by one rule on every way in (`make grade`
    and `nbgrader autograde`, whose own reading fails the class on a bad file): the time in
    nbgrader's timestamp.txt (naive UTC, as nbgrader keeps it); None when there is no such file
    (on time: nbgrader's own rule). A timestamp.txt that is empty, not a regular file, unreadable
    or not a time counts as handed in when it was last written (its modification time, never
    earlier than the submission), and the log says so: a broken file never makes a late
    submission count as on time, and never stops the class."""
    path = Path(folder) / TIMESTAMP_FILE
    try:
        info = path.lstat()
    except OSError:
        return None
    text = ""
    if stat.S_ISREG(info.st_mode) and info.st_size <= _TIMESTAMP_BYTES:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
    if text:
        from nbgrader.utils import parse_utc

        try:
            return parse_utc(text)
        except (ValueError, OverflowError, TypeError, AttributeError):
            pass
    written = datetime.fromtimestamp(info.st_mtime, UTC).replace(tzinfo=None)
    logger.warning("%s does not hold a time nbgrader can read (%r); the submission counts as "
                   "handed in when the file was last written, %s UTC", path, text[:80],
                   written.isoformat(sep=" ", timespec="seconds"))
    return written


def record_student(gradebook, student: str, timestamp=None, *, assignment: str) -> None:
    """The student and their submission of `assignment` in the gradebook (nbgrader's
    `autograde` does this itself before it grades; `make grade` calls it)."""
    known = gradebook.update_or_create_student(student)
    if known.first_name is None and known.last_name in (None, student):
        # The formgrader lists students as "last, first" and writes a missing name as "None".
        # A student not in the roster (`nbgrader db student import`) shows as "<id>, ".
        gradebook.update_or_create_student(student, last_name=student, first_name="")
    extra = {"timestamp": timestamp} if timestamp else {}
    with warnings.catch_warnings():
        # nbgrader 0.9's add_submission under SQLAlchemy 2 warns "... not in session, add
        # operation along ... will not proceed" for every new submission: noise, not an error.
        warnings.filterwarnings("ignore", message=".*not in session.*")
        gradebook.update_or_create_submission(assignment, student, **extra)


def record_verdict(gradebook, student: str, verdict: Verdict, *, assignment: str) -> None:
    """Write one verdict of a notebook of `assignment`: scores and "No response." (no point
    rests on what the student's process reports, so the grader sets no cell to manual
    grading)."""
    submitted = gradebook.find_submission_notebook(verdict.notebook, assignment, student)
    checks = {check.grade_id: check for check in verdict.checks}
    for grade in submitted.grades:
        check = checks.get(grade.name)
        grade.auto_score = float(check.points) if check is not None else 0.0
        # as nbgrader's SaveAutoGrades: a TA's manual score keeps the cell up for review
        grade.needs_manual_grade = grade.manual_score is not None
    for comment in submitted.comments:
        comment.auto_comment = NO_RESPONSE if comment.name in verdict.unanswered else None
    gradebook.db.commit()


def apply_late_policy(gradebook, nbgrader_config, db_url: str, student: str,
                      verdict: Verdict, *, assignment: str) -> None:
    """The course's late policy (nbgrader_config.py's `c.LateSubmissionPlugin.penalty_method`,
    `c.AssignLatePenalties.plugin_class`) on one graded notebook, by nbgrader's own
    `AssignLatePenalties`, which opens the gradebook itself: call it after `record_verdict`
    committed. The penalty goes into the gradebook and into `verdict.late_penalty` (read back
    through `gradebook`, refreshed first)."""
    from nbformat import v4
    from nbgrader.preprocessors import AssignLatePenalties

    resources = {"nbgrader": {"notebook": verdict.notebook, "assignment": assignment,
                              "student": student, "db_url": db_url}}
    AssignLatePenalties(config=nbgrader_config).preprocess(v4.new_notebook(), resources)
    gradebook.db.expire_all()
    held = gradebook.find_submission_notebook(verdict.notebook, assignment, student)
    verdict.late_penalty = float(held.late_submission_penalty or 0.0)
