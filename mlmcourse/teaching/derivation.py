"""The derivations, checked for the student. Notebook 2: the softmax of shifted logits and the
logsumexp identity (Step 3), one row's log-probability (Step 5), each against float64 or the
library, and the gather with an index of one's own at ignored sites (Step 6). Notebook 3: a
gradient written by hand (one site's, then the batch's) against central differences or autograd.
These checks never raise: they say how far apart the two are and name the usual slips (a shift
not carried into the sum, a shift by a constant below the row's maximum, which a wider row
overflows, or above it; a logsumexp by hand with no shift, with m not added back or with the log
of each term; the log of a softmax, a hand-written logsumexp without its shift, the wrong index;
the ignore value used as an index, a 0 put in before the subtraction, a literal -100, a write
into labels; a missing one-hot, a flipped sign, a wrong constant in place of 1/|S| and what it
divided by, a softmax taken down the rows), so a student can try again."""

from __future__ import annotations

from mlmcourse.teaching.scratch import (
    as_float64,
    compare_entries,
    kind_of,
    named_on_second_look,
    no_function_yet,
    raised,
    unwritten,
)


def _numbers(value):
    """`value` as a flat float64 tensor, or None when it is no number or tensor of numbers."""
    number = as_float64(value)
    return None if number is None else number.reshape(-1)


def _name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _shown(values) -> str:
    return "[" + ", ".join(f"{v:.6f}" for v in values.tolist()) + "]"


def compare_shifted_softmax(shifted, z, c=None) -> None:
    """Notebook 2's Step 3, a check for the student that never raises: their softmax of the
    shifted logits (`shifted`, written from the float32 row `z` shifted by their constant `c`)
    against `z`'s own softmax in float64, naming the usual slips (no shift, a shift left out of
    the sum, no division by the sum), then what their `c` does: the largest exponent it leaves,
    and for a `c` other than the maximum (the minimum, the mean) a wider row where it fails;
    while `shifted` is still None it says what to write."""
    import torch

    if unwritten("shifted", shifted, "lines c = ... and shifted = ..."):
        return
    mine = _numbers(shifted)
    exact = torch.softmax(z.to(torch.float64), dim=0)
    if mine is None or mine.shape != exact.shape:
        what = (f"a {type(shifted).__name__}" if not isinstance(shifted, torch.Tensor)
                else f"a tensor of shape {list(shifted.shape)}")
        print(f"shifted should be a tensor of {len(z)} probabilities, one per logit of z; "
              f"yours is {what}")
        return
    print("softmax of z itself, in float64:", _shown(exact))
    print("your shifted softmax:           ", _shown(mine))
    error = (mine - exact).abs().max().item() if torch.isfinite(mine).all() else float("inf")
    agree = error < 1e-6
    print(f"largest difference: {error:.1e} (tolerance 1e-6):",
          "they agree: shifting the logits changed no probability" if agree else "they differ")
    largest = _largest_exponent(z, c)
    if not agree:
        _shift_slip(mine, z, largest)
    if c is None:
        print("(write your constant as c = ... too, and this check says what it does on other "
              "rows)")
    elif largest is None:
        print(f"c should be one number, the same for every logit; yours is {kind_of(c)}")
    else:
        _constant_advice(z, c, largest)


def _largest_exponent(z, c) -> float | None:
    """max(z) - c, the largest exponent that the constant `c` leaves (None: `c` is no number)."""
    number = _numbers(c) if c is not None else None
    if number is None or number.numel() != 1:
        return None
    return _numbers(z).max().item() - number.item()


def _shift_slip(mine, z, largest) -> None:
    """Why the student's shifted softmax differs from the exact one, in words."""
    import torch

    top = z.to(torch.float64).max()
    unnormalized = torch.exp(z.to(torch.float64) - top)
    if not torch.isfinite(mine).all() and largest is not None and largest < 0:
        print("  yours holds nan: every exp(z - c) rounded to 0, and 0 / 0 is nan (your c, "
              "below)")
    elif not torch.isfinite(mine).all():
        print(f"  yours holds inf or nan: exp({z.max().item():g}) overflows in {_name(z.dtype)} "
              "(Step 2); subtract your c inside every exp, the sum's too")
    elif not mine.any():
        print("  yours is all zeros: the top is shifted but the sum is not, and exp(z).sum() "
              "is inf; shift the logits inside the sum too")
    elif torch.allclose(mine, unnormalized, atol=1e-6):
        print("  yours is exp(z - m) alone: divide it by its own sum, so that the entries add "
              "up to 1")
    print(f"  your entries sum to {mine.sum().item():.6f}; a softmax's sum to 1")


def _constant_advice(z, c, largest: float) -> None:
    """What the student's constant does on this row and, if it is not the maximum, on a wider
    one: the minimum or the mean of [200, 0] leaves exp(200) or exp(100), inf in float32."""
    import torch

    row = _numbers(z)
    close = 4 * torch.finfo(z.dtype).eps * max(1.0, row.abs().max().item())  # a few steps of z
    number = _numbers(c).item()
    print(f"your c = {number:g}: the largest exponent, max(z) - c, is {largest:.3g}", end="")
    if abs(largest) <= close:
        print(", so the largest term is e^0 = 1:\n  nothing overflows and the sum is at least 1, "
              "on any row, however wide: a safe c")
        return
    if largest < 0:
        print(f"; every term is e^{largest:.3g} times\n  smaller than it needs to be, and "
              "below about -103 all of them round to 0 in float32,\n  so that the softmax is "
              "0 / 0 = nan. Lower c until the largest exponent is exactly 0")
        return
    print(f"; e^{largest:.3g} fits in float32\n  (up to e^88.7, Step 2) on this row only.")
    rules = {"the minimum of z": (row.min().item(), torch.min),
             "the mean of z": (row.mean().item(), torch.mean)}
    for rule, (value, take) in rules.items():
        if abs(number - value) <= close + 1e-3 * (row.max() - row.min()).item():
            wide = torch.tensor([200.0, 0.0])
            shifted = torch.exp(wide - take(wide))
            print(f"  Your c is {rule}: on the float32 row [200, 0] it leaves exp("
                  f"{(wide.max() - take(wide)).item():g}) = inf,\n  and the softmax is "
                  f"{[round(v, 4) for v in (shifted / shifted.sum()).tolist()]}.")
            break
    print("  Any c below max(z) leaves an exponent above 0, which overflows on a row spread\n"
          "  wider than 88.7: choose the c that makes the largest exponent exactly 0")


def compare_logsumexp(by_hand, z) -> None:
    """Notebook 2's logsumexp identity (Step 3), a check for the student that never raises:
    their `by_hand`, logsumexp of the row `z` written from the identity, against
    torch.logsumexp(z, dim=0), within a few steps of z's dtype at the row's size; it names the
    usual slips (no shift, or e^m stored, so inf; m not added back, subtracted or multiplied;
    the log of each term rather than of the sum; no log; no sum); while it is still None it says
    what to write."""
    import torch

    library = torch.logsumexp(z, dim=0).item()
    print(f"torch.logsumexp(z, dim=0): {library:.4f}")
    if unwritten("by_hand", by_hand, "line by_hand = ..."):
        return
    mine = _numbers(by_hand)
    if mine is None or mine.numel() != 1:
        what = kind_of(by_hand) if mine is None else f"{mine.numel()} numbers"
        print(f"by_hand should be one number, the log of one sum; yours is {what}"
              + (": sum the terms exp(z - m) before the log" if mine is not None
                 and mine.numel() == len(z) else ""))
        return
    value = mine.item()
    step = torch.finfo(z.dtype).eps * max(1.0, z.abs().max().item())
    tolerance = float(f"{max(1e-6, 4 * step):.0e}")  # a few steps of z's dtype at the row's size
    agree = _same(value, library, tolerance)
    print(f"logsumexp by hand:         {value:.4f}   (tolerance {tolerance:g}):",
          "they agree" if agree else "they differ")
    if agree:
        return
    top = z.detach().max()
    shifted = torch.exp(z.detach() - top)
    slips = {
        "you subtracted m inside the exp but did not add it back outside the log: with s the "
        "sum of exp(z - m), log(e^m s) = log e^m + log s = m + log s": torch.log(shifted.sum()),
        "that is m times log s: the log of a product is a sum, log(e^m s) = m + log s":
            top * torch.log(shifted.sum()),
        "m came back with a minus sign: the factor e^m gives + m outside the log":
            -top + torch.log(shifted.sum()),
        "that is m plus the sum of the logs of each term: the log of a sum is not the sum of "
        "the logs; sum the exp(z - m) first, then take one log": top + (z.detach() - top).sum(),
        "the log is missing: m + log(s), not m + s": top + shifted.sum(),
    }
    named = [why for why, slip in slips.items() if _same(value, slip.item(), tolerance)]
    if named:
        print("  " + named_on_second_look(named[0], value))
    elif value == float("inf"):
        print(f"  yours is inf: exp({top.item():g}) overflows in {_name(z.dtype)} (Step 2), so "
              "somewhere a raw e^z or e^m was stored; take log e^m = m on paper and compute only "
              "exp(z - m), whose largest term is e^0 = 1")
    elif value != value:
        print("  yours is nan: an inf met another inf (inf - inf or inf / inf); compute only "
              "exp(z - m), never a raw exp(z)")
    else:
        print("  go back to your identity: factor e^m out of the sum (m = z.max()), then "
              "log(ab) = log a + log b; the worked fold above has it")


def _row_slips(z, y, exact, tolerance):
    """{what went wrong: the value that slip gives} for one row, computed in the row's dtype."""
    import math

    import torch

    z = z.detach()
    top = z.max()
    log_norm = torch.logsumexp(z, dim=0)
    dtype = _name(z.dtype)
    exp_top = f"exp({top.item():g}) is inf in {dtype}"
    slips = {
        f"that is the log of the softmax: p_y = {math.exp(exact):.1e} here, which {dtype} rounds "
        "to 0, and log 0 = -inf (Step 4); take the log on paper instead: z_y - logsumexp(z)":
            torch.log(torch.softmax(z, dim=0))[y],
        f"{exp_top}, and inf / inf is nan (Step 2): never exponentiate a raw logit":
            torch.log(torch.exp(z) / torch.exp(z).sum())[y],
        f"your logsumexp forgets the max shift: {exp_top}, so log(sum(exp(z))) is inf and "
        "z_y - inf = -inf; write it as Step 3's m + log(sum(exp(z - m))), or use "
        "torch.logsumexp": z[y] - torch.log(torch.exp(z).sum()),
        "you subtracted the maximum inside the exp but did not add it back: logsumexp(z) = "
        "m + log(sum(exp(z - m))) (Step 3)": z[y] - torch.log(torch.exp(z - top).sum()),
        "that is -log p_y, the site's loss, with the sign flipped: log p_y = z_y - "
        "logsumexp(z) is never above 0": log_norm - z[y],
    }
    for j in range(len(z)):
        if j != y:
            largest = " (the largest logit)" if z[j] == top else ""
            slips[f"that is log p of token {j}{largest}, not of the target y = {y}: take z[y]"] = (
                z[j] - log_norm)
    return {why: value.item() for why, value in slips.items()
            if not _same(value.item(), exact, tolerance)}


def _same(value: float, other: float, tolerance: float) -> bool:
    import math

    if math.isfinite(value) and math.isfinite(other):
        return abs(value - other) < tolerance
    return value == other or (math.isnan(value) and math.isnan(other))


def compare_row_log_prob(row_log_prob, rows) -> None:
    """Notebook 2's Step 5, a check for the student that never raises: their `row_log_prob(z, y)`,
    log p_y of one row of logits `z` with target `y`, on each (z, y) of `rows` against float64,
    within a few float32 steps at the row's size; it names the usual slips (the log of the
    softmax, a naive exp, a hand-written logsumexp without its max shift or without m added
    back, a flipped sign, the wrong index); while it is still None it says what to write."""
    import math

    import torch

    if no_function_yet("row_log_prob", row_log_prob, "row_log_prob = lambda z, y: ...",
                       "one row z and its target y"):
        return
    right = 0
    for z, y in rows:
        exact = (z.to(torch.float64)[y] - torch.logsumexp(z.to(torch.float64), dim=0)).item()
        step = torch.finfo(z.dtype).eps * max(1.0, z.abs().max().item())
        tolerance = float(f"{max(1e-3, 4 * step):.0e}")  # a few float32 steps at the row's size
        where = f"z = {[int(v) if v.is_integer() else v for v in z.tolist()]}, y = {y}:"
        try:
            mine = _numbers(row_log_prob(z.clone(), y))
        except Exception as err:  # the student's line: say what it raised, never raise
            print(f"{where} your row_log_prob raised {raised(err)}")
            continue
        if mine is None or mine.numel() != 1:
            print(f"{where} yours is not one number; log p_y of one row is a single number "
                  "(index the target: z[y])")
            continue
        value = mine.item()
        agree = _same(value, exact, tolerance)
        right += agree
        print(f"{where} yours {value:.4f}, float64 {exact:.4f} (tolerance {tolerance:g}):",
              "they agree" if agree else "they differ")
        if agree:
            continue
        named = [why for why, slip in _row_slips(z, y, exact, tolerance).items()
                 if _same(value, slip, tolerance)]
        if named:
            print("  " + named_on_second_look(named[0], value))
        elif math.isnan(value) or math.isinf(value):
            print("  it is not finite: never exponentiate a raw logit (Step 2) and never take "
                  "the log of a probability (Step 4)")
        elif value > tolerance:
            print("  a log-probability is never above 0: log p_y = z_y - logsumexp(z)")
    if right == len(rows):
        print("both rows agree with float64: your line survives Step 2's overflow and Step 4's "
              "underflow")


def _as_rows(values) -> list:
    """A [B, L] tensor as nested lists of numbers to 4 decimals (+ 0.0: no -0.0 shown)."""
    return [[round(v, 4) + 0.0 for v in row] for row in values.tolist()]


def _gather_error(err: Exception, mark: int, name: str) -> str:
    """What a call of the student's gather function that raised `err` most likely did."""
    text = str(err)
    if isinstance(err, TypeError) and "positional argument" in text:
        return (f"{name} takes three arguments, in this order: "
                f"def {name}(logits, labels, ignore_index)")
    if isinstance(err, IndexError) or "out of bounds" in text:
        return (f"gather got the ignore value {mark} as an index, and it takes none outside "
                "[0, V): give every ignored site an index of your own first, in a new tensor "
                "(Hint 1)")
    return ""


def _site_slip(value: float, z, site, is_selected: bool, target: int) -> str:
    """Why one site of the student's result holds `value`, in words ("" when no slip fits)."""
    import torch

    row = z[site]
    log_norm = torch.logsumexp(row, dim=0).item()
    where = f"site {list(site)}"
    if not is_selected:
        if abs(value + log_norm) < 1e-4:
            return (f"{where} is ignored and holds -logsumexp of its row: a 0 went in before "
                    "Step 5's subtraction; zero the ignored sites last, after it")
        for j in range(len(row)):
            if abs(value - (row[j].item() - log_norm)) < 1e-4:
                return (f"{where} is ignored and holds log p of index {j}, the index you gave "
                        "it: right so far; now make it exactly 0.0, after the subtraction")
        return f"{where} is ignored: it must hold exactly 0.0, put in after the subtraction"
    if abs(value - row[target].item()) < 1e-4:
        return (f"{where} holds the picked logit z_y alone: subtract logsumexp of its row "
                "(Step 5)")
    if abs(value + row[target].item() - log_norm) < 1e-4:
        return f"{where} holds -log p_y, the loss: log p_y = z_y - logsumexp(z) is never above 0"
    for j in range(len(row)):
        if j != target and abs(value - (row[j].item() - log_norm)) < 1e-4:
            return (f"{where} holds log p of index {j}, not of its target {target}: the index of "
                    "your own goes only where labels == ignore_index")
    return f"{where} is selected: it should hold z_y - logsumexp(z) of its row"


def compare_picked_log_probs(picked_log_probs, logits, labels, ignore_index=-100) -> None:
    """Notebook 2's Step 6, a check for the student that never raises: their function
    `(logits, labels, ignore_index)` (Part A's `target_log_probs`; `picked_log_probs` in copies
    released before it moved into Part A), log p of each site's target from a gather
    that never gets the ignore value, exactly 0.0 at ignored sites) on the step's example, then
    on the same sites marked -1 with ignore_index=-1, against float64. Each call gets copies, so
    the notebook's labels stay as they are and a write into them is said to be the function's
    (also when the student's own call already wrote into the notebook's); it names the usual
    slips (the ignore value used as an index, a 0 put in before the subtraction, a literal -100,
    the wrong shape and its cause, a nonzero ignored site); while the function is still None it
    says what to write; while it still raises the placeholder's NotImplementedError it says so."""
    import torch

    if no_function_yet("picked_log_probs", picked_log_probs,
                       "def picked_log_probs(logits, labels, ignore_index): ...",
                       "logits, labels and ignore_index", kind="function"):
        return
    name = getattr(picked_log_probs, "__name__", "your function")
    if not isinstance(labels, torch.Tensor) or not isinstance(logits, torch.Tensor):
        print("logits and labels should be the example's tensors: run the cell that makes them "
              "again, then this check")
        return
    selected = labels != ignore_index
    if selected.all():
        _stale_labels(picked_log_probs, logits, labels, ignore_index, name)
        return
    z = logits.detach().to(torch.float64)
    safe = torch.where(selected, labels, 0)
    exact = torch.where(selected, z.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
                        - torch.logsumexp(z, dim=-1), 0.0)
    agreed, slips = [], []
    for mark in (ignore_index, -1 if ignore_index != -1 else -100):
        these = torch.where(selected, labels, mark)
        given = these.clone()  # the call gets a copy: a write into it shows, the caller's stays
        where = f"labels {these.tolist()}, ignore_index={mark}:"
        try:
            got, raised = picked_log_probs(logits.clone(), given, mark), None
        except Exception as err:  # the student's function: say what it raised, never raise
            got, raised = None, err
        if isinstance(raised, NotImplementedError) and not str(raised):  # the placeholder
            print(f"{name} is not written yet: write it in its answer cell, run that cell, then "
                  "this one")
            return
        slip = _run_slip(got, raised, given, these, exact, selected, z, mark, where, name)
        if agreed == [True] and slip is not None and torch.equal(given, these):
            slip = (f"it works with -100 but not with {mark}: compare labels with the "
                    "ignore_index argument, never with a literal -100")
        if slip and slip not in slips:  # the same slip twice is said once
            print("  " + slip)
        agreed.append(slip is None)
        slips.append(slip)
    if all(agreed):
        print("both calls agree with float64 and labels is unchanged")
        _forbidden_logit(picked_log_probs, logits, labels, ignore_index, selected)


def _forbidden_logit(picked_log_probs, logits, labels, ignore_index, selected) -> None:
    """One more call, with -inf at index 0 of every ignored row (a token a model forbids): an
    ignored site zeroed by multiplying with the mask gives -inf * 0 = nan there."""
    import torch

    forbidden = logits.clone()
    forbidden[..., 0] = torch.where(selected, forbidden[..., 0], float("-inf"))
    try:
        got = picked_log_probs(forbidden, labels.clone(), ignore_index)
        at_ignored = got[~selected]
    except Exception:  # the student's function: this extra call only teaches, never raise
        return
    if isinstance(at_ignored, torch.Tensor) and torch.isnan(at_ignored).any():
        print("  but your draft has a trap that finite logits hide. What logit does a model "
              "give a token it forbids? In a cell of your own, put it in the ignored row at "
              "the index your draft picks there, call your function, and find which of your "
              "operations goes wrong (the Predict question after the hints is about it)")


def _wrote_into_labels(name: str) -> str:
    return (f"your {name} wrote into labels, the caller's tensor (a write through a new name, "
            "`safe = labels`, writes there too: a name is no copy); build a new tensor "
            "(`torch.where(...)`, or `labels.clone()` before writing)")


def _stale_labels(picked_log_probs, logits, labels, ignore_index, name) -> None:
    """The notebook's labels hold no ignore value any more: says whether the student's function
    is what wrote into them, from a call on a copy with the last site marked ignored."""
    import torch

    print(f"labels is {labels.tolist()}, with no {ignore_index} left: something wrote into it")
    if labels.numel() == 0:
        return
    probe = labels.clone()
    probe.view(-1)[-1] = ignore_index  # the scratch example's ignored site, as it was
    given = probe.clone()  # the call gets a copy: the notebook's labels stay as they are
    try:
        picked_log_probs(logits.clone(), given, ignore_index)
    except Exception:  # the student's function: only what it wrote matters here, never raise
        pass
    if not torch.equal(given, probe):
        print(f"  called on a copy, {probe.tolist()}, it left {given.tolist()}: "
              + _wrote_into_labels(name))
        print("  then run the cell that makes labels again (a fresh labels), your cell, and "
              "this check")
    else:
        print(f"  your {name} leaves its labels as they are, so another line did: run "
              "the cell that makes labels again (a fresh labels), your cell, and this check, and "
              "write into labels nowhere")


def _shape_slip(shape: list, want: list) -> str:
    """Why the result has `shape` rather than labels' `want` ([B, L]), in words."""
    column, grid = [*want, 1], [*want, want[-1]]
    if shape == column:
        return (f"one dimension too many: the result needs one number per site, labels' {want}. "
                "Print the shape of each tensor your line makes; which one keeps a trailing "
                "size-1 dimension, and which call removes it?")
    if shape == grid:
        return (f"a {column} minus a {want} broadcasts to {grid}: print the shape of each tensor "
                "your line makes, find the one with a trailing size-1 dimension (gather keeps "
                "it), and remove it before the subtraction (zeroing ignored sites in a "
                f"{grid} result afterwards clears whole rows or columns of it, not single sites)")
    return f"one number per site: the result has labels' shape, {want}"


def _run_slip(got, raised, given, these, exact, selected, z, mark, where, name) -> str | None:
    """Prints one call's line; returns None when it is right, else its first slip in words."""
    import torch

    if not torch.equal(given, these):
        print(f"{where} after the call they are {given.tolist()} (this check gave your function "
              "a copy: the notebook's labels stay as they are)")
        return _wrote_into_labels(name)
    if raised is not None:
        print(f"{where} yours raised {type(raised).__name__}: "
              + (str(raised).strip().splitlines() or [""])[0][:80])
        return _gather_error(raised, mark, name) or "it should run at every site, ignored ones too"
    if not isinstance(got, torch.Tensor):
        print(f"{where} yours returned {type(got).__name__}, not a tensor")
        return f"return log_p, a tensor of shape {list(these.shape)}: one number per site"
    if got.shape != these.shape:
        print(f"{where} yours has shape {list(got.shape)}, not {list(these.shape)}")
        return _shape_slip(list(got.shape), list(these.shape))
    mine = got.detach().to("cpu", torch.float64)
    right = bool(((mine - exact).abs() < 1e-5)[selected].all() and (mine[~selected] == 0).all())
    print(f"{where} yours {_as_rows(mine)}, float64 {_as_rows(exact)}:",
          "they agree" if right else "they differ")
    if right:
        return None
    for site in torch.ones_like(selected).nonzero().tolist():
        site = tuple(site)
        off = (mine[site] != 0) if not selected[site] else (mine[site] - exact[site]).abs() >= 1e-5
        if off:
            return _site_slip(mine[site].item(), z, site, bool(selected[site]),
                              int(these[site]))
    return None


def compare_site_gradient(site_gradient, slopes, z, target,
                          reference: str = "finite differences of the site's loss",
                          name: str = "site_gradient", slips: dict | None = None) -> None:
    """Notebook 3's 2b and 2d (and notebook 1's Step 8), a check for the student that never
    raises: their gradient of one site's loss (`site_gradient`, from logits `z` and `target`)
    against `slopes` (central differences, or autograd's gradient: `reference` names them),
    naming the usual slips (`slips` maps a slip in words to the value it gives, tried first);
    while it is still None it says what to write."""
    import torch
    import torch.nn.functional as F

    if unwritten(name, site_gradient, f"line {name} = ..."):
        return
    mine = torch.as_tensor(site_gradient, dtype=torch.float64)
    probs, onehot = torch.softmax(z, dim=0), F.one_hot(torch.tensor(target), len(z))
    known = {**(slips or {}),
             "that is the gradient of logsumexp alone: what does the target's term, minus its "
             "own score, add?": probs,
             "yours has the sign flipped: the target's entry should be the negative one":
                 onehot - probs,
             "yours subtracts 1 from every entry: the one-hot is a vector of V entries, 1 at the "
             "target and 0 elsewhere": probs - 1}
    compare_entries(mine, slopes, reference, name, known)
    total = mine.sum().item()
    print(f"the entries sum to {total:.1e}" + ("" if abs(total) < 1e-8 else
          ": the p_i sum to 1 and the target's term subtracts 1, so they should sum to 0"))


def _scale_slip(mine, right, keep) -> str | None:
    """What went wrong when `mine` is autograd's gradient `right` ([B, L, V]) times one constant
    (or the per-sequence means' factors), in words; None when it is no such multiple."""
    import torch

    count = int(keep.sum())
    B, L, V = right.shape
    sequences = keep.sum(dim=1).clamp(min=1).to(right.dtype)  # |S_b|; rows of an empty one are 0
    if count and torch.allclose(mine, right * count / (B * sequences[:, None, None]), rtol=1e-6,
                                atol=1e-12) and len(set(keep.sum(dim=1).tolist()) - {0}) > 1:
        return (f"yours averages each sequence's sites, then the B = {B} sequences: every "
                f"selected site must weigh the same, so divide the whole sum by |S| = {count} once")
    k = (mine * right).sum().item() / max((right * right).sum().item(), 1e-300)
    if not (k and torch.allclose(mine, k * right, rtol=1e-6, atol=1e-12)):
        return None
    if abs(k + 1) < 1e-6:
        return "yours is autograd's with the sign flipped: softmax minus onehot"
    core = ("the right softmax minus onehot" if k > 0
            else "onehot minus softmax (flip it: softmax minus onehot)")
    divisor = count / abs(k)  # what the student's line divided the selected rows by
    sizes = [(1, "yours never divides"), (B, f"yours divides by the batch size B = {B}"),
             (L, f"yours divides by the sequence length L = {L}"),
             (B * L, f"yours divides by every token, B*L = {B * L}"),
             (V, f"yours divides by the vocabulary size V = {V}")]
    said = next((what for size, what in sizes if abs(divisor - size) < 1e-6), None)
    if said is None and abs(divisor - round(divisor)) < 1e-6:
        said = f"yours divides by {round(divisor)}"
    return (f"yours is {k:.6g} times autograd's at every entry: {core}, with the wrong factor "
            f"in front. The factor is 1/|S| = 1/{count}, one over the number of selected sites"
            + (f"; {said}" if said else ""))


def compare_gradient_by_hand(by_hand, autograd_grad, keep) -> None:
    """Notebook 3's 2c, a check for the student that never raises: their `by_hand` gradient
    against autograd's (float64, [B, L, V]; `keep` the selected sites), naming a constant factor
    off (what the line divided by instead of |S|), a flipped sign, per-sequence means and a
    softmax taken down the rows; while `by_hand` is still all zeros it says what to write."""
    import torch

    mine = _numbers(by_hand)
    if mine is None or mine.numel() != autograd_grad.numel():
        what = (f"a {type(by_hand).__name__}" if mine is None
                else f"{mine.numel()} numbers")
        print(f"by_hand should be a tensor of the logits' shape {list(autograd_grad.shape)}; "
              f"yours is {what}: start again from by_hand = torch.zeros_like(Z), then "
              "by_hand[keep] = ...")
        return
    if not mine.any():
        print("by_hand is still all zeros: write 2c's formula in a cell under the one that "
              "makes by_hand (by_hand[keep] = ...), run it, then run this cell (if you did: "
              "your cell stopped with an error before your line ran, or the cell that makes "
              "by_hand ran after it and set it back to zeros)")
        return
    mine = mine.reshape(autograd_grad.shape)
    right = autograd_grad.detach().to("cpu", torch.float64)
    keep = keep.to("cpu")
    error = (right - mine).abs().max().item()
    agree = error < 1e-12
    print(f"largest difference from autograd: {error:.1e} (tolerance 1e-12, float64):",
          "they agree" if agree else "they differ")
    if not torch.isfinite(mine).all():
        print("  yours holds inf or nan: is |S| zero where you divide by it?")
        return
    if not agree:
        slip = _scale_slip(mine, right, keep)
        if slip:
            print("  " + named_on_second_look(slip, mine))
        elif mine[~keep].any():
            print("  yours writes into rows that are not selected: an ignored row's gradient is "
                  "exactly 0 (write only by_hand[keep])")
    rows_sum_to_zero = not keep.any() or mine[keep].sum(dim=1).abs().max().item() < 1e-12
    print("every selected row sums to zero (to 1e-12):", rows_sum_to_zero)
    if not rows_sum_to_zero:
        print("  a row's softmax sums to 1 along the vocabulary: Z[keep] is [|S|, V], so take "
              "it along the last dimension (dim=-1), not down the rows")
