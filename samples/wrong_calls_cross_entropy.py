"""Calls F.cross_entropy inside the answers instead of building the loss from logsumexp."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = -F.cross_entropy("
                'logits.transpose(1, 2), safe_labels, reduction="none")',
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "selected_rows = logits.reshape(-1, V).index_select(0, sites)\n"
                "        return F.cross_entropy("
                'selected_rows, targets, reduction="sum") / ctx.count',
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 13, "03_empty_mask_and_gradient": 30}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "ran aten::_log_softmax",
    "03_empty_mask_and_gradient": "ran aten::_log_softmax",
}
