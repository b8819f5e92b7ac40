"""A correct solution whose answer cell starts 8 children that spin forever; no
other student may slow down for it (its worker's cgroup holds all nine to one CPU). Starting
processes is what the grader cannot check: full marks, flagged for a look (24 / 24)."""

# The children spin until the grader kills them with their worker; they touch nothing of the
# worker's (no socket, no output), so the answers stay right.
HOG = '''import os


def _spin_forever():
    """Eight children of this process, each spinning on a CPU."""
    children = []
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            while True:
                pass
        children.append(pid)
    return children


SPINNERS = _spin_forever()


def make_mlm_inputs('''

BASE = "reference"
PATCHES = {"01_corruption": {"make_mlm_inputs": [("def make_mlm_inputs(", HOG)]}}
EXPECTED = {"01_corruption": 24}
