"""Honest twin of the hostile_rt4 recorder samples: the same `_hidden` helper, which just calls the
library log-softmax / cross-entropy it is handed (13 / 15 and 30 / 31: the rule's check fails,
as it should)."""

from _library_loss import library_loss_patches

HELPER = (
    "def _hidden(function, *args, **kwargs):\n"
    "    return function(*args, **kwargs)\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 13, "03_empty_mask_and_gradient": 30}
