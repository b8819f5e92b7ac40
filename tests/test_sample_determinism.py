"""A sample's committed verdict does not depend on the machine's load.

hostile_memory hoards memory until the memory cap refuses it. Which limit stops it first must not
depend on how fast the machine is: the hoard asks for memory without writing to it, so the cap
(RLIMIT_DATA, as the student process gets it) refuses it at once, before any page is touched and
so before any time limit can. Shown here by what the process used, not by a clock.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import sample

from mlmcourse.grader.limits import GIB

HOARD_RUN = """
import json, resource, torch
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
used = int(open("/proc/self/statm").read().split()[5]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_DATA, (used + {limit}, hard))
tokens = torch.zeros(2, 3, dtype=torch.int64)
ignore_index = -1
try:
{hoard}
except RuntimeError as err:
    stopped = str(err)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({{"stopped": stopped, "grown_kib": grown}}))
"""


def hoard_code() -> str:
    """The lines hostile_memory adds to make_mlm_inputs, as they run in its answer cell."""
    [(_, patched)] = sample("hostile_memory").patches["01_corruption"]["make_mlm_inputs"]
    lines = [line for line in patched.splitlines() if "# 2. Labels:" not in line]
    return "\n".join(line[4:] for line in lines)  # out of the function body, into the try


def test_the_memory_hog_meets_the_memory_cap_without_touching_memory():
    code = HOARD_RUN.format(limit=GIB, hoard="\n".join(
        "    " + line for line in hoard_code().splitlines()))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert "can't allocate memory" in result["stopped"]
    # Four 256 MiB blocks fit under 1 GiB; none of them was written, so the process barely grew.
    assert result["grown_kib"] < 64 * 1024, result
