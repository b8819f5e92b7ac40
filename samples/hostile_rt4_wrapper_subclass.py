"""Hides the library log-softmax / cross-entropy inside a `__torch_dispatch__` wrapper subclass
(only without grad, as the recorded calls run; with grad it calls directly): the recorder sees
only the outer `aten::neg`, what the subclass runs while handling it runs with the dispatch
modes stashed.
Now: the worker says when a tensor subclass dispatched an operator itself, and the scan notes
`__torch_dispatch__` and `_make_wrapper_subclass`: flagged for a look (15 / 15 and 31 / 31; twin
13 and 30)."""

from _library_loss import library_loss_patches

TWIN = "twin_rt4_library_loss"
HELPER = (
    "class _Deferred(torch.Tensor):\n"
    "    \"\"\"A tensor that does its work when the first operator touches it.\"\"\"\n"
    "\n"
    "    @staticmethod\n"
    "    def __new__(cls, work, like):\n"
    "        box = cls._make_wrapper_subclass(cls, like.shape, dtype=like.dtype, device=like.device)\n"  # noqa: E501
    "        box.work = work\n"
    "        return box\n"
    "\n"
    "    @classmethod\n"
    "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
    "        return args[0].work()\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):\n"  # noqa: E501
    "        return function(*args, **kwargs)\n"
    "    like = next(a for a in args if isinstance(a, torch.Tensor))\n"
    "    return torch.neg(_Deferred(lambda: function(*args, **kwargs), like))\n"
    "\n"
    "\n"
)

BASE = "reference"
PATCHES = library_loss_patches(HELPER)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
