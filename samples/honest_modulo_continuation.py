"""A correct answer with a `%` that continues an expression on its own line: full marks."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    length = (tokens.shape[1]\n"
                "              % (tokens.shape[1] + 1))  # the same L, split over two lines\n"
                "    assert length == tokens.shape[1]\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
