"""Calls the library loss under another name: torch.ops.aten._log_softmax, cross_entropy_loss."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = torch.ops.aten._log_softmax(logits, -1, False)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "count = max(int((labels != ignore_index).sum()), 1)\n"
                "    summed = torch.ops.aten.cross_entropy_loss(  # reduction 2: the sum\n"
                "        logits.reshape(-1, V), labels.reshape(-1), None, 2, ignore_index)\n"
                "    return summed / count",
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
