"""A correct solution that leaves a setsid() daemon behind: the daemon must not outlive its
grading (it would write marker files into /tmp, the course folder and /proc/1/cwd); full marks,
and /proc and fork are noted for a look: 24 / 24."""

# A double fork with setsid() escapes the worker's process group; the daemon then execs Python
# with MARKER on its command line (so a /proc scan finds it), sleeps past the grading and tries
# to drop a marker file next to the course. A harmless stand-in for a process that lingers to
# attack later gradings.
MARKER = "MLM_SETSID_DAEMON_MARKER"
DAEMON = '''import os
import sys

_DAEMON_CODE = """
import os, pathlib, time
time.sleep(45)
for folder in [pathlib.Path('/tmp'), pathlib.Path(os.getcwd()), *pathlib.Path(os.getcwd()).parents,
               pathlib.Path('/proc/1/cwd')]:
    try:
        (folder / 'HACKED_BY_hostile_setsid_daemon').write_text('x')
    except Exception:
        pass
"""


def _leave_a_daemon():
    """Fork, setsid(), fork again: a process in a session of its own that outlives us."""
    if os.fork() == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable,
                         [sys.executable, "-c", _DAEMON_CODE, "MLM_SETSID_DAEMON_MARKER"])
        finally:
            os._exit(0)
    os.wait()


_leave_a_daemon()


def make_mlm_inputs('''

BASE = "reference"
PATCHES = {"01_corruption": {"make_mlm_inputs": [("def make_mlm_inputs(", DAEMON)]}}
EXPECTED = {"01_corruption": 24}
