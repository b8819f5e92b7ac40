"""Honest twin of the hostile_rt4 recorder samples: the same `_hidden` helper, which just calls the
library log-softmax / cross-entropy it is handed (13 / 15 and 30 / 31: the rule's check fails,
as it should)."""

HELPER = (
    "def _hidden(function, *args, **kwargs):\n"
    "    return function(*args, **kwargs)\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("def target_log_probs(", HELPER + "def target_log_probs("),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = _hidden(torch.log_softmax, logits, dim=-1)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("class MaskedLMLoss(", HELPER + "class MaskedLMLoss("),
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "selected_rows = logits.detach().reshape(-1, V).index_select(0, sites)\n"
                "        return _hidden(F.cross_entropy, "
                'selected_rows, targets, reduction="sum") / ctx.count',
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 13, "03_empty_mask_and_gradient": 30}
