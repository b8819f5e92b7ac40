"""A first draft of the loss that checks ignore_index < 0 but not that it is an int."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            ("    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int)"
             " or ignore_index >= 0:\n",
             "    if ignore_index >= 0:\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 30}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "ignore_index=-100.0",
}
