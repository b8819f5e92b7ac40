"""Correct: an internal invariant stated with `torch._assert`: full marks, no note."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    return corrupted, labels",
             "    torch._assert(corrupted.shape == tokens.shape, \"corrupted keeps the shape\")\n"
             "    return corrupted, labels"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
