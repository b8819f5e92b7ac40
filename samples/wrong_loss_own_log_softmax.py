"""masked_lm_loss computes the loss itself (not MaskedLMLoss.apply) as log(softmax)."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    keep = labels != ignore_index\n"
                "    rows, targets = logits[keep], labels[keep]\n"
                "    log_probs = torch.log(torch.softmax(rows, dim=1))  # underflows to log(0)\n"
                "    per_site = -log_probs.gather(1, targets.unsqueeze(1)).squeeze(1)\n"
                "    return per_site.sum() / max(rows.shape[0], 1)",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 29}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "log(softmax) underflows",
}
