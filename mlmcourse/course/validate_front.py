"""Validate's dialog in JupyterLab opens with how many checks fail, each message before its code.

nbgrader's lab extension draws the reply of `POST {base_url}/assignments/validate` itself: for
each failed cell a line "The following cell failed:", the cell's code (`source`, as text), then
the message (`error`, as HTML). With five failures the student saw the first check's code and
its message, and the four others below the fold, with no count anywhere.

This server extension answers that request before nbgrader's own handler does. It runs
nbgrader's validation unchanged (nbgrader's handler: the same Validator and the same
configuration, read the same way) and changes only how the failed cells are laid out in the
two fields the dialog draws: `source` carries the message (the first one also the count and
every failing check's message, so they are all in view as the dialog opens), `error` the code.
The verdict and every message stay whole: which cells fail, in the notebook's order, and
`raw_error` as nbgrader wrote it. Replies that are not failures pass through untouched.

A notebook laid out as JupyterLab makes it with one click (Split Cell on an answer cell, an old
attempt kept as a copy, code or Markdown) carries one answer id on several cells, which nbgrader's
Validator refuses before it runs anything ("the nbgrader metadata may be corrupted", "type
changed"). The grader reads such a layout by one rule (`cells.answer_cells`: every code cell that
carries an answer id runs, in the notebook's order, as Run All runs them; a Markdown cell runs
nothing), so Validate does too: it validates a temporary copy laid out as the grader reads it
(`as_the_grader_reads`) and says so at the top of its reply (`cells.layout_notes`). The student's
file is only read.

`python -m mlmcourse install-config` enables it for the environment (`environment.py`).
"""

from __future__ import annotations

import copy
import html
import json
import re
import tempfile
from pathlib import Path

import nbformat
from nbconvert.filters import strip_ansi
from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler
from tornado import web
from tornado.routing import PathMatches, Rule

from mlmcourse.course.cells import answer_id, layout_notes, nbgrader_meta

NBGRADER_VALIDATE = "nbgrader.server_extensions.validate_assignment"
TRACEBACK = "Traceback (most recent call last)"


def summary(messages: list[str]) -> str:
    """How many checks fail and, when more than one, each one's message by its first line: all
    in view at once (a message that goes on, such as a list of every bad input a check found,
    is shown whole above its check's code)."""
    if len(messages) == 1:
        return "1 check fails. Its message comes first, then its code."
    listed = "\n".join(f"{number}. {first_line(message)}"
                       for number, message in enumerate(messages, start=1))
    return (f"{len(messages)} checks fail:\n{listed}\n\n"
            "Below, each failing check: its message first, then its code.")


def first_line(message: str) -> str:
    """A message's first line with its wrapped continuation (indented lines); what follows it
    (an unindented line: a list of more inputs, say) is left for below."""
    lines = message.strip().splitlines() or [""]
    end = 1
    while end < len(lines) and lines[end][:1].isspace():
        end += 1
    return "\n".join(lines[:end]) + (" (more below)" if end < len(lines) else "")


def headline(message: str) -> tuple[str, bool]:
    """The message to show first, and whether a traceback stays to be shown after the code.

    A check's own message (the course's `CheckFailed: ...`, nbgrader's "You did not provide a
    response.") is shown whole. A traceback leads with its last line, the error itself; the
    whole traceback follows the code."""
    plain = strip_ansi(message).strip()
    if TRACEBACK not in plain:
        return plain, False
    return plain.splitlines()[-1].strip(), True


def reshape_failed(failed: list[dict]) -> list[dict]:
    """nbgrader's failed cells laid out for its dialog: count and message first, then the code."""
    headlines = [headline(cell["raw_error"]) for cell in failed]
    reshaped = []
    for number, (cell, (message, traceback_follows)) in enumerate(
            zip(failed, headlines, strict=True), start=1):
        heading = f"Failing check {number} of {len(failed)}:\n{message}"
        if number == 1:
            heading = f"{summary([message for message, _ in headlines])}\n\n{heading}"
        code = html.escape(cell["source"], quote=False)
        if traceback_follows:
            code += "\n\n" + cell["error"]  # nbgrader's own HTML of the traceback (escaped)
        reshaped.append({**cell, "source": heading, "error": code})
    return reshaped


def reshape_reply(reply: dict) -> dict:
    """nbgrader's Validate reply with its failed cells reshaped; any other reply as it came."""
    value = reply.get("value")
    if not reply.get("success") or not isinstance(value, dict) or not value.get("failed"):
        return reply
    if set(value) != {"failed"}:  # nbgrader reports failures alone; anything else as it came
        return reply
    return {**reply, "value": {"failed": reshape_failed(value["failed"])}}


def as_the_grader_reads(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `nb` that nbgrader's Validator runs as the grader reads it (`cells.answer_cells`):
    every code cell that carries an answer id keeps its place (the second and later cells of one
    id get ids of their own, `ID-part-2`, ...), and a Markdown copy of a code answer cell loses
    its nbgrader metadata (it runs nothing either way). Any other cell is as it was."""
    laid_out = copy.deepcopy(nb)
    parts: dict[str, int] = {}
    for cell in laid_out.cells:
        gid = answer_id(cell)
        if gid is None:
            continue
        if cell.cell_type != "code":
            if nbgrader_meta(cell).get("cell_type", cell.cell_type) != cell.cell_type:
                del cell.metadata["nbgrader"]
            continue
        parts[gid] = parts.get(gid, 0) + 1
        if parts[gid] > 1:
            cell.metadata["nbgrader"]["grade_id"] = f"{gid}-part-{parts[gid]}"
    return laid_out


def notes_for(nb: nbformat.NotebookNode) -> list[str]:
    """What the grader makes of `nb`'s layout, one line each ('Note: ...'); none for the
    ordinary one cell per answer. The notebook's answers are the ids its cells carry."""
    own = {gid for cell in nb.cells if (gid := answer_id(cell))}
    return [f"Note: {note}." for note in layout_notes(nb, own)]


def with_notes(reply: dict, notes: list[str]) -> dict:
    """The reply with the layout's notes: in `value["notes"]`, and above the first failing check
    (the top of the dialog; on success nbgrader's dialog draws its own line only)."""
    value = reply.get("value")
    if not notes or not reply.get("success") or not isinstance(value, dict):
        return reply
    value = {**value, "notes": notes}
    if value.get("failed"):
        first, *rest = value["failed"]
        first = {**first, "source": "\n".join(notes) + "\n\n" + first["source"]}
        value["failed"] = [first, *rest]
    return {**reply, "value": value}


class CountedValidateHandler(ValidateAssignmentHandler):
    """nbgrader's Validate handler, whose reply lists the failures counted, message first, and
    which reads an answer laid out over several cells as the grader does."""

    _validating_in: str | None = None

    @property
    def root_dir(self) -> str:
        return self._validating_in or self.settings["root_dir"]

    @web.authenticated
    def post(self) -> None:
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = self.get_json_body()["path"]
        self.finish(json.dumps(self.validate_laid_out(path)))

    def validate_laid_out(self, path: str) -> dict:
        """nbgrader's validation of the notebook at `path`, laid out as the grader reads it."""
        notebook = self.read_notebook(path)
        laid_out = None if notebook is None else as_the_grader_reads(notebook)
        if laid_out is None or laid_out == notebook:
            return reshape_reply(self.validate_notebook(path))
        with tempfile.TemporaryDirectory(prefix="mlmcourse-validate-") as folder:
            name = Path(path).name
            nbformat.write(laid_out, Path(folder) / name)
            self._validating_in = folder  # nbgrader's handler reads the notebook under root_dir
            try:
                reply = self.validate_notebook(name)
            finally:
                self._validating_in = None
        return with_notes(reshape_reply(reply), notes_for(notebook))

    def read_notebook(self, path: str) -> nbformat.NotebookNode | None:
        """The notebook at `path` under the server's root (None when there is none to read:
        nbgrader's own handler then answers, as it would have)."""
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            return None
        try:
            return nbformat.read(target, as_version=4)
        except Exception:  # noqa: BLE001  (nbgrader's handler reports what is wrong with it)
            return None


def _jupyter_server_extension_points():
    return [{"module": "mlmcourse.course.validate_front"}]


def _load_jupyter_server_extension(serverapp) -> None:
    if not serverapp.jpserver_extensions.get(NBGRADER_VALIDATE):
        serverapp.log.info("mlmcourse: nbgrader's Validate is not enabled; nothing to front")
        return
    web_app = serverapp.web_app
    web_app.settings.setdefault("root_dir", serverapp.root_dir)  # nbgrader's handler reads it
    path = web_app.settings["base_url"].rstrip("/") + "/assignments/validate"
    # First of the application's rules, so the request never reaches nbgrader's own handler
    # (which nbgrader's extension registers with the same path).
    matcher = PathMatches(re.escape(path) + "$")
    web_app.default_router.rules.insert(0, Rule(matcher, CountedValidateHandler))
