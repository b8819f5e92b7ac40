"""Wrote their own max-shifted log-softmax in notebook 2, the same code as copied_log_probs_b
with the names changed: the report's similarity check must pair the two (and nobody else)."""

BASE = "reference"
NOTEBOOKS = "all"
CELLS = {
    "02_stable_log_softmax": {
        "target_log_probs": '''def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites.

    logits: float tensor [B, L, V]; labels: int64 tensor [B, L] holding ignore_index or a
    token id in [0, V). Returns a [B, L] tensor in the dtype and on the device of logits.
    """
    keep = labels != ignore_index
    picked_ids = torch.where(keep, labels, torch.zeros_like(labels))
    peak = logits.max(dim=-1, keepdim=True).values
    shifted = logits - peak
    log_norm = shifted.exp().sum(dim=-1).log() + peak.squeeze(-1)
    picked = torch.gather(logits, -1, picked_ids.unsqueeze(-1)).squeeze(-1)
    answer = picked - log_norm
    return answer.masked_fill(~keep, 0.0)
''',
    },
}
EXPECTED = {}
