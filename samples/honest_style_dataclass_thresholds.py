"""Correct: a frozen dataclass holding the thresholds, itertools.combinations for the pairwise checks and functools.partial validators (01), functools.partial over one shared helper (02), a Function that computes in float64 and casts back (03), sum() of the comparisons (06)."""  # noqa: E501

BASE = "reference"

# 01: a frozen dataclass holds the two thresholds and builds the branch masks; the four tensors
# are compared pairwise with itertools.combinations; the int checks are functools.partial's of
# one function.
MAKE_MLM_INPUTS = '''\
import functools
import itertools
from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    """u < mask_below: [MASK]; mask_below <= u < random_below: random id; else keep."""

    mask_below: float = 0.8
    random_below: float = 0.9

    def branches(self, selected, draws):
        to_mask = selected & (draws < self.mask_below)
        to_random = selected & (draws >= self.mask_below) & (draws < self.random_below)
        return to_mask, to_random


BERT_THRESHOLDS = Thresholds()


def _int_arg(name, value, *, accept):
    if isinstance(value, bool) or not isinstance(value, int) or not accept(value):
        raise ValueError(f"{name}: {value!r} is not allowed")


_check_mask_id = functools.partial(_int_arg, "mask_token_id", accept=lambda v: v >= 0)
_check_ignore = functools.partial(_int_arg, "ignore_index", accept=lambda v: v < 0)


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    tensors = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor) or t.ndim != 2:
            raise ValueError(f"{name} must be a 2-D tensor")
    for (name_a, a), (name_b, b) in itertools.combinations(tensors.items(), 2):
        if a.shape != b.shape:
            raise ValueError(f"{name_a} {tuple(a.shape)} and {name_b} {tuple(b.shape)} differ")
        if a.device != b.device:
            raise ValueError(f"{name_a} on {a.device} and {name_b} on {b.device}")
    if tokens.dtype != torch.int64 or random_ids.dtype != torch.int64:
        raise ValueError("tokens and random_ids must be int64")
    if selected.dtype != torch.bool:
        raise ValueError("selected must be bool")
    if draws.dtype not in (torch.float32, torch.float64):
        raise ValueError("draws must be float32 or float64")
    _check_mask_id(mask_token_id)
    _check_ignore(ignore_index)
    if (tokens < 0).any() or (random_ids < 0).any():
        raise ValueError("ids must be >= 0")
    if (~torch.isfinite(draws) | (draws < 0) | (draws >= 1)).any():
        raise ValueError("draws must be finite and in [0, 1)")

    to_mask, to_random = BERT_THRESHOLDS.branches(selected, draws)
    corrupted = tokens.clone()
    corrupted[to_mask] = mask_token_id
    corrupted[to_random] = random_ids[to_random]
    labels = torch.where(selected, tokens, torch.full_like(tokens, ignore_index))
    return corrupted, labels
'''

# 02: one helper with a `reduce` flag; target_log_probs and masked_mean_nll are functools.partial
# bindings of it, wrapped in functions that keep the documented signatures.
TARGET_LOG_PROBS = '''\
import functools


def _masked_log_probs(logits, labels, ignore_index, *, reduce):
    kept = labels != ignore_index
    log_p = torch.where(
        kept,
        logits.gather(-1, torch.where(kept, labels, 0)[..., None])[..., 0]
        - logits.logsumexp(dim=-1),
        0.0,
    )
    return -log_p.sum() / kept.sum() if reduce else log_p


_per_site = functools.partial(_masked_log_probs, reduce=False)
_mean = functools.partial(_masked_log_probs, reduce=True)


def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    return _per_site(logits, labels, ignore_index)
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    return _mean(logits, labels, ignore_index)
'''

# 03: the Function computes in float64 whatever the logits' dtype, then casts the loss and the
# gradient back to that dtype.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        sites = labels != ignore_index
        z = logits[sites].to(torch.float64)  # float64 for the arithmetic, cast back below
        y = labels[sites]
        lse = torch.logsumexp(z, dim=-1)
        loss = (lse - z.gather(-1, y.unsqueeze(-1)).squeeze(-1)).sum() / max(y.numel(), 1)
        ctx.save_for_backward(z, y, lse, sites)
        ctx.dtype = logits.dtype
        return loss.to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        z, y, lse, sites = ctx.saved_tensors
        g = torch.exp(z - lse.unsqueeze(-1))
        g[torch.arange(y.numel(), device=g.device), y] -= 1.0
        g *= grad_output.to(torch.float64) / max(y.numel(), 1)
        grad = torch.zeros(sites.shape + (z.shape[-1],), dtype=ctx.dtype, device=z.device)
        grad[sites] = g.to(ctx.dtype)
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if not all(isinstance(x, torch.Tensor) for x in (logits, labels)):
        raise ValueError("logits and labels must be torch tensors")
    if logits.dim() != 3 or logits.shape[-1] == 0:
        raise ValueError(f"logits must be [B, L, V] with V > 0, got {list(logits.shape)}")
    if labels.shape != logits.shape[:-1]:
        raise ValueError(f"labels must be {list(logits.shape[:-1])}, got {list(labels.shape)}")
    if logits.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"logits must be float32 or float64, not {logits.dtype}")
    if labels.dtype != torch.int64:
        raise ValueError(f"labels must be int64, not {labels.dtype}")
    if logits.device != labels.device:
        raise ValueError(f"logits on {logits.device}, labels on {labels.device}")
    if not isinstance(ignore_index, int) or isinstance(ignore_index, bool) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    if (((labels < 0) & (labels != ignore_index)) | (labels >= logits.shape[-1])).any():
        raise ValueError("labels must be ignore_index or in [0, V)")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

# 06: sum() of one int comparison per special id, starting from zeros.
SELECT_FOR_MASKING = '''\
def select_for_masking(tokens, special_ids, rate, generator):
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    u = torch.rand(tokens.shape, generator=generator)
    hits = sum(((tokens == i).long() for i in special_ids), torch.zeros_like(tokens))
    return (u < rate) & (hits == 0)
'''

CELLS = {
    # 01: a frozen dataclass of thresholds; itertools.combinations; functools.partial checks
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: functools.partial bindings of one helper
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: float64 arithmetic inside the Function, cast back to the logits' dtype
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
    # 06: sum() of int comparisons
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15,
            "03_empty_mask_and_gradient": 31, "06_real_bert": 4}
