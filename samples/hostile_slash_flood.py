"""A correct solution that prints a line of 19,999 slashes on every call: full marks, and the
library-path scrub of its output stays linear (it once backtracked for minutes)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                '    print("/" * 19_999)\n'
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
