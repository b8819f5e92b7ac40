"""Notebook 1's Step 8, one update by hand, checked for the student: their `one_step(E, shown,
site_gradient)`, the token table after one step at a site whose center shows `shown`, against
autograd's step, with the usual slips named (the step taken with the gradient, every row moved,
the caller's table written into). Never raises."""

from __future__ import annotations

import torch

from mlmcourse.teaching.scratch import as_float64, kind_of, no_function_yet, raised


def _slips(E, shown: int, gradient) -> dict[str, torch.Tensor]:
    """What the usual slips give, each with why, for the table `E` and the row `shown`."""
    return {
        "yours moved the row with the gradient, not against it: a step of gradient descent "
        "subtracts lr times the gradient": _moved_row(E, shown, -gradient),
        "yours moved every row: the scores read one row of E, the row of what the center "
        "shows, so only that row receives the gradient": E - gradient,
    }


def _moved_row(E, shown: int, gradient):
    moved = E.clone()
    moved[shown] -= gradient
    return moved


def compare_one_step(one_step, cases) -> None:
    """The check after Step 8's table: for each (E before, shown, site gradient, autograd's E
    after) of `cases`, the student's `one_step(E, shown, site_gradient)` against autograd's
    step at lr = 1; one line per case, the first slip named."""
    if no_function_yet("one_step", one_step, "one_step = lambda E, shown, site_gradient: ...",
                       "E, shown and site_gradient"):
        return
    for before, shown, gradient, after in cases:
        given = before.clone()
        try:
            mine = one_step(given, shown, gradient.clone())
        except Exception as err:  # the student's line: say what it raised, never raise
            print(f"center shows {shown}: your one_step raised {raised(err)}")
            continue
        if not torch.equal(given, before):
            print(f"center shows {shown}: yours wrote into the E it was given; return a new "
                  "table (E.clone() first, or an expression such as E - ...)")
            continue
        value = as_float64(mine)
        if value is None or value.shape != after.shape:
            print(f"center shows {shown}: yours is {kind_of(mine)}; the table after the step "
                  f"has E's shape, {list(after.shape)}")
            continue
        if torch.allclose(value, after, atol=1e-12):
            print(f"center shows {shown}: yours agrees with autograd's step")
            continue
        named = [why for why, slip in _slips(before, shown, gradient).items()
                 if torch.allclose(value, slip, atol=1e-12)]
        print(f"center shows {shown}: yours differs from autograd's step; "
              + (named[0] if named else "only row E[shown] moves, by -lr * site_gradient"))
