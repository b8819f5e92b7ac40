"""Correct, class-based: a validator class (01), a strategy pattern (02), ctx.ex / ctx.ev with a dataclass of inputs (03), functools.reduce over operator.or_ (06)."""  # noqa: E501

BASE = "reference"

# 01: a validator class (one rule object per tensor argument) built in the cell.
MAKE_MLM_INPUTS = '''\
class _TensorRule:
    """What one tensor argument must be: a 2-D tensor of one of the allowed dtypes."""

    def __init__(self, name, dtypes):
        self.name = name
        self.dtypes = tuple(dtypes)

    def check(self, value):
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{self.name} must be a torch.Tensor, not {type(value).__name__}")
        if value.ndim != 2:
            raise ValueError(f"{self.name} must be 2-D [B, L], got shape {tuple(value.shape)}")
        if value.dtype not in self.dtypes:
            allowed = " or ".join(str(dtype) for dtype in self.dtypes)
            raise ValueError(f"{self.name} must have dtype {allowed}, got {value.dtype}")


class CorruptionInputValidator:
    """Checks the arguments of make_mlm_inputs: structure first, then the ints, then values."""

    RULES = (
        _TensorRule("tokens", [torch.int64]),
        _TensorRule("selected", [torch.bool]),
        _TensorRule("draws", [torch.float32, torch.float64]),
        _TensorRule("random_ids", [torch.int64]),
    )

    def __init__(self, tokens, selected, draws, random_ids):
        self.tensors = dict(zip([rule.name for rule in self.RULES],
                                [tokens, selected, draws, random_ids]))

    def validate(self, mask_token_id, ignore_index):
        for rule in self.RULES:
            rule.check(self.tensors[rule.name])
        self._same_shape_and_device()
        self._plain_int("mask_token_id", mask_token_id, must_be_negative=False)
        self._plain_int("ignore_index", ignore_index, must_be_negative=True)
        self._values()

    def _same_shape_and_device(self):
        first = self.tensors["tokens"]
        for name, tensor in self.tensors.items():
            if tensor.shape != first.shape:
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, tokens has "
                                 f"{tuple(first.shape)}: all four must be the same [B, L]")
            if tensor.device != first.device:
                raise ValueError(f"{name} is on {tensor.device}, tokens on {first.device}: "
                                 "all four tensors must be on one device")

    @staticmethod
    def _plain_int(name, value, must_be_negative):
        if type(value) is not int:  # bool, float, NumPy and torch integers are all refused
            raise ValueError(f"{name} must be a Python int, got {type(value).__name__} {value!r}")
        if must_be_negative and value >= 0:
            raise ValueError(f"{name} must be a negative int, got {value}")
        if not must_be_negative and value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value}")

    def _values(self):
        for name in ("tokens", "random_ids"):
            if (self.tensors[name] < 0).any():
                raise ValueError(f"{name} must be >= 0, found a negative id")
        draws = self.tensors["draws"]
        if not torch.isfinite(draws).all():
            raise ValueError("draws must be finite, found NaN or inf")
        if ((draws < 0) | (draws >= 1)).any():
            raise ValueError("every draw must lie in [0, 1)")


def make_mlm_inputs(
    tokens: torch.Tensor,
    selected: torch.Tensor,
    draws: torch.Tensor,
    random_ids: torch.Tensor,
    mask_token_id: int,
    ignore_index: int = -100,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    CorruptionInputValidator(tokens, selected, draws, random_ids).validate(mask_token_id,
                                                                          ignore_index)
    mask_sites = selected & (draws < 0.8)
    random_sites = selected & (draws >= 0.8) & (draws < 0.9)
    corrupted = torch.where(random_sites, random_ids, tokens)  # a new tensor
    corrupted.masked_fill_(mask_sites, mask_token_id)
    labels = tokens.masked_fill(~selected, ignore_index)
    return corrupted, labels
'''

# 02: a small strategy pattern (a typing.Protocol, two interchangeable target pickers).
TARGET_LOG_PROBS = '''\
from typing import Protocol


class TargetPicker(Protocol):
    def __call__(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor: ...


def _pick_by_gather(logits, targets):
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _pick_by_take_along_dim(logits, targets):
    return torch.take_along_dim(logits, targets.unsqueeze(-1), dim=-1).squeeze(-1)


PICKERS: dict[str, TargetPicker] = {"gather": _pick_by_gather,
                                    "take_along_dim": _pick_by_take_along_dim}


class SiteLogProbs:
    """log p(target) per site with a chosen way of picking the target logit."""

    def __init__(self, picker: str = "gather"):
        self.pick = PICKERS[picker]

    def __call__(self, logits, labels, ignore_index):
        keep = labels != ignore_index
        targets = labels.masked_fill(~keep, 0)  # index 0 exists in every vocabulary
        log_p = self.pick(logits, targets) - torch.logsumexp(logits, dim=-1)
        return log_p.masked_fill(~keep, 0.0)


_STRATEGY = SiteLogProbs("take_along_dim")


def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    return _STRATEGY(logits, labels, ignore_index)
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites (labels != ignore_index), as a 0-dim tensor.
    """
    per_site = _STRATEGY(logits, labels, ignore_index)
    return per_site.sum().neg() / labels.ne(ignore_index).sum()
'''

# 03: an autograd Function that keeps its tensors as ctx.ex / ctx.ev attributes, and a frozen
# dataclass that validates the inputs in __post_init__.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        B, L, V = logits.shape
        flat = labels.reshape(B * L)
        keep = flat != ignore_index
        rows = logits.reshape(B * L, V)[keep]  # [|S|, V], a copy
        targets = flat[keep]
        top = rows.amax(dim=1, keepdim=True)
        ex = torch.exp(rows - top)  # exp(z - max): never overflows
        ev = ex.sum(dim=1)  # >= 1
        shifted_target = rows.gather(1, targets.unsqueeze(1)).squeeze(1) - top.squeeze(1)
        n = max(int(keep.sum()), 1)
        ctx.ex, ctx.ev = ex, ev
        ctx.sites = keep.nonzero().squeeze(1)
        ctx.targets = targets
        ctx.n = n
        ctx.shape = (B, L, V)
        return (torch.log(ev) - shifted_target).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        probs = ctx.ex / ctx.ev.unsqueeze(1)  # softmax of each selected row (a new tensor)
        probs[torch.arange(probs.shape[0], device=probs.device), ctx.targets] -= 1.0
        B, L, V = ctx.shape
        grad = probs.new_zeros(B * L, V)
        grad[ctx.sites] = probs * (grad_output / ctx.n)
        return grad.view(B, L, V), None, None
'''

MASKED_LM_LOSS = '''\
from dataclasses import dataclass


@dataclass(frozen=True)
class LossInputs:
    """The three arguments of masked_lm_loss, checked once when the object is made."""

    logits: torch.Tensor
    labels: torch.Tensor
    ignore_index: int

    def __post_init__(self):
        logits, labels, ignore_index = self.logits, self.labels, self.ignore_index
        if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
            raise ValueError("logits and labels must be torch tensors")
        if logits.dim() != 3 or logits.shape[-1] == 0:
            raise ValueError(f"logits must be [B, L, V] with V > 0, got {list(logits.shape)}")
        if labels.dim() != 2 or labels.shape != logits.shape[:2]:
            raise ValueError(f"labels must be [B, L] = {list(logits.shape[:2])}, "
                             f"got {list(labels.shape)}")
        if logits.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"logits must be float32 or float64, got {logits.dtype}")
        if labels.dtype != torch.int64:
            raise ValueError(f"labels must be int64, got {labels.dtype}")
        if labels.device != logits.device:
            raise ValueError(f"logits on {logits.device}, labels on {labels.device}")
        if type(ignore_index) is not int or ignore_index >= 0:
            raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
        V = self.vocabulary_size
        if ((labels != ignore_index) & ((labels < 0) | (labels >= V))).any():
            raise ValueError(f"labels must be ignore_index ({ignore_index}) or in [0, {V})")

    @property
    def vocabulary_size(self) -> int:
        return self.logits.shape[-1]


def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    checked = LossInputs(logits, labels, ignore_index)
    return MaskedLMLoss.apply(checked.logits, checked.labels, checked.ignore_index)
'''

# 06: functools.reduce over operator.or_ for the special-token mask.
SELECT_FOR_MASKING = '''\
import functools
import operator


def select_for_masking(tokens, special_ids, rate, generator):
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    u = torch.rand(tokens.shape, generator=generator)
    nothing = torch.zeros(tokens.shape, dtype=torch.bool)
    special = functools.reduce(operator.or_, (tokens == int(i) for i in special_ids), nothing)
    return (u < rate) & ~special
'''

CELLS = {
    # 01: a validator class
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: a strategy pattern (typing.Protocol, a table of pickers)
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: ctx.ex / ctx.ev attributes; a frozen dataclass validating in __post_init__
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
    # 06: functools.reduce(operator.or_, ...)
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15,
            "03_empty_mask_and_gradient": 31, "06_real_bert": 4}
