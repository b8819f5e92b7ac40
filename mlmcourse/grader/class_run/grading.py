"""The TA's grading run: autograde every submission, write feedback, report the scores.

`autograde` grades a class through `grader.class_run.coordinator` (the grading engine on a Dask
cluster, one coordinator that writes the gradebook and `autograded/`), then writes readable feedback
with
nbgrader's own `generate_feedback` (`grader.results.feedback`). The gradebook is nbgrader's: SQLite
by default (`gradebook.db`), or any database nbgrader's `db_url` names (PostgreSQL for many
graders), taken from `--db-url` or `c.CourseDirectory.db_url` in nbgrader_config.py: the run's
`grader.config.GradingConfig`, resolved once and passed down.

The score table and grades.csv render `Score` rows read back from the gradebook, not this run's
verdicts: the gradebook also holds a TA's manual grades and the students this run did not
grade. Its automatic points are the engine's `Verdict`s, as the one gradebook writer recorded
them; nothing here decides pass or fail.
"""

from __future__ import annotations

import contextlib
import csv
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from mlmcourse.course.layout import assignments as course_assignments
from mlmcourse.course.layout import notebook_names
from mlmcourse.grader.class_run import coordinator
from mlmcourse.grader.config import GradingConfig, nbgrader_converter, run_converter


@dataclass(frozen=True)
class Score:
    """One student's points in one notebook: a row of the score table and of grades.csv."""

    student: str
    notebook: str
    score: float  # after the late penalty, as nbgrader's export counts it
    max_score: float
    late_penalty: float = 0.0  # what the course's late policy took (nbgrader's gradebook)
    late_seconds: float = 0.0  # how late the submission was (0: on time, or no due date)
    assignment: str = ""


class GradingError(RuntimeError):
    """Some submissions could not be graded (the grader failed, not the student)."""

    def __init__(self, failed: dict[str, str], outcome=None):
        self.failed = dict(failed)
        self.outcome = outcome  # what was graded all the same (a ClassOutcome)
        lines = [f"  {student}: {why}" for student, why in sorted(self.failed.items())]
        super().__init__(
            f"{len(self.failed)} submission(s) could not be graded; their earlier grades, if any, "
            "are left as they were (run the grading again):\n" + "\n".join(lines)
        )


def submitted_students(root: Path, assignment: str | None = None) -> list[str]:
    """The students with a folder of `assignment` (default: of any assignment of the course)
    under submitted/."""
    folder = root / "submitted"
    if not folder.is_dir():
        return []
    wanted = [assignment] if assignment else course_assignments(root)
    return sorted(p.name for p in folder.iterdir()
                  if any((p / name).is_dir() for name in wanted))


def not_graded(root: Path) -> list[str]:
    """Folders under submitted/<student>/ that are no assignment of source/ (a typo, an
    assignment not yet in source/): `make grade` names each one instead of skipping it."""
    folder = root / "submitted"
    known = set(course_assignments(root))
    if not folder.is_dir():
        return []
    return sorted(f"submitted/{student.name}/{inner.name}"
                  for student in folder.iterdir() if student.is_dir()
                  for inner in student.iterdir()
                  if inner.is_dir() and inner.name not in known
                  and not inner.name.startswith("."))


def warn_not_graded(root: Path) -> list[str]:
    """One warning line on stderr per folder `not_graded` finds; the folders."""
    unknown = not_graded(root)
    for path in unknown:
        known = ", ".join(course_assignments(root)) or "none"
        print(f"grade: warning: {path} is not graded: no assignment of that name in source/ "
              f"(the assignments: {known})", file=sys.stderr)
    return unknown


# ---- grading, feedback, scores ------------------------------------------------------------------


def autograde(
    course: GradingConfig | Path,
    students: list[str] | None = None,
    *,
    assignments: list[str] | None = None,
    progress: bool | None = None,
) -> list[coordinator.ClassOutcome]:
    """Autograde and generate feedback for the given students (default: every submission) of
    the given assignments (default: every assignment of source/ that has a submission), one
    assignment after another on one cluster; one `ClassOutcome` per assignment.

    `course`: the run's configuration, or the course root (its configuration is loaded).
    Grades go to the gradebook, notebooks to autograded/<student>/<assignment>/, feedback to
    feedback/<student>/<assignment>/. A folder under submitted/<student>/ that is no
    assignment is named on stderr. Raises `GradingError` after everything else is written when
    some submissions could not be graded at all (the grader failed, not the student)."""
    config = GradingConfig.of(course)
    warn_not_graded(config.root)
    runs = {name: list(students) if students else submitted_students(config.root, name)
            for name in assignments or course_assignments(config.root)}
    runs = {name: chosen for name, chosen in runs.items() if chosen}
    outcomes = []
    with contextlib.ExitStack() as stack:
        client = None
        if len(runs) > 1:  # one cluster for every assignment (its workers start once)
            client = stack.enter_context(coordinator.dask_client(config.workers,
                                                                 config.scheduler))
        for name, chosen in runs.items():
            outcome = coordinator.grade_class(config, chosen, assignment=name,
                                              progress=progress, client=client)
            outcome.assignment = name
            graded = [student for student in chosen if student not in outcome.failed]
            if graded:
                generate_feedback(config, graded, name)
            outcomes.append(outcome)
    failed = {f"{student} ({done.assignment})" if len(outcomes) > 1 else student: why
              for done in outcomes for student, why in done.failed.items()}
    if failed:
        raise GradingError(failed, outcomes)
    return outcomes


def needs_a_look(outcomes: list[coordinator.ClassOutcome]) -> list[str]:
    """One line per incident a TA should look at by hand (`verdict.Kind.needs_a_look`)."""
    lines = []
    for outcome in outcomes:
        lines += _needs_a_look(outcome, len(outcomes) > 1)
    return lines


def _needs_a_look(outcome: coordinator.ClassOutcome, named: bool) -> list[str]:
    lines = []
    where = f"{outcome.assignment}/" if named else ""
    for student, done in sorted(outcome.outcomes.items()):
        for verdict in done.verdicts:
            for incident in verdict.needs_a_look():
                lines.append(f"{student} / {where}{verdict.notebook}: {incident.kind.what}: "
                             f"{incident.detail}")
    return lines


def generate_feedback(course: GradingConfig | Path, students: list[str],
                      assignment: str | None = None) -> None:
    """nbgrader generate_feedback, once per assignment (default: every one), for these
    students: readable feedback (see feedback.py)."""
    config = GradingConfig.of(course)
    for name in [assignment] if assignment else course_assignments(config.root):
        _generate_feedback(config, students, name)


def _generate_feedback(config: GradingConfig, students: list[str], assignment: str) -> None:
    from nbgrader.converters import GenerateFeedback

    from mlmcourse.grader.results.feedback import FEEDBACK_PREPROCESSORS, FeedbackExporter

    folder = config.root / "autograded"
    present = {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()
    with_notebooks = {p.parent.parent.name for p in folder.glob(f"*/{assignment}/*.ipynb")}
    wanted = sorted(set(students) & with_notebooks)
    if not wanted:
        return
    settings = {
        "GenerateFeedback.preprocessors": list(FEEDBACK_PREPROCESSORS),
        "GenerateFeedback.exporter_class": FeedbackExporter,
        "GenerateFeedback.force": True,
        "CourseDirectory.assignment_id": assignment,
    }
    if len(wanted) == 1:
        settings["CourseDirectory.student_id"] = wanted[0]
    else:
        settings["CourseDirectory.student_id_exclude"] = ",".join(sorted(present - set(wanted)))
    run_converter(nbgrader_converter(GenerateFeedback, config, settings), "generate_feedback")


def read_scores(course: GradingConfig | Path) -> list[Score]:
    """Scores of every autograded notebook, from the gradebook: the points less the late
    penalty nbgrader's late policy recorded (`nbgrader export` subtracts it the same way)."""
    from nbgrader.api import MissingEntry

    config = GradingConfig.of(course)
    scores = []
    with config.gradebook() as gradebook:
        for assignment in course_assignments(config.root):
            names = notebook_names(config.root, assignment)
            for student in submitted_students(config.root, assignment):
                for name in names:
                    try:
                        nb = gradebook.find_submission_notebook(name, assignment, student)
                    except MissingEntry:
                        continue
                    penalty = float(nb.late_submission_penalty or 0.0)
                    late = float(nb.assignment.total_seconds_late or 0.0)
                    scores.append(Score(student, name, max(0.0, float(nb.score) - penalty),
                                        float(nb.max_score), penalty, late, assignment))
    return scores


TABLE_WIDTH = 100  # columns of the widest terminal the score table is made for
STUDENT_WIDTH = 28  # a longer student id is cut (with …) so that the table fits


def column_labels(notebooks: list[str]) -> dict[str, str]:
    """Short column labels: a notebook's number ("01" of "01_corruption") where the numbers
    tell them apart, else the name cut to 10 characters."""
    numbers = {name: _number(name) for name in notebooks}
    if len(set(numbers.values())) == len(notebooks):
        return numbers
    return {name: name[:10] for name in notebooks}


def _number(column: str) -> str:
    """ "01" of "01_corruption"; "second/01" of "second/01_intro" (several assignments)."""
    folder, _, name = column.rpartition("/")
    number = name.split("_", 1)[0]
    return f"{folder}/{number}" if folder else number


def score_table(scores: list[Score]) -> str:
    """A plain-text table that fits a terminal (about 80-100 columns for six notebooks): one row
    per student, one column per notebook (its number), the total and how late the submission
    was; then the class's means, and a legend of the columns."""
    several = len({s.assignment for s in scores}) > 1
    key = {s: f"{s.assignment}/{s.notebook}" if several else s.notebook for s in scores}
    notebooks = sorted(set(key.values()))
    students = sorted({s.student for s in scores})
    lookup = {(s.student, key[s]): s for s in scores}
    labels = column_labels(notebooks)
    rows = []
    for student in students:
        held = [lookup.get((student, name)) for name in notebooks]
        got = sum(s.score for s in held if s)
        out_of = sum(s.max_score for s in held if s)
        rows.append([_cut(student), *[f"{_fmt(s.score)}/{_fmt(s.max_score)}" if s else "-"
                                      for s in held], f"{_fmt(got)}/{_fmt(out_of)}",
                     _late_cell([s for s in held if s])])
    means = ["class mean"]
    for name in notebooks:
        column = [lookup[(st, name)] for st in students if (st, name) in lookup]
        means.append(_mean(column))
    means += [_mean_total(scores, students), ""]
    header = ["student", *[labels[name] for name in notebooks], "total", "late"]
    widths = [max(len(row[i]) for row in [header, *rows, means]) for i in range(len(header))]

    def line(row):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1])]
        return ("  ".join(cells) + "  " + row[-1]).rstrip()

    rule = "-" * min(TABLE_WIDTH, len(line(header)) + 6)
    lines = [line(header), rule, *map(line, rows), rule, line(means)]
    legend = ", ".join(f"{labels[name]} = {name}" for name in notebooks if labels[name] != name)
    if legend:
        lines += textwrap.wrap("columns: " + legend, width=TABLE_WIDTH, subsequent_indent="  ")
    if any(s.late_penalty for s in scores):
        lines.append("late: how late, and (-N) the late policy's penalty; the scores are after it")
    return "\n".join(lines)


def _cut(student: str) -> str:
    return student if len(student) <= STUDENT_WIDTH else student[:STUDENT_WIDTH - 1] + "…"


def _late_cell(held: list[Score]) -> str:
    seconds = max((s.late_seconds for s in held), default=0.0)
    if not seconds:
        return ""
    penalty = sum(s.late_penalty for s in held)
    return late_text(seconds) + (f" (-{_fmt(penalty)})" if penalty else "")


def _mean(column: list[Score]) -> str:
    if not column:
        return "-"
    return f"{_fmt(round(sum(s.score for s in column) / len(column), 1))}"


def _mean_total(scores: list[Score], students: list[str]) -> str:
    if not students:
        return "-"
    return f"{_fmt(round(sum(s.score for s in scores) / len(students), 1))}"


def late_text(seconds: float) -> str:
    """A delay as a TA reads it ('2 d 3 h', '5 h 10 min', '12 min'); '' when on time: the one
    spelling of the score table, the class report, the formgrader's notes and the export."""
    if not seconds or seconds <= 0:
        return ""
    minutes = max(1, int(round(seconds / 60)))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _fmt(value: float) -> str:
    return f"{value:g}"


def write_csv(scores: list[Score], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["assignment", "student", "notebook", "score", "max_score", "late",
                         "late_penalty"])
        for s in sorted(scores, key=lambda s: (s.assignment, s.student, s.notebook)):
            writer.writerow([s.assignment, s.student, s.notebook, _fmt(s.score), _fmt(s.max_score),
                             late_text(s.late_seconds), _fmt(s.late_penalty)])


# ---- the export for a school's system -----------------------------------------------------------

LMS_CSV = "grades-lms.csv"  # where nbgrader_config.py's c.ExportPlugin.to does not say


def export_for_lms(course: GradingConfig | Path) -> Path:
    """The gradebook as `grades-lms.csv`, through the plugin `nbgrader export` runs: the one
    nbgrader_config.py names (`c.ExportApp.plugin_class`: the course's
    `lms_export.RosterCsvExport`, one row per student of the roster and assignment).

    The file is nbgrader_config.py's `c.ExportPlugin.to`, relative to the course root."""
    from traitlets.utils.importstring import import_item

    config = GradingConfig.of(course)
    settings = config.nbgrader_config()
    named = settings.ExportApp.get("plugin_class", "nbgrader.plugins.CsvExportPlugin")
    plugin_class = import_item(named) if isinstance(named, str) else named
    plugin = plugin_class(config=settings)
    destination = config.root / (plugin.to or LMS_CSV)
    plugin.to = str(destination)
    with config.gradebook() as gradebook:
        plugin.export(gradebook)
    return destination
