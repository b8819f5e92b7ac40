"""Correct: the value checks behind a settings object with a method `_enable_value_checks`."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", "class Settings:\n"
             "    def __init__(self):\n"
             "        self.check_values = False\n\n"
             "    def _enable_value_checks(self):\n"
             "        self.check_values = True\n"
             "        return self\n\n\n"
             "SETTINGS = Settings()._enable_value_checks()\n\n\n"
             "def make_mlm_inputs("),
            ("    for name in (\"tokens\", \"random_ids\"):\n",
             "    for name in (\"tokens\", \"random_ids\") if SETTINGS.check_values else ():\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
