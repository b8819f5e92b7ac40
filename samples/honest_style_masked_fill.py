"""Correct with out-of-place masked ops: masked_fill + masked_scatter (01), masked_fill with torch.special.logsumexp (02), softmax recomputed in backward from the saved logits (03)."""  # noqa: E501

BASE = "reference"

# 01: masked_fill for [MASK] and the labels, masked_scatter for the random ids (each returns a
# new tensor); module-level threshold constants.
MAKE_MLM_INPUTS = '''\
MASK_BELOW = 0.8
RANDOM_BELOW = 0.9
ID_DTYPE = torch.int64
DRAW_DTYPES = (torch.float32, torch.float64)


def _is_plain_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    inputs = (("tokens", tokens), ("selected", selected), ("draws", draws),
              ("random_ids", random_ids))
    for name, x in inputs:
        if not isinstance(x, torch.Tensor) or x.dim() != 2:
            raise ValueError(f"{name} must be a 2-D tensor")
    for name, x in inputs:
        if x.size() != tokens.size():
            raise ValueError(f"{name} has size {list(x.size())}, expected {list(tokens.size())}")
    if tokens.dtype != ID_DTYPE or random_ids.dtype != ID_DTYPE:
        raise ValueError(f"tokens and random_ids must be int64, got {tokens.dtype}, "
                         f"{random_ids.dtype}")
    if selected.dtype != torch.bool:
        raise ValueError(f"selected must be bool, got {selected.dtype}")
    if draws.dtype not in DRAW_DTYPES:
        raise ValueError(f"draws must be float32 or float64, got {draws.dtype}")
    if len({x.device for _, x in inputs}) != 1:
        raise ValueError(f"tensors on several devices: {[str(x.device) for _, x in inputs]}")
    if not _is_plain_int(mask_token_id) or mask_token_id < 0:
        raise ValueError(f"mask_token_id must be an int >= 0, got {mask_token_id!r}")
    if not _is_plain_int(ignore_index) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be an int < 0, got {ignore_index!r}")
    if tokens.lt(0).any() or random_ids.lt(0).any():
        raise ValueError("ids must be >= 0")
    if not draws.isfinite().all() or draws.lt(0).any() or draws.ge(1).any():
        raise ValueError("draws must be finite numbers in [0, 1)")

    to_mask = selected & draws.lt(MASK_BELOW)
    to_random = selected & draws.ge(MASK_BELOW) & draws.lt(RANDOM_BELOW)
    corrupted = tokens.masked_fill(to_mask, mask_token_id)
    corrupted = corrupted.masked_scatter(to_random, random_ids[to_random])
    labels = tokens.masked_fill(~selected, ignore_index)
    return corrupted, labels
'''

# 02: masked_fill for the safe targets and the ignored sites; torch.special.logsumexp.
TARGET_LOG_PROBS = '''\
def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    ignored = labels.eq(ignore_index)
    targets = labels.masked_fill(ignored, 0).unsqueeze(-1)
    log_norm = torch.special.logsumexp(logits, dim=-1)
    return (logits.gather(-1, targets).squeeze(-1) - log_norm).masked_fill(ignored, 0.0)
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    count = labels.ne(ignore_index).sum()
    return target_log_probs(logits, labels, ignore_index).sum().div(count).neg()
'''

# 03: save_for_backward of the logits themselves; the backward recomputes torch.softmax of the
# selected rows; masked_lm_loss validates inside torch.no_grad().
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        keep = labels.ne(ignore_index)
        rows = logits[keep]
        targets = labels[keep]
        per_site = torch.logsumexp(rows, dim=-1) - rows.gather(-1, targets[:, None])[:, 0]
        ctx.save_for_backward(logits, labels)
        ctx.ignore_index = ignore_index
        return per_site.sum() / max(targets.numel(), 1)

    @staticmethod
    def backward(ctx, grad_output):
        logits, labels = ctx.saved_tensors
        keep = labels.ne(ctx.ignore_index)
        targets = labels[keep]
        probs = torch.softmax(logits[keep], dim=-1)  # recomputed: nothing big kept from forward
        probs -= torch.nn.functional.one_hot(targets, logits.shape[-1]).to(probs.dtype)
        grad = torch.zeros_like(logits)
        grad[keep] = probs * grad_output / max(targets.numel(), 1)
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    with torch.no_grad():  # the checks build no graph
        if not torch.is_tensor(logits) or not torch.is_tensor(labels):
            raise ValueError("logits and labels must be tensors")
        if logits.ndim != 3:
            raise ValueError(f"logits must be 3-D, got {logits.ndim}-D")
        if logits.shape[-1] < 1:
            raise ValueError("the vocabulary of logits is empty")
        if labels.ndim != 2 or labels.shape != logits.shape[:-1]:
            raise ValueError(f"labels must be {tuple(logits.shape[:-1])}, "
                             f"got {tuple(labels.shape)}")
        if not logits.dtype in (torch.float32, torch.float64):
            raise ValueError(f"logits dtype {logits.dtype} is not float32 or float64")
        if labels.dtype != torch.long:
            raise ValueError(f"labels dtype {labels.dtype} is not int64")
        if labels.device != logits.device:
            raise ValueError("logits and labels are on different devices")
        if type(ignore_index) is not int or ignore_index > -1:
            raise ValueError(f"ignore_index must be a negative int, not {ignore_index!r}")
        real = labels.ne(ignore_index)
        if (real & (labels.lt(0) | labels.ge(logits.shape[-1]))).any():
            raise ValueError("a label lies outside [0, V) and is not ignore_index")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

CELLS = {
    # 01: masked_fill + masked_scatter (out of place)
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: masked_fill, torch.special.logsumexp
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: softmax recomputed in backward from saved logits; checks under torch.no_grad()
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
