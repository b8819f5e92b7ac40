"""A first draft that tests both ints with numbers.Integral, which also accepts a NumPy integer."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    # 1. Validate:", "    import numbers\n\n    # 1. Validate:"),
            ("not isinstance(mask_token_id, int)",
             "not isinstance(mask_token_id, numbers.Integral)"),
            ("not isinstance(ignore_index, int)",
             "not isinstance(ignore_index, numbers.Integral)"),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "mask_token_id=np.int64(103)",
}
