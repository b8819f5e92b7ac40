"""Correct: index_put_ at nonzero(as_tuple=True) positions (01), logging.debug with a call counter and an early return (02), masked_lm_loss by plain autograd beside a Function of its own (03)."""  # noqa: E501

BASE = "reference"

# 01: the writes by index_put_ at the (row, column) positions from nonzero(as_tuple=True).
MAKE_MLM_INPUTS = '''\
def _validate(tokens, selected, draws, random_ids, mask_token_id, ignore_index):
    spec = [("tokens", tokens, (torch.int64,)), ("selected", selected, (torch.bool,)),
            ("draws", draws, (torch.float32, torch.float64)),
            ("random_ids", random_ids, (torch.int64,))]
    for name, value, _ in spec:
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} should be a tensor, got {type(value).__name__}")
        if len(value.shape) != 2:
            raise ValueError(f"{name} should be [B, L], got {list(value.shape)}")
    for name, value, dtypes in spec:
        if value.shape != tokens.shape:
            raise ValueError(f"{name} should match tokens {list(tokens.shape)}, "
                             f"got {list(value.shape)}")
        if value.dtype not in dtypes:
            raise ValueError(f"{name} should be {dtypes}, got {value.dtype}")
        if value.device != tokens.device:
            raise ValueError(f"{name} should be on {tokens.device}, got {value.device}")
    for name, value, ok in (("mask_token_id", mask_token_id, lambda v: v >= 0),
                            ("ignore_index", ignore_index, lambda v: v < 0)):
        if type(value) is not int or not ok(value):
            raise ValueError(f"{name}={value!r} is not allowed")
    if torch.any(tokens < 0) or torch.any(random_ids < 0):
        raise ValueError("a token or random id is negative")
    if not torch.all(torch.isfinite(draws)):
        raise ValueError("a draw is NaN or infinite")
    if torch.any(draws < 0) or torch.any(draws >= 1):
        raise ValueError("a draw is outside [0, 1)")


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    _validate(tokens, selected, draws, random_ids, mask_token_id, ignore_index)
    corrupted = tokens.clone()
    labels = torch.full_like(tokens, ignore_index)

    rows, cols = torch.nonzero(selected, as_tuple=True)
    labels.index_put_((rows, cols), tokens[rows, cols])

    rows, cols = torch.nonzero(selected & (draws < 0.8), as_tuple=True)
    mask_value = torch.tensor(mask_token_id, dtype=tokens.dtype, device=tokens.device)
    corrupted.index_put_((rows, cols), mask_value)

    rows, cols = torch.nonzero(selected & (draws >= 0.8) & (draws < 0.9), as_tuple=True)
    corrupted.index_put_((rows, cols), random_ids[rows, cols])
    return corrupted, labels
'''

# 02: logging.debug calls (a module logger) with a global call counter; masked_mean_nll returns
# early (a connected zero) when nothing is selected.
TARGET_LOG_PROBS = '''\
import logging

log = logging.getLogger(__name__)
_calls = 0


def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    global _calls
    _calls += 1
    keep = labels != ignore_index
    log.debug("target_log_probs call %d: %d of %d sites selected", _calls, int(keep.sum()),
              keep.numel())
    targets = torch.where(keep, labels, torch.zeros_like(labels))
    log_p = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
    return torch.where(keep, log_p, torch.zeros_like(log_p))
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    count = int((labels != ignore_index).sum())
    if count == 0:
        log.debug("masked_mean_nll: no selected site")
        return (logits * 0).sum()
    return -target_log_probs(logits, labels, ignore_index).sum() / count
'''

# 03: the Function (scatter_ for the one-hot) is checked on its own; masked_lm_loss itself is
# plain autograd (logsumexp minus gather on the selected rows), which gives the same gradient.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        where = labels != ignore_index
        z = logits[where]
        y = labels[where]
        lse = z.logsumexp(dim=1)
        n = max(y.shape[0], 1)
        ctx.save_for_backward(z, y, lse, where)
        ctx.n = n
        return (lse - z.gather(1, y.view(-1, 1)).view(-1)).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        z, y, lse, where = ctx.saved_tensors
        softmax = (z - lse.view(-1, 1)).exp()
        onehot = torch.zeros_like(softmax).scatter_(1, y.view(-1, 1), 1.0)
        full = torch.zeros(where.shape + (z.shape[1],), dtype=z.dtype, device=z.device)
        full[where] = (softmax - onehot) * (grad_output / ctx.n)
        return full, None, None
'''

MASKED_LM_LOSS = '''\
def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if not isinstance(logits, torch.Tensor):
        raise ValueError(f"logits must be a tensor, got {type(logits).__name__}")
    if not isinstance(labels, torch.Tensor):
        raise ValueError(f"labels must be a tensor, got {type(labels).__name__}")
    if logits.dim() != 3:
        raise ValueError(f"logits must be [B, L, V], got {list(logits.shape)}")
    B, L, V = logits.shape
    if V == 0:
        raise ValueError("V must be > 0")
    if list(labels.shape) != [B, L]:
        raise ValueError(f"labels must be [{B}, {L}], got {list(labels.shape)}")
    if logits.dtype not in (torch.float32, torch.float64) or labels.dtype != torch.int64:
        raise ValueError(f"dtypes must be float32/float64 and int64, got {logits.dtype}, "
                         f"{labels.dtype}")
    if logits.device != labels.device:
        raise ValueError("logits and labels must be on one device")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    keep = labels != ignore_index
    targets = labels[keep]
    if ((targets < 0) | (targets >= V)).any():
        raise ValueError(f"labels must be ignore_index or in [0, {V})")
    rows = logits[keep]  # [|S|, V]; autograd scatters the gradient back into logits
    per_site = torch.logsumexp(rows, dim=-1) - rows.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return per_site.sum() / max(targets.numel(), 1)
'''

CELLS = {
    # 01: index_put_ at nonzero(as_tuple=True) positions
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: logging.debug with a global call counter; an early return when nothing is selected
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: masked_lm_loss by plain autograd (the Function is graded on its own)
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
