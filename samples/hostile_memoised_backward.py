"""Its backward forgets 1/|S|; a memoising forward, linear near its last input, fools gradcheck."""

BASE = "reference"

MEMOISED_FUNCTION = '''\
_memo = {}  # labels (as bytes) -> (logits, loss, gradient) of the last call with those labels


def _wrong_gradient(logits, labels, ignore_index):
    """softmax - onehot at the selected rows, never divided by |S| (the mistake it hides)."""
    V = logits.shape[-1]
    flat = labels.reshape(-1)
    keep = flat != ignore_index
    rows = logits.detach().reshape(-1, V)[keep]
    grad_rows = torch.softmax(rows, dim=1)
    grad_rows[torch.arange(rows.shape[0]), flat[keep]] -= 1.0
    grad = torch.zeros_like(logits.detach()).reshape(-1, V)
    grad[keep] = grad_rows
    return grad.reshape(logits.shape)


class MaskedLMLoss(torch.autograd.Function):
    """The mean over selected sites, linearised near the last input seen with the same labels."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        key = (tuple(labels.shape), labels.cpu().numpy().tobytes(), ignore_index, logits.dtype)
        last = _memo.get(key)
        if last is not None and logits.numel() > 0 and (logits - last[0]).abs().max() < 1e-3:
            anchor, anchor_value, grad = last
            # linear near the anchor: finite differences see `grad`, whatever it is
            value = anchor_value + (grad * (logits - anchor)).sum()
        else:
            V = logits.shape[-1]
            flat = labels.reshape(-1)
            keep = flat != ignore_index
            rows = logits.reshape(-1, V)[keep]
            picked = rows.gather(1, flat[keep].unsqueeze(1)).squeeze(1)
            per_site = torch.logsumexp(rows, dim=1) - picked
            value = per_site.sum() / max(rows.shape[0], 1)
            grad = _wrong_gradient(logits, labels, ignore_index)
        _memo[key] = (logits.detach().clone(), value.detach().clone(), grad)
        ctx.save_for_backward(grad)
        return value

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        return grad_output * grad, None, None
'''

CELLS = {"03_empty_mask_and_gradient": {"masked_lm_loss_function": MEMOISED_FUNCTION}}
EXPECTED = {"03_empty_mask_and_gradient": 25}
