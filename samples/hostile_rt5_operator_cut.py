"""Dispatches a run of distinct operators before the library log-softmax, to push it past a
recorder's cap on operator names (notebook 2): it gains nothing over its twin (15 / 15 both)."""

from _library_loss import library_loss_patches

HELPER = (
    "_NOISE = [torch.abs, torch.neg, torch.exp, torch.expm1, torch.sin, torch.cos, torch.tan,\n"
    "          torch.tanh, torch.sigmoid, torch.sqrt, torch.rsqrt, torch.floor, torch.ceil,\n"
    "          torch.round, torch.trunc, torch.frac, torch.sign, torch.square, torch.erf,\n"
    "          torch.erfc, torch.log1p, torch.atan, torch.asinh, torch.sinh, torch.cosh]\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    for noise in _NOISE:\n"
    "        noise(torch.full((1,), 0.5, dtype=torch.float64))\n"
    "    return function(*args, **kwargs)\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = {"02_stable_log_softmax": library_loss_patches(HELPER)["02_stable_log_softmax"]}
EXPECTED = {"02_stable_log_softmax": 15}
