"""Reads special_ids with torch.tensor(special_ids): right for a list or tuple, fails on a set."""

BASE = "reference"
NOTEBOOKS = ["06_real_bert"]
PATCHES = {
    "06_real_bert": {
        "select_for_masking": [
            (
                "    special = torch.zeros(tokens.shape, dtype=torch.bool)\n"
                "    for special_id in special_ids:\n"
                "        special |= tokens == special_id\n",
                "    special = torch.isin(tokens, torch.tensor(special_ids))\n",
            ),
        ],
    },
}
EXPECTED = {"06_real_bert": 2}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "06_real_bert": "torch.tensor() cannot read a set",
}
