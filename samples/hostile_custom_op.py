"""Wraps torch.log_softmax in a custom operator (torch.library.custom_op), whose body a dispatch
mode does not see: the recorder misses it and the check resting on it passes (15 / 15, its twin
free_saved_log_softmax 13), but the scan notes torch.library: flagged for a look, with the
2 points at stake marked for manual grading."""

TWIN = 'free_saved_log_softmax'

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "def target_log_probs(",
                "@torch.library.custom_op('course::stable_lsm', mutates_args=())\n"
                "def stable_lsm(x: torch.Tensor) -> torch.Tensor:\n"
                "    return torch.log_softmax(x, dim=-1)\n"
                "\n"
                "\n"
                "def _keep_output(ctx, inputs, output):\n"
                "    ctx.save_for_backward(output)\n"
                "\n"
                "\n"
                "def _lsm_backward(ctx, grad):\n"
                "    (out,) = ctx.saved_tensors\n"
                "    return grad - out.exp() * grad.sum(dim=-1, keepdim=True)\n"
                "\n"
                "\n"
                "stable_lsm.register_autograd(_lsm_backward, setup_context=_keep_output)\n"
                "\n"
                "\n"
                "def target_log_probs(",
            ),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = stable_lsm(logits).gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15}
