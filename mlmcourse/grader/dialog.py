"""What the formgrader's Autograde dialog shows: the score and what failed, not the log.

The formgrader runs nbgrader's autograde in the server through `nbgrader.utils.capture_log`,
which adds a handler writing into a string to the app's logger and shows that string in the
dialog, at whatever level the server's logger has: with a server at DEBUG, about 1,200 lines of
nbconvert and engine debugging for one submission, and tracebacks with terminal colour codes.
`quiet_capture` (from the engine's step on, `nbgrader_plugin.EngineExecute`) finds
that handler, raises its level to INFO and strips colour codes from what it writes;
`quiet_dialog` (around the engine's grading, `nbgrader_plugin.EngineExecute`) also appends the
engine's full log, DEBUG included, to `logs/autograde/<student>.log` in the course folder (the
README names it). `summary_line` is the one line per notebook the dialog then shows.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path

from mlmcourse.grader.results.verdict import Verdict, plain_text

LOG_FOLDER = Path("logs") / "autograde"  # relative to the course root
DIALOG_LEVEL = logging.INFO


class PlainFormatter(logging.Formatter):
    """A formatter that writes what another one writes, without terminal colour codes."""

    def __init__(self, inner: logging.Formatter | None):
        super().__init__()
        self.inner = inner or logging.Formatter("[%(levelname)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return plain_text(self.inner.format(record))


def captured_handlers(log: logging.Logger) -> list[logging.Handler]:
    """The handlers `capture_log` added: streams into a string, on `log` or its parents."""
    found, logger = [], log
    while logger is not None:
        found += [h for h in logger.handlers if isinstance(h, logging.StreamHandler)
                  and isinstance(getattr(h, "stream", None), io.StringIO)]
        logger = logger.parent if logger.propagate else None
    return found


def quiet_capture(log: logging.Logger) -> None:
    """The dialog's handlers (capture_log's) at INFO and without colour codes, for the rest of
    the run: the engine's step (`quiet_dialog`) calls it; capture_log drops its handler after
    the run."""
    for handler in captured_handlers(log):
        handler.setLevel(max(handler.level, DIALOG_LEVEL))
        if not isinstance(handler.formatter, PlainFormatter):
            handler.setFormatter(PlainFormatter(handler.formatter))


@contextlib.contextmanager
def quiet_dialog(log: logging.Logger, course: Path, student: str) -> Iterator[Path]:
    """While the engine grades: the dialog quiet (`quiet_capture`); everything, DEBUG included,
    appended to the student's log file (yielded)."""
    quiet_capture(log)
    path = Path(course) / LOG_FOLDER / f"{student}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    full = logging.FileHandler(path, encoding="utf-8")
    full.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(name)s: %(message)s"))
    full.setLevel(logging.DEBUG)
    log.addHandler(full)
    try:
        yield path
    finally:
        log.removeHandler(full)
        full.close()


def summary_line(verdict: Verdict, titles: dict[str, str], log_file: str,
                 seconds_late: float = 0.0) -> str:
    """One line for the dialog: the notebook's score, how late the submission is, and the
    checks it failed (by heading)."""
    from mlmcourse.grader.class_run.grading import late_text

    failed = [titles.get(c.grade_id, c.grade_id) for c in verdict.checks if not c.passed]
    late = f" (late by {late_text(seconds_late)}; the late policy applies)" if seconds_late else ""
    head = f"{verdict.notebook}: {verdict.score:g} / {verdict.max_score:g}{late}"
    what = f"; failed: {', '.join(failed)}" if failed else "; every check passed"
    return f"{head}{what} (the full log: {log_file})"
