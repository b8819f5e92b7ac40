"""Correct: the allowed dtypes read with `getattr(torch, n)` over names kept in a dict."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(",
             "DTYPE_NAMES = {\"tokens\": [\"int64\"], \"selected\": [\"bool\"],\n"
             "               \"draws\": [\"float32\", \"float64\"],\n"
             "               \"random_ids\": [\"int64\"]}\n\n\n"
             "def make_mlm_inputs("),
            ("""    allowed = {
        "tokens": (torch.int64,),
        "selected": (torch.bool,),
        "draws": (torch.float32, torch.float64),
        "random_ids": (torch.int64,),
    }""", """    allowed = {key: tuple(getattr(torch, n) for n in names)
               for key, names in DTYPE_NAMES.items()}"""),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
