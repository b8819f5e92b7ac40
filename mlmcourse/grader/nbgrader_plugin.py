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
scratch folder, removed afterwards.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import determine_grade
from traitlets import Float, Integer

from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, is_graded, is_solution
from mlmcourse.course.layout import ASSIGNMENT

from .coordinator import as_recorded, portable_bytes
from .engine import grade_submission
from .limits import Limits
from .rebuild import trusted_notebooks
from .results import NotebookResult, TestResult, stderr_as_note

_DEFAULTS = Limits()


class EngineExecute(NbGraderPreprocessor):
    """Grade one submitted notebook with the course's sandboxed engine (replaces `Execute`)."""

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
        return Limits(cell_timeout_s=self.cell_timeout_s, memory_bytes=self.memory_bytes,
                      cpu_seconds=self.cpu_seconds, call_timeout_s=self.call_timeout_s,
                      student_time_s=self.student_time_s)

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict
                   ) -> tuple[nbformat.NotebookNode, dict]:
        info = resources["nbgrader"]
        student, assignment, name = info["student"], info["assignment"], info["notebook"]
        if assignment != ASSIGNMENT:
            raise ValueError(f"the grading engine grades the assignment {ASSIGNMENT!r} only, "
                             f"not {assignment!r}")
        coursedir = self.course_directory()
        root = Path(coursedir.root)
        submission = Path(coursedir.format_path(coursedir.submitted_directory, student,
                                                assignment))
        with tempfile.TemporaryDirectory(prefix="mlm-autograde-") as scratch:
            results = grade_submission(root, student, submission, Path(scratch), self.limits(),
                                       notebooks=[name])
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
        scores_as_nbgrader_reads_them(graded, result)
        with Gradebook(info["db_url"]) as gradebook:
            gradebook_checksums(graded, gradebook, name, assignment)
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


def graded_notebook(result: NotebookResult, root: Path, scratch: Path) -> nbformat.NotebookNode:
    """The notebook the engine graded, as `make grade` writes it (the scratch folder named by
    one fixed name, streams merged, library paths short); when the engine could not read the
    submission, the source notebook with the release's stubs, every test unrun."""
    path = result.autograded_path
    if path is None or not Path(path).is_file():
        source = nbio.read(root / "source" / ASSIGNMENT / f"{result.notebook}.ipynb")
        graded, _ = trusted_notebooks(source, None)
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
