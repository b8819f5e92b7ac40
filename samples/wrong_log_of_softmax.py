"""Takes log(softmax(z)): a target far below the maximum underflows to log(0) = -inf."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = torch.log(torch.softmax(logits, dim=-1))"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "probs = exps / sums.unsqueeze(1)  # softmax\n"
                "        log_probs = torch.log(probs)\n"
                "        return -log_probs.gather(1, targets.unsqueeze(1)).sum() / ctx.count",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 12, "03_empty_mask_and_gradient": 27}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "log(0) = -inf",
    "03_empty_mask_and_gradient": "log(softmax) underflows",
}
