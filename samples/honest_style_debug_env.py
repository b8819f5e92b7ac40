"""Correct, chatty: an os.environ / pathlib debug flag with print() and display() of intermediate values and a namedtuple result (01), display() in a self-test at the bottom (02), a gradcheck self-test with contextlib.suppress (03), torch.stack of the comparisons (06)."""  # noqa: E501

BASE = "reference"

# 01: a debug flag from os.environ or a marker file (pathlib), on by default; print() of the
# branch counts and display() of a small summary on every call; a collections.namedtuple
# converted to a plain tuple on return.
MAKE_MLM_INPUTS = '''\
import os
from collections import namedtuple
from pathlib import Path

DEBUG = os.environ.get("MLM_DEBUG", "1") != "0" or Path("mlm_debug.flag").exists()
Corruption = namedtuple("Corruption", ["corrupted", "labels"])


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    arguments = [("tokens", tokens, [torch.int64]), ("selected", selected, [torch.bool]),
                 ("draws", draws, [torch.float32, torch.float64]),
                 ("random_ids", random_ids, [torch.int64])]
    for name, value, _ in arguments:
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} is a {type(value).__name__}, not a torch.Tensor")
        if value.dim() != 2:
            raise ValueError(f"{name} is {value.dim()}-D; expected [B, L]")
    for name, value, dtypes in arguments:
        if tuple(value.shape) != tuple(tokens.shape):
            raise ValueError(f"{name} is {tuple(value.shape)}; tokens is {tuple(tokens.shape)}")
        if value.dtype not in dtypes:
            raise ValueError(f"{name} is {value.dtype}; expected one of {dtypes}")
        if value.device != tokens.device:
            raise ValueError(f"{name} is on {value.device}; tokens on {tokens.device}")
    if type(mask_token_id) != int or mask_token_id < 0:
        raise ValueError(f"mask_token_id should be an int >= 0, got {mask_token_id!r}")
    if type(ignore_index) != int or ignore_index >= 0:
        raise ValueError(f"ignore_index should be an int < 0, got {ignore_index!r}")
    if (tokens < 0).any() or (random_ids < 0).any():
        raise ValueError("negative ids in tokens or random_ids")
    if not torch.isfinite(draws).all() or (draws < 0).any() or (draws >= 1).any():
        raise ValueError("draws must be finite and in [0, 1)")

    mask_here = selected & (draws < 0.8)
    random_here = selected & (draws >= 0.8) & (draws < 0.9)
    if DEBUG:
        print(f"[MASK] {int(mask_here.sum())}, random {int(random_here.sum())}, "
              f"kept {int(selected.sum() - mask_here.sum() - random_here.sum())}")
        display({"shape": tuple(tokens.shape), "selected": int(selected.sum())})
    corrupted = tokens.clone()
    corrupted[mask_here] = mask_token_id
    corrupted[random_here] = random_ids[random_here]
    labels = torch.where(selected, tokens, torch.tensor(ignore_index, device=tokens.device))
    return tuple(Corruption(corrupted, labels))
'''

# 02: the cell shows its result on a tiny example with display() and checks it with asserts
# (walrus operators) at the bottom of the cell.
TARGET_LOG_PROBS = '''\
def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    is_target = labels != ignore_index
    picked = logits.gather(-1, labels.masked_fill(~is_target, 0).unsqueeze(-1)).squeeze(-1)
    log_p = picked - torch.logsumexp(logits, dim=-1)
    return log_p.masked_fill(~is_target, 0.0)


_demo_logits = torch.tensor([[[2.0, 0.0, 1.0], [0.5, 0.5, 3.0]]])
_demo_labels = torch.tensor([[2, -100]])
display(_demo_logits, _demo_labels, target_log_probs(_demo_logits, _demo_labels))
assert (_lp := target_log_probs(_demo_logits, _demo_labels))[0, 1].item() == 0.0, _lp
assert abs(_lp[0, 0].item() - (1.0 - math.log(math.exp(2) + 1 + math.e))) < 1e-6, _lp
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    counted = (labels != ignore_index).sum()
    return (-target_log_probs(logits, labels, ignore_index)).sum() / counted


display(masked_mean_nll(_demo_logits, _demo_labels))
assert abs((_m := masked_mean_nll(_demo_logits, _demo_labels)).item() + _lp[0, 0].item()) < 1e-6
'''

# 03: a self-test at the bottom of the masked_lm_loss cell: gradcheck, a comparison with
# F.cross_entropy, and contextlib.suppress(ValueError) around calls that must raise.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        is_site = labels != ignore_index
        z = logits[is_site]
        y = labels[is_site]
        log_z = torch.logsumexp(z, dim=-1)
        probs = torch.exp(z - log_z.unsqueeze(-1))
        ctx.save_for_backward(probs, y, is_site)
        total = (log_z - z.gather(-1, y.unsqueeze(-1)).squeeze(-1)).sum()
        return total / max(y.numel(), 1)

    @staticmethod
    def backward(ctx, grad_output):
        probs, y, is_site = ctx.saved_tensors
        d = probs.clone()
        d[torch.arange(y.numel(), device=d.device), y] -= 1.0
        grad = torch.zeros(*is_site.shape, probs.shape[-1], dtype=probs.dtype,
                           device=probs.device)
        grad[is_site] = d * (grad_output / max(y.numel(), 1))
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
import contextlib


def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if not (torch.is_tensor(logits) and torch.is_tensor(labels)):
        raise ValueError("logits and labels must be tensors")
    if logits.dim() != 3 or 0 in logits.shape[2:]:
        raise ValueError(f"logits must be [B, L, V], V > 0; got {tuple(logits.shape)}")
    if labels.dim() != 2 or labels.shape[0] != logits.shape[0] or \\
            labels.shape[1] != logits.shape[1]:
        raise ValueError(f"labels must be [B, L]; got {tuple(labels.shape)}")
    if logits.dtype not in {torch.float32, torch.float64} or labels.dtype != torch.int64:
        raise ValueError(f"bad dtypes: logits {logits.dtype}, labels {labels.dtype}")
    if labels.device != logits.device:
        raise ValueError("logits and labels are on different devices")
    if type(ignore_index) != int or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    targets = labels[labels != ignore_index]
    if targets.numel() and (targets.min() < 0 or targets.max() >= logits.shape[-1]):
        raise ValueError("labels must be ignore_index or in [0, V)")
    return MaskedLMLoss.apply(logits, labels, ignore_index)


# --- self-test ---
_z = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0),
                 requires_grad=True)
_y = torch.tensor([[1, -100, 4], [0, 0, -100]])
assert torch.autograd.gradcheck(lambda z: masked_lm_loss(z, _y), (_z,))
assert torch.allclose(masked_lm_loss(_z, _y), F.cross_entropy(_z.reshape(-1, 5), _y.reshape(-1)))
for _bad in (0, True, -100.0):
    with contextlib.suppress(ValueError):
        masked_lm_loss(_z, _y, ignore_index=_bad)
        raise AssertionError(f"ignore_index={_bad!r} was accepted")
print("self-test passed")
'''

# 06: torch.stack of one comparison per special id, with its own branch for no ids at all.
SELECT_FOR_MASKING = '''\
def select_for_masking(tokens, special_ids, rate, generator):
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    draws = torch.rand(tokens.shape, generator=generator)
    ids = list(special_ids)
    if ids:
        special = torch.stack([tokens == i for i in ids]).any(dim=0)
    else:
        special = torch.zeros_like(tokens, dtype=torch.bool)
    return torch.logical_and(draws < rate, torch.logical_not(special))
'''

CELLS = {
    # 01: os.environ / pathlib debug flag, print() and display() of intermediates, namedtuple
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: display() and walrus asserts in a self-test at the bottom of the cells
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: a gradcheck self-test with contextlib.suppress(ValueError)
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
    # 06: torch.stack of the comparisons, an explicit branch for no special ids
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15,
            "03_empty_mask_and_gradient": 31, "06_real_bert": 4}
