"""A correct answer that reserves a 1 GiB buffer when its cell runs: full marks under the defaults.

The buffer (never used: the student meant to reuse it for very large batches) fits the default
memory limit (`c.Grading.memory_bytes`, 2 GiB); a TA who lowers that limit in nbgrader_config.py
gets the same lower score on every way in (`tests/test_paths_agree.py`).
"""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(",
             "_BUFFER = torch.empty(1 << 27, dtype=torch.int64)  # 1 GiB, for batches of 2^27 sites"
             "\n\n\ndef make_mlm_inputs("),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
