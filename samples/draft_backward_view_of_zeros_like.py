"""A first draft of the backward that makes its gradient with zeros_like(logits) and flattens it
with view: right for contiguous logits, a RuntimeError for a transposed view (zeros_like keeps
its strides). A learner's draft scored 31/31 before B1 ran the backward on transposed logits."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("        ctx.logits_shape = logits.shape\n",
             "        ctx.logits_shape = logits.shape\n"
             "        ctx.zeros = torch.zeros_like(logits)\n"),
            ("        grad = exps.new_zeros(B * L, V)  # the dense gradient, written once\n",
             "        grad = ctx.zeros.view(B * L, V)\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 29}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "in the backward too",
}
