"""Averages per-sequence means, so a site in a sparsely selected sequence weighs more."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [
            (
                "    num_selected = (labels != ignore_index).sum()\n"
                "    return -target_log_probs(logits, labels, ignore_index).sum() / num_selected",
                "    log_probs = target_log_probs(logits, labels, ignore_index)\n"
                "    per_sequence_sum = -log_probs.sum(dim=1)\n"
                "    per_sequence_count = (labels != ignore_index).sum(dim=1).clamp(min=1)\n"
                "    return (per_sequence_sum / per_sequence_count).mean()",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "per_site = torch.log(sums) - shifted_targets\n"
                "        B, L = labels.shape\n"
                "        sequence = sites // L\n"
                "        totals = per_site.new_zeros(B).index_add_(0, sequence, per_site)\n"
                "        counts = torch.bincount(sequence, minlength=B).clamp(min=1)\n"
                "        return (totals / counts).mean()",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 13, "03_empty_mask_and_gradient": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "averages the per-sequence means",
    "03_empty_mask_and_gradient": "averages the per-sequence means",
}
