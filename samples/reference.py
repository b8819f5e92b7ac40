"""The reference student: the instructor's solutions, which must earn full marks."""

BASE = "reference"
EXPECTED = {"01_corruption": 24}
