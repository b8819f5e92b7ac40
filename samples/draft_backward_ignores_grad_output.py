"""A first draft of the backward that never multiplies by grad_output (right for backward())."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("        grad_rows *= grad_output / ctx.count\n", "        grad_rows /= ctx.count\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 25}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "ignores grad_output",
}
