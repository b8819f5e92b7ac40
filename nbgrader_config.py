"""nbgrader configuration for the course (the repository root is the course directory)."""

import os

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "bert_mlm_course"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.db_url = "sqlite:///gradebook.db"
# Notebooks may read helper files next to them; nothing else is copied into a submission.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# Solution regions become this stub in the student release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A locked, ungraded cell may hold a hidden region: helpers that a notebook's graded tests share,
# defined once (`mlmcourse.course.cells.is_hidden_helper`). nbgrader refuses such a cell unless
# this is off; ClearHiddenTests then strips its region like a graded cell's. Grading rebuilds the
# notebook from source/ (mlmcourse/grader/rebuild.py), so the helpers are there when it runs.
c.ClearHiddenTests.enforce_metadata = False

# Grading through nbgrader (`nbgrader autograde`, the formgrader's Autograde button) uses the
# course's grading engine in place of nbgrader's `Execute`: `Execute` runs the student's code in
# the grader's own kernel, where one hostile submission rewrote the gradebook (24 / 24 for every
# student). The engine runs it sandboxed, the hidden tests in a trusted kernel, and gives the
# scores `make grade` gives. nbgrader's other steps stay as nbgrader has them. (Limits:
# c.EngineExecute.cell_timeout_s, memory_bytes, cpu_seconds, call_timeout_s, student_time_s.)
c.Autograde.autograde_preprocessors = [
    "mlmcourse.grader.nbgrader_plugin.EngineExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# `nbgrader export` (and `make grade`, through the same plugin) writes the grades for the
# school's system here: nbgrader's default, grades.csv, is `make grade`'s per-notebook table.
c.ExportPlugin.to = "grades-lms.csv"

# Validate (and plain `Execute`, where a TA asks for it): a hung cell must not stall the class;
# a dead kernel is reported, not retried forever.
c.ExecutePreprocessor.timeout = 120
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0

# Feedback for students: failed checks and their messages first, no hidden test source, no
# tracebacks (also when a TA runs `nbgrader generate_feedback` by hand after manual grading).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "mlmcourse.grader.feedback.ReadableFeedback",
]
c.GenerateFeedback.exporter_class = "mlmcourse.grader.feedback.FeedbackExporter"

# Validate must report the visible checks: they are read-only cells, not graded ones (the graded
# cells of the release hold only a docstring, so validating those alone would always succeed).
c.Validator.validate_all = True

# Students use the Validate button and the course's own commands; there is no exchange server.
# Its folder lives in the (git-ignored) build/ so the formgrader does not warn about a system path.
c.Exchange.assignment_dir = "."
c.Exchange.root = os.path.join(c.CourseDirectory.root, "build", "exchange")
