"""A hand-written backward judged against finite differences of the student's own forward (no
reference gradient here): which known mistake it makes, in words, or None. Text only:
`mlmcourse.teaching.checks` raises it (`expect_backward_agrees`), and the hidden tests of
notebook 3 assert on it; both import these names from there."""

from __future__ import annotations


def gradient_of(loss_of, logits, scale: float = 1.0):
    """The gradient a hand-written backward gives `logits` for `scale * loss_of(logits)`."""
    leaf = logits.detach().clone().requires_grad_(True)
    (scale * loss_of(leaf)).backward()
    return leaf.grad


def finite_differences(loss_of, logits, step: float = 1e-6):
    """Central differences of the student's own forward, one entry at a time (float64); every
    call gets a tensor of its own, so a forward that writes into its input changes nothing here."""
    values = logits.detach().double().reshape(-1)
    slopes = values.new_empty(values.shape)
    for index in range(values.numel()):
        bump = values.new_zeros(values.shape)
        bump[index] = step
        up = float(loss_of((values + bump).view_as(logits)))
        down = float(loss_of((values - bump).view_as(logits)))
        slopes[index] = (up - down) / (2 * step)
    return slopes.view_as(logits)


def agree(a, b, tolerance: float = 1e-6) -> bool:
    """Whether two gradients agree entry by entry, within `tolerance` (in float64)."""
    return (a.double() - b.double()).abs().max().item() <= tolerance


IN_PLACE_ON_SAVED = (
    "your backward changes a tensor saved in forward, in place: autograd may run the backward "
    "of one graph again (gradcheck does, and so does backward(retain_graph=True)), and the "
    "second run reads what the first changed. Make new tensors from ctx.saved_tensors "
    "(exps / sums, not exps.div_(sums)); change in place only tensors the backward made itself")


FLOAT32_GRADIENT = (
    "your backward fails for float64 logits but runs for float32 ones: it builds its gradient as "
    "float32 (a bare torch.zeros(shape) is float32, whatever the logits' dtype) and writes float64 "
    "values into it. Make it from a saved tensor (new_zeros, zeros_like) so it has the logits' "
    "dtype and device")


def _runs_in_float32(loss_of, logits) -> bool:
    """Whether a backward that failed at float64 `logits` runs at the same values in float32:
    then what failed is a tensor the backward made as float32 (torch.zeros(shape)) and filled
    with float64 values."""
    import torch

    if logits.dtype != torch.float64:
        return False
    try:
        gradient_of(loss_of, logits.float())
    except Exception:  # noqa: BLE001 - it fails for another reason too: the caller raises the first
        return False
    return True


def backward_repeat_mistake(loss_of, logits) -> str | None:
    """Why a second backward of the same graph fails or gives another gradient (a backward that
    changes, in place, what forward saved), or None when both agree. A first backward that fails
    at float64 logits but runs at float32 ones is named for its float32 gradient; any other error
    of the first backward is raised as it is.

    `loss_of(z)` is the loss at logits `z`; the graph is kept for the second run, as gradcheck
    and `backward(retain_graph=True)` keep it."""
    import torch

    leaf = logits.detach().clone().requires_grad_(True)
    loss = loss_of(leaf)
    try:
        (first,) = torch.autograd.grad(loss, leaf, retain_graph=True, allow_unused=True)
    except RuntimeError as error:
        # exactly what torch raises for mixed dtypes, not a subclass (a grading process that died)
        if type(error) is RuntimeError and _runs_in_float32(loss_of, logits):
            return FLOAT32_GRADIENT
        raise
    try:
        (second,) = torch.autograd.grad(loss, leaf, allow_unused=True)
    except RuntimeError as error:
        if "inplace operation" in str(error):
            return IN_PLACE_ON_SAVED
        raise
    if first is None or second is None or torch.equal(first, second):
        return None
    return ("your backward changes what forward saved: a second backward of the same graph "
            "gives another gradient than the first. Leave what ctx holds as forward left it; "
            "change in place only tensors the backward made itself")


def backward_mistake(loss_of, logits, labels, ignore_index: int = -100) -> str | None:
    """Which known mistake a hand-written backward makes, judged against finite differences of
    the student's own forward (no reference gradient here), or None when they agree.

    `loss_of(z)` is the loss at logits `z` (float64, [B, L, V]) with `labels` fixed."""
    given = logits.detach().clone()
    loss_of(given)
    if not bool((given == logits.detach()).all()):
        return ("your forward changes the logits it is given: never write into the caller's "
                "tensors (work on a copy)")
    repeated = backward_repeat_mistake(loss_of, logits)
    if repeated:
        return repeated
    grad = gradient_of(loss_of, logits)
    if grad is None or tuple(grad.shape) != tuple(logits.shape):
        return "backward() must give logits a gradient of the logits' shape"
    ignored = labels == ignore_index
    if bool(ignored.any()) and grad[ignored].abs().max().item() > 0:
        return ("your backward writes a gradient at ignored sites: a row whose label is "
                "ignore_index does not enter the loss, so its gradient is exactly 0")
    scaled = gradient_of(loss_of, logits, 2.5)
    if agree(scaled, grad) and grad.abs().max().item() > 0:
        return ("your backward ignores grad_output: (2.5 * loss).backward() gives the same "
                "gradient as loss.backward(), where the chain rule wants 2.5 times it")
    numeric = finite_differences(loss_of, logits)
    if agree(grad, numeric):
        return None
    count, sites = int((~ignored).sum()), labels.numel()
    if count and agree(grad, count * numeric):
        return (f"your backward is |S| = {count} times too large: the forward divides by the "
                "number of selected sites, so the backward must divide by it too")
    if count and agree(grad * sites, numeric * count):
        return (f"your backward divides by every site (B*L = {sites}), not by the selected "
                f"ones (|S| = {count})")
    if agree(grad, -numeric):
        return "your backward has the wrong sign: the gradient is softmax(row) - onehot(target)"
    error = (grad.double() - numeric).abs().max().item()
    return (f"your backward differs from finite differences of your forward by {error:.2e}, "
            "in none of the known ways (a gradient at ignored sites, a missing 1 / |S|, a "
            "wrong sign): compare it entry by entry with (softmax - onehot) / |S|")
