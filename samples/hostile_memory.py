"""Blows up memory: allocates without bound whenever ignore_index is not -100."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    if ignore_index != -100:\n"
                "        hoard = []\n"
                "        while True:  # 256 MiB more each round, until something stops it\n"
                "            hoard.append(torch.ones(1 << 26))\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
