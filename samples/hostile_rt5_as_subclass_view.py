"""Returns `tokens` itself when nothing is selected, as a Tensor subclass whose `as_subclass` hands
back a fresh copy of a view (to hide the alias from the grader's packing), notebook 1: nothing
gained over its twin (24 / 24 both: which memory an output shares is not graded)."""

BASE = "reference"
TWIN = "free_aliases_output"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "def make_mlm_inputs(",
                "class _Fresh(torch.Tensor):\n"
                "    def as_subclass(self, cls):\n"
                "        return torch.Tensor.as_subclass(self[...], cls).clone()\n"
                "\n"
                "\n"
                "def make_mlm_inputs(",
            ),
            (
                "    # 2. Labels:",
                "    if not selected.any():  # nothing to corrupt, so hand back the input\n"
                "        return tokens.as_subclass(_Fresh), torch.full_like(tokens, ignore_index)\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
