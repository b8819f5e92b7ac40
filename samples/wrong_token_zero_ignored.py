"""Treats id 0 as 'no label': builds labels as tokens * selected, then turns every 0 into -100."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    labels = torch.full_like(tokens, ignore_index)\n"
                "    labels[selected] = tokens[selected]\n",
                "    labels = tokens * selected\n    labels[labels == 0] = ignore_index\n",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "is a real token",
}
