"""A first draft that checks draws against [0, 1) but never for NaN (NaN compares False)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ('    if not torch.isfinite(draws).all():\n'
             '        raise ValueError("draws must be finite, found NaN or inf")\n', ""),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "a NaN draw",
}
