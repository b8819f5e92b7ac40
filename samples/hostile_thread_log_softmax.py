"""Calls torch.log_softmax / F.cross_entropy in a helper thread, where the recorder (a dispatch
mode: one thread's) sees nothing: the checks resting on it pass (15 / 15 and 31 / 31, its twin
13 and 26), but the scan notes threading: flagged for a look, with the points at stake marked
for manual grading."""

HELPER = (
    "import threading\n"
    "\n"
    "\n"
    "def _elsewhere(function, *args, **kwargs):\n"
    "    box = []\n"
    "    worker = threading.Thread(target=lambda: box.append(function(*args, **kwargs)))\n"
    "    worker.start()\n"
    "    worker.join()\n"
    "    return box[0]\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("def target_log_probs(", HELPER + "def target_log_probs("),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = _elsewhere(torch.log_softmax, logits, dim=-1)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("class MaskedLMLoss(", HELPER + "class MaskedLMLoss("),
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "selected_rows = logits.detach().reshape(-1, V).index_select(0, sites)\n"
                "        return _elsewhere(F.cross_entropy, "
                'selected_rows, targets, reduction="sum") / ctx.count',
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
