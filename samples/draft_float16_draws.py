"""A first draft that accepts any floating dtype for draws (float16 and bfloat16 slip through)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ('        "draws": (torch.float32, torch.float64),\n',
             '        "draws": (torch.float16, torch.bfloat16, torch.float32, torch.float64),\n'),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "draws as float16",
}
