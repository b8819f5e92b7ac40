"""The blank student: submits the release untouched, so every function still raises."""

BASE = "release"
EXPECTED = {"01_corruption": 0}
