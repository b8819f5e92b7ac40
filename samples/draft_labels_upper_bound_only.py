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
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "a label -5 with ignore_index -100",
}
