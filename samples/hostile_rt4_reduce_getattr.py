"""Fetches torch._C._DisableTorchDispatch with `functools.reduce(getattr, ("_C",
"_DisableTorchDispatch"), torch)` (getattr handed over as a value, the private names as plain
strings) and runs the library losses under it.
Now: getattr handed over as a value is noted: flagged for a look (15 / 15 and 31 / 31; twin 13
and 30)."""

TWIN = "twin_rt4_library_loss"
HELPER = (
    "import functools\n"
    "\n"
    "_quiet = functools.reduce(getattr, (\"_C\", \"_DisableTorchDispatch\"), torch)\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    with _quiet():\n"
    "        return function(*args, **kwargs)\n"
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
