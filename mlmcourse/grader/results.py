"""Results as data: one TestResult per graded cell, one NotebookResult per notebook.

Whether a graded cell passed, and the message that says why not, is decided here, once: the
engine, the score table, `make check`, the feedback and the gradebook all read these objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from mlmcourse.course.cells import grade_id, is_solution, release_stub, source_text

STDERR_NOTE = "[stderr, shown here as a note: it costs no points]\n"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colour codes, as in tracebacks


@dataclass(frozen=True)
class TestResult:
    grade_id: str
    passed: bool
    points: float
    max_points: float
    message: str


@dataclass
class NotebookResult:
    notebook: str
    score: float
    max_score: float
    status: str  # 'ok' | 'crashed' | 'timeout' | 'missing' | 'error'
    tests: list[TestResult] = field(default_factory=list)
    autograded_path: Path | None = None
    detail: str = ""  # what happened, for the TA (crashes, timeouts, the sandbox in use)
    seconds: float = 0.0
    # What went wrong on the way, as data for the TA: [{"kind": ..., "detail": ...}], kinds
    # 'timeout', 'budget', 'crash', 'setup' (the grader's), 'tamper' (reached into the grader),
    # 'pasted' (answer cells pasted with their nbgrader id: the last copy was graded).
    incidents: list[dict] = field(default_factory=list)


def plain_text(text: str) -> str:
    """`text` without terminal colour codes."""
    return _ANSI.sub("", text)


def error_line(output) -> str:
    """What an error output says, as plain text: ``ename: evalue`` (the test's own message)."""
    message = f"{output.get('ename', 'Error')}: {plain_text(source_text(output.get('evalue')))}"
    return message.strip().rstrip(":")


NOT_RUN = "this test did not run (the notebook stopped before it)"


def failure_message(cell) -> str:
    """Why a graded cell fails, or '' when it passes. The one pass/fail rule: the cell ran and
    raised nothing (stderr costs nothing: see `stderr_as_note`)."""
    if cell.get("execution_count") is None:
        return NOT_RUN
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return error_line(output)
    return ""


def cell_result(cell, full: float) -> TestResult:
    """The result of one executed graded cell: the score table, `make check`, the feedback and
    the gradebook all read it."""
    message = failure_message(cell)
    return TestResult(grade_id(cell) or "", not message, 0.0 if message else full, full, message)


def stderr_as_note(cell) -> None:
    """Show stderr of a cell as a note on stdout: warnings must not cost points."""
    outputs = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            output = nbformat.from_dict({"output_type": "stream", "name": "stdout",
                                         "text": STDERR_NOTE + source_text(output.get("text"))})
        outputs.append(output)
    cell["outputs"] = outputs


NO_RESPONSE = "No response."  # nbgrader's comment on an answer cell left as released


def unanswered(graded, source_nb) -> set[str]:
    """The grade_ids of the answer cells the student left as the release has them: nbgrader's
    "No response." The one rule, on every path: `make grade` writes the comment from it
    (`grader.coordinator.record`), and under nbgrader `EngineExecute` sets each answer cell's
    checksum from it, so that nbgrader's SaveAutoGrades (which compares checksums) says the
    same. An answer is compared with the release's stub of the source cell, blank lines and
    spaces at either end aside (an answer cell the student never handed in counts as left)."""
    stubs = {grade_id(cell): release_stub(source_text(cell.get("source")),
                                          cell.get("cell_type", "code")).strip()
             for cell in source_nb.cells if is_solution(cell)}
    return {
        gid for cell in graded.cells
        if is_solution(cell) and (gid := grade_id(cell)) in stubs
        and source_text(cell.get("source")).strip() == stubs[gid]
    }


# ---- the verdict as the autograded notebook carries it ------------------------------------------

# The key of the autograded notebook's metadata that holds the engine's verdict: read back by the
# class report (`mlmcourse.report.collect`) after `make grade` and after the formgrader's
# Autograde alike, so that it renders data, not the text of the outputs.
VERDICT_KEY = "mlmcourse_verdict"


def record_verdict(nb, result: NotebookResult) -> None:
    """Write `result` (status, what happened, incidents, one line per check) into the metadata
    of its autograded notebook `nb`."""
    nb.metadata[VERDICT_KEY] = {
        "status": result.status,
        "detail": result.detail,
        "incidents": [dict(incident) for incident in result.incidents],
        "tests": [{"grade_id": t.grade_id, "passed": t.passed, "points": t.points,
                   "max_points": t.max_points, "message": t.message} for t in result.tests],
    }


def recorded_verdict(nb, name: str) -> NotebookResult | None:
    """The verdict `record_verdict` wrote into an autograded notebook, or None when the notebook
    was graded before the engine recorded it."""
    data = nb.get("metadata", {}).get(VERDICT_KEY)
    if not isinstance(data, dict):
        return None
    tests = [TestResult(str(t.get("grade_id", "")), bool(t.get("passed")),
                        float(t.get("points", 0)), float(t.get("max_points", 0)),
                        str(t.get("message", ""))) for t in data.get("tests", [])]
    return NotebookResult(name, sum(t.points for t in tests), sum(t.max_points for t in tests),
                          str(data.get("status", "ok")), tests, detail=str(data.get("detail", "")),
                          incidents=[dict(i) for i in data.get("incidents", [])])
