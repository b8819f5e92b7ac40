"""Copied copied_log_probs_a's notebook 2 answer and renamed its variables (a copied pair)."""

BASE = "reference"
NOTEBOOKS = "all"
CELLS = {
    "02_stable_log_softmax": {
        "target_log_probs": '''def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites.

    logits: float tensor [B, L, V]; labels: int64 tensor [B, L] holding ignore_index or a
    token id in [0, V). Returns a [B, L] tensor in the dtype and on the device of logits.
    """
    chosen = labels != ignore_index
    target_ids = torch.where(chosen, labels, torch.zeros_like(labels))
    row_max = logits.max(dim=-1, keepdim=True).values
    centred = logits - row_max
    log_z = centred.exp().sum(dim=-1).log() + row_max.squeeze(-1)
    target_logit = torch.gather(logits, -1, target_ids.unsqueeze(-1)).squeeze(-1)
    result = target_logit - log_z
    return result.masked_fill(~chosen, 0.0)
''',
    },
}
EXPECTED = {}
