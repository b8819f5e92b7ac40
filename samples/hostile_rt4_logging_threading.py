"""Runs the library log-softmax / cross-entropy in a helper thread (the recorder is one thread's
dispatch mode), reaching the threading module as an attribute of an ordinary one:
`logging.threading.Thread`.
Now: a dotted path through an ordinary module to threading is noted: flagged for a look (15 / 15
and 31 / 31; twin 13 and 30)."""

TWIN = "twin_rt4_library_loss"
HELPER = (
    "import logging\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    box = []\n"
    "    helper = logging.threading.Thread(target=lambda: box.append(function(*args, **kwargs)))\n"
    "    helper.start()\n"
    "    helper.join()\n"
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
                "log_probs = _hidden(torch.log_softmax, logits, dim=-1)"
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
                "        return _hidden(F.cross_entropy, "
                'selected_rows, targets, reduction="sum") / ctx.count',
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
