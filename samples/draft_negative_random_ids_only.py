"""A first draft that rejects negative random ids but lets a negative token through."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ('    for name in ("tokens", "random_ids"):\n', '    for name in ("random_ids",):\n'),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "a negative token",
}
