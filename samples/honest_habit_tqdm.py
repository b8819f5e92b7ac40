"""Correct: a self-test over a few random batches in a `tqdm` loop: full marks, no note."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    return corrupted, labels",
             "    return corrupted, labels\n\n\n"
             "from tqdm import tqdm\n\n"
             "_g = torch.Generator().manual_seed(0)\n"
             "for _ in tqdm(range(3), leave=False):\n"
             "    _t = torch.randint(0, 9, (2, 5), generator=_g)\n"
             "    _s = torch.rand(2, 5, generator=_g) < 0.5\n"
             "    _c, _l = make_mlm_inputs(_t, _s, torch.rand(2, 5, generator=_g), _t, 99)\n"
             "    assert (_l[_s] == _t[_s]).all()\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
