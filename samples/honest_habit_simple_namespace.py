"""Correct: the two thresholds kept in a `types.SimpleNamespace`: full marks, no note."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", "from types import SimpleNamespace\n\n"
             "RULE = SimpleNamespace(mask_below=0.8, random_below=0.9)\n\n\n"
             "def make_mlm_inputs("),
            ("to_mask = selected & (draws < 0.8)",
             "to_mask = selected & (draws < RULE.mask_below)"),
            ("(draws >= 0.8) & (draws < 0.9)",
             "(draws >= RULE.mask_below) & (draws < RULE.random_below)"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
