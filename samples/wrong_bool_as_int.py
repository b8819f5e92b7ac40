"""Treats a bool as an int: mask_token_id=True is accepted as the id 1 instead of refused."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "if isinstance(mask_token_id, bool) or not isinstance(mask_token_id, int)",
                "if not isinstance(mask_token_id, int)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "a bool is not an int here",
}
