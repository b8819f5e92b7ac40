"""The library cross-entropy / log-softmax of notebooks 2 and 3 reached by a computed name
(`getattr(F, "cross_" + "entropy")`), with no name the scan knows: no note for the TA, and no
point gained or lost (a correct library call is graded as what it returns): 15 / 15, 31 / 31, as
its twin that calls the library plainly."""

from _library_loss import library_loss_patches

HELPER = (
    "import torch.nn.functional as _functional\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    name = function.__name__.replace('_', ' ').split()\n"
    "    return getattr(_functional, '_'.join(name))(*args, **kwargs)\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
