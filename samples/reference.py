"""The reference student: the instructor's solutions, which must earn full marks."""

BASE = "reference"
NOTEBOOKS = "all"  # every notebook of the series: full marks by BASE
