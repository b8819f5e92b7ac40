"""What the scratch checks share (the lines a student writes before reading them, judged without
raising): a student's value read as float64 numbers, its kind in words, the words while a
line or a function is not written yet, a usual slip named only on a second look, and a
derivation's entries printed against the reference's."""

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


def compare_entries(mine, reference_values, reference: str, name: str, slips: dict) -> None:
    """Prints `reference_values` (named by `reference`) over the student's float64 `mine` (named
    `name`), the largest difference and whether they agree to 1e-8; where they differ and `mine`
    is what one of `slips` (a slip in words: the value it gives) gives, names it on a second
    look."""
    import torch

    width = max(len(reference), len(f"your {name}"))
    print(f"{reference + ':':<{width + 1}}", [round(s, 6) for s in reference_values.tolist()])
    print(f"{f'your {name}:':<{width + 1}}", [round(g, 6) for g in mine.tolist()])
    same_shape = mine.shape == reference_values.shape
    error = (reference_values - mine).abs().max().item() if same_shape else float("inf")
    print(f"largest difference: {error:.1e} (tolerance 1e-8):",
          "they agree" if error < 1e-8 else "they differ")
    if error >= 1e-8 and same_shape:
        said = next((slip for slip, value in slips.items() if torch.allclose(mine, value)), None)
        if said:
            print("  " + named_on_second_look(said, mine))
