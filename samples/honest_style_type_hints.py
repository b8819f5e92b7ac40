"""Correct and typed throughout: __future__ annotations, Final, TypeAlias and a NamedTuple returned as a tuple (01), typed helpers with doctest-like docstrings (02), a dense weighted loss with no row selection (03)."""  # noqa: E501

BASE = "reference"

# 01: from __future__ import annotations, Final constants, a TypeAlias, keyword-only typed
# helpers, a typing.NamedTuple converted to a plain tuple on return.
MAKE_MLM_INPUTS = '''\
from __future__ import annotations

from typing import Final, NamedTuple, TypeAlias

Tensor: TypeAlias = torch.Tensor

MASK_BELOW: Final[float] = 0.8
RANDOM_BELOW: Final[float] = 0.9
ALLOWED_DTYPES: Final[dict[str, tuple[torch.dtype, ...]]] = {
    "tokens": (torch.int64,),
    "selected": (torch.bool,),
    "draws": (torch.float32, torch.float64),
    "random_ids": (torch.int64,),
}


class MLMInputs(NamedTuple):
    corrupted: Tensor
    labels: Tensor


def _require_int(name: str, value: object, *, negative: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a Python int, got {type(value).__name__}")
    if negative != (value < 0):
        raise ValueError(f"{name} must be {'negative' if negative else '>= 0'}, got {value}")
    return value


def _require_tensors(named: dict[str, object]) -> dict[str, Tensor]:
    for name, value in named.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(value.shape)}")
    tensors: dict[str, Tensor] = dict(named)  # type: ignore[arg-type]
    first: Tensor = tensors["tokens"]
    for name, tensor in tensors.items():
        if tensor.shape != first.shape:
            raise ValueError(f"{name}: shape {tuple(tensor.shape)} != {tuple(first.shape)}")
        if tensor.dtype not in ALLOWED_DTYPES[name]:
            raise ValueError(f"{name}: dtype {tensor.dtype} not in {ALLOWED_DTYPES[name]}")
        if tensor.device != first.device:
            raise ValueError(f"{name}: device {tensor.device} != {first.device}")
    return tensors


def make_mlm_inputs(
    tokens: Tensor,
    selected: Tensor,
    draws: Tensor,
    random_ids: Tensor,
    mask_token_id: int,
    ignore_index: int = -100,
) -> tuple[Tensor, Tensor]:
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    _require_tensors({"tokens": tokens, "selected": selected, "draws": draws,
                      "random_ids": random_ids})
    mask_id: int = _require_int("mask_token_id", mask_token_id, negative=False)
    ignore: int = _require_int("ignore_index", ignore_index, negative=True)
    if bool((tokens < 0).any()) or bool((random_ids < 0).any()):
        raise ValueError("tokens and random_ids must be >= 0")
    finite: bool = bool(torch.isfinite(draws).all())
    if not finite or bool(((draws < 0) | (draws >= 1)).any()):
        raise ValueError("draws must be finite and lie in [0, 1)")

    to_mask: Tensor = selected & (draws < MASK_BELOW)
    to_random: Tensor = selected & (draws >= MASK_BELOW) & (draws < RANDOM_BELOW)
    corrupted: Tensor = tokens.clone()
    corrupted[to_random] = random_ids[to_random]
    corrupted[to_mask] = mask_id
    labels: Tensor = torch.full_like(tokens, ignore)
    labels[selected] = tokens[selected]
    return tuple(MLMInputs(corrupted=corrupted, labels=labels))
'''

# 02: type hints on every name, docstrings with doctest-style examples (never run).
TARGET_LOG_PROBS = '''\
from __future__ import annotations


def _safe_targets(labels: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(keep, targets): the selected sites, and the labels with ignored sites sent to index 0.

    >>> keep, targets = _safe_targets(torch.tensor([[3, -100]]), -100)
    >>> keep.tolist(), targets.tolist()
    ([[True, False]], [[3, 0]])
    """
    keep: torch.Tensor = labels != ignore_index
    return keep, torch.where(keep, labels, torch.zeros_like(labels))


def target_log_probs(logits: torch.Tensor, labels: torch.Tensor,
                     ignore_index: int = -100) -> torch.Tensor:
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites.

    >>> target_log_probs(torch.zeros(1, 2, 4), torch.tensor([[1, -100]]))
    tensor([[-1.3863,  0.0000]])
    """
    keep, targets = _safe_targets(labels, ignore_index)
    picked: torch.Tensor = torch.take_along_dim(logits, targets.unsqueeze(-1), dim=-1)
    log_p: torch.Tensor = picked.squeeze(-1) - torch.logsumexp(logits, dim=-1)
    return torch.where(keep, log_p, torch.zeros_like(log_p))
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits: torch.Tensor, labels: torch.Tensor,
                    ignore_index: int = -100) -> torch.Tensor:
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor.

    >>> masked_mean_nll(torch.zeros(1, 2, 4), torch.tensor([[1, -100]]))
    tensor(1.3863)
    """
    count: torch.Tensor = (labels != ignore_index).sum()
    total: torch.Tensor = target_log_probs(logits, labels, ignore_index).sum()
    return -total / count
'''

# 03: a dense loss: logsumexp over every row, weights 1/|S| at selected sites and 0 elsewhere
# (no boolean selection of rows); typed signatures.
MASKED_LM_LOSS_FUNCTION = '''\
from __future__ import annotations

from typing import Any


class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, labels: torch.Tensor,
                ignore_index: int) -> torch.Tensor:
        keep: torch.Tensor = labels != ignore_index
        count: torch.Tensor = keep.sum().clamp(min=1)  # |S|, and 1 when S is empty
        weights: torch.Tensor = keep.to(logits.dtype) / count  # 1/|S| or 0 per site
        safe: torch.Tensor = labels.masked_fill(~keep, 0)
        lse: torch.Tensor = torch.logsumexp(logits, dim=-1)  # [B, L]
        target: torch.Tensor = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
        ctx.save_for_backward(logits, safe, weights, lse)
        return (weights * (lse - target)).sum()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        logits, safe, weights, lse = ctx.saved_tensors
        probs: torch.Tensor = torch.exp(logits - lse.unsqueeze(-1))  # softmax of every row
        onehot: torch.Tensor = torch.zeros_like(probs).scatter_(-1, safe.unsqueeze(-1), 1.0)
        grad: torch.Tensor = (probs - onehot) * (weights * grad_output).unsqueeze(-1)
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
from __future__ import annotations

from typing import Final

FLOAT_DTYPES: Final[frozenset[torch.dtype]] = frozenset({torch.float32, torch.float64})


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor,
                   ignore_index: int = -100) -> torch.Tensor:
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if not (isinstance(logits, torch.Tensor) and isinstance(labels, torch.Tensor)):
        raise ValueError("logits and labels must be torch tensors")
    if logits.dim() != 3 or logits.shape[2] == 0:
        raise ValueError(f"logits must be [B, L, V] with V > 0, got {list(logits.shape)}")
    if labels.dim() != 2 or labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must be {list(logits.shape[:2])}, got {list(labels.shape)}")
    if logits.dtype not in FLOAT_DTYPES:
        raise ValueError(f"logits must be float32 or float64, got {logits.dtype}")
    if labels.dtype is not torch.int64:
        raise ValueError(f"labels must be int64, got {labels.dtype}")
    if labels.device != logits.device:
        raise ValueError(f"labels on {labels.device}, logits on {logits.device}")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    vocabulary: int = logits.shape[2]
    out_of_range: torch.Tensor = (labels != ignore_index) & ((labels < 0) | (labels >= vocabulary))
    if bool(out_of_range.any()):
        raise ValueError(f"labels must be ignore_index or in [0, {vocabulary})")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

CELLS = {
    # 01: __future__ annotations, Final, TypeAlias, NamedTuple -> tuple
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: typed helpers, doctest-like docstring examples (not run)
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: a dense weighted loss over every row (no row selection), typed
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
