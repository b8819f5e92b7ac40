"""Correct: the three branches in a helper compiled with `@torch.jit.script`: full marks."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    to_mask = selected & (draws < 0.8)\n"
             "    to_random = selected & (draws >= 0.8) & (draws < 0.9)\n",
             "    to_mask, to_random = branches(selected, draws)\n"),
            ("def make_mlm_inputs(", "@torch.jit.script\n"
             "def branches(selected: torch.Tensor, draws: torch.Tensor):\n"
             "    to_mask = selected & (draws < 0.8)\n"
             "    to_random = selected & (draws >= 0.8) & (draws < 0.9)\n"
             "    return to_mask, to_random\n\n\n"
             "def make_mlm_inputs("),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
