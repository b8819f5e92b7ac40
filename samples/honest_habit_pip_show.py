"""Correct: a `!pip show torch` line at the top of the answer cell (which torch am I on?)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [("def make_mlm_inputs(", "!pip show torch\n\n\ndef make_mlm_inputs(")],
    },
}
EXPECTED = {"01_corruption": 24}
