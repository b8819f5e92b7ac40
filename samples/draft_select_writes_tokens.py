"""Marks the special positions by writing -1 into the caller's tokens: right on every call,
but the caller's tensor has changed (a test that reads it afterwards sees no special ids)."""

BASE = "reference"
NOTEBOOKS = ["06_real_bert"]
PATCHES = {
    "06_real_bert": {
        "select_for_masking": [
            (
                "    special = torch.zeros(tokens.shape, dtype=torch.bool)\n"
                "    for special_id in special_ids:\n"
                "        special |= tokens == special_id\n",
                "    for special_id in special_ids:\n"
                "        tokens[tokens == special_id] = -1\n"
                "    special = tokens == -1\n",
            ),
        ],
    },
}
EXPECTED = {"06_real_bert": 2}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "06_real_bert": "changed the caller's tokens",
}
