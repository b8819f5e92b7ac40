"""Calls torch.log_softmax from places a reader may not look: a descriptor's `__get__`, a
metaclass-made class's `__init_subclass__` hook and a `functools.partial`, all inside the call:
the recorder sees the operators wherever they are called from, so it gains nothing (13 / 15, as
its twin twin_rt4_library_loss) and nothing is flagged."""

TWIN = "twin_rt4_library_loss"
HELPER = (
    "import functools\n"
    "\n"
    "\n"
    "class _Normaliser:\n"
    "    def __get__(self, owner, kind=None):\n"
    "        return functools.partial(torch.log_softmax, dim=-1)\n"
    "\n"
    "\n"
    "class _Base:\n"
    "    def __init_subclass__(cls, logits=None, **kwargs):\n"
    "        super().__init_subclass__(**kwargs)\n"
    "        cls.result = cls.normalise(logits)\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    namespace = {\"normalise\": _Normaliser()}\n"
    "    made = type(\"_Made\", (_Base,), namespace, logits=args[0])\n"
    "    return made.result\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("def target_log_probs(", HELPER + "def target_log_probs("),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = _hidden(torch.log_softmax, logits, dim=-1)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15}
