"""Calls F.cross_entropy inside the answers instead of building the loss from logsumexp.

A correct library call is graded as what it returns: full marks (no check can tell it from a
loss written by hand); Validate's visible check tells the student and the scan notes it for the TA.
"""

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
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
