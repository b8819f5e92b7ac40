"""What a call on a bad input did instead of raising the error it should have, in words: the
account of one such call in full, a few words to group those that fail alike, and the cause of a
known kind of wrong error. Text only: `mlmcourse.teaching.checks` raises it."""

from __future__ import annotations

from collections import namedtuple

# How a call on a bad input failed to raise: in full, in a few words (bad inputs that fail alike
# are listed together), the known cause or "", and whether it is the stub's bare
# NotImplementedError (an answer not written yet).
Miss = namedtuple("Miss", "account outcome cause unwritten")

# A wrong error whose message holds one of these phrases has a known cause, said in words.
KNOWN_CAUSES = {
    "meta": "A tensor on the 'meta' device has a shape and a dtype but no values: check "
                   "every tensor's .device (and raise ValueError) before reading any values.",
    "device": "The tensors are on different devices: check every tensor's .device (and raise "
              "ValueError) before computing with them.",
}


def miss_of(errors, call, needs_message: bool = False) -> Miss | None:
    """None when `call()` raises one of `errors` (with a message, if `needs_message`)."""
    try:
        call()
    except errors as error:
        if not needs_message or str(error).strip():
            return None
        name = type(error).__name__
        return Miss(f"the {name} needs a message that says what is wrong",
                    f"a {name} with no message", "", False)
    except Exception as other:  # noqa: BLE001 - report the wrong kind of error plainly
        name, first_line = type(other).__name__, (str(other).strip().splitlines() or [""])[0]
        text = str(other).lower()
        cause = next((why for phrase, why in KNOWN_CAUSES.items() if phrase in text), "")
        return Miss(f"expected {_names(errors)}, got {name}: {other}",
                    f"{name} ({_clipped_line(first_line)})" if first_line else name, cause,
                    isinstance(other, NotImplementedError) and not first_line)
    return Miss(f"expected {_names(errors)}, but nothing was raised", "nothing raised", "", False)


def _clipped_line(line: str, width: int = 80) -> str:
    return line if len(line) <= width else f"{line[:width - 3]}..."


_LISTED = 12  # bad inputs named per outcome (every one of a visible check); the rest counted


def misses_message(misses: dict[str, Miss], errors) -> str:
    """The first bad input that was not rejected, in full; every other one by name, grouped by
    what happened instead; each known cause once, at the end."""
    (first, miss), *others = misses.items()
    lines = [f"{first}: {miss.account}"]
    if others:
        lines.append(f"{len(others)} more not rejected with {_names(errors)}:")
        groups: dict[str, list[str]] = {}
        for what, other in others:
            groups.setdefault(other.outcome, []).append(what)
        for outcome, whats in groups.items():
            rest = f"; and {len(whats) - _LISTED} more" if len(whats) > _LISTED else ""
            lines.append(f"- {outcome}: {'; '.join(whats[:_LISTED])}{rest}")
    lines.extend(dict.fromkeys(miss.cause for miss in misses.values() if miss.cause))
    return "\n".join(lines)


def _names(errors) -> str:
    errors = errors if isinstance(errors, tuple) else (errors,)
    return " or ".join(error.__name__ for error in errors)


