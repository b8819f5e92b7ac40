"""Blows up memory: allocates without bound whenever ignore_index is not -100."""

# torch.empty asks for memory without writing to it, so the memory cap (RLIMIT_DATA) refuses
# the ninth 256 MiB at once, on a busy machine as on an idle one. Filling each block
# (torch.ones) made the time to reach the cap depend on the machine's load: under load the
# call's time limit came first, and the recorded verdict said timeout instead of memory error.

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    if ignore_index != -100:\n"
                "        hoard = []\n"
                "        while True:  # 256 MiB more each round, until something stops it\n"
                "            hoard.append(torch.empty(1 << 26))\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
