"""Per check, the class's failures grouped by their cause: the top mistakes, to plan a section.

A cause is the failure message with what varies between students stripped: numbers (values,
sizes, tolerances) become `#`, lists of them `[…]`, the site a message names (a cell and line)
is dropped. Two students who made the same mistake get the same cause, whatever their numbers.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from mlmcourse.grader.results.verdict import Status
from mlmcourse.report.collect import ClassData

_SITE_START = re.compile(r"\s*\((?=cell |line )")  # "(cell masked_lm_loss, line 4: ...)"
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?(?![\w])", re.I)
_LIST = re.compile(r"\[[\[\]#,\s…]*\]")
_SPACES = re.compile(r"\s+")
MAX_CAUSE = 160  # characters of a cause: the rest of a long message varies too much to group


def cause(message: str) -> str:
    """The message of a failure, its student-specific parts stripped (see the module's doc)."""
    first = message.strip().splitlines()[0] if message.strip() else "no message"
    text = without_sites(first)
    text = _NUMBER.sub("#", text)
    text = _LIST.sub("[…]", text)
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= MAX_CAUSE else text[:MAX_CAUSE].rstrip() + " …"


def without_sites(text: str) -> str:
    """`text` without its parenthesised sites ("(cell f, line 3: ...)", nested parentheses
    included)."""
    while match := _SITE_START.search(text):
        depth, end = 0, len(text)
        for index in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[index], 0)
            if depth == 0:
                end = index + 1
                break
        text = text[:match.start()] + text[end:]
    return text


@dataclass
class Group:
    cause: str
    example: str  # one student's message as it was
    students: list[str] = field(default_factory=list)


@dataclass
class CheckFailures:
    notebook: str
    grade_id: str
    title: str  # the check's heading ("A2 · float32 logits of magnitude 1e4")
    what: str
    points: float
    graded: int  # students whose notebook was graded (missing ones aside)
    groups: list[Group] = field(default_factory=list)  # the largest first

    @property
    def failed(self) -> int:
        return sum(len(group.students) for group in self.groups)

    @property
    def share(self) -> float:
        return self.failed / self.graded if self.graded else 0.0


def check_failures(data: ClassData) -> list[CheckFailures]:
    """Every check of the series, in notebook order, with its failures grouped by cause (a
    notebook not handed in counts nowhere: it is a non-submission, not a failure)."""
    found = []
    for name in data.release.notebooks:
        graded = [s.submissions[name] for s in data.students.values()
                  if name in s.submissions and s.submissions[name].status is not Status.MISSING]
        for gid, heading in data.release.headings[name].items():
            by_cause: dict[str, Group] = {}
            for submission in graded:
                for test in submission.tests:
                    if test.grade_id == gid and not test.passed:
                        key = cause(test.message)
                        group = by_cause.setdefault(key, Group(key, test.message))
                        group.students.append(submission.student)
            groups = sorted(by_cause.values(), key=lambda g: (-len(g.students), g.cause))
            found.append(CheckFailures(name, gid, heading.title, heading.what, heading.points,
                                       len(graded), groups))
    return found


def class_lines(checks: list[CheckFailures]) -> dict[tuple[str, str], str]:
    """(notebook, grade_id) -> one anonymous line for a student's feedback: how common the
    failure of that check was in the class and its most common cause (no names)."""
    lines = {}
    for check in checks:
        if check.failed and check.graded:
            top = check.groups[0]
            lines[(check.notebook, check.grade_id)] = (
                f"{check.share:.0%} of the class failed this check; the most common cause was: "
                f"{top.cause}")
    return lines


def students_needing_help(data: ClassData, share: float = 0.5) -> list[tuple[str, float]]:
    """Students who handed something in and scored under `share` of the points: (id, fraction)."""
    weak = defaultdict(float)
    for student in data.students.values():
        if not student.submitted:
            continue
        got = sum(s.score for s in student.submissions.values())
        out_of = sum(s.max_score for s in student.submissions.values()) or 1.0
        if got / out_of < share:
            weak[student.student] = got / out_of
    return sorted(weak.items(), key=lambda item: item[1])
