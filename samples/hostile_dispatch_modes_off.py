"""Runs torch.log_softmax with the dispatch modes switched off (torch.utils._python_dispatch.
_disable_current_modes), touching nothing of the grader's own files: the recorder sees nothing
(15 / 15, its honest twin free_saved_log_softmax 13), but the scan does: flagged for a look,
with the 2 points at stake marked for manual grading."""

TWIN = "free_saved_log_softmax"
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "def target_log_probs(logits, labels, ignore_index=-100):",
                "from torch.utils._python_dispatch import _disable_current_modes\n"
                "\n\ndef target_log_probs(logits, labels, ignore_index=-100):",
            ),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "with _disable_current_modes():\n"
                "        log_probs = torch.log_softmax(logits, dim=-1)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15}
