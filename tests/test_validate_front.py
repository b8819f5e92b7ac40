"""Validate's dialog in JupyterLab opens with how many checks fail and shows each message before
its code (`course.validate_front`): the reply nbgrader's lab extension draws is reshaped, the
verdict is not (the same failed cells in the same order, every message whole)."""

from __future__ import annotations

import html
import json
import logging
from types import SimpleNamespace
from unittest.mock import Mock

import nbformat
import pytest
from nbconvert.filters import ansi2html
from nbgrader.server_extensions.validate_assignment import handlers as nbgrader_validate
from nbgrader.utils import compute_checksum
from nbgrader.validator import Validator
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine
from tornado.web import Application

from mlmcourse.course import environment, validate_front
from mlmcourse.course.cells import answer_cells
from mlmcourse.course.validate_front import CountedValidateHandler, reshape_reply

CHECK_MESSAGES = [
    "CheckFailed: all four tensors 1-D: expected ValueError, but nothing was raised",
    "CheckFailed: tokens as int32: expected ValueError, got RuntimeError: Index put\n"
    "  requires the source and destination dtypes match",
    "CheckFailed: a negative token: expected ValueError, but nothing was raised",
    "CheckFailed: tokens on the 'meta' device, the others on cpu: expected\n"
    "  ValueError, but nothing was raised",
    "You did not provide a response.",
]
TRACEBACK = (
    "\x1b[31m-----------\x1b[39m\n\x1b[31mNameError\x1b[39m   Traceback (most recent call last)\n"
    "\x1b[32m----> \x1b[39m\x1b[32m1\x1b[39m expect(corrupted == 1)\n\n"
    "\x1b[31mNameError\x1b[39m: name 'corrupted' is not defined"
)


def failed_cell(number: int, message: str) -> dict:
    """One failed cell as nbgrader's Validator reports it."""
    source = f'"""Check {number} <of> the contract."""\nexpect_rejects(make_mlm_inputs, {{}})'
    return {"source": source, "error": ansi2html(message), "raw_error": message}


def nbgrader_reply(*cells: dict) -> dict:
    return {"success": True, "value": {"failed": list(cells)}}


def test_the_dialog_opens_with_the_count_and_the_first_message():
    cells = [failed_cell(n, message) for n, message in enumerate(CHECK_MESSAGES, start=1)]
    shown = reshape_reply(nbgrader_reply(*cells))["value"]["failed"]
    first = shown[0]["source"]
    listed = "\n".join(f"{n}. {message}" for n, message in enumerate(CHECK_MESSAGES, start=1))
    assert first.startswith(f"5 checks fail:\n{listed}\n\n")
    assert first.endswith(f"Failing check 1 of 5:\n{CHECK_MESSAGES[0]}")


def test_the_list_shows_a_long_message_by_its_first_line():
    """A check that names every bad input it found (several lines) is listed by its first line,
    so every failing check stays in view; it is shown whole above its code."""
    long = ("CheckFailed: a NaN draw: expected ValueError, but nothing was raised\n"
            "2 more not rejected with ValueError:\n- nothing raised: an infinite draw\n"
            "- nothing raised: a draw of 1.0")
    cells = [failed_cell(1, long), failed_cell(2, CHECK_MESSAGES[1])]
    shown = reshape_reply(nbgrader_reply(*cells))["value"]["failed"]
    assert shown[0]["source"].startswith(
        "2 checks fail:\n1. CheckFailed: a NaN draw: expected ValueError, but nothing was raised"
        " (more below)\n2. ")
    assert shown[0]["source"].endswith(f"Failing check 1 of 2:\n{long}")


def test_each_message_comes_whole_before_its_code():
    cells = [failed_cell(n, message) for n, message in enumerate(CHECK_MESSAGES, start=1)]
    shown = reshape_reply(nbgrader_reply(*cells))["value"]["failed"]
    for number, (cell, message) in enumerate(zip(shown, CHECK_MESSAGES, strict=True), start=1):
        assert cell["source"].endswith(f"Failing check {number} of 5:\n{message}")
        # the dialog draws `error` as HTML, after `source`: the cell's code, escaped
        assert cell["error"] == html.escape(cells[number - 1]["source"], quote=False)
        assert "&lt;of&gt;" in cell["error"]


def test_the_verdict_is_unchanged():
    cells = [failed_cell(n, message) for n, message in enumerate(CHECK_MESSAGES, start=1)]
    shown = reshape_reply(nbgrader_reply(*cells))
    assert shown["success"] is True and list(shown["value"]) == ["failed"]
    assert [cell["raw_error"] for cell in shown["value"]["failed"]] == CHECK_MESSAGES


def test_one_failure_is_counted_in_the_singular():
    shown = reshape_reply(nbgrader_reply(failed_cell(1, CHECK_MESSAGES[0])))["value"]["failed"]
    assert shown[0]["source"] == (
        f"1 check fails. Its message comes first, then its code.\n\n"
        f"Failing check 1 of 1:\n{CHECK_MESSAGES[0]}")


def test_a_traceback_leads_with_its_error_and_follows_the_code_whole():
    cell = failed_cell(1, TRACEBACK)
    shown = reshape_reply(nbgrader_reply(cell))["value"]["failed"][0]
    error = "NameError: name 'corrupted' is not defined"
    assert shown["source"].endswith(f"Failing check 1 of 1:\n{error}")
    # the code, then nbgrader's own HTML of the whole traceback
    assert shown["error"] == html.escape(cell["source"], quote=False) + "\n\n" + cell["error"]


def test_replies_that_are_not_failures_pass_untouched():
    replies = [
        {"success": True, "value": {}},  # the notebook passes
        {"success": True, "value": {"changed": [{"source": "expect(True)"}]}},
        {"success": True, "value": {"type_changed": [
            {"source": "x", "old_type": "code", "new_type": "markdown"}]}},
        {"success": False, "value": "Traceback (most recent call last): ..."},
        {"success": True, "value": json.dumps({"failed": [failed_cell(1, "x")]})},  # a string
    ]
    for reply in replies:
        assert reshape_reply(reply) == reply


def serverapp(base_url: str, validate_enabled: bool = True) -> SimpleNamespace:
    """What the two extensions read of a Jupyter server: its web app, root, log, extensions."""
    return SimpleNamespace(
        web_app=Application([], base_url=base_url), root_dir="/tmp",
        log=logging.getLogger("test_validate_front"),
        jpserver_extensions={validate_front.NBGRADER_VALIDATE: validate_enabled})


def handler_for(app: SimpleNamespace, uri: str):
    request = HTTPServerRequest(start_line=RequestStartLine("POST", uri, "HTTP/1.1"),
                                headers=HTTPHeaders({"Host": "x"}))
    return app.web_app.find_handler(request).handler_class


def test_the_front_answers_validate_before_nbgrader_whichever_loads_first():
    for front_first in (True, False):
        app = serverapp("/user/a.b/")  # a "." in a user name: a character, not a pattern
        loaders = [validate_front._load_jupyter_server_extension,
                   nbgrader_validate.load_jupyter_server_extension]
        for load in loaders if front_first else loaders[::-1]:
            load(app)
        assert handler_for(app, "/user/a.b/assignments/validate?path=n.ipynb") is (
            CountedValidateHandler)
        # the version check and every other address are nbgrader's, as before
        assert handler_for(app, "/user/a.b/nbgrader_version?version=1") is (
            nbgrader_validate.NbGraderVersionHandler)
        assert handler_for(app, "/user/aXb/assignments/validate") is not CountedValidateHandler


def test_without_nbgraders_validate_the_front_adds_nothing():
    app = serverapp("/", validate_enabled=False)
    validate_front._load_jupyter_server_extension(app)
    assert handler_for(app, "/assignments/validate") is not CountedValidateHandler


def test_install_config_enables_the_front_for_the_environment(tmp_path):
    environment.install_environment_config(tmp_path)
    enabled = json.loads(environment.validate_front_config_path(tmp_path).read_text())
    extensions = enabled["ServerApp"]["jpserver_extensions"]
    assert extensions == {validate_front.__name__: True}
    points = validate_front._jupyter_server_extension_points()
    assert [point["module"] for point in points] == [validate_front.__name__]


# --- Layouts: Validate reads an answer laid out over several cells as the grader does ---------

RIGHT = "def double(x):\n    return 2 * x"
WRONG = "def double(x):\n    return x + 1"
HELPER = "def twice(x):\n    return x + x"
CHECK_MESSAGE = "double(3) should be 6"


def nbgrader_cell(cell_type: str, source: str, grade_id: str, **flags) -> nbformat.NotebookNode:
    """A cell as nbgrader's release writes it (a locked cell with its checksum)."""
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.metadata["nbgrader"] = {"cell_type": cell_type, "grade_id": grade_id,
                                 "grade": False, "solution": False, "locked": False,
                                 "schema_version": 3, **flags}
    if flags.get("locked"):
        cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)
    return cell


def answer(source: str, cell_type: str = "code") -> nbformat.NotebookNode:
    cell = nbgrader_cell(cell_type, source, "double", solution=True)
    cell.metadata["nbgrader"]["cell_type"] = "code"  # a copy keeps the metadata of its original
    return cell


def notebook(*answers: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A released notebook with the student's `answers` in place of its answer cell."""
    nb = nbformat.v4.new_notebook()
    check = f"assert double(3) == 6, {CHECK_MESSAGE!r}"
    nb.cells = [nbgrader_cell("code", "import math", "setup", locked=True), *answers,
                nbgrader_cell("code", check, "test_double", grade=True, locked=True, points=1)]
    return nb


LAYOUTS = {  # the right answer in each layout, and how the wrong one is laid out the same way
    "split": (lambda body: [answer(HELPER), answer(body)]),
    "old attempt as Markdown": (lambda body: [answer(body), answer(WRONG, "markdown")]),
    "old attempt as code": (lambda body: [answer(WRONG), answer(body)]),
}
RIGHT_BODY = {"split": "def double(x):\n    return twice(x)"}


def validate(tmp_path, nb: nbformat.NotebookNode) -> dict:
    """The front's reply to Validate on `nb` saved as tmp_path/n.ipynb (the file is kept)."""
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    before = path.read_bytes()
    app = Application([], root_dir=str(tmp_path))
    request = HTTPServerRequest(start_line=RequestStartLine("POST", "/", "HTTP/1.1"),
                                headers=HTTPHeaders({"Host": "x"}), connection=Mock())
    reply = CountedValidateHandler(app, request).validate_laid_out("n.ipynb")
    assert path.read_bytes() == before  # the student's file is only read
    return reply


def test_each_layout_validates_as_the_grader_runs_it(tmp_path):
    for layout, cells in LAYOUTS.items():
        right = cells(RIGHT_BODY.get(layout, RIGHT))
        reply = validate(tmp_path, notebook(*right))
        assert reply["success"] is True, (layout, reply)
        assert "failed" not in reply["value"], (layout, reply)
        assert reply["value"]["notes"] == validate_front.notes_for(notebook(*right))
        # the grader runs the same answer cells, in the same order
        assert [source for _, source in answer_cells(notebook(*right))] == [
            cell.source for cell in right if cell.cell_type == "code"]


def test_a_wrong_answer_in_each_layout_fails_with_the_checks_message(tmp_path):
    wrong_layouts = {
        "split": [answer(HELPER), answer(WRONG)],
        "old attempt as Markdown": [answer(WRONG), answer(RIGHT, "markdown")],
        "old attempt as code": [answer(RIGHT), answer(WRONG)],
    }
    for layout, cells in wrong_layouts.items():
        reply = validate(tmp_path, notebook(*cells))
        [failed] = reply["value"]["failed"]
        assert CHECK_MESSAGE in failed["raw_error"], layout
        notes = validate_front.notes_for(notebook(*cells))
        assert failed["source"].startswith("\n".join(notes) + "\n\n1 check fails."), layout


def test_the_notes_say_how_the_grader_reads_the_layout():
    split = validate_front.notes_for(notebook(answer(HELPER), answer(RIGHT)))
    assert split == ["Note: 2 cells carry the answer id 'double': the grader runs them all, in "
                     "the notebook's order, as Run All does (a name defined twice keeps its "
                     "later definition)."]
    markdown = validate_front.notes_for(notebook(answer(RIGHT), answer(WRONG, "markdown")))
    assert markdown == ["Note: a Markdown cell carries the answer id 'double': the grader does "
                        "not run it."]
    assert validate_front.notes_for(notebook(answer(RIGHT))) == []


def test_the_copy_validated_keeps_every_answer_cell_in_order_with_ids_of_its_own():
    nb = notebook(answer(HELPER), answer(RIGHT), answer(WRONG, "markdown"))
    laid_out = validate_front.as_the_grader_reads(nb)
    ids = [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in laid_out.cells]
    assert ids == ["setup", "double", "double-part-2", None, "test_double"]
    assert [cell.source for cell in laid_out.cells] == [cell.source for cell in nb.cells]
    one_cell = notebook(answer(RIGHT))
    assert validate_front.as_the_grader_reads(one_cell) == one_cell


def test_without_the_front_nbgrader_refuses_these_layouts(tmp_path):
    """What the front changes: nbgrader's own Validator refuses both before running anything."""
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook(answer(HELPER), answer(RIGHT)), path)
    with pytest.raises(Exception, match="nbgrader metadata may be corrupted"):
        Validator().validate(str(path))
    nbformat.write(notebook(answer(RIGHT), answer(WRONG, "markdown")), path)
    assert list(Validator().validate(str(path))) == ["type_changed"]
