"""Runs the library log-softmax in a thread started by `logging.handlers.QueueListener` (a dispatch
mode watches one thread), notebook 2: nothing gained over its twin (15 / 15)."""

from _library_loss import library_loss_patches

HELPER = (
    "import logging\n"
    "import logging.handlers\n"
    "import queue\n"
    "\n"
    "\n"
    "def _hidden(function, *args, **kwargs):\n"
    "    box = {}\n"
    "\n"
    "    class _Run(logging.Handler):\n"
    "        def handle(self, record):\n"
    "            box['out'] = function(*args, **kwargs)\n"
    "\n"
    "    records = queue.Queue()\n"
    "    listener = logging.handlers.QueueListener(records, _Run())\n"
    "    listener.start()\n"
    "    records.put(logging.makeLogRecord({}))\n"
    "    listener.stop()\n"
    "    return box['out']\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = {"02_stable_log_softmax": library_loss_patches(HELPER)["02_stable_log_softmax"]}
EXPECTED = {"02_stable_log_softmax": 15}
