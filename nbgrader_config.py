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
# notebook from source/ (mlmcourse/grader/engine/rebuild.py), so the helpers are there when it runs.
c.ClearHiddenTests.enforce_metadata = False

# Grading: one configuration for every way in (`make grade`, `make check` inside the course,
# `nbgrader autograde`, the formgrader's Autograde button). `c.Grading` (mlmcourse.grader.config.
# Grading) holds the limits of the student's code and the sandbox mode; the defaults are these:
# c.Grading.call_timeout_s = 30.0     # seconds one call of a student's function may take
# c.Grading.student_time_s = 120.0    # seconds of the student's code in one notebook, in all
# c.Grading.cell_timeout_s = 120.0    # seconds one cell of the trusted kernel may take
# c.Grading.memory_bytes = 2 << 30    # memory the student's code may allocate
# c.Grading.cpu_seconds = 120         # CPU seconds of one student process
# c.Grading.student_cpus = 1.0        # CPUs' worth of time a student process and its children may use
# c.Grading.student_tasks = 64        # processes and threads a student process and its children may have
# c.Grading.sandbox = ""              # auto (""), namespaces or unsafe-no-sandbox; the
#                                     # MLMCOURSE_SANDBOX environment variable wins
# c.Grading.class_feedback = False    # True: each failed check in a student's feedback gains
#                                     # one anonymous line ("34% of the class failed this check;
#                                     # the most common cause was ...") from the class report
# (The older spelling c.EngineExecute.<limit> is refused, with the name to use instead.)
# The late policy is nbgrader's own (AssignLatePenalties), applied by the course's one gradebook
# writer on every way in:
# c.LateSubmissionPlugin.penalty_method = "zero"   # nbgrader's default: "none"
# (the due date: `nbgrader db assignment add <assignment> --duedate=...`, or the formgrader).

# Grading through nbgrader (`nbgrader autograde`, the formgrader's Autograde button) uses the
# course's grading engine in place of nbgrader's `Execute` (which runs the student's code in the
# grader's own kernel, where one hostile submission rewrote the gradebook: 24 / 24 for every
# student), and the course's one gradebook writer in place of `SaveAutoGrades` (which would
# score the cells again from their outputs): the scores `make grade` gives, from one verdict.
c.Autograde.autograde_preprocessors = [
    "mlmcourse.grader.nbgrader_plugin.EngineExecute",
    "mlmcourse.grader.nbgrader_plugin.SaveVerdict",  # the gradebook and the late policy
    "nbgrader.preprocessors.CheckCellMetadata",
]
# nbgrader's sanitize step would prepare a copy of the submission that the engine never reads
# (it rebuilds each notebook from source/ and the submitted file itself, as `make grade` does):
# none runs, so a split or pasted answer cell cannot fail a student's assignment in nbgrader's
# metadata checks. A notebook that cannot be read is graded as not handed in, and the student's
# other notebooks are graded.
c.Autograde.sanitize_preprocessors = []
c.Autograde.exporter_class = "mlmcourse.grader.nbgrader_plugin.SubmissionExporter"

# `nbgrader export` (and `make grade`, through the same plugin) writes the grades for the
# school's system here: nbgrader's default, grades.csv, is `make grade`'s per-notebook table.
# One layout from every way in (one machine, the hub): nbgrader's columns, then submitted, late
# and seconds_late; a row for every student of the roster; times in UTC with their offset.
c.ExportApp.plugin_class = "mlmcourse.grader.results.lms_export.RosterCsvExport"
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
    "mlmcourse.grader.results.feedback.ReadableFeedback",
]
c.GenerateFeedback.exporter_class = "mlmcourse.grader.results.feedback.FeedbackExporter"

# Validate must report the visible checks: they are read-only cells, not graded ones (the graded
# cells of the release hold only a docstring, so validating those alone would always succeed).
c.Validator.validate_all = True

# Students use the Validate button and the course's own commands; there is no exchange server.
# Its folder lives in the (git-ignored) build/ so the formgrader does not warn about a system path.
c.Exchange.assignment_dir = "."
c.Exchange.root = os.path.join(c.CourseDirectory.root, "build", "exchange")
