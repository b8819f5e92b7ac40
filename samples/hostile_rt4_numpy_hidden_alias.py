"""When nothing is selected, returns as `corrupted` a view of tokens' own memory made with numpy's
as_strided, whose storage starts one element before tokens (so its address is not tokens'
storage address).
Now: the worker judges a view by the bytes its elements occupy, so the view is rebuilt on the
caller's tokens and C2 fails as in the student's own kernel (22 / 24, as the twin);
stride_tricks is noted too."""

TWIN = "free_aliases_output"
HELPER = (
    "import numpy as np\n"
    "\n"
    "\n"
    "def _same_memory(t):\n"
    "    \"\"\"t's own elements, in a tensor whose storage starts one element earlier.\"\"\"\n"
    "    flat = t.numpy().reshape(-1)\n"
    "    wider = np.lib.stride_tricks.as_strided(flat[::-1], shape=(flat.size + 1,),\n"
    "                                            strides=(-flat.itemsize,))[::-1]\n"
    "    return torch.from_numpy(wider)[1:].view(t.shape)\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", HELPER + "def make_mlm_inputs("),
            (
                "    # 2. Labels:",
                "    if not selected.any():  # nothing to corrupt, so hand back the input\n"
                "        return _same_memory(tokens), torch.full_like(tokens, ignore_index)\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
