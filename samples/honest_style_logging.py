"""Correct: logging the selected-site count and a gather over stacked candidates (01), einsum with a one-hot for the target logit (02), ctx.saved with @once_differentiable and a rule table (03)."""  # noqa: E501

BASE = "reference"

# 01: a module logger that logs the number of selected sites on every call (to stderr); the
# corrupted tokens are gathered from a stack of the three candidates by a branch code.
MAKE_MLM_INPUTS = '''\
import logging

logger = logging.getLogger("mlm.corruption")
if not logger.handlers:
    _handler = logging.StreamHandler()  # stderr
    _handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(_handler)
logger.setLevel(logging.INFO)

_DTYPES = {
    "tokens": (torch.int64,),
    "selected": (torch.bool,),
    "draws": (torch.float32, torch.float64),
    "random_ids": (torch.int64,),
}


def _reject(message):
    logger.warning("rejected: %s", message)
    raise ValueError(message)


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    given = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    for name, value in given.items():
        if not isinstance(value, torch.Tensor):
            _reject(f"{name} must be a tensor, got {type(value).__name__}")
        if value.dim() != 2:
            _reject(f"{name} must be 2-D, got {value.dim()}-D")
    for name, value in given.items():
        if value.shape != tokens.shape:
            _reject(f"{name} has shape {list(value.shape)}, tokens {list(tokens.shape)}")
        if value.dtype not in _DTYPES[name]:
            _reject(f"{name} must be {' or '.join(map(str, _DTYPES[name]))}, got {value.dtype}")
        if value.device != tokens.device:
            _reject(f"{name} is on {value.device}, tokens on {tokens.device}")
    if isinstance(mask_token_id, bool) or not isinstance(mask_token_id, int) or mask_token_id < 0:
        _reject(f"mask_token_id must be an int >= 0, got {mask_token_id!r}")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) or ignore_index >= 0:
        _reject(f"ignore_index must be an int < 0, got {ignore_index!r}")
    if (tokens < 0).any() or (random_ids < 0).any():
        _reject("tokens and random_ids must be >= 0")
    if not torch.isfinite(draws).all() or ((draws < 0) | (draws >= 1)).any():
        _reject("draws must be finite and in [0, 1)")

    logger.info("make_mlm_inputs: %d of %d sites selected", int(selected.sum()), tokens.numel())

    # branch code: 0 = [MASK] (u < 0.8), 1 = random (0.8 <= u < 0.9), 2 = keep (u >= 0.9)
    code = (draws >= 0.8).long() + (draws >= 0.9).long()
    candidates = torch.stack([torch.full_like(tokens, mask_token_id), random_ids, tokens])
    picked = candidates.gather(0, code.unsqueeze(0)).squeeze(0)
    corrupted = torch.where(selected, picked, tokens)
    labels = torch.where(selected, tokens, torch.full_like(tokens, ignore_index))
    return corrupted, labels
'''

# 02: the target logit as an einsum of the logits with a one-hot of the labels.
TARGET_LOG_PROBS = '''\
def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    vocab = logits.shape[-1]
    chosen = labels != ignore_index
    one_hot = F.one_hot(torch.where(chosen, labels, 0), vocab).to(logits.dtype)
    target_logit = torch.einsum("blv,blv->bl", logits, one_hot)
    log_p = target_logit - torch.logsumexp(logits, dim=-1)
    return torch.where(chosen, log_p, 0.0)
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    nll = -target_log_probs(logits, labels, ignore_index)
    return nll.sum() / labels.ne(ignore_index).sum().to(nll.dtype)
'''

# 03: the tensors kept in a ctx.saved tuple (not save_for_backward), a backward marked
# @once_differentiable, and masked_lm_loss validating through a table of (test, message) rules.
MASKED_LM_LOSS_FUNCTION = '''\
from torch.autograd.function import once_differentiable


class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        keep = labels != ignore_index  # [B, L]
        rows = logits[keep]  # [|S|, V], a copy of the rows that count
        targets = labels[keep]
        lse = torch.logsumexp(rows, dim=1)
        target_logit = rows.gather(1, targets.unsqueeze(1)).squeeze(1)
        ctx.saved = (rows, lse, targets, keep)
        ctx.count = max(rows.shape[0], 1)
        return (lse - target_logit).sum() / ctx.count

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        rows, lse, targets, keep = ctx.saved
        probs = torch.exp(rows - lse.unsqueeze(1))  # softmax, from the saved logsumexp
        probs[torch.arange(len(targets), device=probs.device), targets] -= 1.0
        grad = rows.new_zeros(keep.shape + rows.shape[1:])
        grad[keep] = probs * (grad_output / ctx.count)
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    rules = [
        (lambda: isinstance(logits, torch.Tensor), "logits must be a torch.Tensor"),
        (lambda: isinstance(labels, torch.Tensor), "labels must be a torch.Tensor"),
        (lambda: logits.dim() == 3, "logits must be 3-D [B, L, V]"),
        (lambda: logits.shape[-1] > 0, "logits has an empty vocabulary (V == 0)"),
        (lambda: labels.dim() == 2, "labels must be 2-D [B, L]"),
        (lambda: labels.shape == logits.shape[:2], "labels must match the [B, L] of logits"),
        (lambda: logits.dtype in (torch.float32, torch.float64), "logits must be float32/64"),
        (lambda: labels.dtype == torch.int64, "labels must be int64"),
        (lambda: labels.device == logits.device, "logits and labels must share a device"),
        (lambda: type(ignore_index) is int and ignore_index < 0,
         "ignore_index must be a negative Python int"),
        (lambda: not ((labels != ignore_index)
                      & ((labels < 0) | (labels >= logits.shape[-1]))).any(),
         "every label must be ignore_index or a token id in [0, V)"),
    ]
    for holds, message in rules:  # in order: each rule may rely on the ones before it
        if not holds():
            raise ValueError(message)
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

CELLS = {
    # 01: logging (the selected-site count on every call); gather over stacked candidates
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: einsum with a one-hot for the target logit
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: ctx.saved tuple, @once_differentiable; a table of (test, message) rules
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
