"""The hand-written backward forgets to divide by |S|: the gradient is |S| times too large."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("grad_rows *= grad_output / ctx.count", "grad_rows *= grad_output"),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 25}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "times too large",
}
