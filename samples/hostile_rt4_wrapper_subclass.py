"""Hides the library log-softmax / cross-entropy inside a `__torch_dispatch__` wrapper subclass
(only without grad, as the recorded calls run; with grad it calls directly): the recorder sees
only the outer `aten::neg`, what the subclass runs while handling it runs with the dispatch
modes stashed.
Now: the worker says when a tensor subclass dispatched an operator itself, and the scan notes
`__torch_dispatch__` and `_make_wrapper_subclass`: flagged for a look (15 / 15 and 31 / 31; twin
13 and 30)."""

TWIN = "twin_rt4_library_loss"
HELPER = (
    "class _Deferred(torch.Tensor):\n"
    "    \"\"\"A tensor that does its work when the first operator touches it.\"\"\"\n"
    "\n"
    "    @staticmethod\n"
    "    def __new__(cls, work, like):\n"
    "        box = cls._make_wrapper_subclass(cls, like.shape, dtype=like.dtype, device=like.device)\n"  # noqa: E501
    "        box.work = work\n"
    "        return box\n"
    "\n"
    "    @classmethod\n"
    "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
    "        return args[0].work()\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):\n"  # noqa: E501
    "        return function(*args, **kwargs)\n"
    "    like = next(a for a in args if isinstance(a, torch.Tensor))\n"
    "    return torch.neg(_Deferred(lambda: function(*args, **kwargs), like))\n"
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
