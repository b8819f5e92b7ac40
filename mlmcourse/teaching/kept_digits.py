"""Notebook 2's Step 5, the lost digits, checked for the student: log p_y of a float32 row near
1e4 computed so that float32 keeps every digit, against float64, with the usual slips named.
The slips live here, not in the check cell, so that the cell does not show the answer."""

from __future__ import annotations

import math

from mlmcourse.teaching.scratch import (
    as_float64,
    kind_of,
    named_on_second_look,
    no_function_yet,
    raised,
)

TOLERANCE = 1e-5  # float32 keeps about 7 digits of a number near 0.3; the worked line is 2e-4 off


def _slips(z, y: int) -> dict[str, float]:
    """What the usual slips give on the float32 row `z` with target `y`, each with why."""
    import torch

    m = z.max()
    small = torch.log(torch.exp(z - m).sum())  # log of the shifted sum: near 0, every digit kept
    return {
        "that is the worked line's value: logsumexp(z) is stored as a float32 near 1e4, where "
        "float32 numbers lie about 0.001 apart, so its last digits are gone before z_y is "
        "subtracted. Which part of it is a small number you could keep apart until the end?":
            (z[y] - torch.logsumexp(z, dim=0)).item(),
        "the sign is flipped: log p_y is at most 0": (small - (z[y] - m)).item(),
        "the index is not y: z[y] is the target's logit":
            ((z - m)[(y + 1) % len(z)] - small).item(),
    }


def compare_kept_digits(kept_log_prob, z, y: int) -> None:
    """Step 5's your-turn, never raises: the student's `kept_log_prob(z, y)` on the float32 row
    `z` with target `y` against float64 within 1e-5, refusing a float64 answer (casting hides
    the point) and naming the slips that lose the digits."""
    import torch

    if no_function_yet("kept_log_prob", kept_log_prob, "kept_log_prob = lambda z, y: ...",
                       "one row z and its target y"):
        return
    exact = (z.double()[y] - torch.logsumexp(z.double(), dim=0)).item()
    try:
        mine = kept_log_prob(z.clone(), y)
    except Exception as err:  # the student's line: say what it raised, never raise
        print(f"your kept_log_prob raised {raised(err)}")
        return
    if getattr(mine, "dtype", None) == torch.float64:
        print("yours is float64: a cast keeps the digits, but a model's logits are float32. "
              "Find the number that loses them on the way, and keep float32 throughout.")
        return
    value = as_float64(mine)
    if value is None or value.numel() != 1:
        print(f"yours is {kind_of(mine)}, not one number: log p_y of one row is a single number")
        return
    value = value.item()
    if not math.isfinite(value):
        print(f"yours is {value}: an exp of a logit near 1e4 overflows float32 (it stops at "
              "e^88.7); exponentiate only logits shifted by their maximum")
        return
    agree = abs(value - exact) <= TOLERANCE
    print(f"yours {value:.6f}, float64 {exact:.6f} (tolerance {TOLERANCE:g}):",
          "they agree, every digit kept" if agree else "they differ")
    if agree:
        return
    named = [why for why, slip in _slips(z, y).items() if abs(value - slip) <= TOLERANCE]
    print(named_on_second_look(named[0], value) if named else
          "not one of the usual slips: which number on the way is about 1e4 in float32?")
