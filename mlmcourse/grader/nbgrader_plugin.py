"""The grading engine where nbgrader expects it: `EngineExecute` and `SaveVerdict`.

nbgrader's `autograde` (the command and the formgrader's "Autograde" button alike) sanitizes a
submitted notebook, then runs `Autograde.autograde_preprocessors` on it: nbgrader's `Execute`
runs the notebook, student code included, in the grader's own kernel, and `SaveAutoGrades`
scores every graded cell by nbgrader's rule (an error or any stderr fails the cell).
nbgrader_config.py puts `EngineExecute` in `Execute`'s place and `SaveVerdict` in
`SaveAutoGrades`'s: the first grades the notebook with
`mlmcourse.grader.engine.submission.grade_submission` (student code in the sandboxed student
process, the hidden tests in a trusted kernel) and hands
on the engine's autograded notebook with its `Verdict`; the second writes that verdict through the
course's one gradebook writer (`grader.results.gradebook`), as `make grade` does, and applies the
late policy. No output is forged and no checksum rewritten for nbgrader to read a score back.

What the engine reads: the course root and the student's submitted folder (its sibling notebooks
too: notebook 04 imports the student's earlier answers), both from nbgrader's own
`CourseDirectory`. Nothing there is written: the engine copies what it needs into a temporary
scratch folder, removed afterwards. Its limits and sandbox mode are the course's `c.Grading`
settings (`grader.config.grading_settings`), the same `make grade` and `make check` read.

Three more pieces make nbgrader resolve a submission as the engine does (nbgrader_config.py names
them): `LastCopyOfEachCell` in place of nbgrader's `DeduplicateIds` (a split or pasted answer
cell: the assignment is graded instead of failed; the engine runs every copy in order),
`SourceOverwriteCells` (an answer cell pasted from another notebook is a plain cell, not a
failed assignment) and `SubmissionExporter` (a notebook that cannot be read is graded as not
handed in, and the student's other notebooks are graded, instead of the whole submission
failing).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, layout_notes
from mlmcourse.course.headings import check_headings
from mlmcourse.course.layout import assignments
from mlmcourse.grader.class_run.coordinator import as_recorded, portable_bytes
from mlmcourse.grader.config import grading_settings
from mlmcourse.grader.dialog import quiet_capture, quiet_dialog, summary_line
from mlmcourse.grader.engine.rebuild import trusted_notebooks
from mlmcourse.grader.engine.submission import autograded_path, grade_submission
from mlmcourse.grader.results.gradebook import apply_late_policy, record_verdict, submission_time
from mlmcourse.grader.results.verdict import Status, Verdict, verdict_of

LOG_FILE = "mlmcourse_log_file"  # where EngineExecute tells SaveVerdict the full log went


class EngineExecute(NbGraderPreprocessor):
    """Grade one submitted notebook with the course's sandboxed engine (replaces `Execute`):
    the notebook handed on is the engine's autograded one, its `Verdict` in its metadata. The
    limits and the sandbox mode are the course's `c.Grading` settings."""

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        info = resources["nbgrader"]
        student, assignment, name = info["student"], info["assignment"], info["notebook"]
        settings = grading_settings(self.config)
        settings.apply_sandbox_mode()
        coursedir = self.course_directory()
        root = Path(coursedir.root)
        if assignment not in assignments(root):
            raise ValueError(f"{assignment!r} is no assignment of {root}/source/ (its "
                             f"assignments: {', '.join(assignments(root)) or 'none'})")
        submission = Path(coursedir.format_path(coursedir.submitted_directory, student,
                                                assignment))
        with tempfile.TemporaryDirectory(prefix="mlm-autograde-") as scratch, \
                quiet_dialog(self.log, root, student) as log_file:
            verdicts = grade_submission(root, student, submission, Path(scratch),
                                        settings.limits(), notebooks=[name],
                                        assignment=assignment)
            if len(verdicts) != 1:
                raise ValueError(f"{name}.ipynb is not a notebook of the series in {root}")
            [verdict] = verdicts
            graded = graded_notebook(verdict, root, Path(scratch), student, assignment)
        if verdict.status is Status.ERROR:
            # The grader's failure, not the student's: nbgrader reports this notebook as failed
            # and keeps its earlier grades, instead of recording a zero.
            raise RuntimeError(f"grading {student}/{name} failed: {verdict.detail}")
        resources[LOG_FILE] = str(log_file.relative_to(root))
        return graded, resources

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
    """nbgrader's `SaveAutoGrades` for the course: the engine's verdict into the gradebook through
    the course's one writer (`grader.results.gradebook`, the one `make grade` calls), then the
    course's late policy. Nothing is read from the cells' outputs."""

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        info = resources["nbgrader"]
        student, assignment = info["student"], info["assignment"]
        verdict = verdict_of(nb)
        if verdict is None:
            raise RuntimeError(f"{student}/{info['notebook']}: no verdict to save (SaveVerdict "
                               "must follow EngineExecute)")
        with Gradebook(info["db_url"]) as gradebook:
            record_verdict(gradebook, student, verdict, assignment=assignment)
            apply_late_policy(gradebook, self.config, info["db_url"], student, verdict,
                              assignment=assignment)
            late = seconds_late(gradebook, assignment, student)
        verdict.attach(nb)
        titles = {gid: heading.title for gid, heading in check_headings(nb).items()}
        self.log.info(summary_line(verdict, titles, resources.get(LOG_FILE, ""), late))
        for incident in verdict.needs_a_look():
            self.log.warning("%s/%s needs a look: %s: %s", student, verdict.notebook,
                             incident.kind.what, incident.detail)
        return nb, resources


def seconds_late(gradebook, assignment: str, student: str) -> float:
    """How late the gradebook says the submission is (0: on time, no due date, not recorded)."""
    try:
        return float(gradebook.find_submission(assignment, student).total_seconds_late or 0.0)
    except MissingEntry:
        return 0.0


def graded_notebook(verdict: Verdict, root: Path, scratch: Path, student: str,
                    assignment: str) -> nbformat.NotebookNode:
    """The notebook the engine graded, as `make grade` records it (the scratch folder named by
    one fixed name, streams merged, library paths short); when the engine wrote none, the
    source notebook with the release's stubs, unrun, carrying the verdict."""
    path = autograded_path(scratch / student, student, verdict.notebook)
    if path.is_file():
        return as_recorded(portable_bytes(path, scratch))
    source = nbio.read(root / "source" / assignment / f"{verdict.notebook}.ipynb")
    graded, _ = trusted_notebooks(source, None)
    verdict.attach(graded)
    return graded


# ---- resolving a submission as the engine does --------------------------------------------------


class LastCopyOfEachCell(NbGraderPreprocessor):
    """nbgrader's `DeduplicateIds`, without failing the class.

    JupyterLab's Split Cell and copy and paste keep a cell's nbgrader metadata, so a submitted
    notebook may hold several cells with one grade_id. nbgrader's DeduplicateIds leaves all but
    one with empty metadata, which its own CheckCellMetadata then takes for an old format: the
    student's assignment fails, and `nbgrader autograde` stops the whole class there. Here the
    other copies lose their nbgrader metadata altogether (they become plain cells, which nbgrader
    leaves alone) in nbgrader's working copy, which only carries the gradebook's bookkeeping: the
    score comes from the engine, which reads the submitted file itself and runs every code
    answer cell in order (`course.cells.answer_cells`); the grading log says how it read the layout
    (`course.cells.layout_notes`). A cell whose nbgrader metadata nbgrader cannot read (another
    schema version, a broken field) likewise becomes a plain cell here instead of stopping the
    class. The submitted file is never changed (this works on nbgrader's copy)."""

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        quiet_capture(self.log)  # the formgrader's dialog: INFO, no colour codes
        from nbgrader.nbgraderformat import MetadataValidator

        where = _where(resources)
        for note in layout_notes(nb):
            self.log.warning("%s: %s", where, note)
        kept = {id(cell) for cell in {grade_id(cell): cell for cell in nb.cells
                                      if grade_id(cell) is not None}.values()}
        validator = MetadataValidator()
        for cell in nb.cells:
            meta = cell.get("metadata", {})
            if "nbgrader" not in meta:
                continue
            if grade_id(cell) is not None and id(cell) not in kept:
                del meta["nbgrader"]  # another copy of the same id
                continue
            try:
                validator.validate_cell(cell)
            except Exception as err:  # noqa: BLE001  (any unreadable metadata: see above)
                self.log.warning("%s: a cell's nbgrader metadata cannot be read (%s); it is "
                                 "treated as a plain cell", where, str(err).splitlines()[0])
                del meta["nbgrader"]
        return nb, resources


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


def _where(resources: dict) -> str:
    info = (resources or {}).get("nbgrader", {})
    return f"{info.get('student', '?')}/{info.get('notebook', '?')}"


class SourceOverwriteCells(OverwriteCells):
    """nbgrader's `OverwriteCells` (each locked cell gets the source's text back) without a
    warning for what every honest submission shows: the release strips the hidden tests from
    the test cells, so each one's checksum differs from the gradebook's ("Attribute 'checksum'
    for cell ... has changed!", 22 times on a 24 / 24 submission, which a TA reads as an error).
    The engine grades the source's cells whatever the submission holds, so that difference
    goes to the full log at DEBUG; other changes (a cell's type, its points) stay warnings."""

    def preprocess_cell(self, cell, resources, cell_index):
        """A cell whose grade_id this notebook does not have (an answer cell pasted from another
        notebook) becomes a plain cell in nbgrader's copy: nbgrader's own OverwriteCells drops
        its grade_id only, and its CheckCellMetadata then fails the student's whole assignment.
        The engine runs it as Run All does and grades nothing from it
        (`course.cells.answer_cells`)."""
        gid = grade_id(cell)
        if gid is not None:
            try:
                self.gradebook.find_source_cell(gid, self.notebook_id, self.assignment_id)
            except MissingEntry:
                self.log.warning("%s: the cell %r is not one of this notebook's; it is treated "
                                 "as a plain cell", _where(resources), gid)
                del cell.metadata["nbgrader"]
                return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name: str, attr: str, old, new) -> None:
        if attr == "checksum":
            self.log.debug("cell %s: the submitted copy differs from the source (its hidden "
                           "tests, or an edit); the source's text is what is graded", name)
            return
        super().report_change(name, attr, old, new)


# ---- the submission's time -------------------------------------------------------------------


def _existing_timestamp(coursedir: CourseDirectory, dest_path: str):
    """nbgrader's `CourseDirectory.get_existing_timestamp` by the course's rule
    (`gradebook.submission_time`): nbgrader's own fails the whole class on a timestamp.txt that
    is not a time (it calls a `fail` that CourseDirectory does not have) and counts an empty one
    as on time. nbgrader has no setting for it, so the method is replaced when nbgrader loads
    this module (nbgrader_config.py names its classes, before any submission is read)."""
    return submission_time(Path(dest_path), coursedir.log)


CourseDirectory.get_existing_timestamp = _existing_timestamp
