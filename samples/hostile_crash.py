"""Crashes: ends its own process (os._exit) when the draws are float32; notebook 2 stays full."""

BASE = "reference"
NOTEBOOKS = ["01_corruption", "02_stable_log_softmax"]
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    if draws.dtype == torch.float32:\n"
                "        import os\n"
                "        os._exit(1)  # the process running this code ends here\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 18, "02_stable_log_softmax": 15}
