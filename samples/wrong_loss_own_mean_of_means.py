"""masked_lm_loss computes the loss itself (not MaskedLMLoss.apply) as a mean of sequence means."""

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
                "    sequence = keep.nonzero()[:, 0]\n"
                "    totals = per_site.new_zeros(len(labels)).index_add(0, sequence, per_site)\n"
                "    counts = keep.sum(dim=1)\n"
                "    has_sites = counts > 0\n"
                "    means = totals[has_sites] / counts[has_sites]\n"
                "    return means.sum() / max(int(has_sites.sum()), 1)  # sequences weigh the same",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 27}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "averages the per-sequence means",
}
