"""Notebook 3's Step 1, checked for the student: the zero a loss returns when no site is
selected, built by the student from the logits, judged by what backward() does with it. The
slips live here, not in the check cell, so that the cell does not show the answer before the
student writes one."""

from __future__ import annotations

from mlmcourse.teaching.scratch import kind_of, unwritten


def _value_slips(connected, logits) -> list[str]:
    """What is wrong with the zero's value, shape and dtype, in words."""
    import torch

    slips = []
    if connected.dim() != 0:
        slips.append(f"yours has shape {list(connected.shape)}: a loss is one number, a 0-dim "
                     "tensor (a sum gives one)")
    if torch.isnan(connected).any():
        slips.append("yours is nan: Step 1's 0 / 0, or the forbidden -inf times 0 (notebook 2's "
                     "trap); divide by a count that is never 0, and multiply no row by 0")
    elif (connected != 0).any():
        slips.append(f"yours is {connected.detach().tolist()}, not 0")
    if connected.dtype != logits.dtype:
        slips.append(f"yours is {connected.dtype}: a zero computed from the {logits.dtype} "
                     "logits keeps their dtype")
    return slips


def _gradient_slips(connected, logits) -> list[str]:
    """What backward() does with the zero, in words: it must reach logits with zeros."""
    import torch

    if connected.grad_fn is None:
        return ["yours is a new leaf (requires_grad=True on a tensor of its own): backward() "
                "runs, but it stops there and no gradient reaches logits"
                if connected.requires_grad else
                "yours has no history, like torch.tensor(0.): backward() raises, since nothing "
                "leads back to logits; compute the zero from logits"]
    if connected.dim() != 0:
        return []
    (grad,) = torch.autograd.grad(connected, logits, retain_graph=True, allow_unused=True)
    if grad is None:
        return ["yours has a history, but not from logits: backward() never reaches them"]
    if torch.isnan(grad).any():
        return ["its gradient holds nan: a row multiplied by 0 gets 0 times an infinite slope"]
    if (grad != 0).any():
        return ["its gradient is not 0 everywhere: no site is selected, so no logit moves it"]
    return []


def compare_connected_zero(connected, logits) -> None:
    """Step 1's your-turn, never raises: the student's `connected`, the loss's zero for a batch
    with no selected site, computed from the float64 leaf `logits`; it must be a 0-dim zero in
    the logits' dtype whose backward reaches `logits` with a zero gradient."""
    import torch

    if unwritten("connected", connected, "line connected = ..."):
        return
    if not isinstance(connected, torch.Tensor):
        print(f"connected should be a tensor computed from logits; yours is {kind_of(connected)}")
        return
    print(f"your connected: {connected.detach().tolist()}, {connected.dtype}, shape "
          f"{list(connected.shape)}, requires_grad {connected.requires_grad}")
    slips = _value_slips(connected, logits) + _gradient_slips(connected, logits)
    for slip in slips:
        print("  " + slip)
    if not slips:
        print("yours is a connected zero: backward() reaches logits and leaves every gradient 0")
