"""masked_lm_loss computes the loss itself (not MaskedLMLoss.apply) from exp of the raw logits."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    keep = labels != ignore_index\n"
                "    rows, targets = logits[keep], labels[keep]\n"
                "    log_norm = torch.log(torch.exp(rows).sum(dim=1))  # exp(1e4) overflows\n"
                "    per_site = log_norm - rows.gather(1, targets.unsqueeze(1)).squeeze(1)\n"
                "    return per_site.sum() / max(rows.shape[0], 1)",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 29}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "exp of a raw logit overflows",
}
