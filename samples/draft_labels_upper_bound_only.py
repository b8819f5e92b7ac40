"""A first draft of the loss that rejects labels >= V but not a stray negative label."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            ("    bad = (labels != ignore_index) & ((labels < 0) | (labels >= V))\n",
             "    bad = labels >= V\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 29}
