"""Ignores the ignore_index argument: unselected labels are always a hard-coded -100."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "labels = torch.full_like(tokens, ignore_index)",
                "labels = torch.full_like(tokens, -100)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "ignore_index=-7",
}
