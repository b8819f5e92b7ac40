"""Aliased output: when nothing is selected it returns `tokens` itself as `corrupted`."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    if not selected.any():  # nothing to corrupt, so hand back the input\n"
                "        return tokens, torch.full_like(tokens, ignore_index)\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 22}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "it shares memory with tokens",
}
