"""Correct and functional: nested torch.where with walrus checks, no in-place writes (01), advanced indexing with arange for the target logit (02), a broadcast comparison against the special ids (06)."""  # noqa: E501

BASE = "reference"

# 01: one nested torch.where per output (no in-place write anywhere); validation through
# walrus operators.
MAKE_MLM_INPUTS = '''\
def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    named = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    if (not_tensor := [n for n, v in named.items() if not isinstance(v, torch.Tensor)]):
        raise ValueError(f"not a torch.Tensor: {', '.join(not_tensor)}")
    if (not_2d := [n for n, v in named.items() if v.dim() != 2]):
        raise ValueError(f"must be 2-D [B, L]: {', '.join(not_2d)}")
    if (other_shape := [n for n, v in named.items() if v.shape != tokens.shape]):
        raise ValueError(f"shape differs from tokens {tuple(tokens.shape)}: {other_shape}")
    wanted = {"tokens": [torch.int64], "selected": [torch.bool],
              "draws": [torch.float32, torch.float64], "random_ids": [torch.int64]}
    if (wrong := [n for n, v in named.items() if v.dtype not in wanted[n]]):
        raise ValueError(f"wrong dtype: {[(n, str(named[n].dtype)) for n in wrong]}")
    if (elsewhere := [n for n, v in named.items() if v.device != tokens.device]):
        raise ValueError(f"not on {tokens.device}: {elsewhere}")
    if not (type(mask_token_id) is int and mask_token_id >= 0):
        raise ValueError(f"mask_token_id must be a non-negative int, got {mask_token_id!r}")
    if not (type(ignore_index) is int and ignore_index < 0):
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    for name in ("tokens", "random_ids"):
        if (negative := named[name] < 0).any():
            raise ValueError(f"{name} must be >= 0, found {named[name][negative][0].item()}")
    if (bad := ~torch.isfinite(draws) | (draws < 0) | (draws >= 1)).any():
        raise ValueError(f"draws must be finite and in [0, 1), found {draws[bad][0].item()}")

    # the outer condition wins, so the inner one may include the [MASK] sites
    corrupted = torch.where(selected & (draws < 0.8), mask_token_id,
                            torch.where(selected & (draws < 0.9), random_ids, tokens))
    labels = torch.where(selected, tokens, ignore_index)
    return corrupted, labels
'''

# 02: the target logit by advanced indexing with broadcast aranges, logits[b, t, label].
TARGET_LOG_PROBS = '''\
def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    B, L, _ = logits.shape
    keep = labels != ignore_index
    safe = labels.clamp(min=0)  # ignore_index is negative: it becomes the valid index 0
    b = torch.arange(B, device=logits.device).view(B, 1)
    t = torch.arange(L, device=logits.device).view(1, L)
    log_p = logits[b, t, safe] - torch.logsumexp(logits, dim=2)
    return torch.where(keep, log_p, torch.zeros((), dtype=logits.dtype, device=logits.device))
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    log_p = target_log_probs(logits, labels, ignore_index)
    return -(log_p.sum() / (labels != ignore_index).sum())
'''

# 06: one broadcast comparison of [B, L, 1] tokens with the [K] special ids.
SELECT_FOR_MASKING = '''\
def select_for_masking(tokens, special_ids, rate, generator):
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    u = torch.rand(tokens.shape, generator=generator)
    ids = torch.as_tensor(list(special_ids), dtype=tokens.dtype)
    special = (tokens.unsqueeze(-1) == ids).any(dim=-1)  # [B, L, K] -> [B, L]
    return (u < rate) & ~special
'''

CELLS = {
    # 01: nested torch.where, no in-place writes; walrus operators in the checks
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: advanced indexing logits[b, t, label] with broadcast aranges
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 06: a broadcast comparison against all special ids at once
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "06_real_bert": 4}
