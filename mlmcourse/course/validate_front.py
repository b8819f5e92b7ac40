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

`python -m mlmcourse install-config` enables it for the environment (`environment.py`).
"""

from __future__ import annotations

import html
import json
import re

from nbconvert.filters import strip_ansi
from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler
from tornado import web
from tornado.routing import PathMatches, Rule

NBGRADER_VALIDATE = "nbgrader.server_extensions.validate_assignment"
TRACEBACK = "Traceback (most recent call last)"


def summary(messages: list[str]) -> str:
    """How many checks fail and, when more than one, each one's message: all in view at once."""
    if len(messages) == 1:
        return "1 check fails. Its message comes first, then its code."
    listed = "\n".join(f"{number}. {message}" for number, message in enumerate(messages, start=1))
    return (f"{len(messages)} checks fail:\n{listed}\n\n"
            "Below, each failing check: its message first, then its code.")


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


class CountedValidateHandler(ValidateAssignmentHandler):
    """nbgrader's Validate handler, whose reply lists the failures counted, message first."""

    @web.authenticated
    def post(self) -> None:
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = self.get_json_body()["path"]
        self.finish(json.dumps(reshape_reply(self.validate_notebook(path))))


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
