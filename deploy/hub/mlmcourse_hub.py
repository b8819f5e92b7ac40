"""The course hub's own pieces that run in users' servers (hubctl.py setup copies this module
into the hub's python/ folder, on every server's PYTHONPATH).

- `GradingRecords`: a logging filter that keeps the records of grading (nbgrader's and the
  course grader's), so the staff's servers write them to logs/grading.log too.
- `NamedStudent` and `NamedFeedbackExporter`: feedback names the student as the gradebook does
  ("Ann Student"), not by a hub name nobody knows (`lti-stu-103`); the course folder's
  nbgrader_config.py on a hub turns them on (hubctl.py setup).
"""

from __future__ import annotations

import logging

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from mlmcourse.grader.results.feedback import FeedbackExporter

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


class NamedStudent(Preprocessor):
    """The last of feedback's preprocessors (nbgrader's GetGrades has looked the student up by
    id): the page's `student` becomes the gradebook's name, the id kept as `student_id`."""

    enabled = Bool(True).tag(config=True)  # (nbconvert runs a preprocessor only when enabled)

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook, MissingEntry

        info = resources.get("nbgrader", {})
        try:
            with Gradebook(info["db_url"]) as gradebook:
                student = gradebook.find_student(info["student"])
                name = " ".join(filter(None, [student.first_name, student.last_name]))
        except (KeyError, MissingEntry):
            name = ""
        if name:  # (a new dict: the converter's own, which names the output folder, is kept)
            resources["nbgrader"] = {**info, "student": name, "student_id": info["student"]}
        return nb, resources


class NamedFeedbackExporter(FeedbackExporter):
    """The course's feedback page; the resources it returns name the student by id again, as
    nbgrader writes the page into that student's folder."""

    def from_notebook_node(self, nb, resources=None, **kw):
        page, resources = super().from_notebook_node(nb, resources, **kw)
        info = resources.get("nbgrader", {})
        if "student_id" in info:
            resources["nbgrader"] = {**info, "student": info["student_id"]}
        return page, resources
