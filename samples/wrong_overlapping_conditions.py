"""Overlapping conditions: the random branch also fires below 0.8 and overwrites [MASK]."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "to_random = selected & (draws >= 0.8) & (draws < 0.9)",
                "to_random = selected & (draws < 0.9)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 17}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "the random branch also fires below 0.8",
}
