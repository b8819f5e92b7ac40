"""Float labels: fills the ignored sites from full_like(draws, ...), so labels come back float."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    labels = torch.full_like(tokens, ignore_index)\n"
                "    labels[selected] = tokens[selected]\n",
                "    ignored = torch.full_like(draws, ignore_index)\n"
                "    labels = torch.where(selected, tokens, ignored)\n",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "torch.float",
}
