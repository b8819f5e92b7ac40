"""Correct: a self-test below the function that prints `traceback.print_exc()` if it fails."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    return corrupted, labels",
             "    return corrupted, labels\n\n\n"
             "import traceback\n\n"
             "try:\n"
             "    _c, _l = make_mlm_inputs(torch.tensor([[5, 6]]), torch.tensor([[True, False]]),\n"
             "                             torch.tensor([[0.5, 0.5]]), torch.tensor([[1, 1]]), 4)\n"
             "    assert _c.tolist() == [[4, 6]] and _l.tolist() == [[5, -100]]\n"
             "except Exception:\n"
             "    traceback.print_exc()\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
