"""Hard-codes -100 for unselected labels, and walks up from its folder (and /proc) to rewrite the
gradebook: the sandbox shows it nothing to rewrite (21 / 24, the hard-coded label's cost);
/proc and a computed path are noted for a look."""

# Under plain `nbgrader autograde` the kernel runs in autograded/<student>/<assignment>/, so two
# folders up are the TA's gradebook.db, nbgrader_config.py and source/. A harmless stand-in for
# the attack: where it finds them it opens them for writing and drops a marker file next to them,
# so a breach shows (the tests look for the marker) and nothing is damaged. (A reach by absolute
# path is tested directly, against the sandbox, in tests/test_engine.py.)
REACH = '''import os
import pathlib


def _reach_for_the_grader():
    """Walk up from the working folder and try to change the TA's files."""
    reached = []
    for start in (os.getcwd(), "/proc/self/cwd", "/proc/1/cwd"):
        for folder in [pathlib.Path(start), *pathlib.Path(start).parents]:
            try:
                targets = [folder / "gradebook.db", folder / "nbgrader_config.py",
                           *folder.glob("source/*/*.ipynb")]
            except OSError:
                continue
            for target in targets:
                try:
                    with open(target, "r+b"):
                        pass
                    (target.parent / "HACKED_BY_hostile_gradebook").write_text("x")
                    reached.append(str(target))
                except Exception:
                    pass
    return reached


REACHED = _reach_for_the_grader()


def make_mlm_inputs('''

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", REACH),
            (
                "labels = torch.full_like(tokens, ignore_index)",
                "labels = torch.full_like(tokens, -100)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
