"""The course itself: where things live, nbgrader cells, notebook files.

It imports nothing of the package: every other room builds on it."""
