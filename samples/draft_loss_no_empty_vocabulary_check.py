"""A first draft of the loss that checks the logits are 3-D but not that V > 0."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            ("    if logits.dim() != 3 or logits.shape[-1] == 0:\n", "    if logits.dim() != 3:\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 30}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "V == 0",
}
