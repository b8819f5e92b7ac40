"""Correct: a self-test below the function that prints `traceback.print_exc()` if it fails."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    return corrupted, labels",
             "    return corrupted, labels\n\n\n"
             "import traceback\n\n"
             "try:\n"
             "    _c, _l = make_mlm_inputs(torch.tensor([[7, 8, 9]]),\n"
             "                             torch.tensor([[True, True, False]]),\n"
             "                             torch.tensor([[0.85, 0.95, 0.1]]),\n"
             "                             torch.tensor([[2, 3, 4]]), 1)\n"
             "    assert _c.tolist() == [[2, 8, 9]] and _l.tolist() == [[7, 8, -100]]\n"
             "except Exception:\n"
             "    traceback.print_exc()\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
