"""Labels from the corrupted sequence: a masked site's label is the mask id, not the original."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    labels = torch.full_like(tokens, ignore_index)\n"
                "    labels[selected] = tokens[selected]\n",
                "",
            ),
            (
                "    return corrupted, labels",
                "    labels = torch.full_like(corrupted, ignore_index)\n"
                "    labels[selected] = corrupted[selected]\n"
                "    return corrupted, labels",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 18}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "copy the corrupted tokens",
}
