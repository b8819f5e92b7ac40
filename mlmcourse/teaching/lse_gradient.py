"""Notebook 3's 2a, checked for the student: the gradient of logsumexp at one site, written
from the student's derivation, against central differences, with the usual slips named. The
slips live here, not in the check cell, so that the cell does not show the answer before the
student writes one."""

from __future__ import annotations

from mlmcourse.teaching.scratch import as_float64, compare_entries, kind_of, unwritten


def _slips(z) -> dict[str, object]:
    """What the usual slips give at the logits `z`, each with why."""
    import torch

    s = torch.exp(z).sum()
    p = torch.exp(z) / s
    return {
        "yours is e^{z_i} alone: the chain rule's first factor, d log s / ds, is still to "
        "multiply it": torch.exp(z),
        "yours is 1/s at every entry: the chain rule's second factor, how s moves with z_i, is "
        "still to multiply it": torch.full_like(z, 1 / s.item()),
        "yours is log p_i: the derivative of log s is 1/s, not a log of something": torch.log(p),
        "yours is p_i (1 - p_i), how p_i itself moves with z_i: f is log s, not the softmax":
            p * (1 - p),
    }


def compare_lse_gradient(lse_gradient, slopes, z) -> None:
    """2a's check, never raises: the student's gradient of logsumexp at the float64 logits `z`
    against `slopes` (central differences), naming the usual slips on a second look; while it
    is still None it says what to write."""
    if unwritten("lse_gradient", lse_gradient, "line lse_gradient = ..."):
        return
    mine = as_float64(lse_gradient)
    if mine is None or mine.shape != z.shape:
        print(f"lse_gradient should be a tensor of {len(z)} entries, one per logit of z; yours "
              f"is {kind_of(lse_gradient)}")
        return
    compare_entries(mine, slopes, "finite differences of logsumexp", "lse_gradient", _slips(z))
    total = mine.sum().item()
    print(f"the entries sum to {total:.6f}" + ("" if abs(total - 1) < 1e-8 else
          ": nudge every logit by the same h and f moves by exactly h, so they should sum to 1"))
