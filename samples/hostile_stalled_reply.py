"""A correct solution whose worker stops reading its socket after its reply to the first empty
batch: the next call times out (test_empty's point is lost); a restarted worker
serves every other test: 23 / 24, the object graph (gc) noted for a look. (A send to a worker
that stopped reading has its own test in tests/test_attacks.py; here the stall is kept to one
small request, so the graded notebook is the same on a busy machine.)"""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "def make_mlm_inputs(",
                "import time\n"
                "\n"
                "_LAST_REPLY = []  # set by a call whose reply is to be the worker's last\n"
                "\n"
                "\n"
                "def _stall_after_last_reply():\n"
                '    """Under grading: once _LAST_REPLY is set, reply, then never read again."""\n'
                "    import gc\n"
                "\n"
                "    found = [o for o in gc.get_objects() if type(o).__name__ == '_StudentSide']\n"
                "    if not found:\n"
                "        return\n"
                "    worker = found[0]\n"
                "    send_reply = worker.reply\n"
                "\n"
                '    def reply(header, blob=b""):\n'
                "        send_reply(header, blob)\n"
                "        while _LAST_REPLY:\n"
                "            time.sleep(3600)\n"
                "\n"
                "    worker.reply = reply\n"
                "\n"
                "\n"
                "_stall_after_last_reply()\n"
                "\n"
                "\n"
                "def make_mlm_inputs(",
            ),
            (
                "    # 2. Labels:",
                "    if tokens.numel() == 0:\n"
                "        _LAST_REPLY.append(True)\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 23}
