"""Closed thresholds: u <= 0.8 is masked and u <= 0.9 takes a random id (both boundaries off)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("to_mask = selected & (draws < 0.8)", "to_mask = selected & (draws <= 0.8)"),
            (
                "to_random = selected & (draws >= 0.8) & (draws < 0.9)",
                "to_random = selected & (draws > 0.8) & (draws <= 0.9)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 22}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "exactly takes the RANDOM branch",
}
