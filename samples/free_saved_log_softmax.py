"""Saves torch.log_softmax in a variable at definition time and builds the loss from it.

A correct library call is graded as what it returns: full marks (no check can tell it from a
loss written by hand); Validate's visible check tells the student and the scan notes it for the TA.
"""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "def target_log_probs(logits, labels, ignore_index=-100):",
                "_log_softmax = torch.log_softmax  # saved before any test could switch it off\n"
                "\n\ndef target_log_probs(logits, labels, ignore_index=-100):",
            ),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = _log_softmax(logits, dim=-1)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "class MaskedLMLoss(torch.autograd.Function):",
                "_log_softmax = torch.log_softmax  # saved before any test could switch it off\n"
                "\n\nclass MaskedLMLoss(torch.autograd.Function):",
            ),
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "selected_rows = logits.reshape(-1, V).index_select(0, sites)\n"
                "        log_probs = _log_softmax(selected_rows, dim=1)\n"
                "        return -log_probs.gather(1, targets.unsqueeze(1)).sum() / ctx.count",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
