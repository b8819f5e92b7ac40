"""Correct: getattr(torch, name) over spelt-out dtype names and an arithmetic blend of masks (01), getattr over a named table of dtype names with index_select / index_add_ (03), torch.isin (06)."""  # noqa: E501

BASE = "reference"

# 01: the allowed dtypes read by getattr(torch, name) over spelt-out names, once in a set
# comprehension and once in a for loop; the corrupted tokens as a sum of disjoint masked terms.
MAKE_MLM_INPUTS = '''\
ID_DTYPES = {getattr(torch, name) for name in ("int64",)}
DRAW_DTYPES = {getattr(torch, name) for name in ("float32", "float64")}
MASK_DTYPES = set()
for name in ("bool",):
    MASK_DTYPES.add(getattr(torch, name))

ALLOWED = {"tokens": ID_DTYPES, "selected": MASK_DTYPES, "draws": DRAW_DTYPES,
           "random_ids": ID_DTYPES}


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    args = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    for name, tensor in args.items():
        if not isinstance(tensor, torch.Tensor) or tensor.ndim != 2:
            raise ValueError(f"{name} must be a 2-D torch.Tensor")
    for name, tensor in args.items():
        if tensor.shape != tokens.shape:
            raise ValueError(f"{name} must have the shape of tokens {tuple(tokens.shape)}, "
                             f"got {tuple(tensor.shape)}")
        if tensor.dtype not in ALLOWED[name]:
            raise ValueError(f"{name} has dtype {tensor.dtype}; allowed: "
                             f"{sorted(str(d) for d in ALLOWED[name])}")
        if tensor.device != tokens.device:
            raise ValueError(f"{name} is on {tensor.device}, not on {tokens.device}")
    for name, value, sign_ok in (("mask_token_id", mask_token_id, lambda v: v >= 0),
                                 ("ignore_index", ignore_index, lambda v: v < 0)):
        if isinstance(value, bool) or not isinstance(value, int) or not sign_ok(value):
            raise ValueError(f"{name} has a wrong value {value!r}")
    if bool((tokens < 0).any()) or bool((random_ids < 0).any()):
        raise ValueError("tokens and random_ids hold ids, which are never negative")
    if not bool(torch.isfinite(draws).all()):
        raise ValueError("draws hold NaN or inf")
    if bool((draws < 0).any()) or bool((draws >= 1).any()):
        raise ValueError("draws must be in [0, 1)")

    to_mask = selected & (draws < 0.8)
    to_random = selected & (draws >= 0.8) & (draws < 0.9)
    unchanged = ~(to_mask | to_random)
    # exactly one of the three terms is non-zero at each site
    corrupted = tokens * unchanged + random_ids * to_random + mask_token_id * to_mask
    labels = torch.where(selected, tokens, torch.full_like(tokens, ignore_index))
    return corrupted, labels
'''

# 03: the dtypes from a module-level table of names (getattr by a name held in a variable);
# the Function works on flat indices: index_select forward, index_put_ / index_add_ backward.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        B, L, V = logits.shape
        z = logits.reshape(B * L, V)
        y = labels.reshape(B * L)
        idx = torch.nonzero(y != ignore_index, as_tuple=True)[0]
        zs, ys = z.index_select(0, idx), y.index_select(0, idx)
        lse = torch.logsumexp(zs, dim=1)
        picked = zs[torch.arange(idx.numel(), device=z.device), ys]
        n = max(idx.numel(), 1)
        ctx.save_for_backward(zs, ys, idx, lse)
        ctx.meta = (B, L, V, n)
        return (lse - picked).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        zs, ys, idx, lse = ctx.saved_tensors
        B, L, V, n = ctx.meta
        g = torch.exp(zs - lse.unsqueeze(1))
        minus_one = torch.tensor(-1.0, dtype=g.dtype, device=g.device)
        g.index_put_((torch.arange(ys.numel(), device=g.device), ys), minus_one, accumulate=True)
        out = zs.new_zeros(B * L, V)
        out.index_add_(0, idx, g * (grad_output / n))
        return out.view(B, L, V), None, None
'''

MASKED_LM_LOSS = '''\
LOGIT_DTYPE_NAMES = ("float32", "float64")
LABEL_DTYPE_NAME = "int64"
LOGIT_DTYPES = tuple(getattr(torch, name) for name in LOGIT_DTYPE_NAMES)
LABEL_DTYPE = getattr(torch, LABEL_DTYPE_NAME)


def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    for name, value in (("logits", logits), ("labels", labels)):
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if logits.ndim != 3 or logits.size(-1) == 0:
        raise ValueError(f"logits must be [B, L, V] with V > 0, got {tuple(logits.shape)}")
    if labels.ndim != 2 or tuple(labels.shape) != tuple(logits.shape[:2]):
        raise ValueError(f"labels must be {tuple(logits.shape[:2])}, got {tuple(labels.shape)}")
    if logits.dtype not in LOGIT_DTYPES:
        raise ValueError(f"logits must be one of {LOGIT_DTYPE_NAMES}, got {logits.dtype}")
    if labels.dtype != LABEL_DTYPE:
        raise ValueError(f"labels must be {LABEL_DTYPE_NAME}, got {labels.dtype}")
    if logits.device != labels.device:
        raise ValueError("logits and labels must be on the same device")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    counted = labels != ignore_index
    if ((labels[counted] < 0) | (labels[counted] >= logits.size(-1))).any():
        raise ValueError("a label is neither ignore_index nor a token id in [0, V)")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

# 06: torch.isin against a tensor of the special ids (empty when there are none).
SELECT_FOR_MASKING = '''\
def select_for_masking(tokens, special_ids, rate, generator):
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    u = torch.rand(tokens.shape, generator=generator)
    specials = torch.tensor(sorted(special_ids), dtype=tokens.dtype)
    return (u < rate) & ~torch.isin(tokens, specials)
'''

CELLS = {
    # 01: getattr(torch, name) over spelt-out names (a set comprehension and a for loop);
    #     corrupted as a sum of disjoint masked terms
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 03: getattr over a module-level table of dtype names; index_select / index_add_
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
    # 06: torch.isin
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "03_empty_mask_and_gradient": 31, "06_real_bert": 4}
