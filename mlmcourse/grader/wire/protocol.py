"""The protocol between a trusted kernel and a student process: which messages exist, and what each
holds.

Requests (trusted -> student process): ``init`` (run the setup and answer cells), ``call`` (one of
the student's functions on the arguments the blob holds), ``backward`` (autograd over the student's
graph of an earlier result), ``release`` (forget those graphs), ``exit``. Each request that waits
for an answer allows exactly the replies `REPLIES` lists for it; a reply of another type, with a
field the type does not have or a field of the wrong kind, is malformed: the trusted side treats it
as the student's process failing (`check_reply`), whatever it printed.

Replies (student process -> trusted), with the fields `REPLY_FIELDS` gives them: ``ready`` (each
cell's output and error, the names the cells bound), ``result`` (how to rebuild the results from the
blob: the tree, which outputs are differentiable, the handle of their graph), ``grads``, ``error``
(the student's exception, `error_info`). Every reply carries what the code printed (``stdout``,
``stderr``).

What a reply says about the call (which outputs are differentiable, whether the global
generator moved: a yes or no, never its state) is the student process's claim:
the student's code runs in that process and can change what it says. How the trusted side uses
each claim is in the README's threat model. The student process imports this module,
:mod:`mlmcourse.grader.wire.codec` and the cell runner; nothing of the trusted side imports the
student process.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from mlmcourse.grader.limits import CAPS
from mlmcourse.grader.wire.framing import ChannelClosed, recv_msg, send_msg

__all__ = ["REPLIES", "ChannelClosed", "check_reply", "error_info", "recv_msg", "send_msg"]

INIT, CALL, BACKWARD, RELEASE, EXIT = "init", "call", "backward", "release", "exit"
READY, RESULT, GRADS, ERROR = "ready", "result", "grads", "error"

# The replies each request allows.
REPLIES: dict[str, tuple[str, ...]] = {
    INIT: (READY, ERROR),
    CALL: (RESULT, ERROR),
    BACKWARD: (GRADS, ERROR),
}

_TEXT = {"stdout": str, "stderr": str}
# The fields of each reply and their JSON kinds (int for a handle may also be None).
REPLY_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    READY: {"cells": (list,), "names": (dict,)},
    RESULT: {"spec": (list,), "diff": (list,), "grad_leaf": (list,),
             "handle": (int, type(None))},
    GRADS: {},
    ERROR: {"error": (dict,)},
}


class MalformedReply(ValueError):
    """A reply that is not one the request allows."""


def check_reply(request: str, header: dict) -> dict:
    """`header` when it is a reply `request` allows, with fields of the right kinds; else
    `MalformedReply` saying what is wrong (for the TA's log, not the student's score)."""
    op = header.get("op")
    allowed = REPLIES[request]
    if op not in allowed:
        raise MalformedReply(f"a {request!r} request got a reply of type {str(op)[:40]!r} "
                             f"(allowed: {', '.join(allowed)})")
    fields = {**REPLY_FIELDS[op], **{k: (v,) for k, v in _TEXT.items()}}
    for key, value in header.items():
        if key == "op":
            continue
        kinds = fields.get(key)
        if kinds is None:
            raise MalformedReply(f"a {op!r} reply has no field {str(key)[:40]!r}")
        if type(value) not in kinds:  # exact JSON kinds: a bool is no handle
            raise MalformedReply(f"the field {key!r} of a {op!r} reply is a "
                                 f"{type(value).__name__}")
    return header


# ---------------------------------------------------------------------------------------------
# The student's exception, described by the student process.


def error_info(err: BaseException, hide: tuple[str, ...]) -> dict:
    """Type (as the names of its classes), message and the student's part of the traceback."""
    try:
        message = str(err)
    except BaseException:  # noqa: BLE001  (a hostile __str__)
        message = "<the message could not be read>"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename not in hide]
    lines = traceback.format_list(frames[-12:])
    # Cut before the scrub: it only shortens paths (12 frames of paths under PATH_MAX lose less
    # than 3 * the output cap), so the last cap's worth of characters come out as they did uncut.
    text = relative_paths("".join(lines)[-4 * CAPS.output_chars:])
    return {
        "mro": [[c.__module__, c.__qualname__] for c in type(err).__mro__][:32],
        "name": type(err).__name__,
        "message": message[:CAPS.output_chars],
        "traceback": text[-CAPS.output_chars:],
    }


# Linear: a match starts only at 'File "/' and its path ends at the next '"', so no character is
# scanned by more than one attempt (unlike a pattern that may start at every '/').
_LIBRARY_PATH = re.compile(r'File "/[^"]*/(?:site-packages|lib/python3\.\d+)/')
_COURSE_PATH = re.compile(r'File "/[^"]*/(mlmcourse/)')


def relative_paths(text: str) -> str:
    """Library and course files by their short names (torch/autograd/function.py): where the
    grader keeps its environment is no business of the feedback, and must not change it."""
    return _COURSE_PATH.sub(r'File "\1', _LIBRARY_PATH.sub('File "', text))


# ---------------------------------------------------------------------------------------------
# A student's function passed back to the student's code as an argument (a proxy pickled by the
# trusted side) becomes the student's own object again: the student process names how it finds one.

_resolve_student_object: Any = None


def set_student_object_resolver(resolve) -> None:
    """Student side: how `student_object` finds the object at a dotted path."""
    global _resolve_student_object
    _resolve_student_object = resolve


def student_object(path: str):
    """Student side: the unpickled stand-in for a proxy passed back as an argument."""
    if _resolve_student_object is None:
        raise RuntimeError(f"{path} is not available here")
    return _resolve_student_object(path)
