"""The trusted side's view of what went wrong in a student process: the exceptions a test sees, and
how an error the student process described (`protocol.error_info`) becomes one.

An exception in the student's code travels as the names of its classes, its message and the
student's part of the traceback; the trusted side re-raises it as the first builtin class in that
list (``decode_error``), from a frame with a fixed name.
"""

from __future__ import annotations

import builtins
import linecache

from mlmcourse.grader.wire.hygiene import clean_error


class StudentCodeCrashed(RuntimeError):
    """The process running the student's code died."""


class StudentCodeTimeout(TimeoutError):
    """The student's code ran past its time."""


class StudentValue:
    """Stands for an object the student's code returned that cannot cross the boundary."""

    def __init__(self, type_name: str, text: str):
        self._type_name, self._text = type_name, text

    def __repr__(self) -> str:
        return f"<{self._type_name} object returned by your code: {self._text}>"


# The error a test sees is raised from here: a frame with a fixed name (no path of this file, so
# autograded notebooks are the same wherever the course lives) that says where the code ran.
_RAISE_FILE = "<your code, run in the grading sandbox>"
_RAISE_LINES = ["def _raise(error):\n",
                "    raise error  # raised by (or about) your code, in the grading sandbox\n"]
linecache.cache[_RAISE_FILE] = (sum(map(len, _RAISE_LINES)), None, _RAISE_LINES, _RAISE_FILE)
_raise_namespace: dict = {}
exec(compile("".join(_RAISE_LINES), _RAISE_FILE, "exec"), _raise_namespace)  # noqa: S102


def raise_from_sandbox(error: BaseException):
    """Raise `error` (without the context of the exception being handled, if any)."""
    __tracebackhide__ = True
    error.__cause__ = None
    error.__suppress_context__ = True
    _raise_namespace["_raise"](error)


def decode_error(info: dict, what: str) -> BaseException:
    """A trusted exception of the first builtin class in the student's exception's MRO."""
    info = clean_error(info)
    message = str(info.get("message", ""))
    name = str(info.get("name", "Exception"))
    chosen = None
    for entry in info.get("mro", []):
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == "builtins"):
            continue
        cls = getattr(builtins, str(entry[1]), None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            if not issubclass(cls, Exception):
                cls, message = RuntimeError, f"your code raised {name}({message!r}) in {what}"
            try:
                chosen = cls(message)
                break
            except Exception:  # noqa: BLE001  (a builtin that wants other arguments)
                continue
    if chosen is None:
        chosen = RuntimeError(f"{name}: {message}")
    tb = str(info.get("traceback", "")).strip("\n")
    if tb:
        chosen.add_note(f"In your code ({name}):\n{tb}")
    return chosen
