"""A first draft that checks each tensor is 2-D but not that all four have the same [B, L]."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("        if tensor.shape != tokens.shape:\n",
             "        if False:  # (the draft never compares shapes)\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "random_ids of shape (2, 1) while tokens is (2, 2)",
}
