"""Excludes ids 101 and 102 by number, like the walkthrough: [PAD] and other specials selected."""

BASE = "reference"
NOTEBOOKS = ["06_real_bert"]
PATCHES = {
    "06_real_bert": {
        "select_for_masking": [
            (
                "    special = torch.zeros(tokens.shape, dtype=torch.bool)\n"
                "    for special_id in special_ids:\n"
                "        special |= tokens == special_id\n",
                "    special = (tokens == 101) | (tokens == 102)  # [CLS] and [SEP]\n",
            ),
        ],
    },
}
EXPECTED = {"06_real_bert": 2}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "06_real_bert": "exclude exactly the ids in special_ids",
}
