"""Honest twin of the hostile_rt4 recorder samples: the same `_hidden` helper, which just calls the
library log-softmax / cross-entropy it is handed: full marks (no check can tell a correct
library call; the scan notes it for the TA, and Validate tells the student)."""

from _library_loss import library_loss_patches

HELPER = (
    "def _hidden(function, *args, **kwargs):\n"
    "    return function(*args, **kwargs)\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
