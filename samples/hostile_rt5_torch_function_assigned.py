"""Runs the library log-softmax on a Tensor subclass whose `__torch_function__` is set by
assignment in the class body (no `def` a scan would notice), notebook 2: nothing gained over its
twin (15 / 15)."""

from _library_loss import library_loss_patches

HELPER = (
    "class _Quiet(torch.Tensor):\n"
    "    __torch_function__ = torch._C._disabled_torch_function_impl  # set, not defined\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    return function(args[0].as_subclass(_Quiet), *args[1:], **kwargs)\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = {"02_stable_log_softmax": library_loss_patches(HELPER)["02_stable_log_softmax"]}
EXPECTED = {"02_stable_log_softmax": 15}
