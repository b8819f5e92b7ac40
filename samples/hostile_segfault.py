"""Crashes the interpreter (a segfault through ctypes) when mask_token_id is 3: only the check
that made that call fails (23 / 24); ctypes is noted for a look."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    if mask_token_id == 3:\n"
                "        import ctypes\n"
                "        ctypes.string_at(0)  # reads address 0: a segmentation fault\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
