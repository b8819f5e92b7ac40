"""free_aliases_output's view of the caller's tokens, hidden behind a patched
torch.Tensor.device property that says "meta" for it: the worker reads devices and storages from
PyTorch's C types; which memory an output shares is not graded at all (only the student's
process sees it): 24 / 24, as the twin free_aliases_output."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "def make_mlm_inputs(",
                "_real_device = torch.Tensor.device\n"
                "_fresh_looking = []\n"
                "\n"
                "\n"
                "class _Nowhere:\n"
                "    type = 'meta'\n"
                "\n"
                "\n"
                "def _device(self):\n"
                "    if any(self is t for t in _fresh_looking):\n"
                "        return _Nowhere()\n"
                "    return _real_device.__get__(self)\n"
                "\n"
                "\n"
                "torch.Tensor.device = property(_device)\n"
                "\n"
                "\n"
                "def make_mlm_inputs(",
            ),
            (
                "    # 2. Labels:",
                "    if not selected.any():  # nothing to corrupt, so hand back the input\n"
                "        corrupted = tokens.view_as(tokens)\n"
                "        _fresh_looking.append(corrupted)\n"
                "        return corrupted, torch.full_like(tokens, ignore_index)\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
