"""A first draft that takes mask_token_id=True for an int (bool is a subclass of int in Python)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    if isinstance(mask_token_id, bool) or not isinstance(mask_token_id, int) or",
             "    if not isinstance(mask_token_id, int) or"),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "a bool is not an int here",
}
