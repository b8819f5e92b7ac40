"""The formgrader's Autograde dialog shows the score and what failed, not the log
(mlmcourse/grader/dialog.py): nbgrader's `capture_log` handler is raised to INFO and writes
no colour codes; the full log goes to logs/autograde/<student>.log."""

from __future__ import annotations

import logging

from nbgrader.utils import capture_log

from mlmcourse.grader.dialog import LOG_FOLDER, quiet_dialog, summary_line
from mlmcourse.grader.results.verdict import Check, Verdict

RED = "\x1b[0;31mAssertionError\x1b[0m: the mask is wrong"


class FakeApp:
    """What capture_log needs of an nbgrader app: a logger and start()."""

    def __init__(self, course, level=logging.DEBUG):
        self.log = logging.getLogger(f"test-dialog-{id(self)}")
        self.log.setLevel(level)  # a server at DEBUG: the case a TA met
        self.course = course

    def start(self):
        self.log.debug("Executing cell 1 of 40")
        with quiet_dialog(self.log, self.course, "ada") as path:
            self.log.debug("nbclient: cell 2 executed")
            self.log.warning(RED)
            self.log.info("01_corruption: 21 / 24; failed: C1 (the full log: %s)", path.name)
            self.log.debug("the submitted copy differs from the source")


def test_the_dialog_shows_info_without_colour_and_the_file_keeps_everything(tmp_path):
    outcome = capture_log(FakeApp(tmp_path))
    dialog = outcome["log"]
    assert outcome["success"]
    assert "\x1b[" not in dialog
    assert "[WARNING] AssertionError: the mask is wrong" in dialog
    assert "01_corruption: 21 / 24" in dialog
    assert "cell 2 executed" not in dialog
    assert "submitted copy differs" not in dialog
    full = (tmp_path / LOG_FOLDER / "ada.log").read_text()
    assert "cell 2 executed" in full and "submitted copy differs" in full
    assert "AssertionError" in full


def test_summary_line_names_the_failed_checks_by_heading():
    result = Verdict("01_corruption", checks=[
        Check("test_labels", 0.0, 2.0, "CheckFailed: x"), Check("test_unselected", 1.0, 1.0),
        Check("rest", 20.0, 21.0)])
    line = summary_line(result, {"test_labels": "B1 · Labels"}, "logs/autograde/ada.log")
    assert line == ("01_corruption: 21 / 24; failed: B1 · Labels "
                    "(the full log: logs/autograde/ada.log)")
    late = summary_line(result, {}, "x.log", 2 * 3600 + 60)
    assert late.startswith("01_corruption: 21 / 24 (late by 2 h 1 min; the late policy applies)")
