"""Fetches torch._C._DisableTorchDispatch with `functools.reduce(getattr, ("_C",
"_DisableTorchDispatch"), torch)` (getattr handed over as a value, the private names as plain
strings) and runs the library losses under it.
Now: getattr handed over as a value is noted: flagged for a look (15 / 15 and 31 / 31; twin 13
and 30)."""

from _library_loss import library_loss_patches

TWIN = "twin_rt4_library_loss"
HELPER = (
    "import functools\n"
    "\n"
    "_quiet = functools.reduce(getattr, (\"_C\", \"_DisableTorchDispatch\"), torch)\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    with _quiet():\n"
    "        return function(*args, **kwargs)\n"
    "\n"
    "\n"
)

BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
