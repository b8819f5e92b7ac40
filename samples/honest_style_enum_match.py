"""Correct, with enum and match: an IntEnum of the branches from torch.bucketize, dispatched by a match statement (01), an Enum reduction mode (02), match statements for every check (03)."""  # noqa: E501

BASE = "reference"

# 01: an IntEnum names the three branches; torch.bucketize gives each site its branch; a
# match statement over the enum members writes each branch.
MAKE_MLM_INPUTS = '''\
import enum


class Branch(enum.IntEnum):
    MASK = 0  # u < 0.8
    RANDOM = 1  # 0.8 <= u < 0.9
    KEEP = 2  # u >= 0.9


def _branch_of(draws):
    """Branch code per site: bucketize with right=True puts u == 0.8 in RANDOM, 0.9 in KEEP."""
    edges = torch.tensor([0.8, 0.9], dtype=draws.dtype, device=draws.device)
    return torch.bucketize(draws, edges, right=True)


def _check(tokens, selected, draws, random_ids, mask_token_id, ignore_index):
    named = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    for name, value in named.items():
        match value:
            case torch.Tensor() if value.dim() == 2:
                pass
            case torch.Tensor():
                raise ValueError(f"{name} must be 2-D, got {value.dim()}-D")
            case _:
                raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    for name, value in named.items():
        if value.shape != tokens.shape:
            raise ValueError(f"{name} shape {tuple(value.shape)} != tokens {tuple(tokens.shape)}")
        match name, value.dtype:
            case ("tokens" | "random_ids", torch.int64) | ("selected", torch.bool):
                pass
            case ("draws", torch.float32 | torch.float64):
                pass
            case _:
                raise ValueError(f"{name} may not have dtype {value.dtype}")
        if value.device != tokens.device:
            raise ValueError(f"{name} is on {value.device}, tokens on {tokens.device}")
    match mask_token_id:
        case bool() | float():
            raise ValueError(f"mask_token_id must be an int, got {mask_token_id!r}")
        case int() if mask_token_id >= 0:
            pass
        case _:
            raise ValueError(f"mask_token_id must be an int >= 0, got {mask_token_id!r}")
    match ignore_index:
        case bool():
            raise ValueError("ignore_index may not be a bool")
        case int() if ignore_index < 0:
            pass
        case _:
            raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    if (tokens < 0).any() or (random_ids < 0).any():
        raise ValueError("tokens and random_ids must be >= 0")
    if not torch.isfinite(draws).all() or ((draws < 0) | (draws >= 1)).any():
        raise ValueError("draws must be finite and in [0, 1)")


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    _check(tokens, selected, draws, random_ids, mask_token_id, ignore_index)
    code = _branch_of(draws)
    corrupted = tokens.clone()
    for branch in Branch:
        sites = selected & (code == branch)
        match branch:
            case Branch.MASK:
                corrupted[sites] = mask_token_id
            case Branch.RANDOM:
                corrupted[sites] = random_ids[sites]
            case Branch.KEEP:
                pass  # the original token stays
    labels = torch.where(selected, tokens, ignore_index)
    return corrupted, labels
'''

# 02: one helper with an Enum reduction mode (NONE / MEAN), chosen with a match statement.
TARGET_LOG_PROBS = '''\
import enum


class Reduction(enum.Enum):
    NONE = "none"
    MEAN = "mean"


def _log_probs(logits, labels, ignore_index, reduction=Reduction.NONE):
    keep = labels != ignore_index
    targets = torch.where(keep, labels, 0)
    per_site = logits.gather(-1, targets[..., None])[..., 0] - torch.logsumexp(logits, -1)
    per_site = torch.where(keep, per_site, torch.zeros_like(per_site))
    match reduction:
        case Reduction.NONE:
            return per_site
        case Reduction.MEAN:
            return -per_site.sum() / keep.sum()
        case other:
            raise ValueError(f"unknown reduction {other}")


def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    return _log_probs(logits, labels, ignore_index, Reduction.NONE)
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    return _log_probs(logits, labels, ignore_index, Reduction.MEAN)
'''

# 03: the Function keeps z - logsumexp(z) of the selected rows (log-probabilities computed by
# hand); masked_lm_loss checks every argument with match statements (class, sequence, value
# and guard patterns).
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        selected = labels != ignore_index
        rows, targets = logits[selected], labels[selected]
        log_probs = rows - torch.logsumexp(rows, dim=-1, keepdim=True)  # log softmax, by hand
        nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        count = max(len(targets), 1)
        ctx.save_for_backward(log_probs, targets, selected)
        ctx.count = count
        return nll.sum() / count

    @staticmethod
    def backward(ctx, grad_output):
        log_probs, targets, selected = ctx.saved_tensors
        d_rows = log_probs.exp()
        d_rows[torch.arange(len(targets), device=d_rows.device), targets] -= 1
        d_rows *= grad_output / ctx.count
        d_logits = d_rows.new_zeros(*selected.shape, d_rows.shape[-1])
        d_logits[selected] = d_rows
        return d_logits, None, None
'''

MASKED_LM_LOSS = '''\
def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    match logits, labels:
        case torch.Tensor(), torch.Tensor():
            pass
        case _:
            raise ValueError("logits and labels must both be torch tensors")
    match tuple(logits.shape):
        case (_, _, 0):
            raise ValueError("logits has an empty vocabulary (V == 0)")
        case (B, L, V):
            pass
        case shape:
            raise ValueError(f"logits must be 3-D [B, L, V], got shape {list(shape)}")
    match tuple(labels.shape):
        case (b, l) if (b, l) == (B, L):
            pass
        case shape:
            raise ValueError(f"labels must have shape {[B, L]}, got {list(shape)}")
    match logits.dtype, labels.dtype:
        case (torch.float32 | torch.float64), torch.int64:
            pass
        case dtypes:
            raise ValueError(f"(logits, labels) dtypes must be (float32/64, int64), got {dtypes}")
    if labels.device != logits.device:
        raise ValueError(f"labels are on {labels.device}, logits on {logits.device}")
    match ignore_index:
        case bool():
            raise ValueError("ignore_index may not be a bool")
        case int() if ignore_index < 0:
            pass
        case _:
            raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    outside = (labels != ignore_index) & ((labels < 0) | (labels >= V))
    if outside.any():
        raise ValueError(f"found label {labels[outside][0].item()}, outside [0, {V})")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

CELLS = {
    # 01: IntEnum branches from torch.bucketize, dispatched by match
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: an Enum reduction mode
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: match statements for every check; log-probabilities by hand in the Function
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
