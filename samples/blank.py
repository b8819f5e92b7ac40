"""The blank student: submits the release untouched, so every function still raises."""

BASE = "release"
NOTEBOOKS = "all"  # every notebook of the series: zero by BASE
