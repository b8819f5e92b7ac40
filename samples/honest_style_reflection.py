"""Correct, with everyday reflection: a validator that dispatches by getattr(self, f"_check_{kind}") and compares with operator.attrgetter (01), an inspect.signature self-test (02), a globals() guard and a settings object read through __dict__ (03)."""  # noqa: E501

BASE = "reference"

# 01: a validator class whose checks are methods found by name (getattr(self, "_check_" +
# kind)); operator.attrgetter reads (shape, device) of each tensor for the comparison.
MAKE_MLM_INPUTS = '''\
import operator


class ArgumentChecker:
    """Runs `_check_<kind>` for each (name, value, kind) it is given."""

    DTYPES = {"tokens": (torch.int64,), "selected": (torch.bool,),
              "draws": (torch.float32, torch.float64), "random_ids": (torch.int64,)}
    layout = operator.attrgetter("shape", "device")

    def run(self, *items):
        for name, value, kind in items:
            getattr(self, f"_check_{kind}")(name, value)

    def _check_tensor(self, name, value):
        if not isinstance(value, torch.Tensor) or value.dim() != 2:
            raise ValueError(f"{name} must be a 2-D torch.Tensor")

    def _check_dtype(self, name, value):
        if value.dtype not in self.DTYPES[name]:
            raise ValueError(f"{name} must be {self.DTYPES[name]}, got {value.dtype}")

    def _check_non_negative_int(self, name, value):
        if type(value) is not int or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")

    def _check_negative_int(self, name, value):
        if type(value) is not int or value >= 0:
            raise ValueError(f"{name} must be an int < 0, got {value!r}")

    def same_layout(self, reference, **tensors):
        for name, tensor in tensors.items():
            if self.layout(tensor) != self.layout(reference):
                raise ValueError(f"{name} is {self.layout(tensor)}, tokens "
                                 f"{self.layout(reference)}: same shape and device needed")


def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    checker = ArgumentChecker()
    four = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}
    checker.run(*[(name, value, "tensor") for name, value in four.items()])
    checker.same_layout(tokens, selected=selected, draws=draws, random_ids=random_ids)
    checker.run(*[(name, value, "dtype") for name, value in four.items()])
    checker.run(("mask_token_id", mask_token_id, "non_negative_int"),
                ("ignore_index", ignore_index, "negative_int"))
    if (tokens < 0).any() or (random_ids < 0).any():
        raise ValueError("tokens and random_ids must be >= 0")
    if not torch.isfinite(draws).all() or ((draws < 0) | (draws >= 1)).any():
        raise ValueError("draws must be finite and in [0, 1)")

    corrupted = tokens.clone()
    corrupted[selected & (draws < 0.8)] = mask_token_id
    swap = selected & (draws >= 0.8) & (draws < 0.9)
    corrupted[swap] = random_ids[swap]
    labels = torch.full_like(tokens, ignore_index)
    labels[selected] = tokens[selected]
    return corrupted, labels
'''

# 02: a self-test at the bottom of the cell that reads the default ignore_index from
# inspect.signature and checks one value.
TARGET_LOG_PROBS = '''\
import inspect


def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    mask = labels != ignore_index
    target = logits.gather(-1, torch.where(mask, labels, 0).unsqueeze(-1)).squeeze(-1)
    return torch.where(mask, target - torch.logsumexp(logits, dim=-1), 0.0)


assert inspect.signature(target_log_probs).parameters["ignore_index"].default == -100
assert target_log_probs(torch.zeros(1, 1, 2), torch.tensor([[-100]])).item() == 0.0
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    return -target_log_probs(logits, labels, ignore_index).sum() / (labels != ignore_index).sum()
'''

# 03: masked_lm_loss first makes sure the Function's cell was run ("MaskedLMLoss" in
# globals()); a small settings object is listed through its __dict__ in an error message.
MASKED_LM_LOSS_FUNCTION = '''\
class MaskedLMLoss(torch.autograd.Function):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], hand-written backward."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        use = labels != ignore_index
        rows, gold = logits[use], labels[use]
        lse = torch.logsumexp(rows, dim=1)
        n = max(gold.numel(), 1)
        ctx.save_for_backward(rows, gold, lse, use)
        ctx.n = n
        return (lse - rows.gather(1, gold[:, None]).squeeze(1)).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        rows, gold, lse, use = ctx.saved_tensors
        grad_rows = torch.exp(rows - lse[:, None])
        grad_rows[torch.arange(gold.numel(), device=rows.device), gold] -= 1.0
        grad = rows.new_zeros((*use.shape, rows.shape[1]))
        grad[use] = grad_rows * (grad_output / ctx.n)
        return grad, None, None
'''

MASKED_LM_LOSS = '''\
class LossSettings:
    def __init__(self):
        self.logit_dtypes = (torch.float32, torch.float64)
        self.label_dtype = torch.int64

    def describe(self):
        return ", ".join(f"{key}={value}" for key, value in self.__dict__.items())


SETTINGS = LossSettings()


def masked_lm_loss(logits, labels, ignore_index=-100):
    """Mean over selected sites of logsumexp(Z[b, t]) - Z[b, t, X[b, t]], as a 0-dim tensor."""
    if "MaskedLMLoss" not in globals():
        raise NameError("run the MaskedLMLoss cell above first")
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise ValueError("logits and labels must be tensors")
    if logits.dim() != 3 or logits.shape[-1] == 0:
        raise ValueError(f"logits must be [B, L, V] with V > 0, got {list(logits.shape)}")
    if labels.dim() != 2 or labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must be [B, L] = {list(logits.shape[:2])}")
    if logits.dtype not in SETTINGS.logit_dtypes or labels.dtype != SETTINGS.label_dtype:
        raise ValueError(f"wrong dtypes ({logits.dtype}, {labels.dtype}); {SETTINGS.describe()}")
    if logits.device != labels.device:
        raise ValueError("logits and labels must be on one device")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) or ignore_index >= 0:
        raise ValueError(f"ignore_index must be a negative int, got {ignore_index!r}")
    if ((labels != ignore_index) & ((labels < 0) | (labels >= logits.shape[-1]))).any():
        raise ValueError("labels must be ignore_index or in [0, V)")
    return MaskedLMLoss.apply(logits, labels, ignore_index)
'''

CELLS = {
    # 01: getattr(self, f"_check_{kind}") dispatch; operator.attrgetter("shape", "device")
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: an inspect.signature self-test
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 03: a globals() guard; a settings object listed through its __dict__
    "03_empty_mask_and_gradient": {"masked_lm_loss_function": MASKED_LM_LOSS_FUNCTION,
                                   "masked_lm_loss": MASKED_LM_LOSS},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
