"""Visible checks for the notebooks: one short line in a check cell, one plain message on failure.

Check cells and the public part of each graded cell (before its hidden block) call these, so a
cell stays two or three lines long and nbgrader's Validate dialog shows the student the message
right under the few lines that failed. Every helper returns None, so a cell ending with one of
them echoes nothing. No solution code lives here: only comparisons.
"""

from __future__ import annotations

import contextlib
import math
import sys
import textwrap


class CheckFailed(AssertionError):
    """A visible check failed; the message says what to fix."""


# nbgrader's Validate indents every line of an error by four spaces and cuts it at 87 characters,
# so a message shown in lines of at most this many characters reaches the student whole.
MESSAGE_WIDTH = 80


def message_lines(error: BaseException, width: int = MESSAGE_WIDTH) -> list[str]:
    """`CheckFailed: message` as lines of at most `width` characters, the message's own line
    breaks kept."""
    lines: list[str] = []
    for paragraph in f"{type(error).__name__}: {error}".splitlines():
        lines.extend(textwrap.wrap(paragraph, width, break_on_hyphens=False,
                                   subsequent_indent="  ") or [""])
    return lines


def _show_message_only(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for a failed check: the message, without the traceback through this
    module (the check cell's own few lines already say what was called)."""
    lines = message_lines(value)
    shell._showtraceback(etype, value, lines)
    return lines


def _show_failed_checks_plainly() -> None:
    """In an IPython kernel, a failed check shows as its message alone, in short lines: in the
    notebook, in Validate's dialog and in `nbgrader validate`. The error's name and text (what
    the grader and the feedback read) stay as they are."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and not shell.custom_exceptions:  # never displace someone else's
        shell.set_custom_exc((CheckFailed,), _show_message_only)


_show_failed_checks_plainly()


def expect(condition, message: str) -> None:
    """Fail with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)


def expect_equal(got, expected, what: str) -> None:
    """Fail unless `got == expected` (tensors: same shape and every element equal)."""
    same = got == expected
    if hasattr(same, "all"):
        same = getattr(got, "shape", None) == getattr(expected, "shape", None) and bool(same.all())
    expect(same, f"{what}: expected {expected!r}, got {got!r}")


def expect_close(got, expected, what: str, tolerance: float = 1e-6) -> None:
    """Fail unless numbers (or same-shaped tensors) agree to within `tolerance`."""
    if hasattr(got, "shape") or hasattr(expected, "shape"):
        expect(getattr(got, "shape", None) == getattr(expected, "shape", None),
               f"{what}: expected shape {tuple(expected.shape)}, got "
               f"{tuple(getattr(got, 'shape', ()))}")
        error = (got.double() - expected.double()).abs().max().item() if got.numel() else 0.0
    else:
        error = abs(float(got) - float(expected))
    expect(math.isfinite(error) and error <= tolerance,
           f"{what}: off by {error:.3g} (tolerance {tolerance:g})")


def expect_raises(errors, call, what: str) -> None:
    """Fail unless `call()` raises one of `errors` (an exception class or a tuple of them)."""
    try:
        call()
    except errors:
        return
    except Exception as other:  # noqa: BLE001 - report the wrong kind of error plainly
        raise CheckFailed(f"{what}: expected {_names(errors)}, got "
                          f"{type(other).__name__}: {other}") from None
    raise CheckFailed(f"{what}: expected {_names(errors)}, but nothing was raised")


@contextlib.contextmanager
def stderr_as_output():
    """Inside the block, what the student's code writes to stderr shows as ordinary output.

    nbgrader's Validate fails a graded cell that writes anything to stderr, but the grader does
    not (a correct answer that warns loses nothing, SPEC "right in both directions"); the public
    part of each graded cell calls the student's function inside this block, so Validate agrees.
    """
    with contextlib.redirect_stderr(sys.stdout):
        yield


def _names(errors) -> str:
    errors = errors if isinstance(errors, tuple) else (errors,)
    return " or ".join(error.__name__ for error in errors)


# The dispatcher operators behind the library losses of notebooks 2 and 3 (every log-softmax and
# every NLL loss), whatever name the student's code reached them by.
LIBRARY_LOSS_OPERATORS = frozenset({
    "aten::log_softmax", "aten::_log_softmax", "aten::special_log_softmax",
    "aten::_log_softmax_backward_data", "aten::cross_entropy_loss", "aten::nll_loss",
    "aten::nll_loss_nd", "aten::nll_loss_forward", "aten::nll_loss_backward",
    "aten::nll_loss2d", "aten::nll_loss2d_forward", "aten::nll_loss2d_backward",
})


def expect_no_library_loss(call, what: str) -> None:
    """Fail if `call()` runs a library log-softmax or NLL loss (the rule of notebooks 2 and 3)."""
    from torch.utils import _python_dispatch

    class _Watch(_python_dispatch.TorchDispatchMode):
        # Under grading the student's code runs in another process; the engine hands the
        # operators it ran to every active mode that has `record_remote`.
        def __init__(self) -> None:
            super().__init__()
            self.ran: set[str] = set()

        def __torch_dispatch__(self, op, types, args=(), kwargs=None):
            self.ran.add(op._schema.name)
            return op(*args, **(kwargs or {}))

        def record_remote(self, op_names) -> None:
            self.ran.update(op_names)

    with _Watch() as watch:
        call()
    used = sorted(watch.ran & LIBRARY_LOSS_OPERATORS)
    expect(not used, f"{what} ran {', '.join(used)}: build the loss from torch.logsumexp and "
                     "gather, not from a library log-softmax or cross-entropy")


def expect_returns(call, expected, what: str, advice: str = "") -> None:
    """Fail unless `call()` returns a value equal to `expected`. An error raised by the call
    becomes the plain message `what: raised ...` (not a traceback), and `advice`, when given,
    follows on its own lines. Put what failed first: it is what a student reads first."""
    try:
        got = call()
    except Exception as error:  # noqa: BLE001 - any error of the checked code, reported plainly
        message = f"{what}: raised {type(error).__name__}: {error}"
    else:
        try:
            expect_equal(got, expected, what)
            return
        except CheckFailed as failed:
            message = str(failed)
    raise CheckFailed(f"{message}\n{advice}" if advice else message)
