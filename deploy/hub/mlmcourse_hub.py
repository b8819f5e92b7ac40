"""The course hub's own pieces that run in users' servers (hubctl.py setup copies this module
into the hub's python/ folder, on every server's PYTHONPATH).

- `GradingRecords`: a logging filter that keeps the records of grading (nbgrader's and the
  course grader's), so the staff's servers write them to logs/grading.log too.
"""

from __future__ import annotations

import logging

# nbgrader's code that lists what is in the exchange: the Assignment List polls it every few
# seconds for every open lab, which is no grading run (it filled grading.log by the thousand).
_LISTING = ("/nbgrader/exchange/default/list.py", "/nbgrader/server_extensions/assignment_list/",
            "/nbgrader/server_extensions/course_list/")


class GradingRecords(logging.Filter):
    """Records at INFO or above logged from nbgrader's or the course grader's code (autograde,
    collect, feedback, export, the engine): not the server's requests, not DEBUG (a server run
    at DEBUG keeps those in its own log), not the exchange's listings."""

    def filter(self, record: logging.LogRecord) -> bool:
        path = record.pathname.replace("\\", "/")
        ours = "/nbgrader/" in path or "/mlmcourse/grader/" in path
        return ours and record.levelno >= logging.INFO and not any(p in path for p in _LISTING)
