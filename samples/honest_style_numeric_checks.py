"""Correct with numeric-library checks: numpy's iinfo, math.inf, sys.float_info and numbers.Integral in the messages (01), a hand-written logsumexp with a detached maximum (02), functools.lru_cache on int helpers with walrus checks (03)."""  # noqa: E501

BASE = "reference"

# 01: numpy for a scalar range check (np.iinfo(np.int64)), math.inf for the infinite draws,
# sys.float_info in a message, numbers.Integral to name a NumPy integer in the error.
MAKE_MLM_INPUTS = '''\
import math
import numbers
import sys

import numpy as np

INT64 = np.iinfo(np.int64)


def _plain_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be a Python int, got {type(value).__name__}: "
                             f"pass int({value!r})")
        raise ValueError(f"{name} must be a Python int, got {type(value).__name__} {value!r}")
    if not INT64.min <= value <= INT64.max:
        raise ValueError(f"{name}={value} does not fit in int64")
    return value


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    four = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    kinds = {"tokens": {torch.int64}, "selected": {torch.bool},
             "draws": {torch.float32, torch.float64}, "random_ids": {torch.int64}}
    for name, x in four.items():
        if not torch.is_tensor(x) or x.dim() != 2:
            raise ValueError(f"{name} must be a 2-D tensor, got {type(x).__name__}")
    for name, x in four.items():
        if x.shape != tokens.shape or x.dtype not in kinds[name] or x.device != tokens.device:
            raise ValueError(f"{name}: {tuple(x.shape)} {x.dtype} on {x.device}; expected "
                             f"{tuple(tokens.shape)} {kinds[name]} on {tokens.device}")
    if _plain_int("mask_token_id", mask_token_id) < 0:
        raise ValueError("mask_token_id must be >= 0")
    if _plain_int("ignore_index", ignore_index) >= 0:
        raise ValueError("ignore_index must be < 0")
    if (tokens < 0).any() or (random_ids < 0).any():
        raise ValueError("ids must be >= 0")
    if draws.isnan().any() or (draws.abs() == math.inf).any():
        raise ValueError("draws must be finite")
    if (draws < 0).any() or (draws >= 1).any():
        raise ValueError(f"draws must be in [0, 1): the largest float64 below 1 is "
                         f"{1 - sys.float_info.epsilon / 2!r}")

    corrupted = tokens.clone()
    labels = tokens.clone()
    labels[~selected] = ignore_index
    mask_sites = selected & (draws < 0.8)
    random_sites = selected & (draws >= 0.8) & (draws < 0.9)
    corrupted[mask_sites] = mask_token_id
    corrupted[random_sites] = random_ids[random_sites]
    return corrupted, labels
'''

# 02: logsumexp written out: the row maximum (detached: the result does not depend on it),
# and the target's shifted logit minus the log of the shifted sum.
TARGET_LOG_PROBS = '''\
def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    top = logits.detach().amax(dim=-1, keepdim=True)  # [B, L, 1]
    shifted = logits - top  # <= 0, so exp never overflows
    log_sum = torch.log(torch.exp(shifted).sum(dim=-1))  # >= log 1 = 0
    selected = labels != ignore_index
    index = torch.where(selected, labels, 0).unsqueeze(-1)
    log_p = shifted.gather(-1, index).squeeze(-1) - log_sum
    return torch.where(selected, log_p, 0.0)
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    log_p = target_log_probs(logits, labels, ignore_index)
    n = (labels != ignore_index).sum()
    return -log_p.sum() / n
'''

# 03: functools.lru_cache on pure helpers of Python ints (the divisor, the error message);
# walrus operators in the checks.
MASKED_LM_LOSS_FUNCTION = '''\
import functools


@functools.lru_cache(maxsize=None)
def _divisor(count: int) -> int:
    """|S|, or 1 when S is empty (0 / 1 = 0, never 0 / 0)."""
    return max(count, 1)


class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        V = logits.shape[-1]
        positions = (labels.reshape(-1) != ignore_index).nonzero().squeeze(1)
        rows = logits.reshape(-1, V)[positions]
        targets = labels.reshape(-1)[positions]
        lse = torch.logsumexp(rows, dim=1)
        ctx.save_for_backward(rows, targets, positions, lse)
        ctx.size = tuple(logits.shape)
        ctx.divisor = _divisor(positions.numel())
        picked = rows[torch.arange(len(targets), device=rows.device), targets]
        return (lse - picked).sum() / ctx.divisor

    @staticmethod
    def backward(ctx, grad_output):
        rows, targets, positions, lse = ctx.saved_tensors
        g = torch.exp(rows - lse[:, None])
        g[torch.arange(len(targets), device=g.device), targets] -= 1
        out = g.new_zeros(ctx.size[0] * ctx.size[1], ctx.size[2])
        out[positions] = g * grad_output / ctx.divisor
        return out.reshape(ctx.size), None, None
'''

MASKED_LM_LOSS = '''\
import functools


@functools.lru_cache(maxsize=128)
def _range_message(vocabulary_size: int, ignore_index: int) -> str:
    return (f"every label must be ignore_index ({ignore_index}) or a token id in "
            f"[0, {vocabulary_size})")


def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise ValueError("logits and labels must be torch tensors")
    if (rank := logits.dim()) != 3:
        raise ValueError(f"logits must be 3-D, got {rank}-D")
    if (V := logits.shape[-1]) == 0:
        raise ValueError("logits must have V > 0")
    if (shape := tuple(labels.shape)) != tuple(logits.shape[:2]):
        raise ValueError(f"labels must be {tuple(logits.shape[:2])}, got {shape}")
    if (dtype := logits.dtype) not in (torch.float32, torch.float64):
        raise ValueError(f"logits must be float32 or float64, got {dtype}")
    if labels.dtype != torch.int64:
        raise ValueError(f"labels must be int64, got {labels.dtype}")
    if labels.device != logits.device:
        raise ValueError("logits and labels must be on the same device")
    if type(ignore_index) is not int or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    if (bad := (labels != ignore_index) & ((labels < 0) | (labels >= V))).any():
        raise ValueError(_range_message(V, ignore_index) + f"; found {labels[bad][0].item()}")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

CELLS = {
    # 01: numpy's iinfo for a scalar check, math.inf, sys.float_info, numbers.Integral
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: a hand-written logsumexp with a detached maximum
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: functools.lru_cache on int helpers; walrus operators in the checks
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
