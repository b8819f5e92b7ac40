"""A correct solution that writes to stderr and warns on every call: it must keep full marks."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "def make_mlm_inputs(",
                "import sys\n"
                "import warnings\n"
                "\n"
                'print("loading my make_mlm_inputs", file=sys.stderr)\n'
                "\n"
                "\n"
                "def make_mlm_inputs(",
            ),
            (
                "    # 2. Labels:",
                '    print(f"debug: tokens {tuple(tokens.shape)}", file=sys.stderr)\n'
                '    warnings.warn("make_mlm_inputs: a warning is not an error", stacklevel=2)\n'
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
