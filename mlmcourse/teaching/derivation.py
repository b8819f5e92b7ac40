"""Notebook 3's derivation, checked for the student: a gradient written by hand (one site's, then
the batch's) against central differences or autograd. These checks never raise: they say how
far apart the two are and name the usual slips (a missing one-hot, a flipped sign, a missing
1/|S|, a softmax taken down the rows), so a student can try again."""

from __future__ import annotations


def compare_site_gradient(site_gradient, slopes, z, target) -> None:
    """Notebook 3's 2b, a check for the student that never raises: their gradient of one site's
    loss (`site_gradient`, from logits `z` and `target`) against central differences (`slopes`),
    naming the usual slips; while it is still None it says what to write."""
    import torch
    import torch.nn.functional as F

    if site_gradient is None:
        print("site_gradient is not written yet: add a cell above this one with your line "
              "site_gradient = ..., run it, then run this cell")
        return
    mine = torch.as_tensor(site_gradient, dtype=torch.float64)
    print("finite differences of the site's loss:", [round(s, 6) for s in slopes.tolist()])
    print("your site_gradient:                   ", [round(g, 6) for g in mine.tolist()])
    error = (slopes - mine).abs().max().item() if mine.shape == slopes.shape else float("inf")
    print(f"largest difference: {error:.1e} (tolerance 1e-8):",
          "they agree" if error < 1e-8 else "they differ")
    probs, onehot = torch.softmax(z, dim=0), F.one_hot(torch.tensor(target), len(z))
    if error >= 1e-8 and mine.shape == probs.shape:
        if torch.allclose(mine, probs):
            print("  that is 2a's gradient, of logsumexp alone: what does the term -z_y add?")
        elif torch.allclose(mine, onehot - probs):
            print("  yours has the sign flipped: the target's entry should be the negative one")
        elif torch.allclose(mine, probs - 1):
            print("  yours subtracts 1 from every entry: the one-hot is a vector of V entries, "
                  "1 at the target and 0 elsewhere")
    print(f"the entries sum to {mine.sum().item():.1e}")


def compare_gradient_by_hand(by_hand, autograd_grad, keep) -> None:
    """Notebook 3's 2c, a check for the student that never raises: their `by_hand` gradient
    against autograd's (float64, [B, L, V]; `keep` the selected sites), naming a missing 1/|S|
    or a flipped sign; while `by_hand` is still all zeros it says what to write."""
    import torch

    if not by_hand.any():
        print("by_hand is still all zeros: write 2c's formula in a cell above this one "
              "(by_hand[keep] = ...), run it, then run this cell")
        return
    error = (autograd_grad - by_hand).abs().max().item()
    print(f"largest difference from autograd: {error:.1e} (tolerance 1e-12, float64):",
          "they agree" if error < 1e-12 else "they differ")
    if error >= 1e-12 and torch.allclose(by_hand, autograd_grad * keep.sum()):
        print(f"  yours is |S| = {keep.sum().item()} times autograd's: divide by |S|")
    elif error >= 1e-12 and torch.allclose(by_hand, -autograd_grad):
        print("  yours is autograd's with the sign flipped: softmax minus onehot")
    rows_sum_to_zero = by_hand[keep].sum(dim=1).abs().max().item() < 1e-12
    print("every selected row sums to zero (to 1e-12):", rows_sum_to_zero)
    if not rows_sum_to_zero:
        print("  a row's softmax sums to 1 along the vocabulary: z[keep] is [|S|, V], so take "
              "it along the last dimension (dim=-1), not down the rows")
