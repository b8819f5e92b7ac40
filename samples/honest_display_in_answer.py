"""A correct answer that calls display() and get_ipython() inside the function: full marks."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    display(f\"make_mlm_inputs on [B, L] = {list(tokens.shape)}\")\n"
                "    assert get_ipython() is not None\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
