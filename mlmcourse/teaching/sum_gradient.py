"""Notebook 3's 2e, checked for the student: the gradient of the summed site losses (the
`reduction="sum"` of PyTorch's losses) over 2c's batch, written by hand, against central
differences of that sum, with the usual slips named. The slips live here, not in the check cell,
so that the cell does not show the answer before the student writes one."""

from __future__ import annotations

from mlmcourse.teaching.backward_mistakes import finite_differences
from mlmcourse.teaching.scratch import as_float64, kind_of, named_on_second_look, unwritten

TOLERANCE = 1e-8  # central differences of a float64 loss are good to about 1e-10 here


def summed_loss(logits, labels, ignore_index: int):
    """The sum over selected sites of `logsumexp(row) - row[target]`, from the library's ops."""
    import torch

    keep = labels != ignore_index
    rows, targets = logits[keep], labels[keep]
    return (torch.logsumexp(rows, dim=-1) - rows.gather(-1, targets[:, None]).squeeze(-1)).sum()


def _slips(logits, labels, keep) -> dict[str, object]:
    """What the usual slips give on 2c's batch, each with why."""
    import torch
    import torch.nn.functional as F

    probs = torch.softmax(logits, dim=-1)
    onehot = F.one_hot(labels.clamp(min=0), logits.shape[-1]).to(logits.dtype)
    right = torch.where(keep[..., None], probs - onehot, 0.0)
    count = max(int(keep.sum()), 1)
    return {
        f"that is 2c's answer, the mean's: yours divides by |S| = {count}. Where did 1/|S| come "
        "from in 2c, and does L_sum have it?": right / count,
        "the ignored rows are not 0: no term of the sum reads them, so moving them changes "
        "nothing": probs - onehot * keep[..., None],
        "the sign is flipped: at a selected row the target's entry is the negative one": -right,
        "that is the gradient of logsumexp alone at the selected rows: what does each site's "
        "minus its target's logit add?": torch.where(keep[..., None], probs, 0.0),
        "the softmax runs down the wrong dimension: each site's softmax runs along its own row "
        "of V logits (dim=-1)": torch.where(keep[..., None],
                                            torch.softmax(logits, dim=0) - onehot, 0.0),
    }


def compare_sum_gradient(sum_gradient, logits, labels, ignore_index: int = -100) -> None:
    """2e's check, never raises: the student's gradient of the summed site losses at the float64
    `logits` ([B, L, V]) with `labels`, against central differences of that sum at every logit,
    naming the slips of `_slips`; while it is still None it says what to write."""
    import torch

    if unwritten("sum_gradient", sum_gradient, "lines ending in sum_gradient = ..."):
        return
    logits, labels = logits.detach().to("cpu", torch.float64), labels.to("cpu")
    mine = as_float64(sum_gradient)
    selected_rows = int((labels != ignore_index).sum())
    if mine is not None and mine.dim() == 2 and mine.shape[0] == selected_rows:
        print("sum_gradient has a row per selected site only: the gradient has an entry for "
              f"every logit, {list(logits.shape)}, ignored rows included")
        return
    if mine is None or mine.shape != logits.shape:
        print(f"sum_gradient should be a tensor of the logits' shape {list(logits.shape)}, one "
              f"entry per logit; yours is {kind_of(sum_gradient)}")
        return
    slopes = finite_differences(lambda v: summed_loss(v, labels, ignore_index), logits)
    error = (slopes - mine).abs().max().item()
    print(f"largest difference from central differences of L_sum, over all {mine.numel()} "
          f"logits: {error:.1e} (tolerance {TOLERANCE:g}):",
          "they agree" if error < TOLERANCE else "they differ")
    if error < TOLERANCE:
        return
    keep = labels != ignore_index
    said = next((slip for slip, value in _slips(logits, labels, keep).items()
                 if (value - mine).abs().max().item() < TOLERANCE), None)
    if said:
        print("  " + named_on_second_look(said, mine))
    worst = (slopes - mine).abs().amax(dim=-1).argmax().item()
    site = divmod(worst, logits.shape[1])
    print(f"  the row that differs most is site {list(site)}, "
          + ("a selected one" if keep[site].item() else "an ignored one")
          + f": central differences {[round(s, 6) for s in slopes[site].tolist()]}, "
          f"yours {[round(g, 6) for g in mine[site].tolist()]}")
