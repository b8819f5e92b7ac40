"""A first draft that checks the devices of selected and draws against tokens, never random_ids'."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("""        if tensor.device != tokens.device:
            raise ValueError(
                f"{name} is on {tensor.device} but tokens is on {tokens.device}; "
                "all four tensors must be on one device"
            )
""", """    if selected.device != tokens.device or draws.device != tokens.device:
        raise ValueError("selected and draws must be on the device of tokens")
"""),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "random_ids on the 'meta' device",
}
