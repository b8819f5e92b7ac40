"""wrong_detached_zero made to look connected: a zero with a requires_grad leaf of its own, and
torch.autograd.grad replaced so that unused inputs get zeros. The worker calls the autograd it
took before any student code ran, so the zero is still detached: 26 / 31, as the twin (found by
the scan's first red team)."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "def masked_lm_loss(",
                "_autograd_grad = torch.autograd.grad\n"
                "\n"
                "\n"
                "def _grad_or_zeros(outputs, inputs, grad_outputs=None, **kwargs):\n"
                "    got = _autograd_grad(outputs, inputs, grad_outputs, **kwargs)\n"
                "    return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(got, inputs))\n"  # noqa: E501
                "\n"
                "\n"
                "torch.autograd.grad = _grad_or_zeros\n"
                "\n"
                "\n"
                "def masked_lm_loss(",
            ),
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    if not (labels != ignore_index).any():\n"
                "        return torch.zeros((), dtype=logits.dtype, requires_grad=True) * 1\n"
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 26}
