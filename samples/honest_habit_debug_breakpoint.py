"""Correct: a `DEBUG` flag that would stop in the debugger (`if DEBUG: breakpoint()`)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", "DEBUG = False\n\n\ndef make_mlm_inputs("),
            ("    corrupted = tokens.clone()\n",
             "    corrupted = tokens.clone()\n    if DEBUG:\n        breakpoint()\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
