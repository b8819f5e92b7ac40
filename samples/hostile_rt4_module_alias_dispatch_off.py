"""Binds torch to a second name by plain assignment (`_torch = torch`) and runs the library log-
softmax / cross-entropy under `_torch._C._DisableTorchDispatch()`, which switches the worker's
recorder off.
Now: the scan follows plain assignments and notes `_C` on any object: flagged for a look (15 /
15 and 31 / 31; twin 13 and 30)."""

from _library_loss import library_loss_patches

TWIN = "twin_rt4_library_loss"
HELPER = (
    "_torch = torch  # the same module under a second name\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    with _torch._C._DisableTorchDispatch():\n"
    "        return function(*args, **kwargs)\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
