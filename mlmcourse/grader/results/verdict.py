"""The verdict: what the grader decided about one notebook, made once, by the engine.

A `Verdict` holds the notebook's status, one `Check` per graded cell (points and the message
that says why it failed), the incidents a TA should know of, and the answer cells left as
released ("No response."). Everything else renders it and decides nothing again: the one
gradebook writer (`grader.results.gradebook`, under `make grade` and under nbgrader alike), the
feedback, the class report, `make check`, the formgrader's Autograde dialog and the score
table. It travels in the autograded notebook's metadata (`VERDICT_KEY`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mlmcourse.course.cells import grade_id, is_solution, release_stub, source_text
from mlmcourse.grader.limits import CAPS

VERDICT_KEY = "mlmcourse_verdict"  # the autograded notebook's metadata key
NO_RESPONSE = "No response."  # nbgrader's comment on an answer cell left as released
NOT_RUN = "this test did not run (the notebook stopped before it)"


class Status(enum.StrEnum):
    OK = "ok"
    CRASHED = "crashed"  # the student's process died (a crash, a memory or output cap)
    TIMEOUT = "timeout"  # a call, the notebook's time budget or its cap ran out
    MISSING = "missing"  # not handed in, or not readable as a notebook
    ERROR = "error"  # the grader failed (never the student's doing): not recorded


class Kind(enum.StrEnum):
    """What went wrong on the way; each kind says what it is and what the grader did."""

    TIMEOUT = "timeout"
    BUDGET = "budget"
    CRASH = "crash"
    SETUP = "setup"
    PASTED = "pasted"
    UNCHECKED = "unchecked"
    UNREADABLE = "unreadable"

    @property
    def what(self) -> str:
        return _KINDS[self][0]

    @property
    def action(self) -> str:
        return _KINDS[self][1]

    @property
    def needs_a_look(self) -> bool:
        """Whether a TA should look at the submission by hand (the score table, the report and
        the formgrader say so)."""
        return self in (Kind.SETUP, Kind.UNCHECKED)


_KINDS = {
    Kind.TIMEOUT: ("a call ran past its time limit",
                   "stopped it; that check failed, the others ran"),
    Kind.BUDGET: ("the notebook's time budget ran out",
                  "stopped the student's code; the checks still to run failed"),
    Kind.CRASH: ("the process running the student's code died (a crash, or a memory or "
                 "output cap)", "started a fresh one for the next checks; the check it died "
                 "in failed"),
    Kind.SETUP: ("the grader's sandbox failed",
                 "graded the notebook once more from scratch; look at it by hand"),
    Kind.PASTED: ("answer cells laid out over several cells (split, pasted or kept as text)",
                  "ran every code answer cell in the notebook's order, as Run All does"),
    Kind.UNCHECKED: ("an answer cell does something the grader cannot check",
                     "nothing: no point rests on it (every check reads what the trusted side "
                     "saw); a note for the TA"),
    Kind.UNREADABLE: ("a notebook that cannot be read", "graded it as not handed in"),
}


@dataclass(frozen=True)
class Incident:
    kind: Kind
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else str(self.kind)


@dataclass(frozen=True)
class Check:
    """One graded cell: its points, and why it failed ('' when it passed)."""

    grade_id: str
    points: float
    max_points: float
    message: str = ""

    @property
    def passed(self) -> bool:
        return not self.message


@dataclass
class Verdict:
    notebook: str
    status: Status = Status.OK
    checks: list[Check] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    detail: str = ""  # what happened, for the TA (a crash, a timeout)
    unanswered: tuple[str, ...] = ()  # answer cells left as released: "No response."
    seconds: float = 0.0  # how long the engine took (kept out of the notebook: a regrade
    #                       writes the same bytes)
    late_penalty: float = 0.0  # the course's late policy, applied by the gradebook writer

    @property
    def score(self) -> float:
        return sum(check.points for check in self.checks)

    @property
    def max_score(self) -> float:
        return sum(check.max_points for check in self.checks)

    @property
    def unchecked(self) -> bool:
        """The answer cells do something the grader cannot check (the trusted scan)."""
        return any(incident.kind is Kind.UNCHECKED for incident in self.incidents)

    def needs_a_look(self) -> list[Incident]:
        return [incident for incident in self.incidents if incident.kind.needs_a_look]

    # -- the autograded notebook's metadata ----------------------------------------------------
    def to_json(self) -> dict:
        return {
            "notebook": self.notebook, "status": str(self.status), "detail": self.detail,
            "incidents": [{"kind": str(i.kind), "detail": i.detail} for i in self.incidents],
            "checks": [{"grade_id": c.grade_id, "points": c.points, "max_points": c.max_points,
                        "message": c.message} for c in self.checks],
            "unanswered": list(self.unanswered), "late_penalty": self.late_penalty,
        }

    @classmethod
    def from_json(cls, data: dict) -> Verdict:
        return cls(
            notebook=str(data["notebook"]), status=Status(data["status"]),
            checks=[Check(str(c["grade_id"]), float(c["points"]), float(c["max_points"]),
                          str(c.get("message", ""))) for c in data["checks"]],
            incidents=[Incident(Kind(i["kind"]), str(i.get("detail", "")))
                       for i in data.get("incidents", [])],
            detail=str(data.get("detail", "")), unanswered=tuple(data.get("unanswered", ())),
            late_penalty=float(data.get("late_penalty", 0.0)),
        )

    def attach(self, nb) -> None:
        """Write this verdict into its autograded notebook `nb`."""
        nb.metadata[VERDICT_KEY] = self.to_json()


def verdict_of(nb) -> Verdict | None:
    """The verdict an autograded notebook carries (None: not one the engine graded)."""
    data = nb.get("metadata", {}).get(VERDICT_KEY)
    try:
        return Verdict.from_json(data) if isinstance(data, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


# ---- the rules the engine decides by ------------------------------------------------------------


def plain_text(text: str) -> str:
    """`text` without terminal colour codes (nbconvert's own filter)."""
    from nbconvert.filters import strip_ansi

    return strip_ansi(text)


def error_line(output) -> str:
    """What an error output says, as plain text: ``ename: evalue`` (the test's own message), its
    first `CAPS.message_chars` characters (a message built from a student's value stays short)."""
    cap = CAPS.message_chars
    evalue = source_text(output.get("evalue"))
    message = f"{output.get('ename', 'Error')}: {plain_text(evalue[:2 * cap])}"
    if len(message) > cap:
        message = f"{message[:cap]} ... (cut: the message is longer)"
    return message.strip().rstrip(":")


def failure_of(cell) -> str:
    """Why an executed graded cell fails, or '' when it passes: the one pass/fail rule. It ran
    and raised nothing; what it wrote to stderr costs nothing."""
    if cell.get("execution_count") is None:
        return NOT_RUN
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return error_line(output)
    return ""


def unanswered(graded, source_nb) -> tuple[str, ...]:
    """The answer cells the student left as the release has them ("No response."): compared
    with the release's stub of the source cell, blank lines and spaces at either end aside."""
    stubs = {grade_id(cell): release_stub(source_text(cell.get("source")),
                                          cell.get("cell_type", "code")).strip()
             for cell in source_nb.cells if is_solution(cell)}
    return tuple(sorted(
        gid for cell in graded.cells
        if is_solution(cell) and (gid := grade_id(cell)) in stubs
        and source_text(cell.get("source")).strip() == stubs[gid]))
