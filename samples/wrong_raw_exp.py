"""Exponentiates raw logits: exp(1e4) overflows to inf and exp(-200) underflows to 0."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = torch.log(torch.exp(target_logits) / torch.exp(logits).sum(dim=-1))",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "top = rows.amax(dim=1, keepdim=True)  # the row maximum m",
                "top = torch.zeros_like(rows[:, :1])  # exp of the raw logits, no shift",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 9, "03_empty_mask_and_gradient": 27}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "exp of a raw logit overflows",
    "03_empty_mask_and_gradient": "exp of a raw logit overflows",
}
