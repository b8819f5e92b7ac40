"""Mutates the caller's tensor: writes [MASK] and random ids straight into `tokens`."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("corrupted = tokens.clone()", "corrupted = tokens  # no copy: edits the caller's"),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "the caller's tokens",
}
