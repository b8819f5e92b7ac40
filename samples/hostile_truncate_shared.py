"""masked_mean_nll tries to truncate the memory file that carries its arguments (which killed the
trusted kernel when it read its mapping): the file is sealed against any change of size, the
attempt fails, and the answer is otherwise right: 15 / 15, stat noted for a look."""

CUT = (
    "import os\n"
    "import stat\n"
    "\n"
    "\n"
    "def _cut_shared_files():\n"
    "    for fd in range(3, 256):\n"
    "        try:\n"
    "            if stat.S_ISREG(os.fstat(fd).st_mode):\n"
    "                os.ftruncate(fd, 0)\n"
    "        except OSError:\n"
    "            pass\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [
            ("def masked_mean_nll(", CUT + "def masked_mean_nll("),
            (
                "    return -target_log_probs(logits, labels, ignore_index).sum() / num_selected",
                "    result = -target_log_probs(logits, labels, ignore_index).sum() / num_selected\n"  # noqa: E501
                "    _cut_shared_files()\n"
                "    return result",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15}
