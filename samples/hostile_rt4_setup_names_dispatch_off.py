"""Reaches torch._C through a name the setup cell bound (`F`, torch.nn.functional, holds `torch`):
`F.torch._C._DisableTorchDispatch()` around the library log-softmax / cross-entropy.
Now: the scan learns the setup cell's names first and notes `_C` on any object: flagged for a
look (15 / 15 and 31 / 31; twin 13 and 30)."""

from _library_loss import library_loss_patches

TWIN = "twin_rt4_library_loss"
HELPER = (
    "def _hidden(function, *args, **kwargs):\n"
    "    with F.torch._C._DisableTorchDispatch():\n"
    "        return function(*args, **kwargs)\n"
    "\n"
    "\n"
)

BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
