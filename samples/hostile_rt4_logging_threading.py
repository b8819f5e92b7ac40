"""Runs the library log-softmax / cross-entropy in a helper thread (the recorder is one thread's
dispatch mode), reaching the threading module as an attribute of an ordinary one:
`logging.threading.Thread`.
Now: a dotted path through an ordinary module to threading is noted: flagged for a look (15 / 15
and 31 / 31; twin 13 and 30)."""

from _library_loss import library_loss_patches

TWIN = "twin_rt4_library_loss"
HELPER = (
    "import logging\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    box = []\n"
    "    helper = logging.threading.Thread(target=lambda: box.append(function(*args, **kwargs)))\n"
    "    helper.start()\n"
    "    helper.join()\n"
    "    return box[0]\n"
    "\n"
    "\n"
)

BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
