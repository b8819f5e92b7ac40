"""The grading engine where nbgrader expects it: `EngineExecute` and `SaveVerdict`.

nbgrader's `autograde` (the command and the formgrader's "Autograde" button alike) runs
`Autograde.autograde_preprocessors` on each submitted notebook: nbgrader's `Execute` would run
the notebook, student code included, in the grader's own kernel, and `SaveAutoGrades` score every
graded cell by nbgrader's rule. nbgrader_config.py puts `EngineExecute` in `Execute`'s place and
`SaveVerdict` in `SaveAutoGrades`'s, and these grade by the very functions `make grade`'s Dask
task uses (`grader.class_run.coordinator`): `submission_files` reads the submission (as bytes,
the regular notebooks only), `grade_task` grades the notebook nbgrader asks for (student code in
the sandboxed student process, the hidden tests in a trusted kernel), `record` writes the verdict
through the one gradebook writer with the late policy; the settings are `GradingConfig`'s,
resolved from nbgrader's own configuration. So the two ways in cannot read a submission or a
setting differently. No output is forged and no checksum rewritten for nbgrader to read a score
back.

The engine rebuilds each notebook from source/ and the submitted file itself, so nbgrader's
sanitize step (its DeduplicateIds, OverwriteCells, ...) would only prepare a copy that is thrown
away: nbgrader_config.py runs none (a split or pasted answer cell can then not fail a student's
assignment in nbgrader's metadata checks). `SubmissionExporter` stays: a notebook nbgrader cannot
read is graded as not handed in, and the student's other notebooks are graded, instead of the
whole submission failing.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from mlmcourse.course import nbio
from mlmcourse.course.headings import check_headings
from mlmcourse.course.layout import assignments, notebook_names
from mlmcourse.grader.class_run.coordinator import (
    Outcome,
    course_snapshot,
    grade_task,
    graded_notebooks,
    record,
    submission_files,
)
from mlmcourse.grader.config import GradingConfig
from mlmcourse.grader.dialog import quiet_dialog, summary_line
from mlmcourse.grader.engine.rebuild import trusted_notebooks
from mlmcourse.grader.results.gradebook import submission_time
from mlmcourse.grader.results.verdict import Kind, Verdict, verdict_of

LOG_FILE = "mlmcourse_log_file"  # where EngineExecute tells SaveVerdict the full log went


class EngineExecute(NbGraderPreprocessor):
    """Grade one submitted notebook as `make grade` grades it (replaces `Execute`): the
    submission read by `coordinator.submission_files`, graded by `coordinator.grade_task` (the
    Dask task's function, run here in-process) with the settings `GradingConfig` resolves from
    nbgrader's configuration; the notebook handed on is the engine's autograded one, its
    `Verdict` in its metadata."""

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        info = resources["nbgrader"]
        student, assignment, name = info["student"], info["assignment"], info["notebook"]
        coursedir = self.course_directory()
        config = GradingConfig.from_nbgrader(self.config, Path(coursedir.root), info["db_url"])
        root = config.root
        if assignment not in assignments(root):
            raise ValueError(f"{assignment!r} is no assignment of {root}/source/ (its "
                             f"assignments: {', '.join(assignments(root)) or 'none'})")
        if name not in notebook_names(root, assignment):
            raise ValueError(f"{name}.ipynb is not a notebook of {assignment} in {root}")
        folder = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
        submitted = submission_files(root, student, assignment=assignment, folder=folder)
        with quiet_dialog(self.log, root, student) as log_file:
            # the grader's failure (not the student's) raises: nbgrader reports this notebook
            # as failed and keeps its earlier grades, instead of recording a zero
            outcome = grade_task(course_snapshot(root), student, submitted, [name],
                                 config.limits, config.sandbox, assignment)
        [verdict] = outcome.verdicts
        resources[LOG_FILE] = str(log_file.relative_to(root))
        return graded_notebook(outcome, verdict, root), resources

    def course_directory(self) -> CourseDirectory:
        """nbgrader's CourseDirectory of the converter running this preprocessor (the exporter's
        parent); one read from the same configuration when there is none."""
        owner = self.parent
        while owner is not None:
            coursedir = getattr(owner, "coursedir", None)
            if isinstance(coursedir, CourseDirectory):
                return coursedir
            owner = getattr(owner, "parent", None)
        return CourseDirectory(config=self.config)


class SaveVerdict(NbGraderPreprocessor):
    """nbgrader's `SaveAutoGrades` for the course: the engine's verdict into the gradebook by
    `coordinator.record`, the function `make grade` records with (the course's one writer, the
    late policy). Nothing is read from the cells' outputs."""

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        info = resources["nbgrader"]
        student, assignment = info["student"], info["assignment"]
        verdict = verdict_of(nb)
        if verdict is None:
            raise RuntimeError(f"{student}/{info['notebook']}: no verdict to save (SaveVerdict "
                               "must follow EngineExecute)")
        root = Path(EngineExecute(parent=self.parent, config=self.config)
                    .course_directory().root)
        config = GradingConfig.from_nbgrader(self.config, root, info["db_url"])
        with Gradebook(info["db_url"]) as gradebook:
            record(gradebook, config, Outcome(student, [verdict], assignment=assignment))
            late = seconds_late(gradebook, assignment, student)
        verdict.attach(nb)
        titles = {gid: heading.title for gid, heading in check_headings(nb).items()}
        self.log.info(summary_line(verdict, titles, resources.get(LOG_FILE, ""), late))
        for incident in verdict.incidents:
            if incident.kind.needs_a_look:
                self.log.warning("%s/%s needs a look: %s: %s", student, verdict.notebook,
                                 incident.kind.what, incident.detail)
            elif incident.kind is Kind.PASTED:  # how a split or pasted answer was read
                self.log.warning("%s/%s: %s", student, verdict.notebook, incident.detail)
        return nb, resources


def seconds_late(gradebook, assignment: str, student: str) -> float:
    """How late the gradebook says the submission is (0: on time, no due date, not recorded)."""
    try:
        return float(gradebook.find_submission(assignment, student).total_seconds_late or 0.0)
    except MissingEntry:
        return 0.0


def graded_notebook(outcome: Outcome, verdict: Verdict, root: Path) -> nbformat.NotebookNode:
    """The notebook the engine graded, as `make grade` records it (`coordinator.as_recorded`);
    when the engine wrote none, the source notebook with the release's stubs, unrun, carrying
    the verdict."""
    graded = graded_notebooks(outcome).get(verdict.notebook)
    if graded is None:
        source = nbio.read(root / "source" / outcome.assignment / f"{verdict.notebook}.ipynb")
        graded, _ = trusted_notebooks(source, None)
    verdict.attach(graded)
    return graded


# ---- a notebook nbgrader cannot read --------------------------------------------------


class SubmissionExporter(NotebookExporter):
    """nbgrader's notebook exporter for `autograde`, which grades a notebook that cannot be read
    as not handed in (0 points, as the engine and `make grade` give it) instead of failing: nbgrader
    stops a student's whole submission at such a file and grades none of their other notebooks.
    The stand-in is an empty notebook; `EngineExecute` then grades the submitted file itself and
    finds it unreadable, as `make grade` does."""

    def from_file(self, file_stream, resources=None, **kw):
        try:
            nb = nbformat.read(file_stream, as_version=4)
        except Exception as err:  # noqa: BLE001  (truncated, not JSON, not UTF-8, not a notebook)
            name = getattr(file_stream, "name", "the notebook")
            self.log.warning("%s cannot be read as a notebook (%s: %s); it is graded as not "
                             "handed in", name, type(err).__name__, str(err)[:200])
            nb = nbformat.v4.new_notebook()
        return self.from_notebook_node(nb, resources=resources, **kw)


# ---- the submission's time -------------------------------------------------------------------


def _existing_timestamp(coursedir: CourseDirectory, dest_path: str):
    """nbgrader's `CourseDirectory.get_existing_timestamp` by the course's rule
    (`gradebook.submission_time`): nbgrader's own fails the whole class on a timestamp.txt that
    is not a time (it calls a `fail` that CourseDirectory does not have) and counts an empty one
    as on time. nbgrader has no setting for it, so the method is replaced when nbgrader loads
    this module (nbgrader_config.py names its classes, before any submission is read)."""
    return submission_time(Path(dest_path), coursedir.log)


CourseDirectory.get_existing_timestamp = _existing_timestamp
