"""Divides the summed loss by every token (B*L) instead of by the number of selected sites."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [
            ("num_selected = (labels != ignore_index).sum()", "num_selected = labels.numel()"),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            (
                "ctx.count = max(sites.numel(), 1)  # an empty S gives 0 / 1 = 0, never 0 / 0",
                "ctx.count = labels.numel()  # every token",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 13, "03_empty_mask_and_gradient": 19}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "divides by every site",
    "03_empty_mask_and_gradient": "divides by every site",
}
