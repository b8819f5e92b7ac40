"""What the scratch checks share (the lines a student writes before reading them, judged without
raising): a student's value read as float64 numbers, its kind in words, the words while a
line or a function is not written yet, and a usual slip named only on a second look."""

from __future__ import annotations


def as_float64(value):
    """`value` as a detached float64 CPU tensor, or None when it is no number or tensor of
    numbers."""
    import torch

    try:
        return torch.as_tensor(value).detach().to("cpu", torch.float64)
    except Exception:  # anything a student's line made: no number, and the check says so
        return None


def kind_of(value) -> str:
    """What a value is, in words: a tensor (or array) by its shape, anything else by its type."""
    shape = getattr(value, "shape", None)
    return f"a tensor of shape {list(shape)}" if shape is not None else f"a {type(value).__name__}"


def raised(error: BaseException) -> str:
    """What a student's line raised, in one line: its type and the first line of its message."""
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"


def unwritten(subject: str, value, what: str, verb: str = "is") -> bool:
    """True (and says what to write) while the student's line is still None."""
    if value is None:
        print(f"{subject} {verb} not written yet: add a cell under the one that sets it to None "
              f"(Esc, then B) with your {what}, run it, then run this cell (if you did: your "
              "cell stopped with an error before your line ran, or it sits above the one that "
              "sets it to None, which set it back)")
    return value is None


def no_function_yet(subject: str, value, code: str, of: str, kind: str = "line") -> bool:
    """True (and says what to write) while the student's function is still None or is not a
    function: `code` is what to write (`row_log_prob = lambda z, y: ...`), `kind` what it is
    ("line", "function"), `of` what the function takes, in words."""
    if unwritten(subject, value, f"{kind} {code}"):
        return True
    if not callable(value):
        print(f"{subject} should be a function of {of}, so that this check can call it: {code}"
              + (" (a def does as well)" if "lambda" in code else ""))
        return True
    return False


_LOOKED_AT: set = set()  # (slip, the student's numbers) already hinted at, in this kernel


def named_on_second_look(slip: str, value) -> str:
    """A usual slip, named when the student runs the check again on the same wrong value; the
    first time, a nudge to find it from the numbers printed above (learners asked to find
    their slip themselves before it is named)."""
    numbers = as_float64(value)
    key = (slip, tuple(round(x, 9) for x in numbers.flatten().tolist())
           if numbers is not None else repr(value))
    if key in _LOOKED_AT:
        return slip
    _LOOKED_AT.add(key)
    return ("one of the usual slips gives exactly your numbers: compare them with the ones above "
            "and find it; run this cell again, unchanged, to have it named")
