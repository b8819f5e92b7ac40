"""Correct: the rule as a small class whose `__repr__` prints `vars(self)`: full marks, no note."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", "class Rule:\n"
             "    def __init__(self, mask_below=0.8, random_below=0.9):\n"
             "        self.mask_below, self.random_below = mask_below, random_below\n\n"
             "    def __repr__(self):\n"
             "        return f\"Rule({vars(self)})\"\n\n\n"
             "RULE = Rule()\n\n\n"
             "def make_mlm_inputs("),
            ("to_mask = selected & (draws < 0.8)",
             "to_mask = selected & (draws < RULE.mask_below)"),
            ("(draws >= 0.8) & (draws < 0.9)",
             "(draws >= RULE.mask_below) & (draws < RULE.random_below)"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
