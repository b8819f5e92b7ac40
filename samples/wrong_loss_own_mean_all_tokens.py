"""masked_lm_loss computes the loss itself (not MaskedLMLoss.apply) and divides by every token."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    keep = labels != ignore_index\n"
                "    rows, targets = logits[keep], labels[keep]\n"
                "    picked = rows.gather(1, targets.unsqueeze(1)).squeeze(1)\n"
                "    per_site = torch.logsumexp(rows, dim=1) - picked\n"
                "    return per_site.sum() / max(labels.numel(), 1)  # every token, not |S|",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 27}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "divides by every site",
}
