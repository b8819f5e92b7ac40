"""Tells a watching dispatch mode by the extra traceback frame a failing operator gains, and calls
the library log-softmax only when unwatched (notebook 2): it gains nothing over its twin (15 / 15
both: no point rests on which operators ran)."""

from _library_loss import library_loss_patches

HELPER = (
    "import traceback\n"
    "\n"
    "\n"
    "def _watched():\n"
    "    try:\n"
    "        torch.ones(1).view(2)\n"
    "    except RuntimeError as err:\n"
    "        return len(traceback.extract_tb(err.__traceback__)) > 1\n"
    "    return False\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    if _watched():  # by hand while a mode watches\n"
    "        z = args[0]\n"
    "        return z - torch.logsumexp(z, dim=kwargs['dim'], keepdim=True)\n"
    "    return function(*args, **kwargs)\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = {"02_stable_log_softmax": library_loss_patches(HELPER)["02_stable_log_softmax"]}
EXPECTED = {"02_stable_log_softmax": 15}
