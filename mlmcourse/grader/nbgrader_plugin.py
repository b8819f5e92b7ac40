"""The grading engine where nbgrader expects an executor: `EngineExecute`.

nbgrader's `autograde` (the command and the formgrader's "Autograde" button alike) sanitizes a
submitted notebook, then runs `Autograde.autograde_preprocessors` on it: `Execute` runs the
notebook, student code included, in the grader's own kernel, and `SaveAutoGrades` scores every
graded cell by nbgrader's rule (an error or any stderr fails the cell). nbgrader_config.py puts
`EngineExecute` in `Execute`'s place. It grades the notebook with
`mlmcourse.grader.engine.grade_submission` (student code in the sandboxed worker, the hidden tests
in a trusted kernel) and hands on the engine's graded notebook, so that everything after it
(`IgnorePattern`, `LimitOutput`, `SaveAutoGrades`, late penalties, `CheckCellMetadata`) works as
nbgrader has it and records the scores the engine decided: the same as `make grade`
(`mlmcourse.grader.coordinator`) gives.

What the engine reads: the course root and the student's submitted folder (its sibling notebooks
too: notebook 04 imports the student's earlier answers), both from nbgrader's own
`CourseDirectory`. Nothing there is written: the engine copies what it needs into a temporary
scratch folder, removed afterwards. Its limits and sandbox mode are the course's `c.Grading`
settings (`grader.config.grading_settings`), the same `make grade` and `make check` read.

Two more pieces make nbgrader resolve a submission as the engine does (nbgrader_config.py names
them): `LastCopyOfEachCell` in place of nbgrader's `DeduplicateIds` (a pasted answer cell: the
last copy counts, and the assignment is graded instead of failed), and `SubmissionExporter` (a
notebook that cannot be read is graded as not handed in, and the student's other notebooks are
graded, instead of the whole submission failing).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells
from nbgrader.utils import compute_checksum, determine_grade
from traitlets import Float, Integer

from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, is_graded, is_solution
from mlmcourse.course.headings import check_headings
from mlmcourse.course.layout import ASSIGNMENT

from .config import grading_settings
from .coordinator import as_recorded, portable_bytes
from .dialog import quiet_capture, quiet_dialog, summary_line
from .engine import grade_submission
from .limits import Limits
from .rebuild import repeated_note, student_cells, trusted_notebooks
from .results import NotebookResult, TestResult, record_verdict, stderr_as_note, unanswered

_DEFAULTS = Limits()


class EngineExecute(NbGraderPreprocessor):
    """Grade one submitted notebook with the course's sandboxed engine (replaces `Execute`).

    Its limits are the course's `c.Grading` settings. The traits below are their older spelling,
    `c.EngineExecute.<limit>`, kept so that a configuration or command line that uses it still
    holds (on every path: `grading_settings` reads it); `c.Grading` wins where both are set."""

    cell_timeout_s = Float(_DEFAULTS.cell_timeout_s,
                           help="Seconds one cell of the trusted kernel may run.").tag(config=True)
    memory_bytes = Integer(_DEFAULTS.memory_bytes,
                           help="Memory the student's code may allocate.").tag(config=True)
    cpu_seconds = Integer(_DEFAULTS.cpu_seconds,
                          help="CPU seconds of one worker process.").tag(config=True)
    call_timeout_s = Float(_DEFAULTS.call_timeout_s,
                           help="Seconds one call of student code may run.").tag(config=True)
    student_time_s = Float(_DEFAULTS.student_time_s,
                           help="Seconds of student code in one notebook.").tag(config=True)

    def limits(self) -> Limits:
        """The course's limits (`c.Grading`, or the older `c.EngineExecute`) as this run's
        configuration (nbgrader_config.py and the command line) sets them."""
        return grading_settings(self.config).limits()

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        info = resources["nbgrader"]
        student, assignment, name = info["student"], info["assignment"], info["notebook"]
        if assignment != ASSIGNMENT:
            raise ValueError(f"the grading engine grades the assignment {ASSIGNMENT!r} only, "
                             f"not {assignment!r}")
        settings = grading_settings(self.config)
        settings.apply_sandbox_mode()
        coursedir = self.course_directory()
        root = Path(coursedir.root)
        submission = Path(coursedir.format_path(coursedir.submitted_directory, student,
                                                assignment))
        with tempfile.TemporaryDirectory(prefix="mlm-autograde-") as scratch, \
                quiet_dialog(self.log, root, student) as log_file:
            results = grade_submission(root, student, submission, Path(scratch),
                                       settings.limits(), notebooks=[name])
            if len(results) != 1:
                raise ValueError(f"{name}.ipynb is not a notebook of the series in {root}")
            [result] = results
            graded = graded_notebook(result, root, Path(scratch))
        if result.status == "error":
            # The grader's failure, not the student's: nbgrader reports this notebook as failed
            # and keeps its earlier grades, instead of recording a zero.
            raise RuntimeError(f"grading {student}/{name} failed: {result.detail}")
        for incident in result.incidents:
            if incident.get("kind") == "tamper":
                self.log.warning("%s/%s reached into the grader (%s): the checks that rest on "
                                 "the worker's claims earn nothing", student, name,
                                 incident.get("detail"))
        titles = {gid: heading.title for gid, heading in check_headings(graded).items()}
        scores_as_nbgrader_reads_them(graded, result)
        with Gradebook(info["db_url"]) as gradebook:
            gradebook_checksums(graded, gradebook, name, assignment)
            late = seconds_late(gradebook, assignment, student)
        self.log.info(summary_line(result, titles, str(log_file.relative_to(root)), late))
        source = nbio.read(root / "source" / ASSIGNMENT / f"{name}.ipynb")
        answer_checksums(graded, unanswered(graded, source))
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


def seconds_late(gradebook, assignment: str, student: str) -> float:
    """How late the gradebook says the submission is (0: on time, no due date, not recorded)."""
    try:
        return float(gradebook.find_submission(assignment, student).total_seconds_late or 0.0)
    except MissingEntry:
        return 0.0


def graded_notebook(result: NotebookResult, root: Path, scratch: Path) -> nbformat.NotebookNode:
    """The notebook the engine graded, as `make grade` writes it (the scratch folder named by
    one fixed name, streams merged, library paths short); when the engine could not read the
    submission, the source notebook with the release's stubs, every test unrun."""
    path = result.autograded_path
    if path is None or not Path(path).is_file():
        source = nbio.read(root / "source" / ASSIGNMENT / f"{result.notebook}.ipynb")
        graded, _ = trusted_notebooks(source, None)
        record_verdict(graded, result)
        return graded
    graded = as_recorded(portable_bytes(Path(path), scratch))
    return graded


def scores_as_nbgrader_reads_them(nb: nbformat.NotebookNode, result: NotebookResult) -> None:
    """Make nbgrader's own rule (`determine_grade`, which SaveAutoGrades applies) read the
    engine's verdict in every graded cell: a failed test shows an error (a test that never ran
    has no output at all), a passed one neither stderr nor a number nbgrader would take for
    partial credit."""
    tests = {test.grade_id: test for test in result.tests}
    for cell in nb.cells:
        if not is_graded(cell) or is_solution(cell) or cell.cell_type != "code":
            continue
        test = tests.get(grade_id(cell))
        if test is None:
            raise RuntimeError(f"the engine did not grade the cell {grade_id(cell)!r}")
        if test.passed:
            stderr_as_note(cell)
            for output in cell.outputs:
                if output.get("output_type") == "execute_result":
                    output.output_type = "display_data"
                    output.pop("execution_count", None)
        elif determine_grade(cell)[0] != 0:
            cell.outputs.append(failure_output(test))
        if determine_grade(cell)[0] != test.points:
            raise RuntimeError(f"nbgrader would score {grade_id(cell)!r} otherwise than the "
                               f"engine ({test.points:g} points)")


def failure_output(test: TestResult) -> nbformat.NotebookNode:
    message = test.message or "this test failed"
    return nbformat.v4.new_output("error", ename="GradingError", evalue=message,
                                  traceback=[f"GradingError: {message}"])


def answer_checksums(nb: nbformat.NotebookNode, left: set[str]) -> None:
    """Each answer cell's checksum as nbgrader's SaveAutoGrades must read it to say what
    `results.unanswered` decided (the one rule): "No response." exactly for the cells in `left`
    (SaveAutoGrades compares the stored checksum with the cell's own)."""
    for cell in nb.cells:
        if not is_solution(cell):
            continue
        own = compute_checksum(cell)
        if grade_id(cell) in left:
            cell.metadata.nbgrader["checksum"] = own
        elif cell.metadata.nbgrader.get("checksum") == own:
            cell.metadata.nbgrader["checksum"] = "answered"


def gradebook_checksums(nb: nbformat.NotebookNode, gradebook: Gradebook, notebook: str,
                        assignment: str) -> None:
    """Each cell's checksum from the gradebook, as nbgrader's OverwriteCells sets it: an
    answer cell left as released then reads "No response." (SaveAutoGrades compares them)."""
    for cell in nb.cells:
        gid = grade_id(cell)
        if not gid:
            continue
        try:
            source = gradebook.find_source_cell(gid, notebook, assignment)
        except MissingEntry:
            continue
        cell.metadata.nbgrader["checksum"] = source.checksum


# ---- resolving a submission as the engine does --------------------------------------------------


class LastCopyOfEachCell(NbGraderPreprocessor):
    """nbgrader's `DeduplicateIds`, with the engine's rule and without failing the class.

    A cell pasted in JupyterLab keeps its nbgrader metadata, so a submitted notebook may hold two
    cells with one grade_id. nbgrader's DeduplicateIds keeps the last copy but leaves the others
    with empty metadata, which its own CheckCellMetadata then takes for an old format: the
    student's assignment fails, and `nbgrader autograde` stops the whole class there. Here the
    earlier copies lose their nbgrader metadata altogether (they become plain cells, which
    nbgrader leaves alone), so the last copy is the one nbgrader records, as the engine grades it
    (`rebuild.student_cells`); the grading log names the pasted cells. A cell whose nbgrader
    metadata nbgrader cannot read (another schema version, a broken field) likewise becomes a
    plain cell here instead of stopping the class: the score comes from the engine, which reads
    the submitted file itself. The submitted file is never changed (this works on nbgrader's copy).
    """

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        quiet_capture(self.log)  # the formgrader's dialog: INFO, no colour codes
        from nbgrader.nbgraderformat import MetadataValidator

        where = _where(resources)
        note = repeated_note(nb)
        if note:
            self.log.warning("%s: %s", where, note)
        kept = {id(cell) for cell in student_cells(nb).values()}
        validator = MetadataValidator()
        for cell in nb.cells:
            meta = cell.get("metadata", {})
            if "nbgrader" not in meta:
                continue
            if grade_id(cell) is not None and id(cell) not in kept:
                del meta["nbgrader"]  # an earlier copy of a pasted cell
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

    def report_change(self, name: str, attr: str, old, new) -> None:
        if attr == "checksum":
            self.log.debug("cell %s: the submitted copy differs from the source (its hidden "
                           "tests, or an edit); the source's text is what is graded", name)
            return
        super().report_change(name, attr, old, new)
