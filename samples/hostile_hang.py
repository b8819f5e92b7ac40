"""Hangs: an endless loop on an empty batch (after its checks); notebook 2 is untouched."""

BASE = "reference"
NOTEBOOKS = ["01_corruption", "02_stable_log_softmax"]
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    while tokens.numel() == 0:  # never ends on an empty batch\n"
                "        pass\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 23, "02_stable_log_softmax": 15}
