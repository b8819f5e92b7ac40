"""Divides by |S| even when it is 0, so a batch with no selected site gives a nan loss."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "ctx.count = max(sites.numel(), 1)  # an empty S gives 0 / 1 = 0, never 0 / 0",
                "ctx.count = sites.numel()",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 26}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "the contract's divisor is never 0",
}
