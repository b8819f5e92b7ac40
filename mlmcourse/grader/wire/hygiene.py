"""What a student process's reply may put in front of a reader: capped, and plain text.

The student process caps its own output, but its modules are the student's to change; these run on
the trusted side, on every reply, and every character shown is charged to the notebook's budget.
"""

from __future__ import annotations

import re
from typing import Any

from mlmcourse.grader.limits import CAPS

TRUNCATED = "\n... (output truncated)\n"  # what follows output cut at CAPS.output_chars

# Control characters but \n and \t (ESC starts terminal colour and cursor codes; a lone \r hides
# a line, and nbconvert's carriage-return pass is quadratic on a long one), bidi overrides, and
# lone surrogates (they cannot be written to a notebook as UTF-8).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(value: Any, cap: int = CAPS.output_chars, note: str = TRUNCATED,
               tail: bool = False) -> str:
    """`value` as plain text: its first (or last) `cap` characters, `note` after a cut head; not
    a str: empty. Linear, reading about `cap` characters (an honest student process's text is
    unchanged)."""
    if not isinstance(value, str):
        return ""
    limit = cap + len(note)  # the longest an honest student process sends
    text = _UNSAFE.sub(_escape, value[-limit:] if tail else value[:limit])
    if len(value) <= limit and len(text) <= limit:
        return text
    return text[-cap:] if tail else text[:cap] + note


def clean_error(info: Any) -> dict:
    """An error a student process described (`protocol.error_info`), capped and plain."""
    info = info if isinstance(info, dict) else {}
    mro = info.get("mro") if isinstance(info.get("mro"), list) else []
    return {"mro": [[clean_text(e[0], 200, ""), clean_text(e[1], 200, "")] for e in mro[:32]
                    if isinstance(e, list) and len(e) == 2],
            "name": clean_text(info.get("name"), 200, "") or "Exception",
            "message": clean_text(info.get("message", ""), note=""),
            "traceback": clean_text(info.get("traceback", ""), note="", tail=True)}


class OutputBudget:
    """What the student's code may print in one notebook, all calls together."""

    def __init__(self, chars: int = CAPS.notebook_output_chars):
        self.chars, self.left, self.spent = chars, chars, False

    def admit(self, text: str, keep: int = 0) -> str:
        """`text`, or as much of it as is left (but its first `keep` characters: an error's
        headline is shown however much was printed before); the first time it runs out, a
        note instead. What is shown is charged either way."""
        if len(text) <= self.left:
            self.left -= len(text)
            return text
        kept, self.left = text[:max(self.left, keep)], 0
        if self.spent or keep:
            return kept
        self.spent = True
        return kept + (f"\n... (your code has printed more than {self.chars:,} characters in "
                       "this notebook: the rest of its output is not shown)\n")


def clean_reply(header: dict, budget: OutputBudget | None) -> dict:
    """A student process's reply with its text capped and plain: the output of the call and the text
    of its error (both charged to `budget` when they will be shown), the cells' outputs and the
    names' docs."""
    clean = dict(header)
    for key in ("stdout", "stderr"):
        if key in header:
            text = clean_text(header[key])
            clean[key] = budget.admit(text) if budget is not None else text
    if "error" in header:
        clean["error"] = clean_error(header["error"]) if header["error"] else None
        if clean["error"] and budget is not None:  # an error's text is shown too: charged
            error = clean["error"]
            error["message"] = budget.admit(error["message"], keep=CAPS.error_headline_chars)
            error["traceback"] = budget.admit(error["traceback"])
    if "cells" in header:
        cells = header["cells"] if isinstance(header["cells"], list) else []
        clean["cells"] = [clean_reply({
            "grade_id": cell.get("grade_id") if isinstance(cell.get("grade_id"), str) else "",
            "stdout": cell.get("stdout"), "stderr": cell.get("stderr"), "error": cell.get("error"),
        }, budget) for cell in cells if isinstance(cell, dict)]
    if "names" in header:
        names = header["names"] if isinstance(header["names"], dict) else {}
        clean["names"] = {name: {"kind": clean_text(info.get("kind"), 40, ""),
                                 "doc": clean_text(info.get("doc"))}
                          for name, info in names.items() if isinstance(info, dict)
                          and isinstance(name, str) and name.isidentifier()}
    return clean
