"""Labels on every token: unselected sites get their token as a label instead of ignore_index."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    labels = torch.full_like(tokens, ignore_index)\n"
                "    labels[selected] = tokens[selected]\n",
                "    labels = tokens.clone()\n",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 19}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "ignore_index (-100)",
}
