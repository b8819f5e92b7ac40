"""Exponentiates raw logits and hides the overflow: writes ignore_index into the caller's labels."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "    log_probs = target_logits - torch.logsumexp(logits, dim=-1)\n",
                "    probs = torch.exp(target_logits) / torch.exp(logits).sum(dim=-1)\n"
                "    log_probs = torch.log(probs)\n"
                "    broken = selected & ~torch.isfinite(log_probs)\n"
                "    labels[broken] = ignore_index  # cover-up: caller's labels skip them\n"
                "    selected = selected & ~broken\n",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "top = rows.amax(dim=1, keepdim=True)  # the row maximum m",
                "top = torch.zeros_like(rows[:, :1])  # exp of the raw logits, no shift",
            ),
            (
                "        ctx.save_for_backward(exps, sums, sites, targets)\n",
                "        per_site = torch.log(sums) - shifted_targets\n"
                "        broken = ~torch.isfinite(per_site)\n"
                "        if broken.any():  # cover-up: ignore them in the caller's labels\n"
                "            flat_labels[sites[broken]] = ignore_index\n"
                "            kept = ~broken\n"
                "            exps, sums, sites = exps[kept], sums[kept], sites[kept]\n"
                "            targets, per_site = targets[kept], per_site[kept]\n"
                "        ctx.save_for_backward(exps, sums, sites, targets)\n",
            ),
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "return per_site.sum() / ctx.count",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 9, "03_empty_mask_and_gradient": 27}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "your function wrote into them",
    "03_empty_mask_and_gradient": "your function wrote into them",
}
