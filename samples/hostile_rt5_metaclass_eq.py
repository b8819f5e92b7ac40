"""Runs the library log-softmax on a Tensor subclass whose metaclass answers `==` with True (a
recorder's "is this a plain tensor?" test), notebook 2: nothing gained over its twin (15 / 15)."""

from _library_loss import library_loss_patches

HELPER = (
    "class _Meta(type(torch.Tensor)):\n"
    "    def __eq__(cls, other):\n"
    "        return True\n"
    "\n"
    "    __hash__ = type.__hash__\n"
    "\n"
    "\n"
    "class _Plain(torch.Tensor, metaclass=_Meta):\n"
    "    pass\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    out = function(args[0].as_subclass(_Plain), *args[1:], **kwargs)\n"
    "    return out.as_subclass(torch.Tensor)\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = {"02_stable_log_softmax": library_loss_patches(HELPER)["02_stable_log_softmax"]}
EXPECTED = {"02_stable_log_softmax": 15}
