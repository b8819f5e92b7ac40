"""Correct, and validates the four tensors by name through locals(): full marks (locals() reaches
nothing but the function's own names)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                '    named = {"tokens": tokens, "selected": selected, "draws": draws, "random_ids": random_ids}\n',  # noqa: E501
                '    arguments = locals()\n'
                '    named = {name: arguments[name] for name in ("tokens", "selected", "draws", "random_ids")}\n',  # noqa: E501
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
