"""Notebook 6's two lines to write first, judged for the student: the head run at the selected
sites only, with the loss of those rows (Step 6), and the walkthrough's loss over every token
from the two group means (Step 7). These checks never raise: they say how far the student's value
is from the right one and name the usual slip (the head at every position, the hidden states or
the transform without the decoder, the decoder without the transform, the [MASK] sites only; the
plain mean of the two means, the weights swapped, a sum not divided), so a student can try
again."""

from __future__ import annotations

from mlmcourse.teaching.scratch import as_float64, kind_of, unwritten


def _number(value) -> float | None:
    number = as_float64(value)
    return number.item() if number is not None and number.numel() == 1 else None


def _head_slip(mine, head, last_hidden, at, logits) -> str:
    """Why the student's `picked_logits` are not the head's logits at the selected sites."""
    import torch

    count, (B, L, V) = int(at.sum()), logits.shape
    shape = list(mine.shape)
    if shape == [B, L, V]:
        return (f"that is the head at every position, [B, L, V] = {shape}: pick the selected "
                "rows of last_hidden first (a [B, L] bool mask picks [|S|, H]), then the head")
    if shape == [B * L, V]:
        return (f"yours has a row for every position, {B * L}: pick the selected rows of "
                "last_hidden before the head, so that it runs on |S| rows only")
    if len(shape) == 2 and shape[1] == V and shape[0] < count:
        return (f"yours has {shape[0]} rows, and |S| = {count}: select with labels != -100, "
                "every selected site, also those shown as a random or an unchanged token")
    if shape == [count, last_hidden.shape[-1]] and V != last_hidden.shape[-1]:
        return (f"{shape} is [|S|, H]: hidden states (or the transform's output); the head "
                "ends with its decoder, H -> V: call head(...) on them")
    if shape != [count, V]:
        return f"picked_logits should be [|S|, V] = {[count, V]}: one row of V logits per site"
    with torch.no_grad():
        decoder_only = head.decoder(last_hidden[at]).to("cpu", torch.float64)
    if torch.allclose(mine, decoder_only, atol=1e-5):
        return ("that is the decoder alone: the head is transform, then decoder (Step 6), and "
                "head(...) runs both")
    return "go back to Step 6's formula: the head on each selected row of last_hidden"


def compare_selected_head(picked_logits, picked_loss, head, last_hidden, labels, logits,
                          loss, ignore_index: int = -100) -> None:
    """Notebook 6's Step 6, a check for the student that never raises: their `picked_logits`
    (the MLM head run on the hidden states of the selected sites only, [|S|, V]) against the
    model's `logits` [B, L, V] at those sites, and their `picked_loss` (a masked-LM loss of those
    rows) against Step 5's `loss`, each to 1e-5 (float32); it names the usual slips (the head at
    every position, [|S|, H] with no decoder, the decoder alone, the [MASK] sites only); while
    both are still None it says what to write."""
    import torch

    if picked_logits is None and picked_loss is None:
        unwritten("picked_logits and picked_loss", None,
                  "two lines picked_logits = ... and picked_loss = ...", verb="are")
        return
    at = labels != ignore_index
    right = logits.detach()[at].to("cpu", torch.float64)
    mine = as_float64(picked_logits) if picked_logits is not None else None
    if mine is None:
        print("picked_logits should be a tensor [|S|, V]; yours is "
              + ("not written yet" if picked_logits is None else kind_of(picked_logits)))
    else:
        agree = list(mine.shape) == list(right.shape) and bool(
            (mine - right).abs().max() < 1e-5)
        print(f"picked_logits: yours {list(mine.shape)}, the model's at the {int(at.sum())} "
              f"selected sites {list(right.shape)}:", "they agree (to 1e-5)" if agree
              else "they differ")
        if not agree:
            print("  " + _head_slip(mine, head, last_hidden, at, logits))
    number, exact = _number(picked_loss), float(loss)
    if picked_loss is None or number is None:
        print("picked_loss should be one number, your masked_lm_loss of those rows; yours is "
              + ("not written yet" if picked_loss is None else kind_of(picked_loss)))
        return
    agree = abs(number - exact) < 1e-5
    print(f"picked_loss: yours {number:.6f}, Step 5's loss {exact:.6f}:",
          "they agree (to 1e-5)" if agree else "they differ")
    if not agree and mine is not None and list(mine.shape) == list(right.shape):
        print("  your picked_logits are right, so the loss call is off: give masked_lm_loss "
              "the |S| rows as one sequence, picked_logits.unsqueeze(0), with their targets, "
              "the original tokens labels[at].unsqueeze(0)")


def compare_all_token_mean(everywhere_by_hand, loss_everywhere, loss_selected, n_selected,
                           loss_unselected, n_unselected) -> None:
    """Notebook 6's Step 7, a check for the student that never raises: their
    `everywhere_by_hand`, the walkthrough's mean over every labelled token written from the mean
    over the selected sites and the mean over the others with their counts, against
    `loss_everywhere`, to 1e-4 (float32 means); it names the usual slips (the plain mean of the
    two means, the weights swapped, the sum not divided or divided by one group's count); while
    it is still None it says what to write."""
    if unwritten("everywhere_by_hand", everywhere_by_hand, "line everywhere_by_hand = ..."):
        return
    number = _number(everywhere_by_hand)
    if number is None:
        print(f"everywhere_by_hand should be one number; yours is {kind_of(everywhere_by_hand)}")
        return
    agree = abs(number - loss_everywhere) < 1e-4
    print(f"yours {number:.4f}, the mean over every token {loss_everywhere:.4f} (tolerance "
          "1e-4):", "they agree" if agree else "they differ")
    if agree:
        return
    s, u, ns, nu = loss_selected, loss_unselected, n_selected, n_unselected
    total = ns * s + nu * u
    slips = {
        f"that is the mean of the two means, halfway between them: like notebook 2's mean of "
        f"per-sequence means, it weighs the {ns} selected sites as much as the {nu} others; "
        "weigh each mean by its count": (s + u) / 2,
        "the weights are swapped: each mean goes with its own count":
            (nu * s + ns * u) / (ns + nu),
        f"that is the sum of the losses over every token: divide it by their number, "
        f"|S| + |U| = {ns + nu}": total,
        f"divide the sum by every labelled token, |S| + |U| = {ns + nu}, not by |S| = {ns}":
            total / ns,
        f"divide the sum by every labelled token, |S| + |U| = {ns + nu}, not by |U| = {nu}":
            total / nu,
        "that is the sum of the two means: weigh each by its count, then divide by all of them":
            s + u,
    }
    named = [why for why, value in slips.items() if abs(number - value) < 1e-4]
    print("  " + (named[0] if named else "a mean over every token is the sum of every token's "
                  "loss over their number; each group's sum is its mean times its count"))
