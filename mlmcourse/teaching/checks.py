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


class CheckFailed(AssertionError):
    """A visible check failed; the message says what to fix."""


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
    follows on its own lines. Keep `what` short: nbgrader's Validate cuts every line of a
    message after about 70 characters, so what failed must come first."""
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
