"""Correct, defensive: warnings.warn for odd-but-valid inputs, checks under torch.no_grad() and an early return for empty batches (01), an early connected zero with a RuntimeWarning (03), a loop of in-place masked_fill_ (06)."""  # noqa: E501

BASE = "reference"

# 01: warnings.warn (stderr) for inputs that are valid but probably a mistake (nothing selected,
# a mask id that also occurs among the tokens, float32 draws); the checks inside
# torch.no_grad(); an early return for an empty batch.
MAKE_MLM_INPUTS = '''\
import warnings


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    with torch.no_grad():
        for name, value in (("tokens", tokens), ("selected", selected), ("draws", draws),
                            ("random_ids", random_ids)):
            if not isinstance(value, torch.Tensor):
                raise ValueError(f"{name} must be a torch.Tensor")
            if value.dim() != 2:
                raise ValueError(f"{name} must be 2-D")
            if value.shape != tokens.shape:
                raise ValueError(f"{name} must have the shape of tokens")
            if value.device != tokens.device:
                raise ValueError(f"{name} must be on the device of tokens")
        if tokens.dtype != torch.int64 or random_ids.dtype != torch.int64:
            raise ValueError("tokens and random_ids must be int64")
        if selected.dtype != torch.bool:
            raise ValueError("selected must be bool")
        if draws.dtype not in (torch.float32, torch.float64):
            raise ValueError("draws must be float32 or float64")
        if isinstance(mask_token_id, bool) or not isinstance(mask_token_id, int):
            raise ValueError(f"mask_token_id must be an int, got {type(mask_token_id).__name__}")
        if mask_token_id < 0:
            raise ValueError("mask_token_id must be >= 0")
        if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
            raise ValueError(f"ignore_index must be an int, got {type(ignore_index).__name__}")
        if ignore_index >= 0:
            raise ValueError("ignore_index must be negative")
        if tokens.numel() == 0:  # nothing to corrupt; still two new tensors
            return tokens.clone(), torch.full_like(tokens, ignore_index)
        if tokens.min() < 0 or random_ids.min() < 0:
            raise ValueError("tokens and random_ids must be >= 0")
        if not torch.isfinite(draws).all() or draws.min() < 0 or draws.max() >= 1:
            raise ValueError("draws must be finite and in [0, 1)")

    if not selected.any():
        warnings.warn("make_mlm_inputs: no site is selected; every label is ignore_index",
                      stacklevel=2)
    if (tokens == mask_token_id).any():
        warnings.warn(f"mask_token_id {mask_token_id} also occurs among the original tokens",
                      stacklevel=2)
    if draws.dtype == torch.float32:
        warnings.warn("float32 draws: fine, but 0.9 is not exact in float32", stacklevel=2)

    corrupted = tokens.clone()
    labels = torch.full_like(tokens, ignore_index)
    labels[selected] = tokens[selected]
    masked = selected & (draws < 0.8)
    swapped = selected & ~masked & (draws < 0.9)
    corrupted[masked] = mask_token_id
    corrupted[swapped] = random_ids[swapped]
    return corrupted, labels
'''

# 03: masked_lm_loss returns early, with a RuntimeWarning, a zero computed from the logits
# (logits.sum() * 0) when no site is selected; the Function subtracts the row maximum by hand.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        mask = labels != ignore_index
        count = int(mask.sum())
        rows = logits[mask]
        gold = labels[mask]
        row_max = rows.max(dim=-1, keepdim=True).values if count else rows[:, :1]
        shifted = rows - row_max
        sum_exp = shifted.exp().sum(dim=-1)
        loss_per_site = sum_exp.log() - shifted.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
        ctx.save_for_backward(shifted, sum_exp, gold, mask)
        ctx.count = count
        return loss_per_site.sum() / max(count, 1)

    @staticmethod
    def backward(ctx, grad_output):
        shifted, sum_exp, gold, mask = ctx.saved_tensors
        grad_rows = shifted.exp() / sum_exp.unsqueeze(-1)
        grad_rows[torch.arange(gold.numel(), device=gold.device), gold] -= 1.0
        grad = shifted.new_zeros(mask.shape + shifted.shape[-1:])
        grad[mask] = grad_rows * (grad_output / max(ctx.count, 1))
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
import warnings


def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise ValueError("logits and labels must be tensors")
    if logits.dim() != 3 or logits.shape[-1] == 0:
        raise ValueError(f"logits must be [B, L, V] with V > 0, got {list(logits.shape)}")
    if labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must be {list(logits.shape[:2])}, got {list(labels.shape)}")
    if logits.dtype not in (torch.float32, torch.float64) or labels.dtype != torch.int64:
        raise ValueError("logits must be float32/float64 and labels int64")
    if logits.device != labels.device:
        raise ValueError("logits and labels must be on one device")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    selected = labels != ignore_index
    if not selected.any():
        warnings.warn("masked_lm_loss: no selected site; the loss is 0", RuntimeWarning,
                      stacklevel=2)
        return logits.sum() * 0.0  # zero, still connected to logits
    if ((labels[selected] < 0) | (labels[selected] >= logits.shape[-1])).any():
        raise ValueError("labels must be ignore_index or in [0, V)")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

# 06: start from the draw and clear every special position with an in-place masked_fill_.
SELECT_FOR_MASKING = '''\
def select_for_masking(tokens, special_ids, rate, generator):
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    chosen = torch.rand(tokens.shape, generator=generator) < rate
    for special_id in set(special_ids):
        chosen.masked_fill_(tokens == special_id, False)
    return chosen
'''

CELLS = {
    # 01: warnings.warn for odd-but-valid inputs; torch.no_grad() checks; early empty return
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 03: an early connected zero with a RuntimeWarning
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
    # 06: a loop of in-place masked_fill_ on the function's own tensor
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "03_empty_mask_and_gradient": 31, "06_real_bert": 4}
